"""The offline plan: run the real program under Pulumi's mock runtime and report what it would do.

`plan_stack` loads and checks one stack file (once: `infra.checks.guard.check`), runs the program
on that checked stack (`program.main.deploy`) under the mock runtime with the stack's config, runs
the policy pack over what the program registered, and returns the plan's JSON document
(`modelplane plan --json`). It previews as the engine does (`tooling.mockrun`): by default a
first preview (`mode="preview"`: nothing exists, cloud-computed values unknown, the Kubernetes
objects of a cluster not yet created with no properties, the pack told it is a dry run), or with
`mode="update"` an update of a stack whose resources all exist. Pools come from the same derived
facts the components were given; releases are read back from what the ServingStack actually
registered (values included).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.output import Unknown
from pulumi.runtime import rpc

from infra import tokens
from infra.config.base import ProvisionedClusterBlock
from infra.config.issues import ConfigError, ConfigIssue
from infra.config.stackfile import load_stack_file, stack_name_of
from infra.cost import ClusterCost, cluster_cost_json, facts_cost, money, monthly, over_budget, total_json
from infra.facts import PLAN_POOL_KEYS, ClusterFacts
from infra.formats import plain
from infra.serving.catalog import cluster_charts, relied_on
from infra.serving.chart import Chart
from program.main import deploy
from tooling.analyzer import PackViolation, run_policy_pack
from tooling.changes import PLAN_FORMAT
from tooling.hooks import PlanContext, PlanHook
from tooling.mockrun import Registration, run_under_mocks
from tooling.pack_process import PolicyPackError
from tooling.placement import placement_hook
from tooling.stackconfig import config_of, config_size_issue, program_view

# How the plan runs the program: a first preview of a new stack, or an update of an existing one.
MODES = ("preview", "update")


def empty_doc(stack: str, mode: str = "preview") -> dict[str, Any]:
    return {
        # What `--against` checks before it compares two plans (`tooling.changes.check_against`).
        "format": PLAN_FORMAT,
        "mode": mode,
        "stack": stack,
        "ok": True,
        "errors": [],
        "violations": [],
        "clusters": [],
        "deployments": [],
        "resources": [],
    }


def releases_of(facts: ClusterFacts, registered: Sequence[Registration]) -> list[dict[str, Any]]:
    """The releases the cluster's ServingStack registered, in catalog order, with their inputs."""
    stack_name = f"{facts.name}-stack"
    by_name = {r.name: r for r in registered if r.type == tokens.RELEASE and r.parent == stack_name}
    joined = cluster_charts(facts)
    components: dict[str, Chart] = {c.key: c for c in joined}
    out = []
    for component in joined:
        reg = by_name.get(f"{stack_name}-{component.key}")
        if reg is None:
            continue
        inputs = reg.inputs
        out.append(
            {
                "name": inputs.get("name", component.release),
                "chart": component.chart,
                "repo": component.repo,
                "version": inputs.get("version", component.version),
                "chartSource": component.chart_source,
                "namespace": inputs.get("namespace", component.namespace),
                "draDrivers": sorted(component.dra_drivers),
                "dependsOn": [components[d].release for d in component.depends_on if d in components],
                "values": plain(inputs.get("values") or {}),
            }
        )
    return out


def cluster_json(facts: ClusterFacts, registered: Sequence[Registration]) -> dict[str, Any]:
    block = facts.spec.block
    return {
        "name": facts.name,
        "source": facts.source,
        # Where the cluster runs (AKS calls its region a location); None on Existing.
        "region": facts.region,
        "kubernetesVersion": block.kubernetes_version if isinstance(block, ProvisionedClusterBlock) else None,
        # Only on an adopted cluster: the running cluster's import ID (`<cloud>.adopt.id`).
        **({"import": facts.adopt_id} if facts.adopt_id else {}),
        "draDrivers": list(facts.dra_drivers),
        "supportedDrivers": list(facts.supported_drivers),
        # The plan document names a pool's machine `machineType`, as the stack file does.
        "pools": [
            {
                **{("machineType" if k == "machine" else k): v for k, v in p.as_json(PLAN_POOL_KEYS).items()},
                # Only on an adopted pool (`nodePools[].adopt.id`), so other plans keep their shape.
                **({"import": p.adopt_id} if p.adopt_id else {}),
            }
            for p in facts.pools
        ],
        "releases": releases_of(facts, registered),
        # What the stack leaves to the cluster's own copy (`existing.preinstalled`), and who needs it.
        "preinstalled": relied_on(facts),
        "schedulablePools": plain(facts.schedulable_pools()),
        # Only where deployments share a weight cache, so other plans keep their shape.
        **({"sharedCaches": shared_caches_json(facts, registered)} if facts.shared_caches else {}),
    }


