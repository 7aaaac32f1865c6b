"""The shared weight cache (`cache.volume: Shared`): its rules, the caches a cluster derives, the
objects the program registers for them, each cloud's ReadWriteMany storage and what it costs.

A shared cache is one ReadWriteMany claim per cluster, namespace and model, filled once by a Job and
mounted read-only by every pod that serves the model (docs/serving.md, "Shared weight cache").
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from clouds import SOURCES, profile
from components.base import policy_inputs
from components.features.cache import COMPLETE_MARKER, SHARED_CACHE_PATH
from infra import tokens
from infra.config.model import Fleet, ModelCache
from infra.cost import facts_cost
from infra.facts import derive_cluster
from infra.shared_cache import claim_name
from policies.stack_rules import registered_cluster_cost
from tests.conftest import of_type, run_fleet
from tests.policy_harness import stack_resource
from tests.test_serving_checks import deployment, raw_fleet, serving

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
ARGS = ["--model", MODEL]
CLAIM = claim_name(MODEL)


def shared(size: str = "1Ti", **cache: Any) -> dict[str, Any]:
    return {"volume": "Shared", "size": size, **cache}


def sharing(name: str = "qwen", *, size: str = "1Ti", replicas: int = 2, **fields: Any) -> dict[str, Any]:
    """A deployment of MODEL with a shared cache of `size`, `replicas` replicas."""
    fields.setdefault("args", ARGS)
    return deployment(name, cache=shared(size, **fields.pop("cache", {})), replicas=replicas, **fields)


# --------------------------------------------------------------------------------------------
# The config model


def test_a_shared_cache_needs_a_size() -> None:
    with pytest.raises(ValidationError, match="a Shared cache needs a size"):
        ModelCache.model_validate({"volume": "Shared"})


# --------------------------------------------------------------------------------------------
# The rules (`infra.checks.cache`)


# The provisioned clouds by whether their profile offers ReadWriteMany storage (`CloudProfile.shared_cache`).
PROVISIONED = [s for s in SOURCES if profile(s).provisioned]
WITH_STORAGE = [s for s in PROVISIONED if profile(s).shared_cache is not None]
WITHOUT_STORAGE = [s for s in PROVISIONED if profile(s).shared_cache is None]


def test_each_clouds_readwritemany_class_is_the_one_its_docs_name() -> None:
    classes = {s: storage.storage_class for s in SOURCES if (storage := profile(s).shared_cache) is not None}
    assert classes["GKE"] == "standard-rwx" and classes["AKS"] == "azurefile-csi"
    assert classes["EKS"] == "modelplane-efs" and classes["Existing"] is None
    assert WITHOUT_STORAGE and "Civo" in WITHOUT_STORAGE


@pytest.mark.parametrize("source", WITH_STORAGE)
def test_a_shared_cache_on_a_cloud_with_readwritemany_storage_serves_every_replica(source: str) -> None:
    assert serving(raw_fleet(source, sharing())) == []


@pytest.mark.parametrize("source", WITHOUT_STORAGE)
def test_a_shared_cache_on_a_cloud_without_readwritemany_storage_is_refused_with_nodelocal(source: str) -> None:
    assert serving(raw_fleet(source, sharing(size="100Gi"))) == [
        (
            "deployments[0].cache.volume",
            f"{source} cluster 'c' has no ReadWriteMany storage this program provides, which a Shared cache needs "
            "(docs/serving.md, Shared weight cache)",
            "use volume: NodeLocal and remove size, which each node keeps for its own pods",
        )
    ]


def test_a_shared_cache_on_an_existing_cluster_needs_the_owners_class() -> None:
    assert serving(raw_fleet("Existing", sharing(size="100Gi"))) == [
        (
            "deployments[0].cache.storageClassName",
            "a Shared cache on Existing cluster 'c' claims your ReadWriteMany StorageClass, and none is named",
            "set storageClassName to a class of the cluster that provisions ReadWriteMany volumes (NFS, CephFS, a "
            "cloud file service), or use volume: NodeLocal and remove size",
        )
    ]
    named = sharing(size="100Gi", cache={"storageClassName": "nfs-rwx"})
    assert serving(raw_fleet("Existing", named)) == []


def test_a_gke_shared_cache_below_the_filestore_tier_minimum_is_refused() -> None:
    assert serving(raw_fleet("GKE", sharing(size="500Gi"))) == [
        (
            "deployments[0].cache.size",
            "size 500Gi is below the 1024 GiB standard-rwx provisions at least "
            "(https://cloud.google.com/filestore/docs/csi-driver)",
            "set size: 1024Gi or more (the class bills that much whatever the weights take), or use volume: "
            "NodeLocal and remove size",
        )
    ]
    # A class of the owner's choosing has its own floor, which the program does not know.
    assert serving(raw_fleet("GKE", sharing(size="500Gi", cache={"storageClassName": "zonal-rwx"}))) == []


def test_a_shared_cache_without_a_model_arg_is_refused() -> None:
    assert serving(raw_fleet("EKS", sharing(args=["--served-model-name", "qwen"]))) == [
        (
            "deployments[0].args",
            "a Shared cache holds the model the engine serves, and the args name none with --model",
            "add '--model <Hugging Face model id>' to args, or use volume: PersistentVolumeClaim",
        )
    ]


def test_deployments_sharing_a_cache_must_name_one_class() -> None:
    raw = raw_fleet("EKS", sharing("a"), sharing("b", cache={"storageClassName": "other-efs"}))
    assert serving(raw) == [
        (
            "deployments[1].cache.storageClassName",
            f"deployment 'b' shares the cache of model '{MODEL}' with deployment 'a', whose class is the cloud "
            "default; one claim has one class",
            "remove storageClassName",
        )
    ]


def test_a_claim_cache_of_a_multinode_group_points_to_the_shared_cache() -> None:
    raw = raw_fleet(
        "EKS", deployment(nodes=2, replicas=1, args=ARGS, cache={"size": "50Gi", "storageClassName": "gp3"})
    )
    [(path, problem, fix)] = serving(raw)
    assert (path, problem) == (
        "deployments[0].cache.volume",
        "a PersistentVolumeClaim cache is ReadWriteOnce: one node mounts it, not 2 pods (1 x 2 nodes)",
    )
    assert fix.startswith("use volume: Shared, one ReadWriteMany copy every pod of every group reads, or volume: ")


# --------------------------------------------------------------------------------------------
# The caches a cluster derives (`infra.shared_cache`)


def caches_of(raw: dict[str, Any]) -> Any:
    fleet = Fleet.model_validate(copy.deepcopy(raw))
    return derive_cluster(fleet, fleet.clusters[0]).shared_caches


def test_two_deployments_of_one_model_in_one_namespace_share_one_cache_of_the_larger_size() -> None:
    raw = raw_fleet("EKS", sharing("a", size="100Gi"), sharing("b", size="200Gi"), deployment("c", args=ARGS))
    [cache] = caches_of(raw)
    assert (cache.namespace, cache.model, cache.claim, cache.size) == ("default", MODEL, CLAIM, "200Gi")
    assert (cache.storage_class, cache.deployments) == ("modelplane-efs", ("a", "b"))


def test_each_namespace_and_model_has_a_cache_of_its_own() -> None:
    other = ["--model", "Qwen/Qwen3-0.6B"]
    raw = raw_fleet("EKS", sharing("a"), sharing("b", namespace="team"), sharing("c", args=other))
    assert [(c.namespace, c.model) for c in caches_of(raw)] == [
        ("default", MODEL),
        ("team", MODEL),
        ("default", "Qwen/Qwen3-0.6B"),
    ]


def test_a_claim_name_is_a_dns_label_that_follows_the_model_id() -> None:
    name = claim_name("Org/" + "Very.Long_Model" * 10)
    assert len(name) <= 57 and name.startswith("weights-org-very-long-model")
    assert name.replace("-", "").isalnum() and name == name.lower()
    assert claim_name("org/a") != claim_name("org/A")


# --------------------------------------------------------------------------------------------
# What the program registers


def runnable(source: str, *deployments: dict[str, Any]) -> dict[str, Any]:
    """A fleet the program registers: engines that fit the GPU pool's nodes, one node per replica."""
    for dep in deployments:
        dep["memory"] = "8Gi"
    raw = raw_fleet(source, *deployments)
    raw["clusters"][0]["nodePools"][0]["nodeCount"] = sum(d.get("replicas", 1) for d in deployments)
    return raw


