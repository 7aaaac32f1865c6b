"""The typed fleet model and its loader, one module per job.

A stack file (`stacks/Pulumi.<stack>.yaml`) is ordinary Pulumi stack config. Everything under the
`modelplane:` namespace is parsed once into pydantic models; every later step (device rules, derived
facts, components, the offline plan, the policy pack) reads these models and never the raw config.

- `names`: Kubernetes' name and label forms, the bounds every model shares, how errors quote a value;
- `base`: the base model and the pieces each cloud's blocks are built from (`clouds/<cloud>/config.py`);
- `model`: the fleet and every model of it by one name; `classes`, `clusters` (with one optional
  block per cloud of the registry, `clouds`) and `deployments` (and services) define them;
- `roles`: what a pool is for, from the devices its class claims;
- `issues`: a bad input as the user sees it (file, path, problem, fix);
- `reader`: the bounded YAML reader of a stack file;
- `stackfile`: the split of a stack file's keys and parsing the fleet.

The checks across keys and on values a field cannot judge are `infra.checks`; the loader (`stackfile`) runs them
(`infra.checks.guard.check`), the one import of this package from a layer above it.

Errors never raise to the user as tracebacks: `stackfile.load_stack_file` and `stackfile.parse_fleet`
collect every `ConfigIssue` and raise them together as one `ConfigError`.
"""