def shared_caches_json(facts: ClusterFacts, registered: Sequence[Registration]) -> list[dict[str, Any]]:
    """Each shared weight cache of the cluster: its claim and class, who reads it, and its download Job as registered."""
    out = []
    for cache in facts.shared_caches:
        component = f"{facts.name}-cache-{cache.namespace}-{cache.claim}"
        job = next((r for r in registered if r.type == tokens.JOB and r.parent == component), None)
        containers = (
            (((job.inputs.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")
            if job
            else None
        )
        out.append(
            {
                "namespace": cache.namespace,
                "model": cache.model,
                "claim": cache.claim,
                "size": cache.size,
                "storageClassName": cache.storage_class,
                "accessMode": "ReadWriteMany",
                "deployments": list(cache.deployments),
                "job": {"name": cache.claim, "image": plain((containers or [{}])[0].get("image"))} if job else None,
            }
        )
    return out


def deployments_json(registered: Sequence[Registration]) -> list[dict[str, Any]]:
    """Each ModelDeployment as registered: its target, claim requests, the pod it asks for and its groups."""
    out = []
    # A published deployment's endpoint, as its ModelService registered it: each deployment of a split has it.
    endpoints = {
        (r.inputs.get("cluster"), backend): plain(dict(r.inputs))
        for r in registered
        if r.type == tokens.MODEL_SERVICE
        for backend in [b.get("deployment") for b in plain(r.inputs.get("backends") or [])]
        or [r.inputs.get("deployment")]
    }
    for comp in (r for r in registered if r.type == tokens.MODEL_DEPLOYMENT):
        # The workload's own objects; its picker's (`components.features.picker`) are shown apart.
        own = [r for r in registered if r.parent == comp.name]
        picker = {r.type.rsplit(":", 1)[-1]: r.inputs for r in own if r.name.startswith(f"{comp.name}-picker")}
        # With a floor, the replicas above it run in a second Deployment on the spot pool.
        spot = next((r.inputs for r in own if r.name == f"{comp.name}-spot-deployment"), None)
        children = {
            r.type.rsplit(":", 1)[-1]: r.inputs
            for r in own
            if not r.name.startswith(f"{comp.name}-picker") and r.name != f"{comp.name}-spot-deployment"
        }
        claim = children.get("ResourceClaimTemplate", {})
        requests = plain(claim.get("spec", {}).get("spec", {}).get("devices", {}).get("requests", []))
        # The workload that runs the replicas: a Deployment, or a LeaderWorkerSet of one group per
        # replica, whose pods (leader and workers alike) are the leader template's but for the launch.
        workload = children.get("Deployment") or children.get("LeaderWorkerSet") or {}
        spec = workload.get("spec") or {}
        group = spec.get("leaderWorkerTemplate") or {}
        pod = (group.get("leaderTemplate") or spec.get("template") or {}).get("spec", {})
        containers = pod.get("containers") or [{}]
        service = children.get("Service", {})
        replicas = plain(spec.get("replicas"))
        spot_replicas = plain((spot or {}).get("spec", {}).get("replicas")) if spot is not None else None
        if spot is not None:
            # The floor's count and the spot pool's; an autoscaled spot Deployment sets none.
            replicas = replicas + spot_replicas if spot_replicas is not None else None
        budget = plain((children.get("PodDisruptionBudget") or {}).get("spec") or {})
        out.append(
            {
                **plain(dict(comp.inputs)),
                "replicas": replicas,
                "spotReplicas": spot_replicas,
                "disruptionBudget": {k: budget[k] for k in ("minAvailable", "maxUnavailable") if k in budget} or None,
                "claims": requests,
                "resources": plain(containers[0].get("resources", {})),
                "nodeSelector": plain(pod.get("nodeSelector", {})),
                "tolerations": plain(pod.get("tolerations", [])),
                "service": (service.get("metadata") or {}).get("name"),
                "endpoint": endpoints.get((comp.inputs.get("cluster"), comp.inputs.get("name"))),
                "picker": picker_json(children.get("InferencePool"), picker.get("ConfigMap")),
                "groups": groups_json(
                    replicas,
                    children.get("ScaledObject"),
                    group.get("size"),
                    requests,
                    comp.inputs,
                    floor=int(plain(comp.inputs.get("floor")) or 0),
                ),
            }
        )
    return sorted(out, key=lambda d: (d.get("cluster") or "", d.get("name") or ""))


def fleet_services_json(registered: Sequence[Registration]) -> list[dict[str, Any]]:
    """Each fleet service as its FleetService registered it: serving cluster, URL, backends with their
    weights and tiers, the failover order, and the callers' keys as a count (never a key)."""
    out = [plain(dict(r.inputs)) for r in registered if r.type == tokens.FLEET_SERVICE]
    return sorted(out, key=lambda s: s.get("service") or "")


def picker_json(pool: Mapping[str, Any] | None, config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The deployment's InferencePool and what its picker scores by, as registered; None without one."""
    if pool is None:
        return None
    data = plain((config or {}).get("data") or {})
    loaded = yaml.safe_load(next(iter(data.values()), "") or "{}") or {}
    [profile, *_] = loaded.get("schedulingProfiles") or [{}]
    return {
        "pool": plain(pool.get("metadata", {})).get("name"),
        "failureMode": plain(pool.get("spec", {})).get("endpointPickerRef", {}).get("failureMode"),
        "scorers": {p["pluginRef"]: p["weight"] for p in profile.get("plugins", []) if "weight" in p},
        "queue": (loaded.get("flowControl") or {}).get("defaultRequestTTL"),
    }


def groups_json(
    replicas: Any,
    scaled: Mapping[str, Any] | None,
    size: Any,
    requests: Sequence[Mapping[str, Any]],
    inputs: Mapping[str, Any],
    floor: int = 0,
) -> dict[str, Any]:
    """A deployment's replicas as the groups of nodes they run on, as registered.

    `count` is the groups at most: the workload's `replicas`, or an autoscaled one's
    `maxReplicaCount` (the ScaledObject's, plus the `floor` its spot Deployment leaves out), which
    is what the pool must hold; `minCount` the fewest.
    A group is one node of one pod for a Deployment, `size` nodes of one pod each for a
    LeaderWorkerSet; every pod claims the claim template's requests (`devicesPerPod`), so a group
    claims `nodes` times as many (`devicesPerGroup`, by device class).
    """
    bounds = (scaled or {}).get("spec") or {}
    most = plain(bounds.get("maxReplicaCount", replicas))
    fewest = plain(bounds.get("minReplicaCount", replicas))
    if scaled is not None and floor:
        # A ScaledObject of a deployment with a floor scales the spot pool's Deployment alone.
        most, fewest = most + floor, fewest + floor
    nodes = int(plain(size)) if size is not None else 1
    per_pod = []
    for r in requests:
        exactly = r.get("exactly") or {}
        capacity = exactly.get("capacity", {}).get("requests")
        per_pod.append(
            {
                "name": r.get("name"),
                "deviceClassName": exactly.get("deviceClassName"),
                # An omitted count is the API's default, one device (`ExactDeviceRequest.count`).
                "count": int(exactly.get("count") or 1),
                **({"capacity": capacity} if capacity else {}),
            }
        )
    per_group: dict[str, int] = {}
    for d in per_pod:
        per_group[d["deviceClassName"]] = per_group.get(d["deviceClassName"], 0) + d["count"] * nodes
    return {
        "count": most,
        "minCount": fewest,
        "nodes": nodes,
        # One pod per node: the leader and `nodes - 1` workers (`components.features.multinode`).
        "podsPerGroup": nodes,
        "devicesPerPod": per_pod,
        "devicesPerGroup": per_group,
        "fabric": inputs.get("fabric"),
    }


SECRET, UNKNOWN = "[secret]", "[unknown]"


def engine_view(value: Any) -> Any:
    """An input as the engine sees it: a secret is `[secret]`, a value not known before create `[unknown]`.

    The monitor hands secrets over wrapped (`rpc.wrap_rpc_secret`) and unknowns as `Unknown`
    (`pulumi.output.Unknown`) or the `rpc.UNKNOWN` sentinel, whatever the value underneath; nothing under a secret is shown.
    """
    if isinstance(value, Mapping):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return SECRET
        return {str(k): engine_view(v) for k, v in value.items()}
    if isinstance(value, Unknown) or (isinstance(value, str) and value == rpc.UNKNOWN):
        return UNKNOWN
    if isinstance(value, list | tuple):
        return [engine_view(v) for v in value]
    if isinstance(value, pulumi.Resource):
        return f"[resource {type(value).__name__}]"
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def resources_json(registered: Sequence[Registration]) -> list[dict[str, Any]]:
    # Registration order depends on when outputs resolve; sort so plans compare and diff stably.
    # The URN is what `--against` matches resources by; `protect` is what `up` would refuse to delete.
    rows = [
        {
            "type": r.type,
            "name": r.name,
            "parent": r.parent,
            "urn": r.urn,
            "protect": r.protect,
            # What `up` imports instead of creating (the `import_` option), only where set.
            **({"import": r.import_id} if r.import_id else {}),
            "inputs": engine_view(dict(r.inputs)),
        }
        for r in registered
    ]
    return sorted(rows, key=lambda r: (r["parent"] or "", r["name"], r["type"]))


def cost_hook(ctx: PlanContext) -> None:
    """The plan's `cost` sections: per pool, per cluster (`null` for Existing) and for the stack."""
    costs: list[ClusterCost] = []
    for facts, cluster in zip(ctx.facts, ctx.doc["clusters"], strict=True):
        cost = facts_cost(facts)
        # Pools keep the shape the plan document gives them; their costs sit under the cluster's
        # `cost.pools`, by name, and each pool says what its price is (`priceBasis`; None on
        # Existing, whose hardware the owner pays for).
        cluster["cost"] = cluster_cost_json(cost) if cost is not None else None
        basis = {p.size.name: p.price_basis for p in cost.pools} if cost is not None else {}
        for pool in cluster["pools"]:
            pool["priceBasis"] = basis.get(pool["name"])
        if cost is not None:
            costs.append(cost)
    total = total_json(costs)
    budget = ctx.stack.fleet.budget
    if budget is not None:
        at_max = sum((monthly(c.hourly_at_max) for c in costs), Decimal(0))
        unpriced = sorted({u for c in costs for u in c.unpriced})
        total["budget"] = {
            "monthly": money(budget.monthly_usd),
            "overBudget": over_budget(at_max, budget.monthly_usd, unpriced),
        }
    else:
        total["budget"] = None
    ctx.doc["cost"] = total


# The placement audit (`tooling.placement`): adds `placement`; its violations fail the plan.
# The cost (`infra.cost`): adds `cost` per pool, per cluster and for the stack.
HOOKS: list[PlanHook] = [placement_hook, cost_hook]


def refused(doc: dict[str, Any], issues: Sequence[ConfigIssue]) -> dict[str, Any]:
    """`doc` for a stack refused before its program runs: not ok, with `issues` as its errors."""
    doc["ok"] = False
    doc["errors"] = [{"path": i.path, "message": i.message} for i in issues]
    return doc


def plan_stack(
    path: Path, display: str | None = None, mode: str = "preview", pack_config: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The plan document for one stack file, planned in `mode` (see `MODES`), the pack configured by
    `pack_config` (as `--policy-pack-config` takes it). Never raises for bad input."""
    if mode not in MODES:
        raise ValueError(f"unknown plan mode '{mode}' (use one of {', '.join(MODES)})")
    preview = mode == "preview"
    file = display or str(path)
    try:
        stack_name = stack_name_of(path)
    except ConfigError:
        stack_name = path.stem
    doc = empty_doc(stack_name, mode)
    try:
        stack = load_stack_file(path, display=file)
    except ConfigError as err:
        return refused(doc, err.issues)
    too_big = config_size_issue(stack)
    if too_big is not None:
        return refused(doc, [too_big])

    # The guard's verdict stops the program before it registers anything, so the pack never runs
    # and it is reported from here, all of it at once: mandatory violations with every other
    # violation beside them, and the clouds' own rules and schedulability as errors where they are. Advisory violations of a fleet that runs come
    # from the pack (below).
    checked = stack.checked
    violations, facts = checked.stopping_violations, checked.facts
    doc["violations"] = [
        {"policy": v.policy, "enforcement": v.enforcement, "message": v.message, "resource": v.resource}
        for v in (checked.violations if violations else [])
    ]
    if checked.issues:
        return refused(doc, checked.issues)
    config, secret_keys = config_of(stack)
    checked_for_program = program_view(stack)
    result = run_under_mocks(lambda: deploy(checked_for_program), stack.stack, config, secret_keys, preview=preview)
    verdicts: list[PackViolation] = []
    if result.error is None:
        try:
            verdicts = run_policy_pack(
                result.resources,
                stack.stack,
                config=pack_config,
                dry_run=preview,
                root=result.stack,
                stack_config=config,
                secret_keys=secret_keys,
            )
        except PolicyPackError as err:
            doc["errors"].append({"path": "", "message": str(err)})
    if result.error is not None and not (violations and isinstance(result.error, pulumi.RunError)):
        doc["errors"].append({"path": "", "message": f"the program failed: {result.error}"})
    doc["clusters"] = [cluster_json(f, result.resources) for f in facts]
    doc["resources"] = resources_json(result.resources)
    doc["deployments"] = deployments_json(result.resources)
    fleet_services = fleet_services_json(result.resources)
    if fleet_services:
        doc["fleetServices"] = fleet_services
    ctx = PlanContext(stack=stack, facts=facts, run=result, doc=doc)
    if result.error is None:
        for hook in HOOKS:
            hook(ctx)
        doc["violations"] += [
            {"policy": v.policy, "enforcement": v.enforcement, "message": v.message, "resource": v.resource}
            for v in verdicts
        ]
    doc["ok"] = not doc["errors"] and not any(v["enforcement"] == "mandatory" for v in doc["violations"])
    return doc


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"
