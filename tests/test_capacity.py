"""A pool's capacity (`nodePools[].capacity`): what each cloud refuses, and how each cloud's component buys it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from clouds import CLOUDS
from infra.config.issues import ConfigError, ConfigIssue
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, GPU_BLOCKS, cpu_class, fleet_of, gpu_class, named, run_fleet
from tests.engine import schema
from tooling.changes import PLAN_FORMAT, change_errors, compare

ROOT = Path(__file__).resolve().parent.parent
# A capacity reservation group's ARM ID, as Azure gives it (lowercase `resourcegroups` too).
CRG = "/subscriptions/sub-1/resourcegroups/reserved/providers/Microsoft.Compute/capacityReservationGroups/a100"
CAPACITY_BLOCK = {
    "type": "CapacityBlock",
    "reservation": "cr-0123456789abcdef0",
    "blockNodes": 2,
    "blockZone": "us-east-1a",
}


def one_pool(source: str, capacity: dict[str, Any], gpu: bool = True, **pool: Any) -> dict[str, Any]:
    """A cluster `prod` of `source` with one pool `p` of a GPU (or CPU) class, bought as `capacity`."""
    cls = (
        gpu_class("c", source, copy.deepcopy(GPU_BLOCKS[source]))
        if gpu
        else cpu_class("c", source, copy.deepcopy(CPU_BLOCKS[source]))
    )
    return {
        "classes": [cls],
        "clusters": [
            {
                "name": "prod",
                "source": source,
                source.lower(): copy.deepcopy(CLUSTER_BLOCKS[source]),
                "nodePools": [{"name": "p", "className": "c", "capacity": capacity, **pool}],
            }
        ],
    }


def issues(raw: dict[str, Any]) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    return err.value.issues


def only(raw: dict[str, Any]) -> ConfigIssue:
    [issue] = issues(raw)
    return issue


# --- what each cloud offers


@pytest.mark.parametrize(
    ("source", "capacity", "pool"),
    [
        ("GKE", {"type": "Spot"}, {}),
        ("GKE", {"type": "Reservation", "reservation": "l4-us-central1-a"}, {}),
        ("GKE", {"type": "Reservation", "reservation": "projects/shared-proj/reservations/l4-pool"}, {}),
        ("EKS", {"type": "Spot"}, {}),
        ("EKS", {"type": "Reservation", "reservation": "cr-0123456789abcdef0"}, {}),
        ("EKS", CAPACITY_BLOCK, {"nodeCount": 2, "zones": ["us-east-1a"]}),
        ("AKS", {"type": "Spot", "maxPrice": "1.25"}, {}),
        ("AKS", {"type": "Reservation", "reservation": CRG}, {}),
        ("Nebius", {"type": "Spot"}, {}),
        ("Nebius", {"type": "Reservation", "reservation": "capacityblockgroup-e00test"}, {}),
        ("OCI", {"type": "Spot"}, {"gpu": False}),
        ("OCI", {"type": "Reservation", "reservation": "ocid1.capacityreservation.oc1.iad.test"}, {}),
    ],
)
def test_a_capacity_the_cloud_offers_is_accepted(source: str, capacity: dict[str, Any], pool: dict[str, Any]) -> None:
    fleet_of(one_pool(source, capacity, **pool))


# The provisioned clouds whose profiles sell no capacity type beyond on demand.
WITHOUT_CAPACITY = [c.source for c in CLOUDS if c.profile.provisioned and not c.profile.capacity.offered]


def test_three_provisioned_clouds_sell_no_capacity_type() -> None:
    # Civo, Vultr and DigitalOcean (their profiles' `capacity.lacks` name the source): the refusal
    # test below runs for each, so an empty list would leave it running for none.
    assert len(WITHOUT_CAPACITY) == 3


@pytest.mark.parametrize("source", WITHOUT_CAPACITY)
@pytest.mark.parametrize("kind", ["Spot", "Reservation"])
def test_a_cloud_without_spot_or_reservations_refuses_them_with_its_source(source: str, kind: str) -> None:
    capacity = {"type": kind} if kind == "Spot" else {"type": kind, "reservation": "r"}
    issue = only(one_pool(source, capacity))
    assert issue.path == "clusters[0].nodePools[0].capacity.type"
    assert issue.problem.startswith(f"{source} pools cannot be bought as {kind}: ")
    assert "no spot, reservation or capacity block (https://" in issue.problem
    assert issue.fix == "remove capacity (the pool is bought on demand)"


def test_gke_refuses_a_capacity_block_and_names_what_it_offers() -> None:
    issue = only(one_pool("GKE", {**CAPACITY_BLOCK, "blockZone": "us-central1-a"}, zones=["us-central1-a"]))
    assert issue.path == "clusters[0].nodePools[0].capacity.type"
    assert "a capacity block is consumed as a specific reservation" in issue.problem
    assert issue.fix == "set capacity.type to Spot or Reservation, or remove capacity (the pool is bought on demand)"


@pytest.mark.parametrize("reservation", ["crg", CRG.replace("Microsoft.Compute", "Microsoft.Network"), f"{CRG}/x"])
def test_aks_refuses_a_reservation_that_is_not_a_capacity_reservation_groups_id(reservation: str) -> None:
    issue = only(one_pool("AKS", {"type": "Reservation", "reservation": reservation}))
    assert issue.path == "clusters[0].nodePools[0].capacity.reservation"
    assert f"'{reservation}' is not a capacity reservation group's ARM ID" in issue.problem
    assert issue.fix.startswith("write the group's ARM ID, e.g. /subscriptions/")


def test_aks_refuses_a_capacity_block_and_names_its_reservation_groups() -> None:
    issue = only(one_pool("AKS", {**CAPACITY_BLOCK, "blockZone": "1"}, nodeCount=2, zones=["1"]))
    assert issue.path == "clusters[0].nodePools[0].capacity.type"
    assert "AKS reserves capacity through capacity reservation groups and has no capacity blocks" in issue.problem
    assert issue.fix == "set capacity.type to Spot or Reservation, or remove capacity (the pool is bought on demand)"


def test_nebius_refuses_a_preemptible_cpu_pool() -> None:
    issue = only(one_pool("Nebius", {"type": "Spot"}, gpu=False))
    assert issue.path == "clusters[0].nodePools[0].capacity.type"
    assert "for GPU machines only, and pool 'p' has no GPU" in issue.problem


def test_oci_refuses_a_preemptible_bare_metal_pool() -> None:
    issue = only(one_pool("OCI", {"type": "Spot"}))
    assert issue.path == "clusters[0].nodePools[0].capacity.type"
    assert "on virtual machine shapes (VM.*), not bare metal (BM.*), and pool 'p' is on BM.GPU.L40S.4" in issue.problem
    assert issue.fix == "use a VM shape for a preemptible pool, or buy a bare-metal pool on demand or reserved"


def test_an_existing_clusters_pools_are_not_judged_here() -> None:
    raw = {
        "classes": [cpu_class("c", None)],
        "clusters": [
            {
                "name": "lab",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [{"name": "p", "className": "c", "capacity": {"type": "Spot"}}],
            }
        ],
    }
    fleet_of(raw)


# --- the keys each type takes


@pytest.mark.parametrize(
    ("capacity", "key", "takers"),
    [
        ({"maxPrice": "1"}, "maxPrice", "Spot"),
        ({"type": "Spot", "reservation": "r"}, "reservation", "Reservation or CapacityBlock"),
        ({"type": "Reservation", "reservation": "r", "blockNodes": 2}, "blockNodes", "CapacityBlock"),
    ],
)
def test_a_key_of_another_capacity_type_is_refused(capacity: dict[str, Any], key: str, takers: str) -> None:
    issue = only(one_pool("GKE", capacity))
    assert issue.path == f"clusters[0].nodePools[0].capacity.{key}"
    assert issue.fix == f"remove capacity.{key}, or set capacity.type to {takers}"


def test_a_price_ceiling_on_a_cloud_that_takes_none_is_refused() -> None:
    issue = only(one_pool("GKE", {"type": "Spot", "maxPrice": "0.5"}))
    assert issue.path == "clusters[0].nodePools[0].capacity.maxPrice"
    assert issue.problem.startswith("GKE takes no price ceiling for a spot pool")


def test_a_reservation_names_the_one_it_consumes() -> None:
    issue = only(one_pool("EKS", {"type": "Reservation"}))
    assert issue.path == "clusters[0].nodePools[0].capacity.reservation"
    assert issue.fix.startswith("set capacity.reservation to an EC2 Capacity Reservation ID")


def test_an_eks_reservation_id_of_the_wrong_form_is_refused() -> None:
    issue = only(one_pool("EKS", {"type": "Reservation", "reservation": "my-reservation"}))
    assert issue.problem.startswith("'my-reservation' is not an EC2 Capacity Reservation ID")
    assert issue.fix == "write the reservation's ID, e.g. cr-0123456789abcdef0"


# --- capacity blocks


def test_a_capacity_block_pool_that_could_outgrow_its_block_is_refused() -> None:
    issue = only(one_pool("EKS", CAPACITY_BLOCK, nodeCount=1, minNodeCount=1, maxNodeCount=3, zones=["us-east-1a"]))
    assert issue.path == "clusters[0].nodePools[0].maxNodeCount"
    assert issue.problem == "pool 'p' can have 3 nodes, more than the 2 its capacity block holds"
    assert issue.fix == "set maxNodeCount to at most 2"


@pytest.mark.parametrize(
    ("zones", "where"), [([], "every zone of the cluster"), (["us-east-1b"], "zones ['us-east-1b']")]
)
def test_a_capacity_block_pool_outside_the_blocks_zone_is_refused(zones: list[str], where: str) -> None:
    issue = only(one_pool("EKS", CAPACITY_BLOCK, nodeCount=2, zones=zones))
    assert issue.path == "clusters[0].nodePools[0].zones"
    assert issue.problem == f"pool 'p' would place nodes in {where}, but its capacity block is in us-east-1a only"
    assert issue.fix == "set zones: [us-east-1a]"


def test_a_capacity_block_says_its_size_and_zone() -> None:
    found = issues(one_pool("EKS", {"type": "CapacityBlock", "reservation": "cr-0123456789abcdef0"}))
    assert [i.path for i in found] == [
        "clusters[0].nodePools[0].capacity.blockNodes",
        "clusters[0].nodePools[0].capacity.blockZone",
    ]


def test_a_spot_gpu_pool_at_zero_is_refused_where_the_autoscaler_cannot_bring_it_back() -> None:
    issue = only(one_pool("EKS", {"type": "Spot"}, nodeCount=1, minNodeCount=0, maxNodeCount=2))
    assert issue.path == "clusters[0].nodePools[0].minNodeCount"
    assert "could not scale up again from minNodeCount 0" in issue.problem


# --- each cloud's spelling, under mocks


def pool_inputs(source: str, capacity: dict[str, Any], name: str = "prod-p", **pool: Any) -> dict[str, Any]:
    return dict(named(run_fleet(one_pool(source, capacity, **pool)), name).inputs)


def test_gke_buys_spot_vms_and_a_specific_reservation() -> None:
    spot = pool_inputs("GKE", {"type": "Spot"})["nodeConfig"]
    assert spot["spot"] is True and "reservationAffinity" not in spot
    reserved = pool_inputs("GKE", {"type": "Reservation", "reservation": "l4-a"})["nodeConfig"]
    assert reserved["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["l4-a"],
    }
    assert "spot" not in reserved


def test_eks_buys_spot_and_on_demand_pools_leave_the_capacity_type_unset() -> None:
    assert pool_inputs("EKS", {"type": "Spot"})["capacityType"] == "SPOT"
    assert "capacityType" not in pool_inputs("EKS", {"type": "OnDemand"})


def test_eks_targets_a_reservation_through_the_launch_template() -> None:
    result = run_fleet(one_pool("EKS", {"type": "Reservation", "reservation": "cr-0123456789abcdef0"}))
    assert named(result, "prod-p").inputs["capacityType"] == "ON_DEMAND"
    template = named(result, "prod-p-template").inputs
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}
    }
    assert "instanceMarketOptions" not in template


def test_eks_launches_a_capacity_block_pool_into_its_block_without_a_placement_group() -> None:
    efa = {
        "name": "h100",
        "devices": [
            {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8},
            {"name": "efa", "driver": "dra.net", "deviceClassName": "efa.networking.k8s.aws", "count": 32},
        ],
        "provisioning": {"provider": "EKS", "eks": {"instanceType": "p5.48xlarge"}},
    }
    raw = one_pool("EKS", CAPACITY_BLOCK, nodeCount=2, zones=["us-east-1a"])
    raw["classes"] = [efa]
    raw["clusters"][0]["nodePools"][0]["className"] = "h100"
    result = run_fleet(raw)
    assert named(result, "prod-p").inputs["capacityType"] == "CAPACITY_BLOCK"
    template = named(result, "prod-p-template").inputs
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": "cr-0123456789abcdef0"
    }
    assert "placement" not in template and len(template["networkInterfaces"]) == 32
    assert not [r for r in result.resources if r.type == "aws:ec2/placementGroup:PlacementGroup"]


def test_aks_buys_spot_priority_with_the_ceiling_or_up_to_on_demand() -> None:
    capped = pool_inputs("AKS", {"type": "Spot", "maxPrice": "1.25"})
    assert (capped["scaleSetPriority"], capped["scaleSetEvictionPolicy"], capped["spotMaxPrice"]) == (
        "Spot",
        "Delete",
        1.25,
    )
    assert pool_inputs("AKS", {"type": "Spot"})["spotMaxPrice"] == -1
    assert "scaleSetPriority" not in pool_inputs("AKS", {"type": "OnDemand"})


def test_an_aks_reserved_pool_gets_its_group_through_a_user_assigned_identity_with_contributor() -> None:
    result = run_fleet(one_pool("AKS", {"type": "Reservation", "reservation": CRG}))
    assert named(result, "prod-p").inputs["capacityReservationGroupID"] == CRG
    identity = named(result, "prod-identity")
    [role] = [r for r in result.resources if r.type == "azure-native:authorization:RoleAssignment"]
    assert role.inputs == {
        "principalId": "prod-identity-principal",
        "principalType": "ServicePrincipal",
        "roleDefinitionId": "/subscriptions/sub-1/providers/Microsoft.Authorization/roleDefinitions/"
        "b24988ac-6180-42a0-ab88-20f7382dd24c",
        "scope": "/subscriptions/sub-1/resourceGroups/reserved",
    }
    cluster = named(result, "prod-cluster")
    assert cluster.inputs["identity"] == {"type": "UserAssigned", "userAssignedIdentities": ["prod-identity-id"]}
    assert role.urn in cluster.dependencies and identity.urn in role.dependencies


def test_an_aks_reserved_pool_previews_with_its_identity_not_known_yet() -> None:
    result = run_fleet(one_pool("AKS", {"type": "Reservation", "reservation": CRG}), preview=True)
    assert result.error is None
    assert named(result, "prod-cluster").inputs["identity"]["type"] == "UserAssigned"
    assert named(result, "prod-p").inputs["capacityReservationGroupID"] == CRG


def test_an_aks_cluster_without_a_reserved_pool_keeps_its_system_assigned_identity() -> None:
    result = run_fleet(one_pool("AKS", {"type": "Spot"}))
    assert named(result, "prod-cluster").inputs["identity"] == {"type": "SystemAssigned"}
    assert "capacityReservationGroupID" not in named(result, "prod-p").inputs
    assert not [
        r
        for r in result.resources
        if r.type in ("azure-native:managedidentity:UserAssignedIdentity", "azure-native:authorization:RoleAssignment")
    ]


def test_nebius_buys_preemptible_nodes_and_a_capacity_block_group() -> None:
    spot = pool_inputs("Nebius", {"type": "Spot"})["template"]
    assert spot["preemptible"] == {} and "reservationPolicy" not in spot
    reserved = pool_inputs("Nebius", {"type": "Reservation", "reservation": "cbg-1"})["template"]
    assert reserved["reservationPolicy"] == {"policy": "STRICT", "reservationIds": ["cbg-1"]}
    assert "preemptible" not in reserved


def test_oci_buys_preemptible_capacity_and_a_capacity_reservation_on_every_placement() -> None:
    spot = pool_inputs("OCI", {"type": "Spot"}, gpu=False)["nodeConfigDetails"]["placementConfigs"]
    assert spot and all(
        p["preemptibleNodeConfig"] == {"preemptionAction": {"type": "TERMINATE", "isPreserveBootVolume": False}}
        for p in spot
    )
    reserved = pool_inputs("OCI", {"type": "Reservation", "reservation": "ocid1.capacityreservation.x"}, gpu=False)
    placements = reserved["nodeConfigDetails"]["placementConfigs"]
    assert placements and all(p["capacityReservationId"] == "ocid1.capacityreservation.x" for p in placements)


# --- `plan --against`: a pool moved between capacities


def plan_row(name: str, type_: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A plan document of one resource, as `modelplane plan --json` writes it."""
    resource = {
        "urn": f"urn:pulumi:s::modelplane::{type_}::{name}",
        "type": type_,
        "name": name,
        "protect": False,
        "inputs": inputs,
    }
    return {"format": PLAN_FORMAT, "mode": "preview", "stack": "s", "ok": True, "resources": [resource]}


