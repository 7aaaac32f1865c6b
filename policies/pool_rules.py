"""Resource-level policies on clusters and node pools: each pool marked for its role, each protected.

A pool is read in its cloud's spelling (`clouds.spec.PoolSpelling`): a node-pool resource, or the
pools a cluster declares inline. The values a pool must carry come from `infra.facts`, which the
components also read. The engine sends `Analyze` a resource's inputs in a first preview, an update
and `pulumi policy analyze` alike (pulumi/pulumi v3.259.0, pkg/resource/deploy/step_generator.go).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from clouds import CLUSTER_TYPES, POOL_TYPES
from clouds.spec import PoolSpelling
from infra.config.base import Accelerator
from infra.facts import (
    CPU_LABEL,
    CPU_TAINT_KEY,
    GPU_LABEL,
    POOL_LABEL,
    SYSTEM_POOL,
    VENDOR_TAINT_KEY,
    NodeTaint,
    gpu_taint,
)
from infra.vocabulary import UPPER_EFFECT
from policies.props import mappings, plain, strings, undecided

# --------------------------------------------------------------------------------------------
# pool-role-marking

# Kubernetes spelling of the effects cloud APIs spell in capitals (GKE, EKS).
K8S_EFFECT = {upper: k8s for k8s, upper in UPPER_EFFECT.items()}


@dataclass(frozen=True)
class PoolMarking:
    """What a node-pool resource says its nodes carry, whatever the cloud's spelling."""

    labels: Mapping[str, str]
    taints: tuple[NodeTaint, ...]
    # Whether the pool's machines have accelerators; None where the pool resource does not say
    # (Civo and Vultr name GPUs only through the machine size, AKS through the VM family).
    accelerated: bool | None

    def has_taint(self, wanted: NodeTaint) -> bool:
        return any((t.key, t.value, t.effect) == (wanted.key, wanted.value, wanted.effect) for t in self.taints)


def _taints(value: Any) -> tuple[NodeTaint, ...]:
    found = []
    for t in mappings(value):
        effect = str(t.get("effect") or "")
        found.append(NodeTaint(str(t.get("key") or ""), str(t.get("value") or ""), K8S_EFFECT.get(effect, effect)))
    return tuple(found)


def _taint_strings(value: Any) -> tuple[NodeTaint, ...]:
    """AKS spells taints `key=value:Effect`."""
    found = []
    for text in plain(value) or []:
        head, _, effect = str(text).rpartition(":")
        key, _, val = head.partition("=")
        found.append(NodeTaint(key, val, effect))
    return tuple(found)