def token_fleet(source: str = "EKS") -> dict[str, Any]:
    secure = {"HF_TOKEN": {"secure": "hf_x"}}
    return runnable(source, sharing("a", env=secure, replicas=1), sharing("b", replicas=1))


def test_one_claim_and_one_download_job_serve_every_deployment_of_the_model() -> None:
    result = run_fleet(token_fleet())
    assert result.error is None, result.error
    [claim] = [r for r in of_type(result, tokens.PERSISTENT_VOLUME_CLAIM) if r.inputs["metadata"]["name"] == CLAIM]
    assert claim.inputs["spec"]["accessModes"] == ["ReadWriteMany"]
    assert claim.inputs["spec"]["storageClassName"] == "modelplane-efs"
    [job] = of_type(result, tokens.JOB)
    assert job.inputs["metadata"]["name"] == CLAIM
    assert job.inputs["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}
    pod = job.inputs["spec"]["template"]["spec"]
    [container] = pod["containers"]
    command = container["command"][-1]
    # Resumable: a finished download is skipped, and the marker is written last, after `hf download`.
    assert command.index(f"[ -f {COMPLETE_MARKER} ]") < command.index(f"hf download {MODEL}")
    assert command.rstrip().endswith(f"touch {COMPLETE_MARKER}") and command.startswith("set -e;")
    # The token comes from the Secret of the deployment that sets it, never in plain text.
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "a-env", "key": "HF_TOKEN"}}} in container["env"]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == CLAIM
    assert pod["nodeSelector"] == {"modelplane.ai/pool": "gpu"}


