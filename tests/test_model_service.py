"""Serving a deployed model: its port, memory and cache, and its route through the cluster's Envoy
Gateway (`modelplane:services[]`), on every cloud, with the config errors that stop a run first."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from clouds import SOURCES
from infra.config.issues import ConfigError
from infra.config.stackfile import parse_fleet
from tests.conftest import CLUSTER_BLOCKS, GPU_BLOCKS, cpu_class, gpu_class, of_type, run_fleet
from tooling.mockrun import MockRun, Registration

GATEWAY_CLASS = "kubernetes:gateway.networking.k8s.io/v1:GatewayClass"
GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
HTTP_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
CERTIFICATE = "kubernetes:cert-manager.io/v1:Certificate"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE = "kubernetes:core/v1:Service"
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
MODEL_SERVICE = "modelplane:serve:ModelService"


def served_fleet(source: str, **deployment: Any) -> dict[str, Any]:
    """One GPU pool on a `source` cluster, one deployment on it, published as service `qwen`."""
    if source == "Existing":
        cls = {
            "name": "gpu",
            "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}],
        }
        cluster = {"name": "c", "source": "Existing", "existing": {"kubernetesVersion": "1.36"}}
    else:
        # The class claims every GPU of its machine (OCI's bare-metal shape has 4).
        block = GPU_BLOCKS[source]
        cls = gpu_class("gpu", source, block, count=block["accelerator"]["count"])
        cluster = {"name": "c", "source": source, source.lower(): CLUSTER_BLOCKS[source]}
    cluster["nodePools"] = [{"name": "gpu", "className": "gpu"}]
    return {
        "classes": [cls],
        "clusters": [cluster],
        "deployments": [
            {
                "name": "qwen",
                "namespace": "ml-team",
                "cluster": "c",
                "pool": "gpu",
                "image": "vllm/vllm-openai:v0.23.0",
                "args": ["--model", "Qwen/Qwen2.5-0.5B-Instruct"],
                "memory": "12Gi",  # fits every cloud's GPU machine of GPU_BLOCKS (EKS g6.xlarge: 16 GiB)
                "devices": [{"name": "gpu"}],
                **deployment,
            }
        ],
        "services": [{"name": "qwen", "deployment": "qwen"}],
    }


def only(result: MockRun, type_token: str) -> Registration:
    """The one object of a type the deployment's workload registers (its picker's are apart: test_picker.py)."""
    assert result.error is None, result.error
    [found] = [r for r in of_type(result, type_token) if "-picker" not in r.name]
    return found


def engine(result: MockRun) -> dict[str, Any]:
    [container] = only(result, DEPLOYMENT).inputs["spec"]["template"]["spec"]["containers"]
    return dict(container)


def issues(raw: Mapping[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        parse_fleet(copy.deepcopy(dict(raw)), "Pulumi.test.yaml")
    return {i.path: f"{i.problem}. Fix: {i.fix}" for i in err.value.issues}


# --------------------------------------------------------------------------------------------
# Routing objects, per cloud


@pytest.mark.parametrize("source", SOURCES)
def test_service_gets_an_envoy_gateway_and_a_route_on_every_cloud(source: str) -> None:
    result = run_fleet(served_fleet(source))
    gateway_class = only(result, GATEWAY_CLASS).inputs
    assert gateway_class["metadata"] == {"name": "modelplane"}
    assert gateway_class["spec"] == {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}

    gateway = only(result, GATEWAY).inputs
    assert gateway["metadata"] == {"name": "modelplane", "namespace": "envoy-gateway-system"}
    assert gateway["spec"] == {
        "gatewayClassName": "modelplane",
        "listeners": [
            {
                "name": "http",
                "protocol": "HTTP",
                "port": 80.0,
                "allowedRoutes": {
                    "namespaces": {
                        "from": "Selector",
                        "selector": {
                            "matchExpressions": [
                                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml-team"]}
                            ]
                        },
                    }
                },
            }
        ],
    }

    route = only(result, HTTP_ROUTE).inputs
    assert route["metadata"]["name"] == "qwen" and route["metadata"]["namespace"] == "ml-team"
    assert route["spec"] == {
        "parentRefs": [
            {
                "group": "gateway.networking.k8s.io",
                "kind": "Gateway",
                "name": "modelplane",
                "namespace": "envoy-gateway-system",
                "sectionName": "http",
            }
        ],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": "/qwen"}}],
                "backendRefs": [{"name": "qwen", "port": 8000.0}],
                "timeouts": {"request": "0s"},
                "filters": [
                    {
                        "type": "URLRewrite",
                        "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
                    }
                ],
            }
        ],
    }
    assert of_type(result, CERTIFICATE) == []


def test_endpoint_is_registered_with_the_gateway_and_openai_base_url() -> None:
    endpoint = only(run_fleet(served_fleet("GKE")), MODEL_SERVICE).inputs
    assert dict(endpoint) == {
        "service": "qwen",
        "cluster": "c",
        "deployment": "qwen",
        "routing": "Picker",
        "backends": [{"deployment": "qwen", "weight": 1, "inferencePool": "qwen"}],
        "gateway": "envoy-gateway-system/modelplane",
        "scheme": "http",
        "path": "/qwen",
        "url": "http://{address}/qwen/v1",
    }


def test_route_waits_for_the_gateway_and_the_deployment() -> None:
    result = run_fleet(served_fleet("Civo"))
    component = only(result, MODEL_SERVICE)
    names = {r.urn: r.name for r in result.resources}
    # Depending on a component is depending on its children: the Gateway, and the Service it routes to.
    assert {"c-gateway-gateway", "c-qwen-service"} <= {names[u] for u in component.dependencies}


def test_cluster_without_services_gets_no_gateway() -> None:
    raw = served_fleet("Civo")
    raw["services"] = []
    result = run_fleet(raw)
    assert result.error is None, result.error
    assert of_type(result, GATEWAY) == [] and of_type(result, GATEWAY_CLASS) == [] and of_type(result, HTTP_ROUTE) == []


def test_tls_service_gets_an_https_listener_and_a_certificate_from_its_issuer() -> None:
    raw = served_fleet("AKS")
    raw["services"] = [
        {
            "name": "qwen",
            "deployment": "qwen",
            "host": "qwen.example.com",
            "tls": {"issuerRef": {"name": "letsencrypt"}},
        }
    ]
    result = run_fleet(raw)
    [listener] = only(result, GATEWAY).inputs["spec"]["listeners"]
    assert listener["name"] == "https-qwen"
    assert listener["protocol"] == "HTTPS" and listener["port"] == 443.0
    assert listener["hostname"] == "qwen.example.com"
    assert listener["tls"] == {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "qwen-tls"}]}

    cert = only(result, CERTIFICATE).inputs
    assert cert["metadata"] == {"name": "qwen-tls", "namespace": "envoy-gateway-system"}
    assert cert["spec"] == {
        "secretName": "qwen-tls",
        "dnsNames": ["qwen.example.com"],
        "issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"},
    }

    route = only(result, HTTP_ROUTE).inputs["spec"]
    assert route["hostnames"] == ["qwen.example.com"]
    assert route["parentRefs"][0]["sectionName"] == "https-qwen"
    # The host alone selects the service: the whole path goes to the engine unchanged.
    assert route["rules"][0]["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
    assert "filters" not in route["rules"][0]
    assert only(result, MODEL_SERVICE).inputs["url"] == "https://qwen.example.com/v1"


# --------------------------------------------------------------------------------------------
# One port


def test_configured_port_reaches_args_container_probes_service_and_route() -> None:
    result = run_fleet(served_fleet("GKE", port=9000))
    container = engine(result)
    assert container["args"] == ["--model", "Qwen/Qwen2.5-0.5B-Instruct", "--port", "9000"]
    assert container["ports"] == [{"name": "http", "containerPort": 9000.0}]
    assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert container["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    [svc_port] = only(result, SERVICE).inputs["spec"]["ports"]
    assert svc_port == {"name": "http", "port": 9000.0, "targetPort": "http", "protocol": "TCP"}
    assert only(result, HTTP_ROUTE).inputs["spec"]["rules"][0]["backendRefs"] == [{"name": "qwen", "port": 9000.0}]


@pytest.mark.parametrize(
    ("args", "index"),
    [(["--model", "m", "--port", "9000"], 2), (["--port=9000", "--model", "m"], 0)],
    ids=["separate", "equals"],
)
def test_args_setting_another_port_are_rejected_with_path_and_fix(args: list[str], index: int) -> None:
    found = issues(served_fleet("GKE", args=args))
    assert found == {
        f"deployments[0].args[{index}]": "args set '--port 9000' but the deployment's port is 8000. "
        "Fix: remove it from args and set deployments[0].port: 9000 "
        "(the container, probes, Service and route all follow port)"
    }


def test_args_repeating_the_configured_port_are_kept_once() -> None:
    container = engine(run_fleet(served_fleet("GKE", args=["--model", "m", "--port", "8000"])))
    assert container["args"] == ["--model", "m", "--port", "8000"]


# --------------------------------------------------------------------------------------------
# Memory, startup and the model cache


def test_gpu_engine_without_memory_is_rejected() -> None:
    raw = served_fleet("Vultr")
    del raw["deployments"][0]["memory"]
    found = issues(raw)
    assert list(found) == ["deployments[0].memory"]
    assert found["deployments[0].memory"].startswith(
        "deployment 'qwen' runs on GPU pool 'gpu' without a memory request"
    )


def test_cpu_engine_may_leave_memory_unset() -> None:
    raw = {
        "classes": [cpu_class("cpu", None)],
        "clusters": [
            {
                "name": "c",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
        "deployments": [
            {
                "name": "m",
                "cluster": "c",
                "pool": "cpu",
                "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
                "devices": [{"name": "cpu"}],
            }
        ],
    }
    resources = engine(run_fleet(raw))["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "6"}


def test_memory_not_above_shm_is_rejected() -> None:
    found = issues(served_fleet("GKE", memory="2Gi", shmSize="2Gi"))
    assert list(found) == ["deployments[0].memory"]


def test_engine_memory_is_requested_and_limited() -> None:
    resources = engine(run_fleet(served_fleet("GKE")))["resources"]
    assert resources["requests"] == resources["limits"] == {"memory": "12Gi"}


def test_startup_probe_allows_half_an_hour_by_default_and_follows_startup_seconds() -> None:
    probe = engine(run_fleet(served_fleet("GKE")))["startupProbe"]
    assert (probe["periodSeconds"], probe["failureThreshold"]) == (10.0, 180.0)
    probe = engine(run_fleet(served_fleet("GKE", startupSeconds=3605)))["startupProbe"]
    assert probe["failureThreshold"] == 361.0


@pytest.mark.parametrize(
    ("source", "storage_class"),
    [
        ("GKE", "standard-rwo"),
        ("AKS", "managed-csi"),
        ("Civo", "civo-volume"),
        ("Vultr", "vultr-block-storage"),
        ("OCI", "oci-bv"),
    ],
)
def test_claim_cache_uses_the_cloud_storage_class_and_is_mounted_at_the_hf_cache(
    source: str, storage_class: str
) -> None:
    result = run_fleet(served_fleet(source, cache={"size": "50Gi"}))
    claim = only(result, CLAIM).inputs
    assert claim["metadata"]["name"] == "qwen-cache" and claim["metadata"]["namespace"] == "ml-team"
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
        "resources": {"requests": {"storage": "50Gi"}},
    }
    pod = only(result, DEPLOYMENT).inputs["spec"]["template"]["spec"]
    assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": "qwen-cache"}} in pod["volumes"]
    assert {"name": "model-cache", "mountPath": "/root/.cache/huggingface"} in engine(result)["volumeMounts"]


def test_claim_cache_on_existing_leaves_the_cluster_default_class() -> None:
    claim = only(run_fleet(served_fleet("Existing", cache={"size": "50Gi"})), CLAIM).inputs
    assert "storageClassName" not in claim["spec"]


def test_claim_cache_on_eks_needs_a_storage_class() -> None:
    found = issues(served_fleet("EKS", cache={"size": "50Gi"}))
    assert list(found) == ["deployments[0].cache.storageClassName"]
    claim = only(run_fleet(served_fleet("EKS", cache={"size": "50Gi", "storageClassName": "gp3"})), CLAIM).inputs
    assert claim["spec"]["storageClassName"] == "gp3"


def test_node_local_cache_is_a_host_directory_at_the_hf_cache() -> None:
    result = run_fleet(served_fleet("Existing", cache={"volume": "NodeLocal"}, replicas=2))
    assert of_type(result, CLAIM) == []
    pod = only(result, DEPLOYMENT).inputs["spec"]["template"]["spec"]
    assert {
        "name": "model-cache",
        "hostPath": {"path": "/var/lib/modelplane/model-cache/ml-team/qwen", "type": "DirectoryOrCreate"},
    } in pod["volumes"]
    assert {"name": "model-cache", "mountPath": "/root/.cache/huggingface"} in engine(result)["volumeMounts"]


@pytest.mark.parametrize(
    ("cache", "replicas", "path"),
    [
        ({}, 1, "deployments[0].cache"),
        ({"volume": "NodeLocal", "size": "1Gi"}, 1, "deployments[0].cache"),
        ({"size": "50Gi"}, 2, "deployments[0].cache.volume"),
    ],
    ids=["claim-without-size", "node-local-with-size", "claim-for-two-replicas"],
)
def test_bad_cache_is_rejected_with_its_path(cache: dict[str, Any], replicas: int, path: str) -> None:
    assert list(issues(served_fleet("GKE", cache=cache, replicas=replicas))) == [path]


# --------------------------------------------------------------------------------------------
# Service config errors


def test_service_of_an_unknown_deployment_is_rejected() -> None:
    raw = served_fleet("GKE")
    raw["services"] = [{"name": "qwen", "deployment": "llama"}]
    assert issues(raw) == {"services[0].deployment": "no deployment 'llama'. Fix: use one of: qwen"}


def test_tls_without_host_is_rejected() -> None:
    raw = served_fleet("GKE")
    raw["services"] = [{"name": "qwen", "deployment": "qwen", "tls": {"issuerRef": {"name": "le"}}}]
    assert list(issues(raw)) == ["services[0].tls"]


def test_two_services_on_one_route_are_rejected() -> None:
    raw = served_fleet("GKE")
    raw["services"] = [
        {"name": "qwen", "deployment": "qwen", "path": "/chat"},
        {"name": "qwen-b", "deployment": "qwen", "path": "/chat"},
    ]
    assert list(issues(raw)) == ["services[1].path"]


def test_deployment_name_on_two_clusters_needs_the_service_cluster() -> None:
    raw = served_fleet("GKE")
    raw["clusters"].append({**copy.deepcopy(raw["clusters"][0]), "name": "d"})
    raw["deployments"].append({**copy.deepcopy(raw["deployments"][0]), "cluster": "d"})
    assert list(issues(raw)) == ["services[0].cluster"]
    raw["services"][0]["cluster"] = "d"
    result = run_fleet(raw)
    assert [r.name for r in of_type(result, HTTP_ROUTE)] == ["d-modelservice-qwen-route"]


@pytest.mark.parametrize("path", ["qwen", "/qwen/", "/a b"])
def test_bad_route_path_is_rejected(path: str) -> None:
    raw = served_fleet("GKE")
    raw["services"][0]["path"] = path
    assert list(issues(raw)) == ["services[0].path"]


def test_endpoints_are_exported_as_a_stack_output(monkeypatch: pytest.MonkeyPatch) -> None:
    import pulumi

    seen: dict[str, Any] = {}
    export = pulumi.export

    def recording_export(name: str, value: Any) -> None:
        if name == "endpoints":
            pulumi.Output.from_input(value).apply(seen.update)
        export(name, value)

    monkeypatch.setattr(pulumi, "export", recording_export)
    result = run_fleet(served_fleet("Civo"))
    assert result.error is None, result.error
    assert seen == {
        "qwen": {
            "service": "qwen",
            "cluster": "c",
            "deployment": "qwen",
            "routing": "Picker",
            "backends": [{"deployment": "qwen", "weight": 1, "inferencePool": "qwen"}],
            "gateway": "envoy-gateway-system/modelplane",
            "scheme": "http",
            "host": None,
            "path": "/qwen",
            "url": "http://{address}/qwen/v1",
        }
    }


@pytest.mark.parametrize(
    ("stack", "cluster"), [("recipe-qwen-cpu-civo", "civo-cpu"), ("recipe-qwen-mi325x", "byo-mi325x")]
)
def test_recipes_plan_clean_with_an_endpoint_through_the_gateway(stack: str, cluster: str) -> None:
    from pathlib import Path

    from tooling.plan import plan_stack

    doc = plan_stack(Path(__file__).resolve().parent.parent / "stacks" / f"Pulumi.{stack}.yaml")
    assert doc["ok"], (doc["errors"], doc["violations"])
    [dep] = doc["deployments"]
    assert dep["endpoint"] == {
        "service": "qwen",
        "cluster": cluster,
        "deployment": "qwen",
        "routing": "Picker",
        "backends": [{"deployment": "qwen", "weight": 1, "inferencePool": "qwen"}],
        "gateway": "envoy-gateway-system/modelplane",
        "scheme": "http",
        "path": "/qwen",
        "url": "http://{address}/qwen/v1",
    }
    [audit] = doc["placement"]
    assert [g["name"] for g in audit["gateways"]] == ["envoy-gateway-system/modelplane"]
