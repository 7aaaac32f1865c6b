"""Deployments that could never be scheduled stop the run, each at its path with a fix (`infra.checks.schedulable`)."""

from __future__ import annotations

import copy
from decimal import Decimal
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from clouds import MACHINES, machine
from infra.checks.devices import CPU_CLAIM_EXCEEDS_MACHINE
from infra.checks.guard import guard
from infra.checks.schedulable import (
    gib_down,
    gib_round,
    gib_text,
    largest_request,
    mib,
    node_agents_memory,
    node_memory,
    reserved_memory,
    schedulability_issues,
)
from infra.config.issues import ConfigError, ConfigIssue, located
from infra.config.stackfile import located_checked
from infra.facts import derive_fleet
from infra.reservations import GIB, MIB
from infra.reservations import tiered_reservation as gke_reserved
from infra.serving.catalog import CATALOG, catalog_for
from tests.conftest import CPU_BLOCKS, GPU_BLOCKS, cpu_class, fleet_of, gke_fleet, run_fleet
from tests.conftest import cloud_fleet as two_pools
from tooling.plan import plan_stack

FILE = "Pulumi.test.yaml"
IMAGE = "vllm/vllm-openai:v0.23.0"


def deployment(name: str, pool: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "cluster": "prod",
        "pool": pool,
        "image": IMAGE,
        "memory": "16Gi",
        "devices": [{"name": "cpu" if pool == "cpu" else "gpu"}],
        **fields,
    }


def gke_with(*deployments: dict[str, Any], **gpu_pool: Any) -> dict[str, Any]:
    """`gke_fleet()` with a fixed `gpu` pool of two g2-standard-8 nodes (one L4 each) in one zone."""
    raw = gke_fleet()
    raw["clusters"][0]["nodePools"][0].update({"nodeCount": 2, "zones": ["us-central1-a"], **gpu_pool})
    raw["clusters"][0]["nodePools"][1].update({"zones": ["us-central1-a"]})
    raw["deployments"] = list(deployments)
    return raw


def found(raw: dict[str, Any]) -> dict[str, ConfigIssue]:
    issues = located_checked(guard(fleet_of(raw)), FILE).issues
    by_path = {i.path: i for i in issues}
    assert len(by_path) == len(issues), issues
    return by_path


def cloud_fleet(source: str, *deployments: dict[str, Any]) -> dict[str, Any]:
    """A cluster `prod` of `source` with a `gpu` and a `cpu` pool of the cloud's example machines."""
    return two_pools(source, "prod", list(deployments))


# --------------------------------------------------------------------------------------------
# The two cases of the report


def test_memory_above_what_a_g2_standard_8_node_gives_a_pod_is_refused_at_the_deployments_memory() -> None:
    issue = found(gke_with(deployment("llm", memory="64Gi")))["deployments[0].memory"]
    # 32 GiB less GKE's 3.66 GiB and nfd-worker's 64 MiB: 28.28 GiB, shown rounded down.
    assert issue.problem == (
        "memory 64Gi is more than the 28.2 GiB a g2-standard-8 node of pool 'gpu' (cluster 'prod') can give a pod: "
        "32 GiB less what GKE reserves (3.66 GiB) and 64 MiB this stack's node agents request"
    )
    assert issue.fix == (
        "request at most 28Gi, or use a larger machine for the pool's class (classes[0].provisioning.gke.machineType)"
    )


def test_three_one_gpu_replicas_on_a_fixed_pool_of_two_one_gpu_nodes_are_refused_at_replicas() -> None:
    issue = found(gke_with(deployment("llm", replicas=3)))["deployments[0].replicas"]
    assert issue.problem == (
        "deployment 'llm' claims 3 'gpu' devices on pool 'gpu' (cluster 'prod') (3 replicas x 1), more than the 2 "
        "the pool can hold: at most 2 nodes, 1 per node"
    )
    assert issue.fix == (
        "lower replicas to at most 2, or let the pool have at least 3 nodes (clusters[0].nodePools[0].nodeCount: 3)"
    )


