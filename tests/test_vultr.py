"""The Vultr (VKE) cluster component under Pulumi mocks: what it registers and with which arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi.runtime import rpc

from tests.conftest import cpu_class, gpu_class, named, of_type, run_fleet
from tooling.mockrun import MockRun

PROVIDER = "pulumi:providers:vultr"
CLUSTER = "vultr:index/kubernetes:Kubernetes"
NODE_POOLS = "vultr:index/kubernetesNodePools:KubernetesNodePools"


def vultr_fleet(protect: bool = False) -> dict[str, Any]:
    return {
        "classes": [
            gpu_class(
                "l40s",
                "Vultr",
                {"plan": "vcg-l40s-16c-180g-48vram", "accelerator": {"type": "nvidia-l40s", "count": 1}},
            ),
            cpu_class("cpu8", "Vultr", {"plan": "vc2-8c-32gb"}),
        ],
        "clusters": [
            {
                "name": "vke-ord",
                "source": "Vultr",
                "vultr": {"region": "ord", "kubernetesVersion": "v1.36.2+1"},
                "nodePools": [
                    {"name": "gpu-l40s", "className": "l40s", "nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3},
                    {"name": "cpu", "className": "cpu8", "nodeCount": 2},
                ],
            }
        ],
        "protect": protect,
    }


@pytest.fixture(scope="module")
def plan() -> MockRun:
    result = run_fleet(vultr_fleet())
    assert result.error is None, result.error
    return result


def test_cluster_is_one_vke_cluster_and_one_node_pool_resource_per_pool(plan: MockRun) -> None:
    assert [r.name for r in of_type(plan, CLUSTER)] == ["vke-ord-cluster"]
    assert sorted(r.name for r in of_type(plan, NODE_POOLS)) == ["vke-ord-cpu", "vke-ord-gpu-l40s"]
    assert named(plan, "vke-ord").type == "modelplane:vultr:VultrCluster"


def test_every_vultr_resource_uses_the_runs_one_vultr_provider(plan: MockRun) -> None:
    (provider,) = of_type(plan, PROVIDER)
    assert (provider.name, provider.parent) == ("vultr-provider", None)
    vultr = [r for r in plan.resources if r.type.startswith("vultr:")]
    assert len(vultr) == 3
    for r in vultr:
        assert r.provider.startswith(provider.urn), r.name
        assert r.parent == "vke-ord"


def test_cluster_carries_region_version_and_only_the_system_pool_inline(plan: MockRun) -> None:
    cluster = named(plan, "vke-ord-cluster").inputs
    assert cluster["label"] == "vke-ord"
    assert cluster["region"] == "ord"
    assert cluster["version"] == "v1.36.2+1"
    assert cluster["nodePools"] == {
        "label": "system",
        "plan": "vc2-6c-16gb",
        "nodeQuantity": 1.0,
        "autoScaler": True,
        "minNodes": 1.0,
        "maxNodes": 2.0,
        "labels": {"modelplane.ai/pool": "system"},
    }


def test_gpu_pool_gets_vendor_taint_gpu_label_plan_and_autoscaling(plan: MockRun) -> None:
    gpu = named(plan, "vke-ord-gpu-l40s").inputs
    assert gpu["clusterId"] == "vke-ord-cluster-id"
    assert gpu["label"] == "gpu-l40s"
    assert gpu["plan"] == "vcg-l40s-16c-180g-48vram"
    assert gpu["labels"]["modelplane.ai/pool"] == "gpu-l40s"
    assert gpu["labels"]["modelplane.ai/gpu"] == "nvidia-l40s"
    # VKE's GPU add-on would start a device plugin next to the DRA driver.
    assert gpu["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert gpu["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert (gpu["nodeQuantity"], gpu["autoScaler"], gpu["minNodes"], gpu["maxNodes"]) == (1.0, True, 1.0, 3.0)


def test_cpu_pool_gets_cpu_taint_and_label_and_a_fixed_size(plan: MockRun) -> None:
    cpu = named(plan, "vke-ord-cpu").inputs
    assert cpu["plan"] == "vc2-8c-32gb"
    assert cpu["labels"] == {"modelplane.ai/pool": "cpu", "modelplane.ai/cpu": "true"}
    assert cpu["taints"] == [{"key": "modelplane.ai/cpu", "value": "true", "effect": "NoSchedule"}]
    assert (cpu["nodeQuantity"], cpu["autoScaler"]) == (2.0, False)
    assert "minNodes" not in cpu and "maxNodes" not in cpu


def test_kubeconfig_is_a_secret_decoded_from_base64(plan: MockRun) -> None:
    (k8s,) = of_type(plan, "pulumi:providers:kubernetes")
    kubeconfig = k8s.inputs["kubeconfig"]
    assert rpc.is_rpc_secret(kubeconfig)
    assert json.loads(rpc.unwrap_rpc_secret(kubeconfig))["clusters"][0]["name"] == "vke-ord-cluster"


def test_nothing_is_protected_unless_asked(plan: MockRun) -> None:
    assert not any(r.protect for r in plan.resources)


def test_protect_covers_cluster_and_pools() -> None:
    result = run_fleet(vultr_fleet(protect=True))
    assert result.error is None, result.error
    protected = {r.name for r in result.resources if r.protect}
    assert {"vke-ord-cluster", "vke-ord-gpu-l40s", "vke-ord-cpu"} <= protected
