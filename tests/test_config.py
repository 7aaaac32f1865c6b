"""The fleet model: shape errors and reference errors name the file, the path and the fix."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from clouds import PROVISIONED
from infra.config.issues import ConfigError
from infra.config.stackfile import load_stack_file
from tests.conftest import cpu_class, gke_fleet


def good_fleet() -> dict[str, Any]:
    return {f"modelplane:{key}": value for key, value in gke_fleet().items()}


def write(tmp_path: Path, config: dict[str, Any], name: str = "dev") -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    return path


def issues_of(tmp_path: Path, config: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as err:
        load_stack_file(write(tmp_path, config))
    for issue in err.value.issues:
        assert issue.file.endswith("Pulumi.dev.yaml")
        assert issue.fix
    return [(i.path, i.problem) for i in err.value.issues]


def test_good_fleet_loads_with_defaults(tmp_path: Path) -> None:
    stack = load_stack_file(write(tmp_path, good_fleet()))
    assert stack.stack == "dev"
    pool = stack.fleet.clusters[0].node_pools[0]
    assert pool.node_count == 1 and pool.min_node_count is None
    assert stack.fleet.classes[0].provisioning is not None
    assert stack.fleet.classes[0].provisioning.machine.disk_size_gb == 100  # type: ignore[union-attr]
    assert stack.fleet.protect is False


def test_wrong_type_names_the_path(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["nodePools"][1]["nodeCount"] = "three"
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "clusters[0].nodePools[1].nodeCount"
    assert "integer" in problem


def test_unknown_class_names_the_path_and_suggests(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["nodePools"][1]["className"] = "cpuu"
    with pytest.raises(ConfigError) as err:
        load_stack_file(write(tmp_path, config))
    [issue] = err.value.issues
    assert issue.path == "clusters[0].nodePools[1].className"
    assert "unknown class 'cpuu'" in issue.problem
    assert "did you mean 'cpu'" in issue.fix


def test_unknown_key_gets_did_you_mean(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["nodePools"][0]["maxNodeCont"] = 3
    with pytest.raises(ConfigError) as err:
        load_stack_file(write(tmp_path, config))
    [issue] = err.value.issues
    assert issue.path == "clusters[0].nodePools[0].maxNodeCont"
    assert "did you mean 'maxNodeCount'" in issue.fix


def test_unknown_config_key_in_namespace_is_rejected(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:protcet"] = True
    with pytest.raises(ConfigError) as err:
        load_stack_file(write(tmp_path, config))
    assert "did you mean 'modelplane:protect'" in err.value.issues[0].fix


def test_other_namespaces_pass_through(tmp_path: Path) -> None:
    config = good_fleet()
    config["gcp:project"] = "ignored-here"
    assert load_stack_file(write(tmp_path, config)).plain["gcp:project"] == "ignored-here"


def test_duplicate_pool_names_are_rejected(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["nodePools"][1]["name"] = "gpu"
    assert issues_of(tmp_path, config) == [
        ("clusters[0].nodePools[1].name", "pool name 'gpu' is declared twice in cluster 'prod'")
    ]


def test_system_pool_name_is_reserved(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["nodePools"][1]["name"] = "system"
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "clusters[0].nodePools[1].name" and "reserved" in problem


def test_min_above_max_is_rejected(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["nodePools"][0].update(minNodeCount=3, maxNodeCount=2, nodeCount=2)
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "clusters[0].nodePools[0].minNodeCount"
    assert "greater than maxNodeCount" in problem


def test_node_count_outside_bounds_is_rejected(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["nodePools"][0].update(minNodeCount=1, maxNodeCount=2, nodeCount=5)
    assert issues_of(tmp_path, config)[0][0] == "clusters[0].nodePools[0].nodeCount"


def test_one_autoscaling_bound_alone_is_rejected(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["nodePools"][0]["maxNodeCount"] = 3
    assert issues_of(tmp_path, config)[0][0] == "clusters[0].nodePools[0].minNodeCount"


def test_missing_source_block_is_rejected(tmp_path: Path) -> None:
    config = good_fleet()
    del config["modelplane:clusters"][0]["gke"]
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "clusters[0].gke"
    assert "source is GKE" in problem


def test_block_of_another_source_is_rejected(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["eks"] = {"region": "us-east-1", "kubernetesVersion": "1.36"}
    assert issues_of(tmp_path, config) == [("clusters[0].eks", "a 'eks' block is set but source is GKE")]


def test_provisioning_needs_the_block_its_provider_names(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:classes"][0]["provisioning"] = {"provider": "GKE", "eks": {"instanceType": "g6.xlarge"}}
    paths = [p for p, _ in issues_of(tmp_path, config)]
    assert paths == ["classes[0].provisioning.gke", "classes[0].provisioning.eks"]


def test_each_clouds_machine_field_is_named_as_the_stack_file_spells_it() -> None:
    # Messages that point at a class's machine (`classes[0].provisioning.gke.machineType`) use this name.
    assert {c.source: c.machine_block.machine_key() for c in PROVISIONED} == {
        "GKE": "machineType",
        "EKS": "instanceType",
        "AKS": "vmSize",
        "Civo": "size",
        "Vultr": "plan",
        "Nebius": "preset",
        "DigitalOcean": "size",
        "OCI": "shape",
    }


def test_dra_device_needs_device_class_name(tmp_path: Path) -> None:
    config = good_fleet()
    del config["modelplane:classes"][0]["devices"][0]["deviceClassName"]
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "classes[0].devices[0].deviceClassName"
    assert "deviceClassName" in problem


def test_attribute_holds_exactly_one_value(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:classes"][0]["devices"][0]["attributes"] = {"productName": {"string": "L4", "int": 3}}
    [(path, _)] = issues_of(tmp_path, config)
    assert path == "classes[0].devices[0].attributes.productName"


def test_capacity_must_be_a_quantity(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:classes"][1]["devices"][0]["capacity"]["dra.cpu/cpu"]["value"] = "six"
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "classes[1].devices[0].capacity.dra.cpu/cpu.value"
    assert "quantity" in problem


def test_kubernetes_before_dra_is_rejected(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["gke"]["kubernetesVersion"] = "1.31"
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "clusters[0].gke.kubernetesVersion" and "1.34" in problem


@pytest.mark.parametrize("version", ["1.35", "1.35.9-gke.1000", "1.34"])
def test_cpu_capacity_claims_below_1_36_are_rejected(tmp_path: Path, version: str) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["gke"]["kubernetesVersion"] = version
    with pytest.raises(ConfigError) as err:
        load_stack_file(write(tmp_path, config))
    [issue] = err.value.issues
    assert issue.path == "clusters[0].gke.kubernetesVersion"
    assert issue.problem == (
        "pool 'cpu' (class 'cpu') claims capacity dra.cpu/cpu, which needs the DRAConsumableCapacity feature "
        f"gate: off before Kubernetes 1.36, so on {version} the claim never schedules"
    )
    assert issue.fix == "use Kubernetes 1.36 or newer on this cluster, where the gate is on by default"


@pytest.mark.parametrize("version", ["1.36", "1.36.0-gke.4447000", "1.37"])
def test_cpu_capacity_claims_from_1_36_load(tmp_path: Path, version: str) -> None:
    config = good_fleet()
    config["modelplane:clusters"][0]["gke"]["kubernetesVersion"] = version
    assert load_stack_file(write(tmp_path, config)).fleet.clusters[0].name == "prod"


def test_gpu_memory_capacity_needs_no_1_36(tmp_path: Path) -> None:
    # Capacity that only describes a GPU selects hardware; nothing consumes it.
    config = good_fleet()
    config["modelplane:classes"][0]["devices"][0]["capacity"] = {"memory": {"value": "24Gi"}}
    config["modelplane:clusters"][0]["gke"]["kubernetesVersion"] = "1.34"
    config["modelplane:clusters"][0]["nodePools"] = [{"name": "gpu", "className": "l4"}]
    assert load_stack_file(write(tmp_path, config)).fleet.clusters[0].gke is not None


def existing_cluster(existing: dict[str, Any]) -> dict[str, Any]:
    config = good_fleet()
    del config["modelplane:classes"][1]["provisioning"]
    config["modelplane:clusters"][0] = {
        "name": "byo",
        "source": "Existing",
        "existing": {"kubernetesVersion": "1.36", **existing},
        "nodePools": [{"name": "cpu", "className": "cpu"}],
    }
    config["modelplane:kubeconfig"] = {"secure": "AAABAKubeconfig"}
    return config


def test_existing_cluster_can_use_its_owners_gpu_operator(tmp_path: Path) -> None:
    stack = load_stack_file(write(tmp_path, existing_cluster({"ownerGpuOperator": True})))
    existing = stack.fleet.clusters[0].existing
    assert existing is not None and existing.owner_gpu_operator is True
    plain = load_stack_file(write(tmp_path, existing_cluster({}))).fleet.clusters[0].existing
    assert plain is not None and plain.owner_gpu_operator is False


def test_misspelled_owner_gpu_operator_is_rejected(tmp_path: Path) -> None:
    [(path, _)] = issues_of(tmp_path, existing_cluster({"ownerGpuOperators": True}))
    assert path == "clusters[0].existing.ownerGpuOperators"


def test_class_without_compute_device_cannot_back_a_pool(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:classes"][0]["devices"] = [{"name": "nic", "claim": "Synthetic", "driver": "nic.nvidia.com"}]
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "clusters[0].nodePools[0].className"
    assert "claims no CPU or GPU DRA device" in problem


def test_existing_cluster_needs_its_secret_kubeconfig(tmp_path: Path) -> None:
    config = {
        "modelplane:classes": [cpu_class("cpu", None)],
        "modelplane:clusters": [
            {
                "name": "byo",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
    }
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "clusters[0].existing.kubeconfigKey" and "modelplane:kubeconfig" in problem
    config["modelplane:kubeconfig"] = "apiVersion: v1"
    [(path, problem)] = issues_of(tmp_path, config)
    assert "plain value" in problem
    config["modelplane:kubeconfig"] = {"secure": "AAAB"}
    stack = load_stack_file(write(tmp_path, config))
    assert stack.secrets == {"kubeconfig": "AAAB"}


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("config:\n  modelplane:clusters: [\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_stack_file(path)
    assert err.value.issues[0].path.startswith("line ")


def test_deployment_references_are_checked(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:deployments"] = [
        {
            "name": "a",
            "cluster": "nope",
            "pool": "gpu",
            "image": "vllm/vllm-openai:v0.11.0",
            "devices": [{"name": "gpu"}],
        },
        {
            "name": "b",
            "cluster": "prod",
            "pool": "nope",
            "image": "vllm/vllm-openai:v0.11.0",
            "devices": [{"name": "gpu"}],
        },
        {
            "name": "c",
            "cluster": "prod",
            "pool": "gpu",
            "image": "vllm/vllm-openai:v0.11.0",
            "devices": [{"name": "tpu"}],
        },
        {
            "name": "d",
            "cluster": "prod",
            "pool": "gpu",
            "image": "vllm/vllm-openai:v0.11.0",
            "devices": [{"name": "gpu", "count": 2}],
        },
    ]
    paths = [p for p, _ in issues_of(tmp_path, config)]
    assert paths[:4] == [
        "deployments[0].cluster",
        "deployments[1].pool",
        "deployments[2].devices[0].name",
        "deployments[3].devices[0].count",
    ]


def test_duplicate_class_device_and_cluster_names_are_rejected(tmp_path: Path) -> None:
    config = good_fleet()
    config["modelplane:classes"].append(dict(config["modelplane:classes"][1]))
    config["modelplane:classes"][0]["devices"].append(dict(config["modelplane:classes"][0]["devices"][0]))
    config["modelplane:clusters"].append(dict(config["modelplane:clusters"][0]))
    assert issues_of(tmp_path, config) == [
        ("classes[2].name", "class name 'cpu' is declared twice"),
        ("classes[0].devices[1].name", "device name 'gpu' is declared twice"),
        ("clusters[1].name", "cluster name 'prod' is declared twice"),
    ]


def test_quoted_whole_number_is_rejected_like_the_schema_does(tmp_path: Path) -> None:
    config = copy.deepcopy(good_fleet())  # L4 is shared between fleets
    config["modelplane:clusters"][0]["nodePools"][0]["nodeCount"] = "2"
    config["modelplane:classes"][0]["provisioning"]["gke"]["accelerator"]["count"] = "1"
    assert issues_of(tmp_path, config) == [
        ("classes[0].provisioning.gke.accelerator.count", "'1' is a quoted string, not a whole number"),
        ("clusters[0].nodePools[0].nodeCount", "'2' is a quoted string, not a whole number"),
    ]


def test_mapping_given_as_a_scalar_names_the_keys_it_needs(tmp_path: Path) -> None:
    config = copy.deepcopy(good_fleet())  # L4 is shared between fleets
    config["modelplane:classes"][0]["provisioning"]["gke"]["accelerator"] = 4
    with pytest.raises(ConfigError) as err:
        load_stack_file(write(tmp_path, config))
    [issue] = err.value.issues
    assert issue.path == "classes[0].provisioning.gke.accelerator"
    assert issue.problem == "'accelerator' is a mapping with keys {type} (got 4)"
    assert "Accelerator" not in issue.problem + issue.fix


def test_unquoted_version_is_told_to_be_quoted(tmp_path: Path) -> None:
    config = copy.deepcopy(good_fleet())  # L4 is shared between fleets
    config["modelplane:clusters"][0]["gke"]["kubernetesVersion"] = 1.35
    with pytest.raises(ConfigError) as err:
        load_stack_file(write(tmp_path, config))
    assert err.value.issues[0].fix.startswith('quote it: "1.35"')


def test_deployment_on_a_pool_that_never_has_nodes_is_rejected(tmp_path: Path) -> None:
    config = copy.deepcopy(good_fleet())  # L4 is shared between fleets
    config["modelplane:clusters"][0]["nodePools"][1]["nodeCount"] = 0
    config["modelplane:deployments"] = [
        {
            "name": "m",
            "cluster": "prod",
            "pool": "cpu",
            "image": "vllm/vllm-openai-cpu:v0.23.0",
            "devices": [{"name": "cpu"}],
        }
    ]
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "deployments[0].pool"
    assert (
        problem
        == "pool 'cpu' of cluster 'prod' has nodeCount 0 and no autoscaling, so the 1 replica(s) can never be scheduled"
    )
    config["modelplane:clusters"][0]["nodePools"][1].update(minNodeCount=0, maxNodeCount=2)
    assert load_stack_file(write(tmp_path, config)).fleet.deployments[0].pool == "cpu"


def test_fleet_without_clusters_is_rejected(tmp_path: Path) -> None:
    config = copy.deepcopy(good_fleet())  # L4 is shared between fleets
    config["modelplane:clusters"] = []
    [(path, problem)] = issues_of(tmp_path, config)
    assert path == "config.modelplane:clusters"
    assert problem == "no clusters are declared (modelplane:clusters is missing or empty)"