def test_both_problems_of_one_deployment_are_reported_together() -> None:
    assert list(found(gke_with(deployment("llm", memory="64Gi", replicas=3)))) == [
        "deployments[0].memory",
        "deployments[0].replicas",
    ]


def test_a_deployment_that_fits_passes_and_registers() -> None:
    raw = gke_with(deployment("llm", memory="28Gi", replicas=2))
    assert found(raw) == {}
    assert run_fleet(raw).error is None


def test_a_request_of_exactly_what_a_node_gives_fits_and_one_mib_more_does_not() -> None:
    # g6.xlarge: 16 GiB less EKS's 1565 MiB and nfd-worker's 64 MiB = 14755 MiB.
    assert found(cloud_fleet("EKS", deployment("llm", memory="14755Mi"))) == {}
    issue = found(cloud_fleet("EKS", deployment("llm", memory="14756Mi")))["deployments[0].memory"]
    assert issue.problem == (
        "memory 14756Mi is more than the 14.4 GiB a g6.xlarge node of pool 'gpu' (cluster 'prod') can give a pod: "
        "16 GiB less what EKS reserves at the node group's pod cap (1.53 GiB) and 64 MiB this stack's node agents "
        "request"
    )
    assert issue.fix == (
        "request at most 14Gi, or use a larger machine for the pool's class (classes[0].provisioning.eks.instanceType)"
    )


def test_a_pool_without_node_agents_and_a_cloud_without_a_published_reservation_say_so() -> None:
    # No per-node pod of this stack requests memory on a Vultr GPU pool; Vultr publishes no reservation.
    issue = found(cloud_fleet("Vultr", deployment("llm", memory="200Gi")))["deployments[0].memory"]
    assert issue.problem == (
        "memory 200Gi is more than the 169.5 GiB a vcg-l40s-16c-180g-48vram node of pool 'gpu' (cluster 'prod') can "
        "give a pod: 180 GiB less a reservation of GKE's tiers (Vultr publishes none) (10.46 GiB)"
    )


def test_every_deployment_is_judged_on_memory_past_ones_without_a_request_or_that_fit() -> None:
    raw = gke_with(deployment("bare", pool="cpu", memory=None), deployment("fits"), deployment("big", memory="64Gi"))
    assert list(found(raw)) == ["deployments[2].memory"]


# --------------------------------------------------------------------------------------------
# Claims against the pool at its largest


def test_two_deployments_that_together_exceed_a_fixed_pool_are_reported_at_the_second() -> None:
    raw = gke_with(deployment("a"), deployment("b", replicas=2), deployment("c", pool="cpu", memory=None))
    issues = found(raw)
    assert list(issues) == ["deployments[1].replicas"]
    issue = issues["deployments[1].replicas"]
    assert issue.problem == (
        "deployment 'b' brings the 'gpu' devices claimed on pool 'gpu' (cluster 'prod') to 3 (its 2 replicas x 1, "
        "with 'a': 1 x 1), more than the 2 the pool can hold: at most 2 nodes, 1 per node"
    )
    assert issue.fix.startswith("lower replicas to at most 1 (with the others as they are), or let the pool have")


def test_the_deployment_that_pushes_the_total_over_is_named_with_the_others_around_it() -> None:
    # 1 + 2 passes the pool's 2 at 'b'; 'c' comes after and is one of the others.
    issue = found(gke_with(deployment("a"), deployment("b", replicas=2), deployment("c")))["deployments[1].replicas"]
    assert issue.problem == (
        "deployment 'b' brings the 'gpu' devices claimed on pool 'gpu' (cluster 'prod') to 4 (its 2 replicas x 1, "
        "with 'a': 1 x 1, 'c': 1 x 1), more than the 2 the pool can hold: at most 2 nodes, 1 per node"
    )
    assert issue.fix == (
        "move it to another pool or lower the others' replicas, or let the pool have at least 4 nodes "
        "(clusters[0].nodePools[0].nodeCount: 4)"
    )


