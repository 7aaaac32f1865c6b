"""`modelplane plan --against OLD.json`: what `up` would do per resource, from the command as a user runs it."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling.changes import PLAN_FORMAT, REJECTED_SUMMARY, AgainstError, changed_leaves, check_against, compare, summary

ROOT = Path(__file__).resolve().parent.parent


def modelplane(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tooling.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


def stack_file(folder: Path, name: str, edit: Any = None) -> Path:
    """stacks/Pulumi.<name>.yaml copied into `folder` (as the same stack), `edit` applied to its config."""
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text())
    if edit is not None:
        edit(doc["config"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def planned(path: Path, out: Path) -> Path:
    result = modelplane("plan", "--stack-file", str(path), "--json")
    assert result.returncode == 0, result.stderr
    out.write_text(result.stdout, encoding="utf-8")
    return out


def not_same(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["op"], c["name"]) for c in doc["changes"] if c["op"] != "same"]


def test_an_unchanged_stack_has_only_same(tmp_path: Path) -> None:
    path = stack_file(tmp_path, "civo-dev")
    old = planned(path, tmp_path / "old.json")
    out = modelplane("plan", "--stack-file", str(path), "--against", str(old), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["changes"] and {c["op"] for c in doc["changes"]} == {"same"}
    assert {c["urn"] for c in doc["changes"]} == {r["urn"] for r in doc["resources"]}
    for c in doc["changes"]:
        assert set(c) >= {"op", "urn", "type", "name", "paths", "protected"}
    human = modelplane("plan", "--stack-file", str(path), "--against", str(old))
    assert human.returncode == 0
    first = human.stdout.splitlines()[0]
    assert first.endswith(f"0 to create, 0 to update, 0 to replace, 0 to delete ({len(doc['changes'])} unchanged)")


def unprotected(config: dict[str, Any]) -> None:
    config["modelplane:protect"] = False


def bigger_cpu_machine(config: dict[str, Any]) -> None:
    for cls in config["modelplane:classes"]:
        eks = (cls.get("provisioning") or {}).get("eks") or {}
        if eks.get("instanceType") == "m7i.2xlarge":
            eks["instanceType"] = "m7i.4xlarge"
            # The capacity the class claims follows its machine's CPUs.
            for device in cls.get("devices") or []:
                if "dra.cpu/cpu" in (device.get("capacity") or {}):
                    device["capacity"]["dra.cpu/cpu"]["value"] = "14"


def test_a_machine_change_replaces_the_pool_and_a_protected_one_is_refused(tmp_path: Path) -> None:
    # Unprotected: the EKS node group is replaced (instance_types forces a new node group); the
    # spot pool of the same class is set aside, so one pool shows the replacement.
    old = planned(stack_file(tmp_path / "old", "eks-prod", on_demand), tmp_path / "old.json")
    new = stack_file(tmp_path / "new", "eks-prod", lambda c: (on_demand(c), bigger_cpu_machine(c)))
    out = modelplane("plan", "--stack-file", str(new), "--against", str(old), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    [replace] = [c for c in doc["changes"] if c["op"] == "replace"]
    assert (replace["type"], replace["name"]) == ("aws:eks/nodeGroup:NodeGroup", "eks-us-east-1-cpu")
    assert replace["paths"] == ["instanceTypes[0]"] and replace["protected"] is False
    human = modelplane("plan", "--stack-file", str(new), "--against", str(old))
    assert (
        human.stdout.splitlines()[0].split(": ", 1)[1].startswith("0 to create, 1 to update, 1 to replace, 0 to delete")
    )
    assert "+- replace eks-us-east-1-cpu (aws:eks/nodeGroup:NodeGroup): replaced by instanceTypes[0]" in human.stdout

    # Protected (the stack as committed): `up` would fail, so the plan does, naming the pool.
    old = planned(stack_file(tmp_path / "old-p", "eks-prod", protected_on_demand), tmp_path / "old-p.json")
    new = stack_file(tmp_path / "new-p", "eks-prod", lambda c: (protected_on_demand(c), bigger_cpu_machine(c)))
    out = modelplane("plan", "--stack-file", str(new), "--against", str(old), "--json")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    [error] = doc["errors"]
    assert "cannot replace 1 protected resource(s): eks-us-east-1-cpu (aws:eks/nodeGroup:NodeGroup)" in error["message"]
    assert "modelplane:protect: false" in error["message"]
    assert out.stderr.strip() and error["message"] in out.stderr


def second_cluster(config: dict[str, Any]) -> None:
    twin = copy.deepcopy(config["modelplane:clusters"][0])
    twin["name"] = "byo-lab-2"
    config["modelplane:clusters"].append(twin)


def test_a_removed_protected_cluster_is_refused_with_its_resources_listed(tmp_path: Path) -> None:
    old = planned(stack_file(tmp_path / "old", "byo-amd", second_cluster), tmp_path / "old.json")
    out = modelplane("plan", "--stack-file", str(stack_file(tmp_path, "byo-amd")), "--against", str(old), "--json")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    deleted = [c for c in doc["changes"] if c["op"] == "delete"]
    old_doc = json.loads(old.read_text())
    twin = {r["urn"] for r in old_doc["resources"] if "byo-lab-2" in r["name"]}
    assert {c["urn"] for c in deleted} == twin
    # `modelplane:protect` protects everything of the cluster but its Kubernetes provider.
    guarded = [c for c in deleted if c["protected"]]
    assert {c["type"] for c in deleted if not c["protected"]} == {"pulumi:providers:kubernetes"}
    assert "modelplane:existing:ExistingCluster" in {c["type"] for c in guarded}
    [error] = doc["errors"]
    assert f"cannot delete {len(guarded)} protected resource(s)" in error["message"]
    for c in guarded:
        assert f"{c['name']} ({c['type']})" in error["message"]
    assert error["message"] in out.stderr


def test_a_plan_of_another_stack_or_an_older_format_is_refused(tmp_path: Path) -> None:
    other = planned(stack_file(tmp_path, "vultr-dev"), tmp_path / "vultr.json")
    out = modelplane("plan", "--stack", "civo-dev", "--against", str(other), "--json")
    assert out.returncode == 2 and out.stdout == ""
    assert "holds no plan of stack 'civo-dev' (it holds: vultr-dev)" in out.stderr

    older = json.loads(other.read_text())
    for key in ("format", "mode"):
        older.pop(key)
    (tmp_path / "older.json").write_text(json.dumps(older))
    out = modelplane(
        "plan", "--stack-file", str(tmp_path / "Pulumi.vultr-dev.yaml"), "--against", str(tmp_path / "older.json")
    )
    assert out.returncode == 2
    assert (
        f"an older plan format (before URNs were recorded): format 1, and this modelplane reads format {PLAN_FORMAT}"
        in out.stderr
    )


def plan_doc(resources: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"format": PLAN_FORMAT, "mode": "preview", "stack": "s", "ok": True, "resources": resources, **top}


def row(name: str, type_: str, inputs: dict[str, Any], protect: bool = False) -> dict[str, Any]:
    return {
        "urn": f"urn:pulumi:s::modelplane::{type_}::{name}",
        "type": type_,
        "name": name,
        "protect": protect,
        "inputs": inputs,
    }


GKE_POOL = "gcp:container/nodePool:NodePool"


def test_gke_updates_a_machine_type_in_place_but_replaces_for_new_accelerators() -> None:
    pool = {"nodeConfig": {"machineType": "g2-standard-8", "guestAccelerators": [{"type": "nvidia-l4", "count": 1}]}}
    bigger = copy.deepcopy(pool)
    bigger["nodeConfig"]["machineType"] = "g2-standard-16"
    [change] = compare(plan_doc([row("p", GKE_POOL, pool)]), plan_doc([row("p", GKE_POOL, bigger)]))
    assert (change["op"], change["paths"]) == ("update", ["nodeConfig.machineType"])
    two = copy.deepcopy(pool)
    two["nodeConfig"]["guestAccelerators"][0]["count"] = 2
    [change] = compare(plan_doc([row("p", GKE_POOL, pool)]), plan_doc([row("p", GKE_POOL, two)]))
    assert change["op"] == "replace" and change["replacedBy"] == ["nodeConfig.guestAccelerators[0].count"]


def test_a_provider_that_cannot_change_a_pools_size_is_an_error_not_an_update() -> None:
    from tooling.changes import change_errors

    civo = "civo:index/kubernetesNodePool:KubernetesNodePool"
    changes = compare(
        plan_doc([row("p", civo, {"size": "g4s.kube.small"})]), plan_doc([row("p", civo, {"size": "g4s.kube.large"})])
    )
    assert [c["op"] for c in changes] == ["update"]
    [error] = change_errors(changes)
    assert "cannot change size of p" in error["message"] and "not available at this moment" in error["message"]


DOKS_CLUSTER = "digitalocean:index/kubernetesCluster:KubernetesCluster"
DOKS_POOL = "digitalocean:index/kubernetesNodePool:KubernetesNodePool"


def test_doks_replaces_a_pool_for_a_new_size_and_the_whole_cluster_for_a_new_system_pool_size() -> None:
    pool = {"size": "gpu-mi300x1-192gb", "labels": {"a": "1"}}
    relabelled = {**pool, "labels": {"a": "2"}}
    [change] = compare(plan_doc([row("p", DOKS_POOL, pool)]), plan_doc([row("p", DOKS_POOL, relabelled)]))
    assert change["op"] == "update"
    [change] = compare(
        plan_doc([row("p", DOKS_POOL, pool)]), plan_doc([row("p", DOKS_POOL, {**pool, "size": "gpu-h100x1-80gb"})])
    )
    assert change["op"] == "replace" and change["replacedBy"] == ["size"]
    cluster = {"region": "atl1", "nodePool": {"name": "system", "size": "s-4vcpu-8gb", "nodeCount": 3}}
    grown = copy.deepcopy(cluster)
    grown["nodePool"]["nodeCount"] = 5
    [change] = compare(plan_doc([row("c", DOKS_CLUSTER, cluster)]), plan_doc([row("c", DOKS_CLUSTER, grown)]))
    assert change["op"] == "update"
    bigger = copy.deepcopy(cluster)
    bigger["nodePool"]["size"] = "s-8vcpu-16gb"
    [change] = compare(plan_doc([row("c", DOKS_CLUSTER, cluster)]), plan_doc([row("c", DOKS_CLUSTER, bigger)]))
    assert change["op"] == "replace" and change["replacedBy"] == ["nodePool.size"]


def test_created_deleted_and_labels_with_dots_are_named_by_path() -> None:
    deployment = "kubernetes:apps/v1:Deployment"
    old = plan_doc(
        [row("a", deployment, {"metadata": {"labels": {"modelplane.ai/pool": "x"}}}), row("gone", deployment, {})]
    )
    new = plan_doc(
        [row("a", deployment, {"metadata": {"labels": {"modelplane.ai/pool": "y"}}}), row("new", deployment, {})]
    )
    changes = compare(old, new)
    assert [(c["op"], c["name"], c["paths"]) for c in changes] == [
        ("update", "a", ['metadata.labels["modelplane.ai/pool"]']),
        ("create", "new", []),
        ("delete", "gone", []),
    ]
    assert summary(changes) == "1 to create, 1 to update, 0 to replace, 1 to delete (0 unchanged)"
    # A renamed object is replaced (pulumi-kubernetes forces a new object on .metadata.name).
    [renamed] = compare(
        plan_doc([row("a", deployment, {"metadata": {"name": "x"}})]),
        plan_doc([row("a", deployment, {"metadata": {"name": "y"}})]),
    )
    assert renamed["op"] == "replace"


def test_a_block_that_appears_gives_its_leaves() -> None:
    assert changed_leaves({"a": 1}, {"a": 1, "b": {"c": [1, {"d": 2}]}}) == [("b", "c", 0), ("b", "c", 1, "d")]


@pytest.mark.parametrize(
    ("old", "said"),
    [
        (plan_doc([], stack="other"), "it is a plan of stack 'other', not 's'"),
        (plan_doc([], format=PLAN_FORMAT + 1), "a newer plan format"),
        (plan_doc([], mode="update"), "planned with `--mode update` and this plan with `--mode preview`"),
        (plan_doc([], ok=False), "rejected before the program ran"),
    ],
)
def test_an_earlier_plan_that_cannot_be_compared_is_refused(old: dict[str, Any], said: str) -> None:
    with pytest.raises(AgainstError, match=None) as refused:
        check_against(old, plan_doc([]))
    assert said in str(refused.value)


def unknown_class(config: dict[str, Any]) -> None:
    config["modelplane:clusters"][0]["nodePools"][1]["className"] = "h100-efa-ekz"


def test_a_rejected_config_has_no_changes_and_its_fix_compares_again(tmp_path: Path) -> None:
    # The guard stops the program before it registers anything, and the engine then deletes nothing:
    # no change, no protection error, and the summary line says why.
    old = planned(stack_file(tmp_path / "old", "eks-prod"), tmp_path / "old.json")
    broken = stack_file(tmp_path / "new", "eks-prod", unknown_class)
    out = modelplane("plan", "--stack-file", str(broken), "--against", str(old), "--json")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    assert doc["changes"] == []
    [error] = doc["errors"]
    assert error["path"] == "clusters[0].nodePools[1].className"
    assert "protect" not in error["message"] and "did you mean 'h100-efa-eks'?" in error["message"]
    human = modelplane("plan", "--stack-file", str(broken), "--against", str(old))
    first = human.stdout.splitlines()[0]
    assert first.endswith(f": {REJECTED_SUMMARY}"), first
    assert "delete" not in human.stdout.replace(REJECTED_SUMMARY, "")

    # The fix the error gives compares clean: nothing changes.
    fixed = stack_file(tmp_path / "fixed", "eks-prod", lambda c: None)
    out = modelplane("plan", "--stack-file", str(fixed), "--against", str(old), "--json")
    assert out.returncode == 0, out.stderr
    assert {c["op"] for c in json.loads(out.stdout)["changes"]} == {"same"}


def pinned(zone: str) -> Any:
    def edit(config: dict[str, Any]) -> None:
        unprotected(config)
        config["modelplane:clusters"][0]["nodePools"][0]["zones"] = [zone]

    return edit


def on_demand(config: dict[str, Any]) -> None:
    """The stack unprotected, without the pools it buys other than on demand (the spot pool names zones)."""
    unprotected(config)
    protected_on_demand(config)


def protected_on_demand(config: dict[str, Any]) -> None:
    """The stack as committed (protected), without the pools it buys other than on demand."""
    for cluster in config["modelplane:clusters"]:
        cluster["nodePools"] = [p for p in cluster["nodePools"] if "capacity" not in p]


def test_pinning_a_pool_to_a_zone_the_subnets_have_keeps_them(tmp_path: Path) -> None:
    # The offline answer of the region's zones is its real names in the provider's order, so a pool
    # pinned to us-east-1a keeps the subnets already in us-east-1a and us-east-1b; the network then
    # spans two zones (`clouds.eks.network`), so the third zone's subnets go and the pools over
    # every subnet change theirs, as a real preview would show.
    old = planned(stack_file(tmp_path / "old", "eks-prod", on_demand), tmp_path / "old.json")
    new = stack_file(tmp_path / "new", "eks-prod", lambda c: (on_demand(c), pinned("us-east-1a")(c)))
    out = modelplane("plan", "--stack-file", str(new), "--against", str(old), "--json")
    assert out.returncode == 0, out.stderr
    ops = {c["name"]: c["op"] for c in json.loads(out.stdout)["changes"] if c["type"] == "aws:ec2/subnet:Subnet"}
    assert ops == {
        "eks-us-east-1-public-0": "same",
        "eks-us-east-1-private-0": "same",
        "eks-us-east-1-public-1": "same",
        "eks-us-east-1-private-1": "same",
        "eks-us-east-1-public-2": "delete",
        "eks-us-east-1-private-2": "delete",
    }
    # A zone the subnets hold elsewhere moves them, and the review says so.
    moved = stack_file(tmp_path / "moved", "eks-prod", lambda c: (on_demand(c), pinned("us-east-1c")(c)))
    out = modelplane("plan", "--stack-file", str(moved), "--against", str(old), "--json")
    replaced = {
        c["name"]: c["replacedBy"]
        for c in json.loads(out.stdout)["changes"]
        if c["type"] == "aws:ec2/subnet:Subnet" and c["op"] == "replace"
    }
    assert replaced == {f"eks-us-east-1-{k}-{i}": ["availabilityZone"] for k in ("public", "private") for i in (0, 1)}


def test_a_rejected_plan_compared_with_a_rejected_one_has_no_changes_either() -> None:
    rejected = plan_doc([], ok=False)
    check_against(rejected, rejected)
    assert compare(plan_doc([row("a", "kubernetes:apps/v1:Deployment", {})]), rejected) == []


def aks_pool(config: dict[str, Any], **changed: Any) -> None:
    """aks-prod unprotected and on demand, with `changed` set on its a100 pool (`zones`, `name`) or class (`diskSizeGb`)."""
    on_demand(config)
    [cluster] = config["modelplane:clusters"]
    pool = next(p for p in cluster["nodePools"] if p["name"] == "a100")
    for key in ("zones", "name"):
        if key in changed:
            pool[key] = changed[key]
    if "diskSizeGb" in changed:
        cls = next(c for c in config["modelplane:classes"] if c["name"] == "a100-aks")
        cls["provisioning"]["aks"]["diskSizeGb"] = changed["diskSizeGb"]


AGENT_POOL = "azure-native:containerservice:AgentPool"


@pytest.mark.parametrize(
    ("changed", "path"),
    [({"zones": ["1", "2", "3"]}, "availabilityZones[2]"), ({"diskSizeGb": 200}, "osDiskSizeGB")],
)
def test_an_aks_pools_zones_or_os_disk_change_is_an_error_and_a_new_pool_plans_clean(
    tmp_path: Path, changed: dict[str, Any], path: str
) -> None:
    old = planned(stack_file(tmp_path / "old", "aks-prod", aks_pool), tmp_path / "old.json")
    new = stack_file(tmp_path / "new", "aks-prod", lambda c: aks_pool(c, **changed))
    out = modelplane("plan", "--stack-file", str(new), "--against", str(old), "--json")
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    [change] = [c for c in doc["changes"] if c["op"] != "same" and c["type"] == AGENT_POOL]
    assert (change["op"], change["name"], change["refused"]) == ("update", "aks-westeurope-a100", [path])
    [error] = doc["errors"]
    assert f"cannot change {path} of aks-westeurope-a100 ({AGENT_POOL})" in error["message"]
    assert "only when it creates the pool" in error["message"]
    assert "give the pool a new name in the stack file" in error["message"]
    assert error["message"] in out.stderr

    # The fix: the same value under a new pool name is a new pool beside the old one.
    renamed = stack_file(tmp_path / "renamed", "aks-prod", lambda c: aks_pool(c, **changed, name="a100b"))
    out = modelplane("plan", "--stack-file", str(renamed), "--against", str(old), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert not doc["errors"]
    pools = [(c["op"], c["name"]) for c in doc["changes"] if c["type"] == AGENT_POOL and c["op"] != "same"]
    assert pools == [("create", "aks-westeurope-a100b"), ("delete", "aks-westeurope-a100")]


def test_the_aks_system_pools_zones_are_an_error_too() -> None:
    from tooling.changes import change_errors

    cluster = "azure-native:containerservice:ManagedCluster"
    pool = {"agentPoolProfiles": [{"name": "system", "availabilityZones": ["1"]}]}
    zoned = {"agentPoolProfiles": [{"name": "system", "availabilityZones": ["1", "2"]}]}
    changes = compare(plan_doc([row("c", cluster, pool)]), plan_doc([row("c", cluster, zoned)]))
    assert [c.get("refused") for c in changes] == [["agentPoolProfiles[0].availabilityZones[1]"]]
    [error] = change_errors(changes)
    assert "a cluster of a new name" in error["message"]


def qwen_cache(config: dict[str, Any], size: str, name: str = "qwen") -> None:
    """recipe-qwen-cpu-civo unprotected, its cache of `size`, its deployment (and service's) named `name`."""
    unprotected(config)
    [deployment] = config["modelplane:deployments"]
    deployment["cache"]["size"] = size
    deployment["name"] = name
    config["modelplane:services"][0]["deployment"] = name


PVC = "kubernetes:core/v1:PersistentVolumeClaim"


def test_a_smaller_cache_is_an_error_a_bigger_one_an_update_and_a_new_deployment_plans_clean(tmp_path: Path) -> None:
    stack = "recipe-qwen-cpu-civo"
    old = planned(stack_file(tmp_path / "old", stack, lambda c: qwen_cache(c, "20Gi")), tmp_path / "old.json")
    smaller = stack_file(tmp_path / "smaller", stack, lambda c: qwen_cache(c, "10Gi"))
    out = modelplane("plan", "--stack-file", str(smaller), "--against", str(old), "--json")
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    [claim] = [c for c in doc["changes"] if c["type"] == PVC]
    assert (claim["op"], claim["refused"]) == ("update", ["spec.resources.requests.storage"])
    [error] = doc["errors"]
    assert "cannot change spec.resources.requests.storage of civo-cpu-qwen-cache" in error["message"]
    assert "a volume only grows" in error["message"]
    assert "give the deployment a new name in the stack file" in error["message"]

    # Growing is an update the API server accepts (where the StorageClass allows expansion).
    bigger = stack_file(tmp_path / "bigger", stack, lambda c: qwen_cache(c, "40Gi"))
    out = modelplane("plan", "--stack-file", str(bigger), "--against", str(old), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    [claim] = [c for c in doc["changes"] if c["type"] == PVC]
    assert claim["op"] == "update" and "refused" not in claim and not doc["errors"]

    # The fix: the smaller cache under a new deployment name is a new claim, and the old one goes.
    renamed = stack_file(tmp_path / "renamed", stack, lambda c: qwen_cache(c, "10Gi", "qwen-small"))
    out = modelplane("plan", "--stack-file", str(renamed), "--against", str(old), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert not doc["errors"]
    claims = [(c["op"], c["name"]) for c in doc["changes"] if c["type"] == PVC]
    assert claims == [("create", "civo-cpu-qwen-small-cache"), ("delete", "civo-cpu-qwen-cache")]


VULTR_POOL = "vultr:index/kubernetesNodePools:KubernetesNodePools"


def with_taint(config: dict[str, Any]) -> None:
    (cluster,) = config["modelplane:clusters"]
    cluster["taints"] = [{"key": "example.com/dedicated", "value": "inference", "effect": "NoSchedule"}]


def test_a_taint_a_vultr_pool_loses_is_an_error_and_one_it_gains_an_update(tmp_path: Path) -> None:
    # Removed: Vultr keeps a taint the pool's update leaves out, so the nodes would keep it.
    old = planned(stack_file(tmp_path / "old", "vultr-dev", with_taint), tmp_path / "old.json")
    out = modelplane(
        "plan", "--stack-file", str(stack_file(tmp_path / "new", "vultr-dev")), "--against", str(old), "--json"
    )
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    pools = [c for c in doc["changes"] if c["type"] == VULTR_POOL and c["op"] != "same"]
    assert pools and all(c["op"] == "update" and c["refused"] for c in pools)
    assert all(p.startswith("taints") for c in pools for p in c["refused"])
    for error in doc["errors"]:
        assert "keeps a taint or label that an update leaves out" in error["message"]
        assert "give the pool a new name in the stack file" in error["message"]
    assert len(doc["errors"]) == len(pools)

    # The fix: new pools (a new name each) without the taint, beside which the old ones go. (With
    # `protect` on, as vultr-dev has it, that delete is refused in turn; it is off here.)
    def unprotected(config: dict[str, Any]) -> None:
        config["modelplane:protect"] = False

    def renamed(config: dict[str, Any]) -> None:
        unprotected(config)
        for pool in config["modelplane:clusters"][0]["nodePools"]:
            pool["name"] += "b"

    old = planned(
        stack_file(tmp_path / "old2", "vultr-dev", lambda c: (with_taint(c), unprotected(c))), tmp_path / "old2.json"
    )
    out = modelplane(
        "plan",
        "--stack-file",
        str(stack_file(tmp_path / "renamed", "vultr-dev", renamed)),
        "--against",
        str(old),
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert not doc["errors"]
    ops = sorted(c["op"] for c in doc["changes"] if c["type"] == VULTR_POOL and c["op"] != "same")
    assert ops == ["create"] * len(pools) + ["delete"] * len(pools)

    # Added: the update adds it to the pool's nodes; nothing is refused.
    before = planned(stack_file(tmp_path / "before", "vultr-dev"), tmp_path / "before.json")
    added = stack_file(tmp_path / "added", "vultr-dev", with_taint)
    out = modelplane("plan", "--stack-file", str(added), "--against", str(before), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert not doc["errors"]
    assert {c["op"] for c in doc["changes"] if c["type"] == VULTR_POOL} == {"update"}
