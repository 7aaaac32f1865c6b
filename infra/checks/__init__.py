"""The checks: every rule a fleet must pass before the program registers anything, behind one entry.

`guard.check(fleet)` runs them all, once, and returns what it found (`guard.Checked`): the
fleet with what its classes left out supplied, the issues, the device rules' violations and the
derived facts. The modules, by topic:

- `supply`: what a class leaves out, taken from its machine's catalog row or its accelerator;
- `references`: names across keys (classes, clusters, pools, deployments) and each cloud's block;
- `rules` (credentials, images), `services` (ports, memory, cache, services, autoscaling),
  `parallelism` (parallelism, weights, multi-node groups), `clusters` (versions, capacity claims,
  cloud names and tags), `capacity` (what a pool's nodes are bought as, per cloud), `mirror` (the
  chart mirror against the catalog);
- `devices` and `machines`: the device rules, which the policy pack evaluates too;
- `schedulable`: deployments that could never be scheduled on their pool's nodes;
- `guard`: the entry, the rules a cloud's API enforces, and the report that stops a run.

Not here: the fleet model and the stack file's reader (`infra.config`), which know nothing of the
checks but that the reader calls `check`.
"""
