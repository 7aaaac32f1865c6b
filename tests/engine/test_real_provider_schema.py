"""The real provider the cluster tier runs (v4.25.0) takes every input the program sets.

The Go module proxy serves pulumi-kubernetes's provider module only at the commit of v4.25.0
(engine/kubernetes/go.mod), while the SDK we lock is 4.34.2. The tier runs that build under the
SDK (tests/engine/harness.py, `install_plugins`). This holds the choice to evidence: every
Kubernetes input of every committed stack's golden plan is a property the v4.25.0 schema declares
for its resource (recursing through its types), and the resource types it lacks are exactly the
ones the provider applies by the server's discovery instead (its schema predates them).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pulumi_kubernetes as k8s

from tests.engine.harness import ROOT
from tests.engine.kube import module_dir

GOLDEN = ROOT / "tests" / "golden"
PROVIDER = "pulumi:providers:kubernetes"
# Types the program creates that v4.25.0's schema (built against Kubernetes 1.33) does not have:
# resource.k8s.io/v1 is Kubernetes 1.34's, and the Gateway API, LeaderWorkerSet, KEDA and
# Prometheus operator kinds are CRDs. The provider applies a type it has no schema for as the
# server's discovery describes it (a trial created both DRA kinds this way, and the cluster tier
# creates the PodMonitors and ScaledObject of the demo stack so).
BY_DISCOVERY = {
    "kubernetes:keda.sh/v1alpha1:ScaledObject",
    "kubernetes:monitoring.coreos.com/v1:PodMonitor",
    "kubernetes:resource.k8s.io/v1:DeviceClass",
    "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate",
    "kubernetes:gateway.networking.k8s.io/v1:GatewayClass",
    "kubernetes:gateway.networking.k8s.io/v1:Gateway",
    "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
    "kubernetes:inference.networking.k8s.io/v1:InferencePool",
    "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyExtensionPolicy",
    "kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy",
    "kubernetes:gateway.envoyproxy.io/v1alpha1:Backend",
    "kubernetes:gateway.envoyproxy.io/v1alpha1:HTTPRouteFilter",
    "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy",
    "kubernetes:cert-manager.io/v1:Certificate",
}
# Inputs the 4.34.2 SDK has and v4.25.0's schema does not (read from both): the program must set
# none of them, or the older provider would ignore what the user asked for.
NEWER_THAN_PROVIDER = {
    "kubernetes:helm.sh/v3:Release": {"takeOwnership"},
    PROVIDER: {"alwaysRender", "enablePatchForce", "upsertExistingObjects"},
}


@functools.cache
def schema() -> dict[str, Any]:
    folder = (
        module_dir("github.com/pulumi/pulumi-kubernetes/provider/v4", "kubernetes")
        / "cmd"
        / "pulumi-resource-kubernetes"
    )
    return dict(json.loads((folder / "schema.json").read_text()))


def golden_resources() -> Iterator[tuple[str, dict[str, Any]]]:
    for plan in sorted(GOLDEN.glob("*.json")):
        for resource in json.loads(plan.read_text())["resources"]:
            if resource["type"].startswith("kubernetes:") or resource["type"] == PROVIDER:
                yield plan.stem, resource


def unknown_paths(value: Any, spec: Mapping[str, Any], path: str) -> Iterator[str]:
    """Every key under `value` that `spec` (a schema property or type) does not declare."""
    if "$ref" in spec and spec["$ref"].startswith("#/types/"):
        spec = schema()["types"][spec["$ref"][len("#/types/") :]]
    if isinstance(value, dict) and "properties" in spec:
        for key, item in value.items():
            if key not in spec["properties"]:
                yield f"{path}.{key}"
            else:
                yield from unknown_paths(item, spec["properties"][key], f"{path}.{key}")
    elif isinstance(value, list) and "items" in spec:
        for i, item in enumerate(value):
            yield from unknown_paths(item, spec["items"], f"{path}[{i}]")
    elif isinstance(value, dict) and isinstance(spec.get("additionalProperties"), dict):
        for key, item in value.items():
            yield from unknown_paths(item, spec["additionalProperties"], f"{path}.{key}")


def inputs_spec(type_: str) -> Mapping[str, Any]:
    if type_ == PROVIDER:
        return {"properties": schema()["provider"]["inputProperties"]}
    return {"properties": schema()["resources"][type_]["inputProperties"]}


def test_every_input_of_every_golden_plan_is_in_the_schema_of_the_provider_the_tier_runs() -> None:
    checked, unknown = 0, []
    for stack, resource in golden_resources():
        if resource["type"] in BY_DISCOVERY:
            continue
        inputs = {k: v for k, v in resource["inputs"].items() if k not in ("apiVersion", "kind")}
        unknown += [f"{stack}: {resource['name']}{p}" for p in unknown_paths(inputs, inputs_spec(resource["type"]), "")]
        checked += 1
    assert checked > 100
    assert unknown == []


def test_the_types_it_lacks_are_exactly_those_it_applies_by_discovery() -> None:
    used = {r["type"] for _, r in golden_resources()}
    lacking = {t for t in used if t != PROVIDER and t not in schema()["resources"]}
    assert lacking == BY_DISCOVERY


def sdk_inputs(args: type) -> set[str]:
    """The camelCase inputs an SDK Args class declares (its `pulumi.getter(name=...)` properties)."""
    names = set()
    for attr in vars(args).values():
        getter = getattr(attr, "fget", None)
        name = getattr(getter, "_pulumi_name", None)
        if name:
            names.add(name)
    return names


def test_what_the_locked_sdk_adds_over_the_provider_is_known_and_never_set() -> None:
    sdk = {
        "kubernetes:helm.sh/v3:Release": sdk_inputs(k8s.helm.v3.ReleaseArgs),
        PROVIDER: sdk_inputs(k8s.ProviderArgs),
    }
    for type_, names in sdk.items():
        assert names - set(inputs_spec(type_)["properties"]) == NEWER_THAN_PROVIDER[type_]
    for stack, resource in golden_resources():
        assert not set(resource["inputs"]) & NEWER_THAN_PROVIDER.get(resource["type"], set()), stack