@pytest.mark.parametrize(
    ("type_", "old", "new", "replaced_by"),
    [
        ("gcp:container/nodePool:NodePool", {"nodeConfig": {}}, {"nodeConfig": {"spot": True}}, ["nodeConfig.spot"]),
        (
            "gcp:container/nodePool:NodePool",
            {"nodeConfig": {}},
            {"nodeConfig": {"reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION"}}},
            ["nodeConfig.reservationAffinity.consumeReservationType"],
        ),
        ("aws:eks/nodeGroup:NodeGroup", {}, {"capacityType": "SPOT"}, ["capacityType"]),
        ("aws:eks/nodeGroup:NodeGroup", {"capacityType": "SPOT"}, {"capacityType": "CAPACITY_BLOCK"}, ["capacityType"]),
    ],
)
def test_a_pool_moved_to_spot_or_a_block_is_replaced_where_the_provider_replaces_it(
    type_: str, old: dict[str, Any], new: dict[str, Any], replaced_by: list[str]
) -> None:
    [change] = compare(plan_row("p", type_, old), plan_row("p", type_, new))
    assert (change["op"], change["replacedBy"]) == ("replace", replaced_by)


@pytest.mark.parametrize(
    ("type_", "old", "new"),
    [
        # A reservation on EKS is a new launch template version: the node group rolls its nodes in place.
        (
            "aws:ec2/launchTemplate:LaunchTemplate",
            {},
            {"capacityReservationSpecification": {"capacityReservationTarget": {"capacityReservationId": "cr-1"}}},
        ),
        ("nebius:index/mk8sV1NodeGroup:Mk8sV1NodeGroup", {"template": {}}, {"template": {"preemptible": {"x": 1}}}),
        (
            "oci:ContainerEngine/nodePool:NodePool",
            {"nodeConfigDetails": {"placementConfigs": [{}]}},
            {"nodeConfigDetails": {"placementConfigs": [{"capacityReservationId": "ocid1.x"}]}},
        ),
    ],
)
def test_a_capacity_the_provider_changes_in_place_is_an_update(
    type_: str, old: dict[str, Any], new: dict[str, Any]
) -> None:
    [change] = compare(plan_row("p", type_, old), plan_row("p", type_, new))
    assert change["op"] == "update"


