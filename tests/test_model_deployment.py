"""ModelDeployment: the claim template, Deployment and Service the program registers, and the
config checks that stop a deployment before anything is registered."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from components.model_deployment import DeviceClaim, claim_template_name
from infra.config.issues import ConfigError
from infra.config.model import CapacityValue, Device
from infra.config.stackfile import parse_fleet
from tests.conftest import cpu_class, of_type, run_fleet
from tooling.mockrun import MockRun, Registration

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
SERVICE = "kubernetes:core/v1:Service"
BUDGET = "kubernetes:policy/v1:PodDisruptionBudget"
NAMESPACE = "kubernetes:core/v1:Namespace"
COMPONENT = "modelplane:deploy:ModelDeployment"

AMD_CLASS = {
    "name": "mi325x",
    "devices": [
        {
            "name": "gpu",
            "driver": "gpu.amd.com",
            "deviceClassName": "gpu.amd.com",
            "count": 8,
            "attributes": {"productName": {"string": "AMD_Instinct_MI325_OAM"}},
            "capacity": {"memory": {"value": "262128Mi"}},
        }
    ],
}


def lab_fleet(**cpu_device: Any) -> dict[str, Any]:
    cpu = cpu_class("cpu", None)
    cpu["devices"][0].update(cpu_device)
    return {
        "classes": [AMD_CLASS, cpu],
        "clusters": [
            {
                "name": "lab",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "taints": [{"key": "team", "value": "ml", "effect": "NoSchedule"}],
                "nodePools": [{"name": "mi325x", "className": "mi325x"}, {"name": "cpu", "className": "cpu"}],
            }
        ],
        "deployments": [
            {
                "name": "qwen-amd",
                "namespace": "ml-team",
                "cluster": "lab",
                "pool": "mi325x",
                "image": "vllm/vllm-openai-rocm:v0.23.0",
                "args": ["--model", "Qwen/Qwen2.5-0.5B-Instruct"],
                "memory": "32Gi",
                "devices": [{"name": "gpu", "count": 2}],
            },
            {
                "name": "qwen-cpu",
                "namespace": "ml-team",
                "cluster": "lab",
                "pool": "cpu",
                "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
                "env": {"VLLM_CPU_KVCACHE_SPACE": "4"},
                "shmSize": "1Gi",
                "devices": [{"name": "cpu"}],
            },
        ],
    }


def registered(result: MockRun, type_token: str, name: str) -> Registration:
    assert result.error is None, result.error
    [found] = [r for r in of_type(result, type_token) if r.name == name]
    return found


def pod_spec(result: MockRun, deployment: str) -> Mapping[str, Any]:
    spec: Mapping[str, Any] = registered(result, DEPLOYMENT, f"lab-{deployment}-deployment").inputs["spec"]
    return spec["template"]["spec"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def lab() -> MockRun:
    return run_fleet(lab_fleet())


def test_each_deployment_registers_a_claim_template_deployment_service_budget_and_pod_monitor(lab: MockRun) -> None:
    comps = {r.name: r for r in of_type(lab, COMPONENT)}
    assert set(comps) == {"lab-qwen-amd", "lab-qwen-cpu"}
    assert all(r.parent == "lab" for r in comps.values())
    for name in comps:
        kids = {(r.type, r.name) for r in lab.resources if r.parent == name}
        assert kids == {
            (TEMPLATE, f"{name}-claims"),
            (DEPLOYMENT, f"{name}-deployment"),
            (SERVICE, f"{name}-service"),
            (BUDGET, f"{name}-disruption-budget"),
            (POD_MONITOR, f"{name}-podmonitor"),
        }


def test_shared_namespace_is_created_once_for_the_cluster(lab: MockRun) -> None:
    [ns] = of_type(lab, NAMESPACE)
    assert ns.inputs["metadata"]["name"] == "ml-team" and ns.parent == "lab"


def test_default_namespace_is_not_created() -> None:
    raw = lab_fleet()
    for d in raw["deployments"]:
        d.pop("namespace")
    result = run_fleet(raw)
    assert result.error is None, result.error
    # The deployments still land, in `default`, which already exists and is never registered.
    assert {r.inputs["metadata"]["namespace"] for r in of_type(result, DEPLOYMENT)} == {"default"}
    assert of_type(result, NAMESPACE) == []


def test_gpu_claim_requests_the_class_device_by_count(lab: MockRun) -> None:
    spec = registered(lab, TEMPLATE, "lab-qwen-amd-claims").inputs["spec"]["spec"]
    assert spec["devices"]["requests"] == [{"name": "gpu", "exactly": {"deviceClassName": "gpu.amd.com", "count": 2.0}}]


def test_cpu_claim_requests_capacity_not_a_count(lab: MockRun) -> None:
    spec = registered(lab, TEMPLATE, "lab-qwen-cpu-claims").inputs["spec"]["spec"]
    assert spec["devices"]["requests"] == [
        {"name": "cpu", "exactly": {"deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": "6"}}}}
    ]


def test_cpu_container_requests_and_limits_exactly_the_claimed_cpus(lab: MockRun) -> None:
    [engine] = pod_spec(lab, "qwen-cpu")["containers"]
    assert engine["resources"]["requests"] == {"cpu": "6"}
    assert engine["resources"]["limits"] == {"cpu": "6"}
    assert engine["resources"]["claims"] == [{"name": "devices"}]


def test_gpu_container_claims_devices_and_its_memory_without_cpu_quantities(lab: MockRun) -> None:
    [engine] = pod_spec(lab, "qwen-amd")["containers"]
    assert engine["resources"] == {
        "claims": [{"name": "devices"}],
        "requests": {"memory": "32Gi"},
        "limits": {"memory": "32Gi"},
    }


def test_two_cpu_devices_take_twice_the_capacity() -> None:
    raw = lab_fleet(count=2)
    raw["deployments"][1]["devices"] = [{"name": "cpu", "count": 2}]
    result = run_fleet(raw)
    request = registered(result, TEMPLATE, "lab-qwen-cpu-claims").inputs["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"]["count"] == 2.0
    [engine] = pod_spec(result, "qwen-cpu")["containers"]
    assert engine["resources"]["requests"] == engine["resources"]["limits"] == {"cpu": "12"}


def test_pod_is_placed_by_pool_selector_and_tolerates_every_driver_taint_and_cluster_taint(lab: MockRun) -> None:
    pod = pod_spec(lab, "qwen-amd")
    assert pod["nodeSelector"] == {"modelplane.ai/pool": "mi325x"}
    assert pod["tolerations"] == [
        {"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "modelplane.ai/cpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
    ]


def test_pod_claims_the_template_and_mounts_memory_backed_shm(lab: MockRun) -> None:
    pod = pod_spec(lab, "qwen-cpu")
    template = registered(lab, TEMPLATE, "lab-qwen-cpu-claims").inputs["metadata"]["name"]
    assert template.startswith("qwen-cpu-")
    assert pod["resourceClaims"] == [{"name": "devices", "resourceClaimTemplateName": template}]
    assert pod["volumes"] == [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]
    [engine] = pod["containers"]
    assert engine["volumeMounts"] == [{"name": "shm", "mountPath": "/dev/shm"}]
    assert engine["env"] == [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "4"}]


def test_engine_is_probed_on_health_and_labelled_for_telemetry(lab: MockRun) -> None:
    dep = registered(lab, DEPLOYMENT, "lab-qwen-amd-deployment").inputs
    assert dep["spec"]["template"]["metadata"]["labels"] == {"modelplane.ai/deployment": "qwen-amd"}
    assert dep["spec"]["selector"]["matchLabels"] == {"modelplane.ai/deployment": "qwen-amd"}
    [engine] = dep["spec"]["template"]["spec"]["containers"]
    assert engine["image"] == "vllm/vllm-openai-rocm:v0.23.0"
    assert engine["args"] == ["--model", "Qwen/Qwen2.5-0.5B-Instruct", "--port", "8000"]
    assert engine["ports"] == [{"name": "http", "containerPort": 8000.0}]
    assert engine["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}


def test_service_exposes_port_http_8000(lab: MockRun) -> None:
    svc = registered(lab, SERVICE, "lab-qwen-cpu-service").inputs
    assert svc["metadata"]["namespace"] == "ml-team"
    assert svc["spec"]["selector"] == {"modelplane.ai/deployment": "qwen-cpu"}
    assert svc["spec"]["ports"] == [{"name": "http", "port": 8000.0, "targetPort": "http", "protocol": "TCP"}]


# --------------------------------------------------------------------------------------------
# Config errors stop the run with a path


def issues(raw: Mapping[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        parse_fleet(copy.deepcopy(dict(raw)), "Pulumi.test.yaml")
    return {i.path: i.problem for i in err.value.issues}


@pytest.mark.parametrize(
    "image", ["vllm/vllm-openai-rocm", "vllm/vllm-openai-rocm:latest", "vllm/vllm-openai-cpu:latest-x86_64"]
)
def test_unpinned_image_is_rejected_with_its_path(image: str) -> None:
    raw = lab_fleet()
    raw["deployments"][0]["image"] = image
    found = issues(raw)
    assert list(found) == ["deployments[0].image"]
    assert "not pinned" in found["deployments[0].image"]


@pytest.mark.parametrize(
    "image", ["registry:5000/vllm/vllm-openai-cpu:v0.23.0-x86_64", "vllm/vllm-openai@sha256:" + "a" * 64]
)
def test_pinned_image_with_registry_port_or_digest_is_accepted(image: str) -> None:
    raw = lab_fleet()
    raw["deployments"][0]["image"] = image
    parse_fleet(raw, "Pulumi.test.yaml")


def test_bad_references_are_rejected_with_paths() -> None:
    raw = lab_fleet()
    base = raw["deployments"][0]
    raw["deployments"] = [
        {**base, "name": "a", "cluster": "nope"},
        {**base, "name": "b", "pool": "nope"},
        {**base, "name": "c", "devices": [{"name": "tpu"}]},
        {**base, "name": "d", "devices": [{"name": "gpu", "count": 9}]},
    ]
    found = issues(raw)
    assert set(found) == {
        "deployments[0].cluster",
        "deployments[1].pool",
        "deployments[2].devices[0].name",
        "deployments[3].devices[0].count",
    }
    assert "more than the 8" in found["deployments[3].devices[0].count"]


def test_cpu_claim_without_whole_cpu_capacity_is_rejected() -> None:
    raw = lab_fleet(capacity={"dra.cpu/cpu": {"value": "500m"}})
    assert list(issues(raw)) == ["deployments[1].devices[0].name"]


def test_bad_config_registers_nothing() -> None:
    raw = lab_fleet()
    raw["deployments"][0]["image"] = "vllm/vllm-openai-rocm"
    result = run_fleet(raw)
    assert result.error is not None and "deployments[0].image" in str(result.error)
    assert result.resources == []


def test_the_claim_template_is_named_after_what_it_claims() -> None:
    # Its spec is immutable on the API server: a changed claim must be a template of another name.
    cpu = Device(name="cpu", driver="dra.cpu", deviceClassName="dra.cpu", capacity={"dra.cpu/cpu": {"value": "6"}})
    fewer = cpu.model_copy(update={"capacity": {"dra.cpu/cpu": CapacityValue(value="5")}})
    six, five = DeviceClaim("cpu", cpu, 1, 6), DeviceClaim("cpu", fewer, 1, 5)
    assert claim_template_name("qwen", [six]) == claim_template_name("qwen", [six])
    assert claim_template_name("qwen", [six]) != claim_template_name("qwen", [five])
    assert claim_template_name("qwen", [six]).startswith("qwen-")
