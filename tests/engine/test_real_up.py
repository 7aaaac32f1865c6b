"""`pulumi up` for real: the real Kubernetes provider installs the serving stack on a local cluster.

Through the real CLI, with the pack, the real `pulumi-resource-kubernetes` (harness.py,
`Engine.real`) and a local cluster (cluster.py: real API server, controllers and scheduler, KWOK
nodes publishing ResourceSlices as the DRA drivers do), charts from the vendored archives served
as a Helm repository on 127.0.0.1 (`modelplane:chartMirror`). Every assertion reads the cluster
(site.py), not our harness.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from components.features import multinode
from infra.placement import UNPOOLED
from infra.serving.catalog import release_values
from infra.vocabulary import AMD_GPU_DRIVER, CPU_DRIVER, NVIDIA_GPU_DRIVER
from tests.engine import charts as mirror
from tests.engine.cluster import condition
from tests.engine.devices import SIMULATED
from tests.engine.harness import assert_secrets_kept, mock_urns, urns
from tests.engine.stackrun import Run
from tooling.placement import audit

# The release whose DaemonSet is each driver's kubelet plugin. The AMD DRA driver's DaemonSet is
# created by the AMD operator from its DeviceConfig, and no operator really runs here.
DRIVER_RELEASES = {NVIDIA_GPU_DRIVER: "mp-dra-driver-nvidia-gpu", CPU_DRIVER: "mp-dra-driver-cpu"}
LWS_API = multinode.API_VERSION
# The label LWS's pod webhook gives every pod of a group with the group's index
# (`GroupIndexLabelKey`, api/leaderworkerset/v1/leaderworkerset_types.go at v0.8.0).
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"


def claiming_nodes(run: Run, driver: str) -> set[str]:
    """The nodes of the pools whose class claims `driver`, from the stack's config."""
    pools = {p.name for p in run.facts.pools if driver in p.claimed_drivers}
    return {node for node, pool in run.site.node_pools().items() if pool in pools}


def workload(dep: dict[str, Any], name: str | None = None) -> str:
    """The workload a deployment's pods belong to: its Deployment, or for replicas of several
    nodes its LeaderWorkerSet (components/features/multinode.py)."""
    return f"{'LeaderWorkerSet' if dep.get('nodes', 1) > 1 else 'Deployment'}/{name or dep['name']}"


