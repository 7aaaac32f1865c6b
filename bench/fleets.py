"""Generated fleets for the benchmarks: N clusters of 8 pools each, spread over the six clouds."""

from __future__ import annotations

from typing import Any

CLOUDS = ("GKE", "EKS", "AKS", "Civo", "Vultr", "Existing")
POOLS_PER_CLUSTER = 8

GPU_MACHINE = {
    "GKE": ("machineType", "g2-standard-8", "nvidia-l4"),
    "EKS": ("instanceType", "g6.xlarge", "nvidia-l4"),
    "AKS": ("vmSize", "Standard_NC24ads_A100_v4", "nvidia-a100-80gb"),
    "Civo": ("size", "an.g1.l40s.kube.x1", "nvidia-l40s"),
    "Vultr": ("plan", "vcg-l40s-16c-180g-48vram", "nvidia-l40s"),
}
CPU_MACHINE = {
    "GKE": "c3-standard-8",
    "EKS": "m7i.2xlarge",
    "AKS": "Standard_D8s_v5",
    "Civo": "g4p.kube.medium",
    "Vultr": "vc2-8c-32gb",
}
CLUSTER_BLOCK: dict[str, dict[str, str]] = {
    "GKE": {"project": "bench-project", "region": "us-central1", "kubernetesVersion": "1.35"},
    "EKS": {"region": "us-east-1", "kubernetesVersion": "1.34"},
    "AKS": {"location": "westeurope", "kubernetesVersion": "1.34"},
    "Civo": {"region": "LON1", "kubernetesVersion": "1.34.1-k3s1"},
    "Vultr": {"region": "ewr", "kubernetesVersion": "v1.34.1+1"},
    "Existing": {},
}


def _device(driver: str, count: int = 1) -> dict[str, Any]:
    return {"name": "dev", "driver": driver, "deviceClassName": driver, "count": count}


def classes() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for cloud, (key, machine, accel) in GPU_MACHINE.items():
        prov = cloud.lower()
        out.append(
            {
                "name": f"gpu-{prov}",
                "devices": [_device("gpu.nvidia.com")],
                "provisioning": {"provider": cloud, prov: {key: machine, "accelerator": {"type": accel, "count": 1}}},
            }
        )
        out.append(
            {
                "name": f"cpu-{prov}",
                "devices": [_device("dra.cpu")],
                "provisioning": {"provider": cloud, prov: {key: CPU_MACHINE[cloud]}},
            }
        )
    out.append({"name": "gpu-byo-amd", "devices": [_device("gpu.amd.com")]})
    out.append({"name": "gpu-byo-nvidia", "devices": [_device("gpu.nvidia.com")]})
    out.append({"name": "cpu-byo", "devices": [_device("dra.cpu")]})
    return out


def pool_classes(cloud: str) -> list[str]:
    if cloud == "Existing":
        return ["gpu-byo-amd", "gpu-byo-nvidia", "cpu-byo"]
    return [f"gpu-{cloud.lower()}", f"cpu-{cloud.lower()}"]


def fleet(clusters: int) -> dict[str, Any]:
    """`modelplane:` config for `clusters` clusters (round-robin over the clouds), 8 pools each."""
    out = []
    for i in range(clusters):
        cloud = CLOUDS[i % len(CLOUDS)]
        kinds = pool_classes(cloud)
        pools = [
            {"name": f"p{j}", "className": kinds[j % len(kinds)], "nodeCount": 1} for j in range(POOLS_PER_CLUSTER)
        ]
        block = dict(CLUSTER_BLOCK[cloud])
        if cloud == "Existing":
            block = {"kubeconfigKey": "kubeconfig"}
        out.append({"name": f"c{i:04d}", "source": cloud, cloud.lower(): block, "nodePools": pools})
    return {"protect": True, "classes": classes(), "clusters": out}