def test_a_deployment_with_room_left_by_the_others_is_told_how_many_replicas_fit() -> None:
    issue = found(gke_with(deployment("a"), deployment("b", replicas=2)))["deployments[1].replicas"]
    assert issue.fix == (
        "lower replicas to at most 1 (with the others as they are), or let the pool have at least 3 nodes "
        "(clusters[0].nodePools[0].nodeCount: 3)"
    )


def test_deployments_on_another_pool_of_the_cluster_do_not_count_against_this_one() -> None:
    raw = gke_with(deployment("a", replicas=2), deployment("b", pool="gpu2", replicas=2))
    raw["clusters"][0]["nodePools"].append(
        {"name": "gpu2", "className": "l4", "nodeCount": 2, "zones": ["us-central1-a"]}
    )
    assert found(raw) == {}


def test_a_pool_without_deployments_does_not_end_the_check_of_the_pools_after_it() -> None:
    raw = gke_with(deployment("a", pool="cpu", memory=None, replicas=2))
    assert list(found(raw)) == ["deployments[0].replicas"]


def test_issues_of_several_pools_are_reported_in_deployment_order() -> None:
    # The cpu pool is declared first, so its issue (deployment 1) is found before the gpu pool's (0).
    raw = gke_with(deployment("a", replicas=3), deployment("b", pool="cpu", memory=None, replicas=2))
    raw["clusters"][0]["nodePools"].reverse()
    assert [i.path for i in located_checked(guard(fleet_of(raw)), FILE).issues] == [
        "deployments[0].replicas",
        "deployments[1].replicas",
    ]


def test_a_fixed_pool_in_two_zones_is_told_its_count_per_zone() -> None:
    raw = gke_with(deployment("llm", replicas=3), nodeCount=1, zones=["us-central1-a", "us-central1-b"])
    issue = found(raw)["deployments[0].replicas"]
    assert issue.fix == (
        "lower replicas to at most 2, or let the pool have at least 3 nodes "
        "(clusters[0].nodePools[0].nodeCount: 2, per zone of its 2)"
    )


def test_a_replica_larger_than_a_node_is_left_to_the_device_rule() -> None:
    # c3-standard-8 leaves 6 CPUs claimable: a replica claiming 8 fits on no number of nodes, which
    # cpu-claim-exceeds-machine says; more nodes would not help.
    raw = gke_with(deployment("a", pool="cpu", memory=None))
    raw["classes"][1]["devices"][0]["capacity"]["dra.cpu/cpu"]["value"] = "8"
    checked = located_checked(guard(fleet_of(raw)), FILE)
    assert checked.issues == []
    assert [v.policy for v in checked.stopping_violations] == [CPU_CLAIM_EXCEEDS_MACHINE]


def test_a_machine_with_no_claimable_cpu_is_left_to_the_device_rule() -> None:
    # g4s.kube.medium has 2 vCPUs, both kept by dra-driver-cpu: no replica fits, however many nodes.
    raw = cloud_fleet("Civo", deployment("a", pool="cpu", memory=None, replicas=2))
    raw["classes"][1] = cpu_class("cpu", "Civo", {"size": "g4s.kube.medium"}, cpus="1")
    checked = located_checked(guard(fleet_of(raw)), FILE)
    assert checked.issues == []
    assert [v.policy for v in checked.stopping_violations] == [CPU_CLAIM_EXCEEDS_MACHINE]