@pytest.mark.parametrize("path", ["scaleSetPriority", "scaleSetEvictionPolicy", "spotMaxPrice"])
def test_an_aks_pools_spot_priority_change_is_an_error_with_the_new_pool_route(path: str) -> None:
    agent_pool = "azure-native:containerservice:AgentPool"
    changes = compare(plan_row("p", agent_pool, {}), plan_row("p", agent_pool, {path: "Spot"}))
    assert [(c["op"], c.get("refused")) for c in changes] == [("update", [path])]
    [error] = change_errors(changes)
    assert "Spot priority" in error["message"] and "only when it creates the pool" in error["message"]
    assert "give the pool a new name in the stack file" in error["message"]


def test_an_aks_pool_moved_into_a_reservation_group_is_an_error_with_the_new_pool_route() -> None:
    agent_pool = "azure-native:containerservice:AgentPool"
    changes = compare(plan_row("p", agent_pool, {}), plan_row("p", agent_pool, {"capacityReservationGroupID": CRG}))
    assert [(c["op"], c.get("refused")) for c in changes] == [("update", ["capacityReservationGroupID"])]
    [error] = change_errors(changes)
    assert "capacity reservation group only when it creates the pool" in error["message"]
    assert "give the pool a new name in the stack file" in error["message"]