def placed_replicas(dep: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(workload name, pool, replicas) of each workload of a deployment: its own on its pool, and
    with a floor the floor there and the rest in `<name>-spot` on its spot pool."""
    replicas = dep.get("replicas", 1)
    if dep.get("spotPool") is None:
        return [(dep["name"], dep["pool"], replicas)]
    floor = dep["floor"]
    return [(dep["name"], dep["pool"], floor), (f"{dep['name']}-spot", dep["spotPool"], replicas - floor)]


def check_groups(run: Run, dep: dict[str, Any]) -> None:
    """What the LeaderWorkerSet controller, its webhook and the StatefulSet controller made of a
    deployment of several nodes per replica, read from the cluster."""
    name, namespace, nodes, replicas = dep["name"], dep["namespace"], dep["nodes"], dep.get("replicas", 1)
    (lws,) = [o for o in run.cluster.list(LWS_API, "LeaderWorkerSet", namespace) if o["metadata"]["name"] == name]
    assert condition(lws, "Available"), lws.get("status")
    pods = [p for p in run.site.pods() if p.namespace == namespace and p.owner == f"LeaderWorkerSet/{name}"]
    # Every pod on a node of its own (each claims all of its node's GPUs), every node of the pool.
    assert len({p.node for p in pods}) == len(pods) == replicas * nodes
    groups: dict[str, list[Any]] = {}
    for pod in pods:
        groups.setdefault(pod.labels[GROUP_INDEX], []).append(pod)
    assert sorted(groups) == [str(g) for g in range(replicas)]
    leaders = set()
    for index, group in groups.items():
        # A leader (rank 0) and its workers, one group key, and the environment the engine's
        # launch reads (LWS_LEADER_ADDRESS names the leader in its group's own headless Service).
        assert sorted(p.labels[multinode.WORKER_INDEX_LABEL] for p in group) == [str(r) for r in range(nodes)]
        assert len({p.labels[multinode.GROUP_KEY_LABEL] for p in group}) == 1
        leader = f"{name}-{index}"
        for pod in group:
            assert pod.env[multinode.GROUP_SIZE_ENV] == str(nodes)
            assert pod.env[multinode.WORKER_INDEX_ENV] == pod.labels[multinode.WORKER_INDEX_LABEL]
            assert pod.env[multinode.LEADER_ADDRESS_ENV] == f"{leader}.{leader}.{namespace}"
        leaders.add(leader)
        headless = run.cluster.server.get(
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": leader, "namespace": namespace}}
        )
        assert headless is not None and headless["spec"]["clusterIP"] == "None", leader
    assert len({p.labels[multinode.GROUP_KEY_LABEL] for p in pods}) == replicas
    # The deployment's Service reaches the leaders only: the workers run headless.
    assert run.site.endpoints(namespace, name) == leaders
    service = run.cluster.server.get(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace}}
    )
    assert service is not None and service["spec"]["clusterIP"] != "None"


def check_installed(run: Run) -> None:
    """What the issue's run reads from the cluster after `up`, for any of the stacks."""
    site = run.site
    releases = site.releases()
    # Every release the plan names is on the cluster, deployed.
    assert {r.name: r.status for r in releases.values()} == {name: "deployed" for name in run.planned_releases}
    # Each driver's kubelet plugin runs on the nodes of the pools that claim its driver, and no other.
    for driver, release in DRIVER_RELEASES.items():
        expected = claiming_nodes(run, driver)
        assert (release in releases) == bool(expected), driver
        if expected:
            assert site.daemonsets(release), release
            assert site.release_nodes(release) == expected, driver
    # NFD's worker goes where the catalog's values tolerate it: every node but the CPU pools'
    # (infra/serving/values.py, `node_feature_discovery`: the GPU taints only).
    if "mp-node-feature-discovery" in releases:
        cpu_nodes = claiming_nodes(run, CPU_DRIVER)
        assert site.release_nodes("mp-node-feature-discovery") == set(site.node_pools()) - cpu_nodes
    # Every node agent runs on each node of the pools the offline placement audit puts it on, and
    # nowhere else; the pools' nodes carry the cluster's own taints (`clusters[].taints`), so an
    # agent that did not tolerate them would leave its pools here, as on the owner's nodes.
    nodes_of_pool: dict[str, set[str]] = {}
    for node, pool in site.node_pools().items():
        nodes_of_pool.setdefault(pool or UNPOOLED, set()).add(node)
    for placed, landed in audit(run.facts, release_values(run.facts), []).workloads:
        agent = placed.agent
        if agent.release in releases:
            want = {n for pool in landed for n in nodes_of_pool.get(pool, set())}
            got = site.daemon_nodes(releases[agent.release].namespace, f"{agent.release}-{agent.workload}")
            assert got == want, (agent.release, agent.workload)
    # Nothing waits for a node it cannot have: every pod runs, and a hook Job's pod has finished.
    for pod in site.pods():
        assert (pod.phase == "Running" and pod.ready) or pod.phase == "Succeeded", pod
    # Each model's pods run on its pool's nodes, Ready, with their claims allocated on their own
    # node from the claimed driver's published devices, in the count (and capacity) asked.
    pools = site.node_pools()
    allocated = {(a.namespace, a.claim): a for a in site.allocations()}
    published = site.published()
    devices_of = {p.name: {d.name: d for d in p.devices} for p in run.facts.pools}
    for dep in run.deployments():
        for name, pool, replicas in placed_replicas(dep):
            pods = [p for p in site.pods() if p.namespace == dep["namespace"] and p.owner == workload(dep, name)]
            assert len(pods) == replicas * dep.get("nodes", 1), name
            for pod in pods:
                assert pod.ready and pod.phase == "Running", (name, pod)
                assert pools[pod.node or ""] == pool, (name, pod.node)
                assert len(pod.claims) == 1, (name, pod.claims)
                got = allocated[(pod.namespace, pod.claims[0])]
                (want,) = dep["devices"]
                device = devices_of[pool][want["name"]]
                assert got.node == pod.node
                assert got.driver == device.driver
                assert len(got.devices) == want.get("count", 1), (name, got.devices)
                assert set(got.devices) <= published[(pod.node or "", got.driver)]
                if got.driver == CPU_DRIVER:
                    assert got.consumed == {"dra.cpu/cpu": device.capacity["dra.cpu/cpu"].value}
        if dep.get("nodes", 1) > 1:
            check_groups(run, dep)
    # The state holds what the offline plan registers, and keeps every secret a secret.
    state = run.engine.export(run.stack)
    assert urns(state) == mock_urns(run.engine.stack_file(run.name)), "the engine's state and the offline plan differ"
    assert_secrets_kept(state, run.stack)
    # The DeviceClasses the charts and the program create are there for every claimed driver.
    classes = {c["metadata"]["name"] for c in run.cluster.list("resource.k8s.io/v1", "DeviceClass")}
    claimed = {d.device_class_name for p in run.facts.pools for d in p.devices if d.driver in SIMULATED}
    assert claimed <= classes


def test_three_vendors_side_by_side_install_settle_move_refuse_and_destroy(run: Any) -> None:
    mixed = run("byo-mixed")
    assert {d for p in mixed.facts.pools for d in p.claimed_drivers} >= {NVIDIA_GPU_DRIVER, AMD_GPU_DRIVER, CPU_DRIVER}
    mixed.up()
    check_installed(mixed)

    # A second up finds nothing to change.
    again = mixed.up()
    assert set(again.summary.resource_changes or {}) == {"same"}, again.summary.resource_changes

    # A changed claim: its template is replaced (its name follows the claim), the Deployment rolls
    # its pods onto the new one, and nothing else changes.
    old_pods = {p.name for p in mixed.site.pods() if p.owner == "Deployment/qwen-mi300x"}
    mixed.edit_deployment("qwen-mi300x", devices=[{"name": "gpu", "count": 4}])
    steps = mixed.preview()
    kinds = sorted((op, type_.rsplit(":", 1)[-1]) for op, type_ in steps.values())
    assert kinds == [("replace", "ResourceClaimTemplate"), ("update", "Deployment")], kinds
    mixed.up()
    check_installed(mixed)
    assert not old_pods & {p.name for p in mixed.site.pods() if p.owner == "Deployment/qwen-mi300x"}

    # A device rule broken (an NVIDIA accelerator on a class that claims AMD GPUs): preview and up
    # stop, and nothing on the cluster changes.
    before = mixed.site.state()
    config = mixed.engine.config("byo-mixed")
    for cls in config["modelplane:classes"]:
        if cls["name"] == "mi300x-byo":
            cls["accelerator"] = {"type": "nvidia-h100", "count": 8}
    mixed.engine.write_config("byo-mixed", config)
    with pytest.raises(auto.CommandError, match="accelerator-driver-mismatch"):
        mixed.preview()
    with pytest.raises(auto.CommandError, match="accelerator-driver-mismatch"):
        mixed.up()
    assert mixed.site.state() == before

    # Destroy removes every release and every object of the stack.
    mixed.stack.destroy()
    assert mixed.site.releases() == {}
    assert not [p for p in mixed.site.pods() if p.owner.startswith("Deployment/qwen")]


def test_the_committed_existing_stacks_install_and_a_protected_one_refuses_destroy(run: Any, tmp_path: Path) -> None:
    amd = run("byo-amd")
    amd.up()
    check_installed(amd)
    again = amd.up()
    assert set(again.summary.resource_changes or {}) == {"same"}, again.summary.resource_changes
    with pytest.raises(auto.CommandError, match="protect"):
        amd.stack.destroy()
    assert {r.status for r in amd.site.releases().values()} == {"deployed"}

    # A mirror that does not serve a chart: `up` fails naming the chart, its version and the URL
    # tried; once the mirror serves it, a second `up` finishes the install.
    recipe = run("recipe-qwen-mi325x")
    full = recipe.engine.config("recipe-qwen-mi325x")
    with mirror.served_charts(tmp_path / "partial", without=["lws"]) as partial:
        recipe.engine.write_config("recipe-qwen-mi325x", {**full, **mirror.mirror_config(partial)})
        with pytest.raises(auto.CommandError) as failed:
            recipe.up()
    assert f'chart "lws" version "v0.8.0" not found in {partial} repository' in str(failed.value)
    recipe.engine.write_config("recipe-qwen-mi325x", full)
    recipe.up()
    check_installed(recipe)


def test_multi_node_groups_run_a_leader_and_a_worker_on_nodes_of_their_own(run: Any) -> None:
    # Two replicas of two 8x MI300X nodes each: the real LWS controller makes each group's leader
    # StatefulSet and its workers', the StatefulSet controller their pods, the scheduler their
    # claims, and `up` waits until every group is Available.
    multi = run("byo-multinode")
    assert [d.get("nodes") for d in multi.deployments()] == [2]
    multi.up()
    check_installed(multi)
    again = multi.up()
    assert set(again.summary.resource_changes or {}) == {"same"}, again.summary.resource_changes