def test_cpu_claims_on_a_gpu_pool_are_not_counted_against_its_machine() -> None:
    # dra-driver-cpu runs only on CPU pools: such a claim is the device rules' to refuse.
    raw = gke_with(deployment("a", replicas=3, devices=[{"name": "cpu"}]))
    raw["classes"][0]["devices"].append(
        {"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "capacity": {"dra.cpu/cpu": {"value": "6"}}}
    )
    checked = located_checked(guard(fleet_of(raw)), FILE)
    assert checked.issues == []
    assert checked.violations_stop


def test_only_dra_cpu_devices_count_as_claimed_cpus() -> None:
    # m7i.2xlarge leaves 6 CPUs claimable; two replicas of 3 fill one node. A network device's
    # capacity of the same name is not a CPU dra-driver-cpu hands out.
    raw = cloud_fleet(
        "EKS", deployment("a", pool="cpu", memory=None, replicas=2, devices=[{"name": "cpu"}, {"name": "nic"}])
    )
    raw["classes"][1] = cpu_class("cpu", "EKS", CPU_BLOCKS["EKS"], cpus="3")
    raw["classes"][1]["devices"].append(
        {"name": "nic", "driver": "dra.net", "deviceClassName": "dra.net", "capacity": {"dra.cpu/cpu": {"value": "1"}}}
    )
    assert found(raw) == {}


def test_each_deployment_alone_fits_the_pool_the_two_share() -> None:
    assert found(gke_with(deployment("a"), deployment("b"))) == {}


def test_an_autoscaled_pool_is_judged_at_max_node_count() -> None:
    scaled = {"nodeCount": 1, "minNodeCount": 0, "maxNodeCount": 3}
    assert found(gke_with(deployment("llm", replicas=3), **scaled)) == {}
    issue = found(gke_with(deployment("llm", replicas=4), **scaled))["deployments[0].replicas"]
    assert "more than the 3 the pool can hold: at most 3 nodes" in issue.problem
    assert issue.fix.endswith("let the pool have at least 4 nodes (clusters[0].nodePools[0].maxNodeCount: 4)")


def test_a_fixed_regional_pool_holds_node_count_in_each_of_its_zones() -> None:
    # No zones on a regional GKE cluster: nodeCount 1 in each of the region's 3 zones.
    regional = {"nodeCount": 1, "zones": []}
    assert found(gke_with(deployment("llm", replicas=3), **regional)) == {}
    issue = found(gke_with(deployment("llm", replicas=4), **regional))["deployments[0].replicas"]
    assert issue.fix.endswith("(clusters[0].nodePools[0].nodeCount: 2, per zone of its 3)")


def test_cpu_claims_of_deployments_sharing_a_pool_add_up_to_the_claimable_cpus() -> None:
    # c3-standard-8: 8 vCPUs less the 2 dra-driver-cpu keeps = 6 per node; each replica claims 6.
    raw = gke_with(deployment("a", pool="cpu", memory=None), deployment("b", pool="cpu", memory=None))
    issue = found(raw)["deployments[1].replicas"]
    assert issue.problem == (
        "deployment 'b' brings the dra.cpu CPUs claimed on pool 'cpu' (cluster 'prod') to 12 "
        "(its 1 replica x 6, with 'a': 1 x 6), more than the 6 the pool can hold: at most 1 node, 6 claimable CPUs "
        "per node (8 vCPUs of c3-standard-8 less the 2 dra-driver-cpu keeps, 0-1)"
    )
    assert issue.fix == (
        "move it to another pool or lower the others' replicas, or let the pool have at least 2 nodes "
        "(clusters[0].nodePools[1].nodeCount: 2)"
    )


def test_deployments_without_replicas_claim_nothing() -> None:
    assert found(gke_with(deployment("llm"), deployment("idle", replicas=0), deployment("more"))) == {}
    issue = found(gke_with(deployment("idle", replicas=0), deployment("llm", replicas=3)))["deployments[1].replicas"]
    assert issue.problem.startswith(
        "deployment 'llm' claims 3 'gpu' devices on pool 'gpu' (cluster 'prod') (3 replicas"
    )


def test_existing_clusters_are_not_judged() -> None:
    # An Existing pool's nodes are the owner's: neither their memory nor their number is known here.
    raw = {
        "classes": [
            {
                "name": "gpu",
                "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}],
            }
        ],
        "clusters": [
            {
                "name": "prod",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [{"name": "gpu", "className": "gpu"}],
            }
        ],
        "deployments": [deployment("llm", memory="4000Gi", replicas=9)],
    }
    fleet = fleet_of(raw)
    assert located(schedulability_issues(fleet, derive_fleet(fleet)), FILE) == []


def test_an_existing_cluster_does_not_end_the_check_of_the_clusters_after_it() -> None:
    raw = gke_with(deployment("llm", replicas=3))
    raw["classes"].append(
        {"name": "byo", "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}]}
    )
    byo = {"name": "byo", "source": "Existing", "existing": {}, "nodePools": [{"name": "gpu", "className": "byo"}]}
    raw["clusters"].insert(0, byo)
    issue = found(raw)["deployments[0].replicas"]
    assert issue.fix.endswith("(clusters[1].nodePools[0].nodeCount: 3)")


def test_a_machine_the_catalog_does_not_know_is_not_judged_on_memory() -> None:
    raw = gke_with(deployment("llm", memory="64Gi"))
    raw["classes"][0]["provisioning"]["gke"]["machineType"] = "g2-custom-8"
    assert "deployments[0].memory" not in found(raw)


# --------------------------------------------------------------------------------------------
# The reservations, worked out by hand


def test_gke_reserves_3_66_gib_of_a_32_gib_node() -> None:
    # 25% of the first 4 GiB = 1 GiB; 20% of the next 4 = 0.8 GiB; 10% of the next 8 = 0.8 GiB;
    # 6% of the remaining 16 (of the next 112) = 0.96 GiB: 3.56 GiB, plus the 100 MiB eviction
    # threshold = 3.65765625 GiB = 3,822,520,893.44 + 104,857,600 = 3,927,378,493.44 bytes.
    row = machine("GKE", "g2-standard-8")
    assert row is not None and row.memory_gib == 32
    assert gke_reserved(row) == Decimal("3927378493.44")
    assert gke_reserved(row) / GIB == Decimal("3.65765625")


def test_a_g2_standard_8_gpu_node_gives_a_pod_28_28_gib() -> None:
    # 32 - 3.65765625 GiB, less nfd-worker's 64 MiB (0.0625 GiB) = 28.27984375 GiB.
    fleet = fleet_of(gke_fleet())
    cf = derive_fleet(fleet)[0]
    node = node_memory(cf, cf.pool("gpu"))
    assert node is not None
    assert node.for_pods / GIB == Decimal("28.27984375")


def test_gke_reserves_2_percent_above_128_gib() -> None:
    # a3-highgpu-8g, 1872 GiB: 1 + 0.8 + 0.8 + 6.72 (6% of 112) + 34.88 (2% of 1744) = 44.2 GiB, + 100 MiB.
    row = machine("GKE", "a3-highgpu-8g")
    assert row is not None and row.memory_gib == 1872
    assert gke_reserved(row) == Decimal("44.2") * GIB + 100 * MIB


def test_eks_reserves_by_the_node_groups_pod_cap() -> None:
    # nodeadm: 11 MiB x maxPods + 255 MiB, + 100 MiB eviction; maxPods capped at 110 below 30 vCPUs, 250 above.
    g6, p5 = machine("EKS", "g6.xlarge"), machine("EKS", "p5.48xlarge")
    assert g6 is not None and p5 is not None
    assert reserved_memory("EKS", g6) == (11 * 110 + 255 + 100) * MIB  # 1565 MiB
    assert reserved_memory("EKS", p5) == (11 * 250 + 255 + 100) * MIB  # 3105 MiB


def test_aks_reserves_the_lesser_of_its_per_pod_rule_and_a_quarter() -> None:
    # min(20 MiB x 250 pods + 50 MiB = 5050 MiB, 25% of memory), + 100 MiB eviction.
    small, large = machine("AKS", "Standard_D2s_v5"), machine("AKS", "Standard_NC24ads_A100_v4")
    assert small is not None and large is not None
    assert reserved_memory("AKS", small) == (2048 + 100) * MIB  # 25% of 8 GiB
    assert reserved_memory("AKS", large) == (5050 + 100) * MIB


@pytest.mark.parametrize("source", ["Civo", "Vultr"])
def test_clouds_that_publish_no_reservation_take_gke_tiers(source: str) -> None:
    for row in (m for m in MACHINES if m.cloud == source):
        assert reserved_memory(source, row) == gke_reserved(row)


def test_node_agents_are_catalog_rows_counted_on_the_pools_they_reach() -> None:
    with_memory = {c.key for rows in CATALOG.values() for c in rows if any(a.memory for a in c.agents)}
    assert with_memory <= {c.key for c in catalog_for("GKE")}
    cf = derive_fleet(fleet_of(gke_fleet()))[0]
    assert node_agents_memory(cf, cf.pool("gpu")) == 64 * MIB  # nfd-worker
    assert node_agents_memory(cf, cf.pool("cpu")) == 50 * MIB  # dra-driver-cpu


def test_no_cloud_keeps_a_third_of_any_catalog_machine() -> None:
    # A guard against a unit slip (MiB for bytes, GB for GiB): the most any documented rule keeps
    # is AKS's quarter plus 100 MiB, on its smallest machine.
    for row in MACHINES:
        assert reserved_memory(row.cloud, row) < Decimal(str(row.memory_gib)) * GIB / 3, row.name


# --------------------------------------------------------------------------------------------
# Numbers as the messages show them


def test_gib_are_shown_whole_or_to_a_tenth_rounding_half_up() -> None:
    assert gib_text(32 * GIB) == "32"
    assert gib_text(Decimal("7.25") * GIB) == "7.3"
    assert gib_text(Decimal("7.24") * GIB) == "7.2"


def test_what_a_pod_can_get_is_rounded_down_and_never_below_zero() -> None:
    assert gib_down(Decimal("28.29") * GIB) == "28.2"
    assert gib_down(-GIB) == "0.0"


def test_reservations_are_shown_to_a_hundredth_and_agents_to_a_mib_rounding_half_up() -> None:
    assert gib_round(Decimal("2.125") * GIB) == "2.13"
    assert mib(Decimal("2.5") * MIB) == "3"
    assert mib(64 * MIB) == "64"


@pytest.mark.parametrize(
    ("amount", "largest"),
    [(Decimal("27.9") * GIB, "27Gi"), (GIB, "1Gi"), (GIB - 1, "1023Mi"), (MIB - 1, "0Mi"), (-MIB, "0Mi")],
)
def test_the_largest_request_that_fits_is_whole_gib_or_below_one_gib_whole_mib(amount: Decimal, largest: str) -> None:
    assert largest_request(amount) == largest


# --------------------------------------------------------------------------------------------
# Where the issues stop things


def test_the_program_stops_before_registering_anything_and_names_the_issue() -> None:
    result = run_fleet(gke_with(deployment("llm", memory="64Gi", replicas=3)))
    assert isinstance(result.error, pulumi.RunError), result.error
    assert result.resources == []
    message = str(result.error)
    assert f"{FILE}: deployments[0].memory: memory 64Gi is more than the 28.2 GiB" in message
    assert f"{FILE}: deployments[0].replicas: deployment 'llm' claims 3 'gpu' devices" in message


def test_the_offline_plan_reports_the_issues(tmp_path: Path) -> None:
    raw = gke_with(deployment("llm", memory="64Gi", replicas=3))
    path = tmp_path / FILE
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}), encoding="utf-8")
    doc = plan_stack(path, display=FILE)
    assert doc["ok"] is False and doc["resources"] == []
    assert [e["path"] for e in doc["errors"]] == ["deployments[0].memory", "deployments[0].replicas"]
    assert "request at most 28Gi" in doc["errors"][0]["message"]


