"""A reclaimed spot node, for real: a deployment with a floor keeps serving while the node's pods
are replaced on the capacity that remains.

On the local cluster of the cluster tier (test_real_up.py): byo-mixed's NVIDIA side, with a second
pool of the same class bought as Spot whose KWOK nodes carry AKS's own spot taint (the owner's
`capacity.nodeTaint`, as on an Existing AKS cluster), and qwen-h100 with one replica on the
on-demand pool and two on the spot pool. Every driver and model runs there; then one spot node is
deleted, as the cloud's node controller deletes a reclaimed node. Nothing evicts its pods: the pod
garbage collector force-deletes pods bound to a node that no longer exists once the node has been
gone for its quarantine (k8s.io/kubernetes v1.36.0 pkg/controller/podgc/gc_controller.go,
`gcOrphaned`: `gcCheckPeriod` 20 s, `quarantineTime` 40 s, constants no controller-manager flag
sets), which releases their claims; the ReplicaSet controller makes replacements, and the
scheduler allocates their claims on the remaining spot node. Kubernetes does not preempt for DRA
claims: the replacements find free devices or wait.
"""

from __future__ import annotations

import time
from typing import Any

from clouds import profile
from tests.engine.cluster import NOT_YET, wait_for
from tests.engine.site import Pod
from tests.engine.stackrun import Run
from tests.engine.test_real_up import check_installed

STACK = "byo-mixed"
NAMESPACE = "ml-team"
DEPLOYMENT = "qwen-h100"
SPOT_POOL = "h100-spot"
FLOOR, REPLICAS = 1, 3
# How long the reclaimed node's pods may take to be replaced: the pod garbage collector's quarantine
# and check period (40 s + up to 20 s), then a new pod's scheduling, claim and start.
REPLACED_SECONDS = 150


def spot_stack(config: dict[str, Any]) -> None:
    """byo-mixed's NVIDIA pool and model only, with a spot pool of two nodes beside the pool and
    qwen-h100's replicas above the floor on it."""
    spot = profile("AKS").spot_taint
    assert spot is not None
    (cluster,) = config["modelplane:clusters"]
    cluster["nodePools"] = [p for p in cluster["nodePools"] if p["name"] == "h100"]
    cluster["nodePools"].append(
        {
            "name": SPOT_POOL,
            "className": "h100-byo",
            "nodeCount": 2,
            "capacity": {"type": "Spot", "nodeTaint": {"key": spot.key, "value": spot.value, "effect": spot.effect}},
        }
    )
    config["modelplane:classes"] = [c for c in config["modelplane:classes"] if c["name"] == "h100-byo"]
    (dep,) = [d for d in config["modelplane:deployments"] if d["name"] == DEPLOYMENT]
    del dep["autoscaling"]
    dep.update(replicas=REPLICAS, spotPool=SPOT_POOL, floor=FLOOR)
    config["modelplane:deployments"] = [dep]
    config["modelplane:services"] = [s for s in config["modelplane:services"] if s["deployment"] == DEPLOYMENT]


def pods_of(run: Run, workload: str) -> list[Pod]:
    return [p for p in run.site.pods() if p.namespace == NAMESPACE and p.owner == f"Deployment/{workload}"]


def test_a_reclaimed_spot_node_sends_its_pods_to_the_remaining_capacity_and_the_floor_keeps_serving(run: Any) -> None:
    spotted = run(STACK, (), spot_stack)
    started = time.monotonic()
    spotted.up()
    took_up = time.monotonic() - started
    # Every driver and model runs, the spot pool's nodes carrying AKS's taint: the node agents
    # reach them (the placement audit's pools, read from the cluster) and the replicas above the
    # floor run there (check_installed, test_real_up.py).
    spot = profile("AKS").spot_taint
    assert spot is not None
    spot_nodes = {n for n, pool in spotted.site.node_pools().items() if pool == SPOT_POOL}
    for node in spot_nodes:
        obj = spotted.cluster.server.get({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
        assert obj is not None
        assert {"key": spot.key, "value": spot.value, "effect": spot.effect} in obj["spec"]["taints"]
    check_installed(spotted)
    assert spotted.site.release_nodes("mp-dra-driver-nvidia-gpu") >= spot_nodes
    # The Service (and the picker's InferencePool, which selects alike) reaches the floor and the rest.
    floor = pods_of(spotted, DEPLOYMENT)
    above = pods_of(spotted, f"{DEPLOYMENT}-spot")
    assert spotted.site.endpoints(NAMESPACE, DEPLOYMENT) == {p.name for p in floor + above}

    # The cloud reclaims a spot node that runs a replica: its Node goes, and with it the driver's
    # ResourceSlices (a kubelet plugin's slices are owned by their Node and collected with it;
    # the local cluster's are not, so the test deletes them as the garbage collector would).
    victim = above[0].node
    assert victim is not None
    lost = {p.name for p in above if p.node == victim}
    lost_claims = {c for p in above if p.node == victim for c in p.claims}
    server = spotted.cluster.server
    reclaimed = time.monotonic()
    server.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": victim}})
    for piece in server.list_all("resource.k8s.io/v1", "ResourceSlice"):
        if piece["spec"].get("nodeName") == victim:
            server.delete({**piece, "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice"})
    observations = 0

    def replaced() -> bool:
        nonlocal observations
        observations += 1
        # At every observation the floor serves: its replica Ready on the on-demand pool.
        serving = [p for p in pods_of(spotted, DEPLOYMENT) if p.ready and p.node not in (None, victim)]
        assert len(serving) >= FLOOR, pods_of(spotted, DEPLOYMENT)
        now = pods_of(spotted, f"{DEPLOYMENT}-spot")
        allocated = {(a.namespace, a.claim): a for a in spotted.site.allocations()}
        return (
            len(now) == REPLICAS - FLOOR
            and not {p.name for p in now} & lost
            and all(p.ready and p.node in spot_nodes - {victim} for p in now)
            and all(
                len(p.claims) == 1
                and allocated[(NAMESPACE, p.claims[0])].node == p.node
                and p.claims[0] not in lost_claims
                for p in now
            )
            # The reclaimed pods' claims are released with them.
            and not {c for (_, c) in allocated} & lost_claims
        )

    wait_for(
        f"{DEPLOYMENT}'s pods of {victim} replaced on the remaining spot node",
        replaced,
        REPLACED_SECONDS,
        retrying=NOT_YET,
    )
    took_reclaim = time.monotonic() - reclaimed
    assert observations > 1
    # The Service follows: the floor and the replacements, none of the reclaimed pods.
    now = {p.name for p in pods_of(spotted, DEPLOYMENT) + pods_of(spotted, f"{DEPLOYMENT}-spot")}
    wait_for("the Service's endpoints follow", lambda: spotted.site.endpoints(NAMESPACE, DEPLOYMENT) == now, 30)
    # The replacements wait for the pod garbage collector's quarantine, never longer than its bound.
    assert took_reclaim < REPLACED_SECONDS, (took_up, took_reclaim)