# --- the providers' schemas take every capacity argument


def as_previewed(value: Any) -> Any:
    """A golden input as the engine previews it: what the plan shows as `[unknown]`, or as null where
    an output was not known in a list, is unknown, which the providers' check takes for any shape."""
    if isinstance(value, dict):
        return {k: as_previewed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_previewed(v) for v in value]
    return schema.UNKNOWN if value in (None, "[unknown]") else value


def capacity_pools() -> list[tuple[str, str, dict[str, Any]]]:
    """(stack, type, inputs) of every spot, reserved and block pool the committed stacks register."""
    found = []
    for stack in ("gke-prod", "eks-prod", "aks-prod", "nebius-prod", "oci-us-chicago-1"):
        doc = json.loads((ROOT / "tests" / "golden" / f"{stack}.json").read_text())
        for r in doc["resources"]:
            if any(word in r["name"] for word in ("spot", "-reserved", "-block")):
                found.append((stack, r["type"], as_previewed(r["inputs"])))
    return found


def test_the_committed_stacks_carry_a_capacity_pool_on_every_cloud_that_has_them() -> None:
    types = {t for _, t, _ in capacity_pools()}
    assert {
        "gcp:container/nodePool:NodePool",
        "aws:eks/nodeGroup:NodeGroup",
        "aws:ec2/launchTemplate:LaunchTemplate",
        "azure-native:containerservice:AgentPool",
        "nebius:index/mk8sV1NodeGroup:Mk8sV1NodeGroup",
        "oci:ContainerEngine/nodePool:NodePool",
    } <= types


def test_every_capacity_argument_is_one_the_providers_schema_takes() -> None:
    """What the engine tier's test providers check on `up` (tests/engine/schema.py), over the goldens."""
    failures = [(stack, t, f.path, f.reason) for stack, t, inputs in capacity_pools() for f in schema.check(t, inputs)]
    assert failures == []
    # The check does look inside these arguments: a wrong value under each is named.
    assert schema.check("gcp:container/nodePool:NodePool", {"cluster": "c", "nodeConfig": {"spot": "yes"}}) != []
    assert schema.check("nebius:index/mk8sV1NodeGroup:Mk8sV1NodeGroup", {"template": {"preemptible": {"x": 1}}}) != []