def test_a_shared_claim_cache_stays_check_servings_to_refuse() -> None:
    # Replicas sharing a ReadWriteOnce cache are refused when the config loads, not here again.
    raw = gke_with(deployment("llm", replicas=2, cache={"size": "50Gi"}))
    with pytest.raises(ConfigError) as err:
        fleet_of(copy.deepcopy(raw))
    assert [i.path for i in err.value.issues] == ["deployments[0].cache.volume"]


# --------------------------------------------------------------------------------------------
# The fix for a GPU engine without memory


def memory_issue(raw: dict[str, Any]) -> ConfigIssue | None:
    """The issue at deployments[0].memory, from the config rules or the guard, or None."""
    try:
        fleet = fleet_of(raw)
    except ConfigError as err:
        return next((i for i in err.issues if i.path == "deployments[0].memory"), None)
    return next((i for i in located_checked(guard(fleet), FILE).issues if i.path == "deployments[0].memory"), None)


@pytest.mark.parametrize("shm", ["2Gi", "12Gi"])
@pytest.mark.parametrize("source", sorted(GPU_BLOCKS))
def test_the_memory_a_gpu_engine_without_one_is_told_to_set_passes_the_next_plan(source: str, shm: str) -> None:
    # Every cloud's example GPU machine (g6.xlarge has 16 GiB, less than a fixed 32Gi would ask).
    dep = deployment("llm", memory=None, shmSize=shm)
    raw = cloud_fleet(source, dep)
    issue = memory_issue(raw)
    assert issue is not None and issue.problem == "deployment 'llm' runs on GPU pool 'gpu' without a memory request"
    value = issue.fix.rsplit("e.g. memory: ", 1)[1]
    raw["deployments"][0]["memory"] = value
    assert memory_issue(raw) is None, (value, memory_issue(raw))


