"""A deployment of several nodes per replica is a LeaderWorkerSet (`components.features.multinode`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from tests.conftest import of_type, run_fleet
from tests.test_multinode import eks
from tests.test_multinode import group as multinode_group
from tooling.mockrun import MockRun, Registration

LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE = "kubernetes:core/v1:Service"
TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
H100 = {
    "name": "h100",
    "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8}],
}
ARGS = ["--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]


def lab(nodes: int = 2, **fields: Any) -> dict[str, Any]:
    """An Existing cluster `lab` with a pool of 8-GPU nodes and a deployment spanning `nodes` of them."""
    return {
        "classes": [H100],
        "clusters": [
            {
                "name": "lab",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [{"name": "h100", "className": "h100", "nodeCount": 4}],
            }
        ],
        "deployments": [
            {
                "name": "r1",
                "cluster": "lab",
                "pool": "h100",
                "image": "vllm/vllm-openai:v0.23.0",
                "args": ARGS if nodes == 2 else ["--tensor-parallel-size", "8"],
                "memory": "1000Gi",
                "nodes": nodes,
                "replicas": 2,
                "cache": {"volume": "NodeLocal"},
                "devices": [{"name": "gpu", "count": 8}],
                **fields,
            }
        ],
    }


def one(result: MockRun, type_token: str) -> Registration:
    assert result.error is None, result.error
    [found] = of_type(result, type_token)
    return found


@pytest.fixture(scope="module")
def group() -> MockRun:
    return run_fleet(lab())


def templates(result: MockRun) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    spec = one(result, LWS).inputs["spec"]["leaderWorkerTemplate"]
    return spec["leaderTemplate"]["spec"], spec["workerTemplate"]["spec"]


def test_two_nodes_per_replica_is_a_leader_worker_set_of_size_two_and_no_deployment(group: MockRun) -> None:
    lws = one(group, LWS)
    assert lws.inputs["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert lws.inputs["kind"] == "LeaderWorkerSet"
    assert lws.inputs["spec"]["replicas"] == 2
    template = lws.inputs["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2
    assert template["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert of_type(group, DEPLOYMENT) == []


def test_one_node_per_replica_stays_a_deployment() -> None:
    result = run_fleet(lab(nodes=1))
    assert result.error is None, result.error
    assert of_type(result, LWS) == []
    assert len(of_type(result, DEPLOYMENT)) == 1


def test_every_pod_of_a_group_claims_the_nodes_devices_from_the_template(group: MockRun) -> None:
    claim_template = one(group, TEMPLATE).inputs
    [request] = claim_template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "gpu.nvidia.com", "count": 8}
    for pod in templates(group):
        [claim] = pod["resourceClaims"]
        assert claim["resourceClaimTemplateName"] == claim_template["metadata"]["name"]
        [engine] = pod["containers"]
        assert engine["resources"]["claims"] == [{"name": "devices"}]
        assert engine["resources"]["limits"] == {"memory": "1000Gi"}
        assert pod["nodeSelector"] == {"modelplane.ai/pool": "h100"}


def test_the_leader_serves_and_the_workers_join_it_headless_by_lws_environment(group: MockRun) -> None:
    leader, worker = (pod["containers"][0] for pod in templates(group))
    group_flags = [
        "--nnodes",
        "$(LWS_GROUP_SIZE)",
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
        "--master-addr",
        "$(LWS_LEADER_ADDRESS)",
    ]
    assert leader["args"] == [*ARGS, "--port", "8000", *group_flags]
    assert worker["args"] == [*ARGS, "--port", "8000", *group_flags, "--headless"]


def test_the_leader_is_probed_as_one_node_is_and_workers_keep_the_cache_and_shm(group: MockRun) -> None:
    (leader_pod, worker_pod) = templates(group)
    leader, worker = leader_pod["containers"][0], worker_pod["containers"][0]
    assert leader["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert "startupProbe" not in worker and "readinessProbe" not in worker
    for pod, engine in ((leader_pod, leader), (worker_pod, worker)):
        assert {m["mountPath"] for m in engine["volumeMounts"]} == {"/dev/shm", "/root/.cache/huggingface"}
        assert {v["name"] for v in pod["volumes"]} == {"shm", "model-cache"}


def test_every_pod_of_a_group_is_kept_in_the_zone_of_its_group_where_the_cloud_labels_zones() -> None:
    result = run_fleet(eks(multinode_group(memory="1000Gi")))
    for pod in templates(result):
        [term] = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == "topology.kubernetes.io/zone"
        assert term["matchLabelKeys"] == ["leaderworkerset.sigs.k8s.io/group-key"]


def test_a_group_on_an_existing_cluster_has_no_zone_affinity_its_nodes_may_not_satisfy(group: MockRun) -> None:
    # Nothing labels an owner's nodes with a zone, and a required pod affinity term admits no node
    # without its topology label: every pod of the group would stay pending.
    for pod in templates(group):
        assert "affinity" not in pod


def test_the_service_selects_the_leader_of_each_group_only(group: MockRun) -> None:
    service = one(group, SERVICE).inputs["spec"]
    assert service["selector"] == {
        "modelplane.ai/deployment": "r1",
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }


def test_a_one_node_service_selects_every_pod() -> None:
    result = run_fleet(lab(nodes=1))
    assert one(result, SERVICE).inputs["spec"]["selector"] == {"modelplane.ai/deployment": "r1"}


def test_the_group_waits_for_its_claim_template(group: MockRun) -> None:
    assert one(group, TEMPLATE).urn in one(group, LWS).dependencies


def test_secure_env_reaches_leader_and_workers_by_secret_reference() -> None:
    raw = copy.deepcopy(lab(env={"HF_TOKEN": {"secure": "v1:abc"}}))
    result = run_fleet(raw)
    assert result.error is None, result.error
    for pod in templates(result):
        [env] = pod["containers"][0]["env"]
        assert env["valueFrom"]["secretKeyRef"] == {"name": "r1-env", "key": "HF_TOKEN"}


def test_the_group_objects_match_the_lws_crd_and_the_kubernetes_schemas(group: MockRun) -> None:
    from tests.test_k8s_schema import assert_valid

    kinds = assert_valid(group, {"lab": "1.36"})
    # Beside the group's objects, the serving stack's two dashboards and the collector's PodMonitor
    # (tests/test_dashboards.py).
    assert sorted(kinds) == [
        "ConfigMap",
        "ConfigMap",
        "LeaderWorkerSet",
        "PodDisruptionBudget",
        "PodMonitor",
        "PodMonitor",
        "ResourceClaimTemplate",
        "Service",
    ]


def test_each_group_gets_a_headless_service_of_its_own_not_the_name_of_the_deployments_service(
    group: MockRun,
) -> None:
    # With LWS's default (`Shared`) its one headless Service is named after the LeaderWorkerSet,
    # which is the name of the deployment's Service.
    lws, service = one(group, LWS), one(group, SERVICE)
    assert lws.inputs["metadata"]["name"] == service.inputs["metadata"]["name"]
    assert lws.inputs["spec"]["networkConfig"] == {"subdomainPolicy": "UniquePerReplica"}


def test_up_waits_for_every_group_as_for_a_deployments_replicas(group: MockRun) -> None:
    lws = one(group, LWS)
    assert lws.inputs["metadata"]["annotations"] == {"pulumi.com/waitFor": "condition=Available"}
    assert lws.inputs["metadata"]["labels"] == one(group, SERVICE).inputs["metadata"]["labels"]
