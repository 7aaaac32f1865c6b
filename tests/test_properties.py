"""Property tests over generated fleets: accepted fleets yield consistent pools; rejected ones name a policy."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.config import ConfigError
from infra.devices import ACCELERATOR_DRIVER_MISMATCH, CLASS_PROVIDER_MISMATCH, UNSUPPORTED_DEVICES, check_fleet
from infra.facts import CPU_LABEL, GPU_LABEL, POOL_LABEL, VENDOR_TAINT_KEY, derive_fleet
from tests.conftest import fleet_of

PROVIDERS = ["GKE", "EKS", "AKS", "Civo", "Vultr"]
SOURCES = [*PROVIDERS, "Existing"]
DRIVERS = ["gpu.nvidia.com", "gpu.amd.com", "dra.cpu", "dra.net"]
MACHINE_KEY = {"GKE": "machineType", "EKS": "instanceType", "AKS": "vmSize", "Civo": "size", "Vultr": "plan"}
CLUSTER_BLOCK = {
    "GKE": {"project": "p", "region": "r", "kubernetesVersion": "1.36"},
    "EKS": {"region": "us-east-1", "kubernetesVersion": "1.36"},
    "AKS": {"location": "westeurope", "kubernetesVersion": "1.36"},
    "Civo": {"region": "LON1", "kubernetesVersion": "1.36.0-k3s1"},
    "Vultr": {"region": "ewr", "kubernetesVersion": "v1.36.2+1"},
    "Existing": {},
}
POLICIES = {ACCELERATOR_DRIVER_MISMATCH, UNSUPPORTED_DEVICES, CLASS_PROVIDER_MISMATCH}


@st.composite
def inference_class(draw: st.DrawFn, name: str) -> dict[str, Any]:
    drivers = draw(st.lists(st.sampled_from(DRIVERS), min_size=1, max_size=3, unique=True))
    devices = [
        {"name": f"d{i}", "driver": d, "deviceClassName": d, "count": draw(st.integers(1, 4))}
        for i, d in enumerate(drivers)
    ]
    if draw(st.booleans()):
        devices.append({"name": "nic", "claim": "Synthetic", "driver": "nic.nvidia.com"})
    cls: dict[str, Any] = {"name": name, "devices": devices}
    provider = draw(st.sampled_from([*PROVIDERS, None]))
    if provider is not None:
        block: dict[str, Any] = {MACHINE_KEY[provider]: "m"}
        if draw(st.booleans()):
            vendor = draw(st.sampled_from(["nvidia", "amd"]))
            block["accelerator"] = {"type": f"{vendor}-x", "count": draw(st.integers(1, 4))}
        cls["provisioning"] = {"provider": provider, provider.lower(): block}
    return cls


@st.composite
def fleet(draw: st.DrawFn) -> dict[str, Any]:
    classes = [draw(inference_class(f"c{i}")) for i in range(draw(st.integers(1, 4)))]
    clusters = []
    for k in range(draw(st.integers(1, 3))):
        source = draw(st.sampled_from(SOURCES))
        pools = [
            {"name": f"p{j}", "className": draw(st.sampled_from([c["name"] for c in classes]))}
            for j in range(draw(st.integers(1, 3)))
        ]
        clusters.append({"name": f"k{k}", "source": source, source.lower(): CLUSTER_BLOCK[source], "nodePools": pools})
    return {"classes": classes, "clusters": clusters}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleet())
def test_accepted_fleets_have_consistent_pools_and_rejected_ones_name_a_policy(raw: dict[str, Any]) -> None:
    try:
        parsed = fleet_of(raw)
    except ConfigError as err:
        # Only the role rule rejects these generated shapes at load time.
        assert all("claims no CPU or GPU DRA device" in i.problem for i in err.issues), err
        return
    violations = check_fleet(parsed)
    if violations:
        for v in violations:
            assert v.policy in POLICIES
            assert v.cluster and v.pool and v.class_name and v.fix
        return
    for cluster in derive_fleet(parsed):
        for pool in cluster.pools:
            assert pool.labels[POOL_LABEL] == pool.name
            keys = {t.key for t in pool.taints}
            if pool.role == "GPU":
                assert pool.accelerator is not None and pool.labels[GPU_LABEL] == pool.accelerator.type
                assert pool.vendor is not None and keys == {VENDOR_TAINT_KEY[pool.vendor]}
                assert pool.accelerator.type.startswith(pool.vendor)
                assert CPU_LABEL not in pool.labels
            elif pool.role == "CPU":
                assert pool.accelerator is None and GPU_LABEL not in pool.labels
                assert pool.labels[CPU_LABEL] == "true" and keys == {CPU_LABEL}
            else:
                assert pool.name == "system" and not pool.taints