def test_a_node_that_cannot_hold_shm_and_an_engine_is_told_so_instead_of_a_value() -> None:
    issue = memory_issue(cloud_fleet("EKS", deployment("llm", memory=None, shmSize="15Gi")))
    assert issue is not None
    assert issue.fix == (
        "a g6.xlarge node cannot hold shmSize 15Gi and the engine: lower shmSize, or use a larger machine for the "
        "pool's class, then set memory"
    )


def test_an_autoscaled_deployment_is_judged_at_its_max_replicas() -> None:
    scaling = {"minReplicas": 1, "maxReplicas": 3, "metric": "RequestsWaiting", "target": 5}
    issue = found(gke_with(deployment("llm", autoscaling=scaling)))["deployments[0].autoscaling.maxReplicas"]
    assert "(3 replicas x 1)" in issue.problem
    assert issue.fix.startswith("lower autoscaling.maxReplicas to at most 2")


def test_an_autoscaled_deployment_whose_max_fits_the_pool_is_accepted() -> None:
    scaling = {"minReplicas": 1, "maxReplicas": 2, "metric": "RequestsWaiting", "target": 5}
    assert found(gke_with(deployment("llm", autoscaling=scaling))) == {}


def test_a_shared_cache_and_a_pool_too_small_are_reported_in_one_plan_and_both_fixes_plan_clean(
    tmp_path: Path,
) -> None:
    # Independent problems, one a rule on values (the cache, `check_serving`) and one the guard's (the
    # pool's capacity): both in one run, not the second only after the first is fixed.
    raw = gke_with(deployment("llm", replicas=3, cache={"size": "50Gi"}), nodeCount=1)
    path = tmp_path / FILE
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}), encoding="utf-8")
    doc = plan_stack(path, display=FILE)
    assert doc["ok"] is False and doc["resources"] == []
    errors = {e["path"]: e["message"] for e in doc["errors"]}
    assert list(errors) == ["deployments[0].cache.volume", "deployments[0].replicas"]
    assert "Fix: use volume: NodeLocal and remove size for several replicas" in errors["deployments[0].cache.volume"]
    assert "(clusters[0].nodePools[0].nodeCount: 3)" in errors["deployments[0].replicas"]

    # Both fixes, as the messages give them, plan clean.
    raw["deployments"][0]["cache"] = {"volume": "NodeLocal"}
    raw["clusters"][0]["nodePools"][0]["nodeCount"] = 3
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}), encoding="utf-8")
    fixed = plan_stack(path, display=FILE)
    assert fixed["ok"] is True, fixed["errors"]
