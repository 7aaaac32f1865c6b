"""The offline plan: run the real program under Pulumi's mock runtime and report what it would do.

`plan_stack` loads one stack file, evaluates the device rules, runs `infra.program.run` under the
mock runtime with the stack's config, runs the policy pack over what the program registered, and
returns the SPEC 9 JSON document. It previews as the engine does (`infra.tooling.mockrun`): by
default a first preview (`mode="preview"`: nothing exists, cloud-computed values unknown, the
Kubernetes objects of a cluster not yet created with no properties, the pack told it is a dry
run), or with `mode="update"` an update of a stack whose resources all exist. Pools come from the same derived facts the components were given;
releases are read back from what the ServingStack actually registered (values included).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from components.catalog import Component
from infra.config import ConfigError, StackConfig, load_stack_file, stack_name_of
from infra.devices import check_fleet
from infra.facts import ClusterFacts, derive_fleet
from infra.program import run
from infra.tooling.analyzer import PackViolation, PolicyPackError, run_policy_pack
from infra.tooling.mockrun import MockRun, Registration, run_under_mocks
from infra.tooling.placement import placement_hook
from infra.tooling.stackconfig import config_of

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
# How the plan runs the program: a first preview of a new stack, or an update of an existing one.
MODES = ("preview", "update")

# Extra plan sections added by later stages (deployments, placement, policy pack); each gets the
# stack, its facts and the mock run, and returns (key, value, violations or errors it found).
PlanHook = Callable[["PlanContext"], None]


@dataclass
class PlanContext:
    stack: StackConfig
    facts: list[ClusterFacts]
    run: MockRun
    doc: dict[str, Any]


def plain(value: Any) -> Any:
    """Registered inputs as JSON: integral floats (the engine's numbers) back to ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def empty_doc(stack: str) -> dict[str, Any]:
    return {
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
    by_name = {r.name: r for r in registered if r.type == RELEASE_TYPE and r.parent == stack_name}
    components: dict[str, Component] = {c.key: c for c in facts.components}
    out = []
    for component in facts.components:
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
                "namespace": inputs.get("namespace", component.namespace),
                "draDrivers": sorted(component.dra_drivers),
                "dependsOn": [components[d].release for d in component.depends_on if d in components],
                "values": plain(inputs.get("values") or {}),
            }
        )
    return out


def cluster_json(facts: ClusterFacts, registered: Sequence[Registration]) -> dict[str, Any]:
    return {
        "name": facts.name,
        "source": facts.source,
        "draDrivers": list(facts.dra_drivers),
        "supportedDrivers": list(facts.supported_drivers),
        "pools": [p.as_json() for p in facts.pools],
        "releases": releases_of(facts, registered),
        "schedulablePools": plain(facts.schedulable_pools()),
    }


DEPLOYMENT_TYPE = "modelplane:deploy:ModelDeployment"


def deployments_json(registered: Sequence[Registration]) -> list[dict[str, Any]]:
    """Each ModelDeployment as registered: its target, claim requests and the pod it asks for."""
    out = []
    for comp in (r for r in registered if r.type == DEPLOYMENT_TYPE):
        children = {r.type.rsplit(":", 1)[-1]: r.inputs for r in registered if r.parent == comp.name}
        claim = children.get("ResourceClaimTemplate", {})
        deployment = children.get("Deployment", {})
        pod = (deployment.get("spec") or {}).get("template", {}).get("spec", {})
        containers = pod.get("containers") or [{}]
        service = children.get("Service", {})
        out.append(
            {
                **plain(dict(comp.inputs)),
                "replicas": plain((deployment.get("spec") or {}).get("replicas")),
                "claims": plain(claim.get("spec", {}).get("spec", {}).get("devices", {}).get("requests", [])),
                "resources": plain(containers[0].get("resources", {})),
                "nodeSelector": plain(pod.get("nodeSelector", {})),
                "tolerations": plain(pod.get("tolerations", [])),
                "service": (service.get("metadata") or {}).get("name"),
            }
        )
    return sorted(out, key=lambda d: (d.get("cluster") or "", d.get("name") or ""))


def resources_json(registered: Sequence[Registration]) -> list[dict[str, Any]]:
    # Registration order depends on when outputs resolve; sort so plans compare and diff stably.
    rows = [{"type": r.type, "name": r.name, "parent": r.parent} for r in registered]
    return sorted(rows, key=lambda r: (r["parent"] or "", r["name"], r["type"]))


# The placement audit (`infra.tooling.placement`): adds `placement`; its violations fail the plan.
HOOKS: list[PlanHook] = [placement_hook]


def plan_stack(path: Path, display: str | None = None, mode: str = "preview") -> dict[str, Any]:
    """The SPEC 9 document for one stack file, planned in `mode` (see `MODES`). Never raises for bad input."""
    if mode not in MODES:
        raise ValueError(f"unknown plan mode '{mode}' (use one of {', '.join(MODES)})")
    preview = mode == "preview"
    file = display or str(path)
    try:
        stack_name = stack_name_of(path)
    except ConfigError:
        stack_name = path.stem
    doc = empty_doc(stack_name)
    try:
        stack = load_stack_file(path, display=file)
    except ConfigError as err:
        doc["ok"] = False
        doc["errors"] = [{"path": i.path, "message": i.message} for i in err.issues]
        return doc

    violations = check_fleet(stack.fleet)
    doc["violations"] = [
        {"policy": v.policy, "enforcement": "mandatory", "message": v.message, "resource": v.resource}
        for v in violations
    ]
    facts = derive_fleet(stack.fleet)
    config, secret_keys = config_of(stack)
    result = run_under_mocks(run, stack.stack, config, secret_keys, preview=preview)
    verdicts: list[PackViolation] = []
    if result.error is None:
        try:
            verdicts = run_policy_pack(
                result.resources,
                stack.stack,
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