def at(props: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted property path (`nodeConfig.labels`), or None."""
    value: Any = props
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def pool_marking(spelling: PoolSpelling, pool: Mapping[str, Any]) -> PoolMarking:
    """Read labels, taints and accelerators from one pool, in its cloud's spelling (`Cloud.resources`)."""
    taints = at(pool, spelling.taints)
    if spelling.decode_taints is not None:
        taints = spelling.decode_taints(taints)
    labels = at(pool, spelling.labels)
    if spelling.labels_as_pairs:
        labels = {str(p.get("key")): p.get("value") for p in mappings(labels)}
    accelerated: bool | None = None
    if spelling.accelerators is not None:
        accelerated = bool(mappings(at(pool, spelling.accelerators)))
    elif spelling.image is not None:
        image = str(at(pool, spelling.image) or "")
        accelerated = any(word in image for word in spelling.accelerated_images)
    return PoolMarking(
        strings(labels),
        _taint_strings(taints) if spelling.taints_as_text else _taints(taints),
        accelerated,
    )


def marking_problems(source: str, pool: PoolMarking) -> list[str]:
    """How a pool's labels and taints break the role marking `infra.facts` gives its nodes."""
    problems: list[str] = []
    name = pool.labels.get(POOL_LABEL)
    if not name:
        problems.append(f"it carries no {POOL_LABEL} label; every pool is labelled with its name")
    gpu, cpu = pool.labels.get(GPU_LABEL), pool.labels.get(CPU_LABEL)
    if gpu is not None and cpu is not None:
        problems.append(f"it carries both {GPU_LABEL} and {CPU_LABEL}; a pool has one role")
    if gpu is not None:
        vendor = Accelerator.model_construct(type=gpu, count=1).vendor
        if vendor not in VENDOR_TAINT_KEY:
            problems.append(f"{GPU_LABEL}={gpu} names no known GPU vendor ({', '.join(VENDOR_TAINT_KEY)})")
            return problems
        taint = gpu_taint(source, vendor)
        if pool.accelerated is False:
            problems.append(f"it is labelled {GPU_LABEL}={gpu} but its machines have no accelerator")
        elif not pool.has_taint(taint):
            problems.append(
                f"GPU pool lacks the taint {taint.key}={taint.value}:{taint.effect}, so any pod could land on its GPUs"
            )
    elif cpu is not None:
        cpu_taint = NodeTaint(CPU_TAINT_KEY, "true")
        if cpu != "true":
            problems.append(f"{CPU_LABEL} is '{cpu}'; CPU pools carry {CPU_LABEL}=true")
        if not pool.has_taint(cpu_taint):
            problems.append(f"CPU pool lacks the taint {cpu_taint.key}={cpu_taint.value}:{cpu_taint.effect}")
        if pool.accelerated:
            problems.append("CPU pool has accelerators; a CPU pool runs a standard image with no GPU")
    else:
        if pool.accelerated:
            problems.append(f"its machines have accelerators but it carries no {GPU_LABEL} label")
        if name and name != SYSTEM_POOL:
            problems.append(f"it carries neither {GPU_LABEL} nor {CPU_LABEL}; only the system pool has no role")
    return problems


def _validate_pool_role_marking(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type in POOL_TYPES:
        source, types = POOL_TYPES[args.resource_type]
        pools = [args.props]
    elif args.resource_type in CLUSTER_TYPES and (inline := CLUSTER_TYPES[args.resource_type][1].inline_pools):
        source, types = CLUSTER_TYPES[args.resource_type]
        pools = mappings(args.props.get(inline))
    else:
        return
    spelling = types.spelling
    for pool in pools:
        with undecided(f"the labels, taints or accelerators of node pool {args.name}"):
            marking = pool_marking(spelling, pool)
        label = marking.labels.get(POOL_LABEL) or "?"
        for problem in marking_problems(source, marking):
            report_violation(f"pool '{label}' ({args.name}): {problem}", None)


pool_role_marking = ResourceValidationPolicy(
    name="pool-role-marking",
    description=(
        "GPU pools carry their GPU label and vendor taint, CPU pools the modelplane.ai/cpu label and taint and "
        "no accelerator, every pool modelplane.ai/pool."
    ),
    validate=_validate_pool_role_marking,
)

# --------------------------------------------------------------------------------------------
# protect-clusters

PROTECTED_TYPES = frozenset(CLUSTER_TYPES) | frozenset(POOL_TYPES)


def _validate_protect_clusters(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type not in PROTECTED_TYPES or args.opts.protect:
        return
    if args.name in (args.get_config().get("exemptResources") or []):
        return
    kind = "cluster" if args.resource_type in CLUSTER_TYPES else "node pool"
    report_violation(
        f"{kind} {args.name} is not protected; set modelplane:protect: true so `pulumi up` can never delete it",
        None,
    )


protect_clusters = ResourceValidationPolicy(
    name="protect-clusters",
    description="Clusters and node pools are protected from deletion.",
    validate=_validate_protect_clusters,
    # Advisory: dev stacks come and go. Production makes it mandatory through pack config.
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(
        properties={
            "exemptResources": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Resource names allowed to stay unprotected.",
            }
        }
    ),
)

POOL_POLICIES = [pool_role_marking, protect_clusters]

# Each policy's longer explanation, which docs/policies.md prints after its description; the engine never sees it.
DETAILS: dict[str, str] = {
    pool_role_marking.name: (
        "Checks every node-pool resource, and the pools a cluster declares inline (AKS `agentPoolProfiles`, "
        "Civo `pools`, Vultr `nodePools`, DigitalOcean `nodePool`; a Nebius node group keeps its labels and "
        "taints under `template`). Every pool carries `modelplane.ai/pool`. A GPU pool carries "
        "`modelplane.ai/gpu` and its vendor's taint (on GKE `nvidia.com/gpu=present`, which the pool sets "
        "because GKE adds it only in some cases) and, on GKE, `guestAccelerators`. A CPU pool carries "
        "`modelplane.ai/cpu=true`, its taint, and no accelerator."
    ),
    protect_clusters.name: (
        "Cloud clusters and node pools are `protect`ed (`modelplane:protect: true`). Make it mandatory through "
        "pack config."
    ),
}

# Where each rule is decided (backticked paths and names the docs test resolves).
HOMES: dict[str, str] = {
    pool_role_marking.name: (
        "values: `infra/facts.py`; each cloud's spelling: `clouds/spec.py` (`PoolSpelling`), read by "
        "`policies/pool_rules.py` (`marking_problems`)"
    ),
    protect_clusters.name: "`policies/pool_rules.py` (`_validate_protect_clusters`)",
}
