"""Adopting a running cluster: the `adopt` checks, what the GKE component registers for an adopted
cluster under mocks, the plan's `import` rows, and the hook that refuses a difference.

The engine's part (a preview that shows the imports, an `up` that creates nothing, a refused
mismatch) is proved in tests/engine/test_adoption.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from clouds import gke
from components.adoption import differing_inputs, refusal
from infra.config.issues import ConfigError, ConfigIssue
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, cpu_class, fleet_of, gke_fleet, of_type, run_fleet
from tooling.changes import change_lines, compare, summary
from tooling.plan import plan_stack

CLUSTER_ID = "projects/my-project/locations/us-central1/clusters/inference-1"
GKE_TYPES_CREATED_ONLY = (
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",
    "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
    "gcp:serviceaccount/account:Account",
    "gcp:projects/iAMMember:IAMMember",
)


def adopted_gke() -> dict[str, Any]:
    """`gke_fleet`'s cluster adopted, with both its pools."""
    raw = gke_fleet()
    cluster = raw["clusters"][0]
    cluster["gke"]["adopt"] = {"id": CLUSTER_ID}
    for pool in cluster["nodePools"]:
        pool["adopt"] = {"id": f"my-project/us-central1/inference-1/{pool['name']}"}
    return raw


def issues(raw: dict[str, Any]) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    return list(err.value.issues)


def test_an_adopted_cluster_without_its_id_is_refused_with_the_id_shape() -> None:
    raw = adopted_gke()
    raw["clusters"][0]["gke"]["adopt"] = {}
    [issue] = issues(raw)
    assert issue.path == "clusters[0].gke.adopt.id"
    assert "needs the import ID" in issue.problem
    assert "projects/<project>/locations/<region>/clusters/<cluster name>" in issue.fix


def test_an_adopted_pool_without_its_id_is_refused() -> None:
    raw = adopted_gke()
    raw["clusters"][0]["nodePools"][1]["adopt"] = {}
    [issue] = issues(raw)
    assert issue.path == "clusters[0].nodePools[1].adopt.id"
    assert "<project>/<region>/<cluster name>/<pool name>" in issue.fix


def test_an_id_of_another_region_cluster_or_pool_is_refused() -> None:
    raw = adopted_gke()
    raw["clusters"][0]["nodePools"][0]["adopt"]["id"] = "my-project/us-east1/other/gpu"
    raw["clusters"][0]["nodePools"][1]["adopt"]["id"] = "my-project/us-central1/inference-1/cpu-2"
    found = {(i.path, i.problem) for i in issues(raw)}
    assert found == {
        (
            "clusters[0].nodePools[0].adopt.id",
            "the ID's region is 'us-east1', and the cluster's block says 'us-central1'",
        ),
        (
            "clusters[0].nodePools[0].adopt.id",
            "the ID names cluster 'other', and the adopted cluster is 'inference-1'",
        ),
        (
            "clusters[0].nodePools[1].adopt.id",
            "the ID names pool 'cpu-2', and the stack file names this pool 'cpu': the pool keeps its running name",
        ),
    }


def test_a_malformed_cluster_id_is_refused() -> None:
    raw = adopted_gke()
    raw["clusters"][0]["gke"]["adopt"]["id"] = "inference-1"
    [issue] = issues(raw)
    assert (issue.path, issue.problem) == ("clusters[0].gke.adopt.id", "'inference-1' is not a cluster import ID")


def test_an_adopted_pool_of_a_cluster_the_program_creates_is_refused() -> None:
    raw = adopted_gke()
    del raw["clusters"][0]["gke"]["adopt"]
    found = issues(raw)
    assert [i.path for i in found] == ["clusters[0].nodePools[0].adopt", "clusters[0].nodePools[1].adopt"]
    assert "adopt the cluster too" in found[0].fix


