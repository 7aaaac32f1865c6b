"""Every Kubernetes object the program registers itself (not through Helm) is valid for the
cluster's Kubernetes version, checked against the official OpenAPI schema (strict: unknown fields
are errors) with `kubernetes_validate`.

Objects of CRDs (Gateway API, cert-manager, LWS, KEDA's ScaledObject, the Prometheus operator's
PodMonitor) are checked with `jsonschema` against the CRD's own
`openAPIV3Schema`, from the CRDs the serving stack's charts install (`tests/schemas/crds.json`,
each entry naming the chart file it was taken from), made strict the same way: an object schema
that lists properties admits no others. What a structural schema cannot express (CEL
`x-kubernetes-validations`, `metadata`, which CRDs leave to the API server) is not checked there.

Registered inputs are turned back into manifests: apiVersion from the type token, numbers that
the engine sent as floats back to ints.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from pulumi.runtime import rpc

from infra.config.model import InferenceCluster
from infra.config.stackfile import load_stack_file
from infra.serving.catalog import CATALOG
from infra.serving.picker import VERSION as PICKER_VERSION
from program.main import run
from tests.conftest import cpu_class, run_fleet
from tooling.mockrun import MockRun, Registration, run_under_mocks
from tooling.plan import plain
from tooling.stackconfig import config_of

ROOT = Path(__file__).resolve().parent.parent
# Objects Helm installs are the charts' business; providers are not Kubernetes objects.
NOT_OBJECTS = ("kubernetes:helm.sh/", "pulumi:providers:")
# An Existing cluster states no version; resource.k8s.io/v1 (DRA GA) needs at least 1.34.
EXISTING_MINIMUM = "1.34"
RECIPES = ("recipe-qwen-mi325x", "recipe-qwen-cpu-civo")
CRD_SCHEMAS = ROOT / "tests" / "schemas" / "crds.json"
# The Gateway API bundle in Envoy Gateway's chart (charts/gateway-helm/charts/crds): v1.5.1,
# experimental channel, at tag v1.8.3 and unchanged on the release/v1.8 branch after it; the
# pinned v1.8.4 is a patch release of that branch (its own tag was not checked).
GATEWAY_API_BUNDLE = "v1.5.1"


def strict(schema: Any) -> Any:
    """A CRD schema in which an object that lists its properties admits no others."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: strict(v) if k in ("items", "additionalProperties", "allOf", "anyOf", "oneOf", "not") else v
        for k, v in schema.items()
    }
    if "properties" in schema:
        out["properties"] = {k: strict(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    return out


@cache
def crd_schemas() -> dict[str, Any]:
    raw = json.loads(CRD_SCHEMAS.read_text(encoding="utf-8"))
    return {key: strict(entry["openAPIV3Schema"]) for key, entry in raw.items()}


def validate_custom(obj: dict[str, Any]) -> None:
    """Validate an object of a CRD kind; raises jsonschema.ValidationError."""
    schema = crd_schemas()[f"{obj['apiVersion']}/{obj['kind']}"]
    jsonschema.Draft7Validator(schema).validate(obj)


def kubernetes_version(cluster: InferenceCluster) -> str:
    """major.minor of a cluster's version as each cloud spells it (`1.35`, `1.34.1-k3s1`, `v1.36.1+3`)."""
    block = cluster.block
    version = getattr(block, "kubernetes_version", None)
    if version is None:
        return EXISTING_MINIMUM
    found = re.match(r"v?(\d+)\.(\d+)", version)
    assert found, version
    return f"{found[1]}.{found[2]}"


def api_version(type_token: str) -> tuple[str, str]:
    """`kubernetes:apps/v1:Deployment` -> (`apps/v1`, `Deployment`); the core group has no prefix."""
    _, group_version, kind = type_token.split(":")
    return group_version.removeprefix("core/"), kind


def revealed(value: Any) -> Any:
    """A registered value as the provider receives it: a secret's value in place of its wrapper
    (`rpc.wrap_rpc_secret`; the engine hands the provider the plaintext and keeps the mark)."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return revealed(value["value"])
        return {k: revealed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [revealed(v) for v in value]
    return value


def manifest(reg: Registration) -> dict[str, Any]:
    api, kind = api_version(reg.type)
    body = revealed(plain(dict(reg.inputs)))
    assert body.get("apiVersion", api) == api and body.get("kind", kind) == kind
    return {**body, "apiVersion": api, "kind": kind}


def kubernetes_objects(result: MockRun) -> list[Registration]:
    assert result.error is None, result.error
    return [
        r
        for r in result.resources
        if r.custom and r.type.startswith("kubernetes:") and not r.type.startswith(NOT_OBJECTS)
    ]


def cluster_of(reg: Registration, by_name: dict[str, Registration], clusters: set[str]) -> str:
    """The cluster a registered object belongs to: the cluster component among its ancestors."""
    current: Registration | None = reg
    while current is not None:
        if current.name in clusters and not current.custom:
            return current.name
        current = by_name.get(current.parent) if current.parent else None
    raise AssertionError(f"{reg.name} has no cluster component above it")


def assert_valid(result: MockRun, versions: dict[str, str]) -> list[str]:
    """Validate every object against its cluster's version; the kinds validated."""
    by_name = {r.name: r for r in result.resources}
    kinds = []
    for reg in kubernetes_objects(result):
        version = versions[cluster_of(reg, by_name, set(versions))]
        obj = manifest(reg)
        if f"{obj['apiVersion']}/{obj['kind']}" in crd_schemas():
            try:
                validate_custom(obj)
            except jsonschema.ValidationError as err:
                pytest.fail(f"{reg.type} {reg.name} does not match its CRD: {err.message} at {list(err.path)}")
        else:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{reg.type} {reg.name} is not a valid {version} object: {err.message} at {list(err.path)}")
        kinds.append(obj["kind"])
    return kinds


@pytest.mark.parametrize("path", sorted((ROOT / "stacks").glob("Pulumi.*.yaml")), ids=lambda p: p.name)
def test_objects_of_committed_stack_validate_against_the_cluster_version(path: Path) -> None:
    loaded = load_stack_file(path)
    config, secret_keys = config_of(loaded)
    result = run_under_mocks(run, loaded.stack, config, secret_keys)
    kinds = assert_valid(result, {c.name: kubernetes_version(c) for c in loaded.fleet.clusters})
    if loaded.fleet.deployments:
        assert {"ResourceClaimTemplate", "Service", "Namespace"} <= set(kinds)
    # A replica of one node is a Deployment, one of several a LeaderWorkerSet (validated against its CRD).
    if any(d.nodes == 1 for d in loaded.fleet.deployments):
        assert "Deployment" in kinds
    if any(d.nodes > 1 for d in loaded.fleet.deployments):
        assert "LeaderWorkerSet" in kinds
    if loaded.fleet.services:
        assert {"GatewayClass", "Gateway", "HTTPRoute"} <= set(kinds)


def test_recipe_stacks_are_committed() -> None:
    for stack in RECIPES:
        assert (ROOT / "stacks" / f"Pulumi.{stack}.yaml").exists()


def test_cpu_deployment_objects_validate_on_existing() -> None:
    raw = {
        "classes": [cpu_class("cpu", None)],
        "clusters": [
            {
                "name": "lab",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "taints": [{"key": "team", "value": "", "effect": "NoExecute"}],
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
        "deployments": [
            {
                "name": "qwen",
                "cluster": "lab",
                "pool": "cpu",
                "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
                "replicas": 2,
                "devices": [{"name": "cpu"}],
            }
        ],
    }
    kinds = assert_valid(run_fleet(raw), {"lab": EXISTING_MINIMUM})
    # Beside the deployment's objects, the serving stack's two dashboards and the collector's
    # PodMonitor (tests/test_dashboards.py).
    assert sorted(kinds) == [
        "ConfigMap",
        "ConfigMap",
        "Deployment",
        "PodDisruptionBudget",
        "PodMonitor",
        "PodMonitor",
        "ResourceClaimTemplate",
        "Service",
    ]


def test_strict_validation_rejects_an_unknown_field() -> None:
    """The check has teeth: a misspelt field fails strict validation."""
    bad = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "x"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClass": "gpu.amd.com"}}]}}},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, EXISTING_MINIMUM, strict=True)


@pytest.mark.parametrize(("spelled", "expected"), [("1.35", "1.35"), ("1.34.1-k3s1", "1.34"), ("v1.36.1+3", "1.36")])
def test_cluster_versions_are_read_as_each_cloud_spells_them(spelled: str, expected: str) -> None:
    cluster = InferenceCluster.model_validate(
        {
            "name": "c",
            "source": "Civo",
            "civo": {"region": "LON1", "kubernetesVersion": spelled},
            "nodePools": [{"name": "p", "className": "x"}],
        }
    )
    assert kubernetes_version(cluster) == expected


def test_crd_schemas_are_the_ones_the_stacks_charts_ship() -> None:
    raw = json.loads(CRD_SCHEMAS.read_text(encoding="utf-8"))
    assert sorted(raw) == [
        "cert-manager.io/v1/Certificate",
        "gateway.envoyproxy.io/v1alpha1/Backend",
        "gateway.envoyproxy.io/v1alpha1/BackendTrafficPolicy",
        "gateway.envoyproxy.io/v1alpha1/EnvoyExtensionPolicy",
        "gateway.envoyproxy.io/v1alpha1/HTTPRouteFilter",
        "gateway.envoyproxy.io/v1alpha1/SecurityPolicy",
        "gateway.networking.k8s.io/v1/Gateway",
        "gateway.networking.k8s.io/v1/GatewayClass",
        "gateway.networking.k8s.io/v1/HTTPRoute",
        "inference.networking.k8s.io/v1/InferencePool",
        "keda.sh/v1alpha1/ScaledObject",
        "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet",
        "monitoring.coreos.com/v1/PodMonitor",
    ]
    for key, entry in raw.items():
        if key.startswith("gateway.networking.k8s.io/"):
            assert f"Gateway API {GATEWAY_API_BUNDLE}" in entry["source"]
        elif key.startswith("leaderworkerset.x-k8s.io/"):
            assert f"kubernetes-sigs/lws/blob/v{lws_chart_version()}/" in entry["source"]
        elif key.startswith("gateway.envoyproxy.io/"):
            assert "envoyproxy/gateway/blob/v1.8.3/charts/gateway-helm/" in entry["source"]
        elif key.startswith("inference.networking.k8s.io/"):
            assert f"gateway-api-inference-extension/blob/{PICKER_VERSION}/" in entry["source"]
        elif key.startswith("keda.sh/"):
            assert f"kedacore/keda/blob/v{chart_version('keda')}/" in entry["source"]
        elif key.startswith("monitoring.coreos.com/"):
            assert f"kube-prometheus-stack-{chart_version('kube-prometheus-stack')}/" in entry["source"]
        else:
            assert "cert-manager/blob/v1.20.2/" in entry["source"]


def chart_version(chart: str) -> str:
    return next(c.version for rows in CATALOG.values() for c in rows if c.chart == chart).lstrip("v")


def lws_chart_version() -> str:
    """The lws chart the serving stack installs; the schema must come from that tag."""
    return next(c.version for rows in CATALOG.values() for c in rows if c.chart == "lws").lstrip("v")


def test_tls_service_and_claim_cache_objects_validate() -> None:
    from tests.test_model_service import served_fleet

    raw = served_fleet("GKE", cache={"size": "50Gi"})
    raw["services"] = [
        {"name": "qwen", "deployment": "qwen", "host": "qwen.example.com", "tls": {"issuerRef": {"name": "le"}}}
    ]
    kinds = assert_valid(run_fleet(raw), {"c": "1.35"})
    assert {"GatewayClass", "Gateway", "HTTPRoute", "Certificate", "PersistentVolumeClaim"} <= set(kinds)


def test_node_local_cache_and_path_route_objects_validate_on_existing() -> None:
    from tests.test_model_service import served_fleet

    raw = served_fleet("Existing", cache={"volume": "NodeLocal"}, port=9000)
    kinds = assert_valid(run_fleet(raw), {"c": EXISTING_MINIMUM})
    assert {"GatewayClass", "Gateway", "HTTPRoute", "Deployment", "Service"} <= set(kinds)


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        (
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "HTTPRoute",
                "metadata": {"name": "r"},
                "spec": {"parentRefs": [{"name": "g"}], "rules": [{"backendRef": [{"name": "s", "port": 80}]}]},
            },
            "misspelt backendRefs",
        ),
        (
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "Gateway",
                "metadata": {"name": "g"},
                "spec": {"gatewayClassName": "c", "listeners": [{"name": "http", "protocol": "HTTP", "port": 70000}]},
            },
            "port out of range",
        ),
        (
            {
                "apiVersion": "cert-manager.io/v1",
                "kind": "Certificate",
                "metadata": {"name": "c"},
                "spec": {"dnsNames": ["a.example.com"], "issuerRef": {"name": "le"}},
            },
            "no secretName",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_crd_validation_rejects_bad_objects(obj: dict[str, Any], why: str) -> None:
    """The CRD check has teeth: unknown fields, bounds and required fields fail."""
    with pytest.raises(jsonschema.ValidationError):
        validate_custom(obj)