def test_every_engine_pod_mounts_the_claim_read_only_and_waits_for_the_marker() -> None:
    result = run_fleet(token_fleet())
    workloads = of_type(result, tokens.DEPLOYMENT)
    assert len(workloads) == 2
    for workload in workloads:
        pod = workload.inputs["spec"]["template"]["spec"]
        [volume] = [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
        assert volume["persistentVolumeClaim"] == {"claimName": CLAIM, "readOnly": True}
        [engine] = pod["containers"]
        mount = next(m for m in engine["volumeMounts"] if m["name"] == volume["name"])
        assert (mount["mountPath"], mount["readOnly"]) == (SHARED_CACHE_PATH, True)
        env = {e["name"]: e.get("value") for e in engine["env"]}
        assert (env["HF_HUB_CACHE"], env["HF_HUB_OFFLINE"]) == (SHARED_CACHE_PATH, "1")
        [wait] = pod["initContainers"]
        assert COMPLETE_MARKER in wait["command"][-1] and wait["volumeMounts"][0]["readOnly"] is True


def test_a_deployment_without_a_shared_cache_registers_no_cache_objects() -> None:
    result = run_fleet(runnable("EKS", deployment(args=ARGS, cache={"volume": "NodeLocal"})))
    assert of_type(result, tokens.JOB) == [] and of_type(result, tokens.SHARED_CACHE) == []
    pod = of_type(result, tokens.DEPLOYMENT)[0].inputs["spec"]["template"]["spec"]
    assert "initContainers" not in pod


# --------------------------------------------------------------------------------------------
# Each cloud's ReadWriteMany storage


def test_gke_turns_on_the_filestore_csi_addon_only_for_a_shared_cache() -> None:
    def addons(raw: dict[str, Any]) -> Any:
        [cluster] = of_type(run_fleet(raw), "gcp:container/cluster:Cluster")
        return cluster.inputs.get("addonsConfig")

    assert addons(runnable("GKE", sharing())) == {"gcpFilestoreCsiDriverConfig": {"enabled": True}}
    assert addons(runnable("GKE", deployment(args=ARGS, cache={"volume": "NodeLocal"}))) is None


def test_eks_creates_efs_its_mount_targets_driver_and_class_only_for_a_shared_cache() -> None:
    result = run_fleet(runnable("EKS", sharing()))
    [fs] = of_type(result, "aws:efs/fileSystem:FileSystem")
    assert fs.inputs["encrypted"] is True
    subnets = [r for r in of_type(result, "aws:ec2/subnet:Subnet") if "private" in r.name]
    assert len(of_type(result, "aws:efs/mountTarget:MountTarget")) == len(subnets) > 0
    [group] = [r for r in of_type(result, "aws:ec2/securityGroup:SecurityGroup") if r.name.endswith("-efs")]
    assert [(i["protocol"], i["fromPort"], i["toPort"]) for i in group.inputs["ingress"]] == [("tcp", 2049, 2049)]
    [addon] = [r for r in of_type(result, "aws:eks/addon:Addon") if r.inputs["addonName"] == "aws-efs-csi-driver"]
    assert addon.inputs["podIdentityAssociations"][0]["serviceAccount"] == "efs-csi-controller-sa"
    [policy] = [r for r in of_type(result, "aws:iam/rolePolicyAttachment:RolePolicyAttachment") if "efs" in r.name]
    assert policy.inputs["policyArn"].endswith(":iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy")
    [cls] = of_type(result, "kubernetes:storage.k8s.io/v1:StorageClass")
    assert cls.inputs["provisioner"] == "efs.csi.aws.com"
    assert cls.inputs["metadata"]["name"] == "modelplane-efs"
    assert cls.inputs["parameters"]["provisioningMode"] == "efs-ap" and "fileSystemId" in cls.inputs["parameters"]

    plain = run_fleet(runnable("EKS", deployment(args=ARGS, cache={"volume": "NodeLocal"})))
    assert of_type(plain, "aws:efs/fileSystem:FileSystem") == []
    assert of_type(plain, "kubernetes:storage.k8s.io/v1:StorageClass") == []


# --------------------------------------------------------------------------------------------
# What it costs


def test_a_shared_cache_costs_its_size_at_the_clouds_storage_price() -> None:
    raw = raw_fleet("GKE", sharing(size="2Ti"))
    fleet = Fleet.model_validate(copy.deepcopy(raw))
    facts = derive_cluster(fleet, fleet.clusters[0])
    with_cache = facts_cost(facts)
    assert with_cache is not None
    [storage] = with_cache.storage
    assert (storage.claim, storage.gib, storage.usd_gib_month) == (f"default/{CLAIM}", Decimal(2048), Decimal("0.20"))
    raw["deployments"][0]["cache"] = {"volume": "NodeLocal"}
    fleet = Fleet.model_validate(copy.deepcopy(raw))
    without = facts_cost(derive_cluster(fleet, fleet.clusters[0]))
    assert without is not None
    added = with_cache.hourly_at_max - without.hourly_at_max
    assert added.quantize(Decimal("1e-9")) == (Decimal("0.20") * 2048 / 730).quantize(Decimal("1e-9"))
    # The policy pack prices the same storage from what the cluster component registered.
    registered = registered_cluster_cost(
        stack_resource("modelplane:gke:GkeCluster", policy_inputs(facts, {}), name="c")
    )
    assert registered is not None and registered.hourly_at_max == with_cache.hourly_at_max


def test_a_shared_cache_without_a_price_leaves_the_cost_incomplete() -> None:
    fleet = Fleet.model_validate(copy.deepcopy(raw_fleet("AKS", sharing())))
    cost = facts_cost(derive_cluster(fleet, fleet.clusters[0]))
    assert cost is not None and not cost.complete
    assert f"shared cache default/{CLAIM}" in cost.unpriced