@pytest.mark.parametrize("source", ["EKS", "AKS", "Civo"])
def test_adopting_on_a_cloud_without_import_ids_is_refused(source: str) -> None:
    raw: dict[str, Any] = {
        "classes": [cpu_class("cpu", source, copy.deepcopy(CPU_BLOCKS[source]))],
        "clusters": [
            {
                "name": "prod",
                "source": source,
                source.lower(): {**copy.deepcopy(CLUSTER_BLOCKS[source]), "adopt": {"id": "prod"}},
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
    }
    [issue] = issues(raw)
    assert issue.path == f"clusters[0].{source.lower()}.adopt"
    assert f"a running {source} cluster cannot be adopted yet" in issue.problem


def test_an_adopted_gke_cluster_registers_only_its_cluster_and_pools_each_with_its_import_id() -> None:
    result = run_fleet(adopted_gke(), preview=True)
    assert result.error is None, result.error
    gcp = [r for r in result.resources if r.type.startswith("gcp:")]
    assert {(r.type, r.name, r.import_id) for r in gcp} == {
        ("gcp:container/cluster:Cluster", "prod-cluster", CLUSTER_ID),
        ("gcp:container/nodePool:NodePool", "prod-gpu", "my-project/us-central1/inference-1/gpu"),
        ("gcp:container/nodePool:NodePool", "prod-cpu", "my-project/us-central1/inference-1/cpu"),
    }
    for token in GKE_TYPES_CREATED_ONLY:
        assert of_type(result, token) == [], token
    [cluster] = of_type(result, "gcp:container/cluster:Cluster")
    # The running cluster's name, from its ID, not the one the program would give a new cluster.
    assert cluster.inputs["name"] == "inference-1"
    assert "network" not in cluster.inputs and "subnetwork" not in cluster.inputs
    for pool in of_type(result, "gcp:container/nodePool:NodePool"):
        assert pool.inputs["cluster"] == "inference-1"
        assert "serviceAccount" not in pool.inputs["nodeConfig"]


def test_a_created_pool_in_an_adopted_cluster_gets_the_nodes_own_identity() -> None:
    raw = adopted_gke()
    del raw["clusters"][0]["nodePools"][1]["adopt"]
    result = run_fleet(raw)
    assert result.error is None, result.error
    assert len(of_type(result, "gcp:serviceaccount/account:Account")) == 1
    assert of_type(result, "gcp:compute/network:Network") == []
    cpu = next(r for r in of_type(result, "gcp:container/nodePool:NodePool") if r.name == "prod-cpu")
    assert cpu.import_id == "" and cpu.inputs["nodeConfig"]["serviceAccount"]


def test_the_plan_shows_an_import_for_the_cluster_and_each_adopted_pool(tmp_path: Any) -> None:
    import yaml

    raw = adopted_gke()
    path = tmp_path / "Pulumi.adopted.yaml"
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}))
    doc = plan_stack(path)
    assert doc["ok"], doc["errors"]
    [cluster] = doc["clusters"]
    assert cluster["import"] == CLUSTER_ID
    assert {p["name"]: p.get("import") for p in cluster["pools"]} == {
        "gpu": "my-project/us-central1/inference-1/gpu",
        "cpu": "my-project/us-central1/inference-1/cpu",
    }
    imports = {r["name"]: r.get("import") for r in doc["resources"] if r["type"].startswith("gcp:container")}
    assert imports == {
        "prod-cluster": CLUSTER_ID,
        "prod-gpu": "my-project/us-central1/inference-1/gpu",
        "prod-cpu": "my-project/us-central1/inference-1/cpu",
    }


def test_a_plan_against_an_earlier_one_reports_each_adopted_resource_as_an_import(tmp_path: Any) -> None:
    import yaml

    path = tmp_path / "Pulumi.adopted.yaml"
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in adopted_gke().items()}}))
    doc = plan_stack(path)
    changes = compare({"resources": []}, doc)
    imported = sorted(c["name"] for c in changes if c["op"] == "import")
    assert imported == ["prod-cluster", "prod-cpu", "prod-gpu"]
    assert not [c for c in changes if c["op"] == "create" and c["type"].startswith("gcp:container")]
    assert summary(changes).split(", ")[1] == "3 to import"
    assert "= import prod-cluster (gcp:container/cluster:Cluster)" in change_lines(changes)


def test_the_hook_refuses_naming_the_inputs_that_differ_and_the_way_out() -> None:
    import pulumi

    hook = refusal("pool 'cpu' of cluster 'prod'", "p/r/c/cpu")
    args = pulumi.ResourceHookArgs(
        "urn",
        "id",
        "prod-cpu",
        "gcp:container/nodePool:NodePool",
        new_inputs={"nodeCount": 2, "name": "cpu", "__defaults": []},
        old_inputs={"nodeCount": 3, "name": "cpu"},
    )
    with pytest.raises(RuntimeError) as err:
        hook(args)
    message = str(err.value)
    assert "pool 'cpu' of cluster 'prod' adopts the running resource p/r/c/cpu" in message
    assert "differs from the stack file in nodeCount;" in message
    assert "pulumi preview --diff" in message and "nothing was changed" in message


def test_engine_bookkeeping_keys_are_no_difference() -> None:
    assert differing_inputs({"a": 1, "__meta": "x"}, {"a": 1, "__defaults": []}) == []
    assert differing_inputs({"a": 1}, {"a": 2, "b": 3}) == ["a", "b"]


def test_the_gke_record_declares_the_import_forms_its_provider_documents() -> None:
    ids = gke.CLOUD.adoption
    assert ids is not None
    assert ids.cluster.fullmatch(CLUSTER_ID)
    assert ids.pool.fullmatch("my-project/us-central1/inference-1/gpu")
