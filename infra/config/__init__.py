"""The typed fleet model and its loader, one module per job.

A stack file (`stacks/Pulumi.<stack>.yaml`) is ordinary Pulumi stack config. Everything under the
`modelplane:` namespace is parsed once into pydantic models; every later step (device rules, derived
facts, components, the offline plan, the policy pack) reads these models and never the raw config.

- `names`: Kubernetes' name and label forms, the bounds every model shares, how errors quote a value;
- `base`: the base model and the pieces each cloud's blocks are built from (`clouds/<cloud>/config.py`);
- `model`: classes, clusters, pools, deployments, services and the budget, with one optional block per
  cloud of the registry (`clouds`);
- `roles`: what a pool is for, from the devices its class claims;
- `issues`: a bad input as the user sees it (file, path, problem, fix);
- `references` and `rules`: the checks across keys and on values a field cannot judge;
- `stackfile`: reading a stack file, with its bounds, and parsing the fleet.

Errors never raise to the user as tracebacks: `stackfile.load_stack_file` and `stackfile.parse_fleet`
collect every `ConfigIssue` and raise them together as one `ConfigError`.
"""
