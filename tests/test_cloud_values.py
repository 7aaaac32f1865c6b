"""Values a cloud or Kubernetes refuses are rejected by the plan at their path, before any registration."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from clouds import PROVISIONED
from infra.config.issues import ConfigError
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, GPU_BLOCKS, cpu_class, fleet_of, gpu_class, run_fleet
from tooling.cli import main


def fleet(source: str = "GKE") -> dict[str, Any]:
    return {
        "classes": [
            gpu_class("gpu", source, copy.deepcopy(GPU_BLOCKS[source])),
            cpu_class("cpu", source, CPU_BLOCKS[source]),
        ],
        "clusters": [
            {
                "name": "prod",
                "source": source,
                source.lower(): copy.deepcopy(CLUSTER_BLOCKS[source]),
                "nodePools": [{"name": "gpu", "className": "gpu"}, {"name": "cpu", "className": "cpu"}],
                "taints": [{"key": "example.com/team", "value": "ml", "effect": "NoSchedule"}],
            }
        ],
        "deployments": [
            {
                "name": "qwen",
                "cluster": "prod",
                "pool": "cpu",
                "image": "vllm/vllm-openai-cpu:v0.9.1",
                "devices": [{"name": "cpu"}],
            }
        ],
    }


def set_at(path: str, value: Any, source: str = "GKE") -> dict[str, Any]:
    raw = fleet(source)
    node: Any = raw
    parts = path.replace("[", ".").replace("]", "").split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node[part]
    last = parts[-1]
    node[int(last) if last.isdigit() else last] = value
    return raw


def rejected_paths(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    return [i.path for i in err.value.issues]


CASES: list[tuple[str, str, Any, str]] = [
    # (source, path set, value, path reported)
    ("GKE", "clusters[0].name", "1prod", "clusters[0].name"),
    ("GKE", "clusters[0].nodePools[1].name", "1cpu", "clusters[0].nodePools[1].name"),
    ("AKS", "clusters[0].name", "a" * 55, "clusters[0].name"),
    (
        "GKE",
        "classes[0].provisioning.gke.accelerator.type",
        "nvidia-[/l4]",
        "classes[0].provisioning.gke.accelerator.type",
    ),
    ("GKE", "classes[0].provisioning.gke.accelerator.type", "n" * 64, "classes[0].provisioning.gke.accelerator.type"),
    ("GKE", "deployments[0].name", "1qwen", "deployments[0].name"),
    ("GKE", "deployments[0].env", {"": "x"}, "deployments[0].env"),
    ("GKE", "deployments[0].env", {"A=B": "x"}, "deployments[0].env"),
    ("GKE", "classes[0].devices[0].deviceClassName", "GPU_Class", "classes[0].devices[0].deviceClassName"),
    ("GKE", "clusters[0].taints[0].key", "", "clusters[0].taints[0].key"),
    ("GKE", "clusters[0].taints[0].value", "v" * 64, "clusters[0].taints[0].value"),
    ("GKE", "deployments[0].shmSize", "-2Gi", "deployments[0].shmSize"),
    ("GKE", "deployments[0].shmSize", "lots", "deployments[0].shmSize"),
    ("GKE", "deployments[0].image", "vllm/vllm-openai-cpu:v0.9.1 --pull", "deployments[0].image"),
    ("EKS", "clusters[0].labels", {"aws:team": "ml"}, "clusters[0].labels.aws:team"),
    ("EKS", "clusters[0].labels", {"team": "x" * 257}, "clusters[0].labels.team"),
    ("EKS", "clusters[0].eks.kubernetesVersion", "1.35.2", "clusters[0].eks.kubernetesVersion"),
    ("GKE", "clusters[0].nodePools[0].nodeCount", 2**64, "clusters[0].nodePools[0].nodeCount"),
    ("GKE", "deployments[0].replicas", 10**12, "deployments[0].replicas"),
    ("GKE", "clusters[0].nodePools[0].zones", [" "], "clusters[0].nodePools[0].zones"),
]


def test_the_base_fleets_are_accepted() -> None:
    for source in (c.source for c in PROVISIONED):
        fleet_of(fleet(source))


@pytest.mark.parametrize(("source", "path", "value", "reported"), CASES)
def test_a_value_the_owner_rejects_is_rejected_at_its_path(source: str, path: str, value: Any, reported: str) -> None:
    raw = set_at(path, value, source)
    # A renamed cluster or pool also leaves the deployment's reference dangling; that is reported too.
    assert rejected_paths(raw)[0] == reported
    result = run_fleet(raw)
    assert isinstance(result.error, pulumi.RunError) and result.resources == []


def test_an_existing_class_with_17_gpus_is_planned_not_a_traceback() -> None:
    raw = {
        "classes": [
            {
                "name": "big",
                "devices": [
                    {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 20}
                ],
            }
        ],
        "clusters": [
            {
                "name": "byo",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36"},
                "nodePools": [{"name": "gpu", "className": "big"}],
            }
        ],
    }
    result = run_fleet(raw)
    assert result.error is None, result.error
    assert result.resources


def write_stack(tmp_path: Path, mutate: Callable[[dict[str, Any]], None]) -> Path:
    config = {f"modelplane:{k}": v for k, v in fleet().items()}
    mutate(config)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    return path


def test_rich_markup_in_user_text_prints_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def add_key(config: dict[str, Any]) -> None:
        config["modelplane:[/x]"] = 1

    code = main(["plan", "--stack-file", str(write_stack(tmp_path, add_key))])
    err = capsys.readouterr().err  # errors go to stderr in the human mode
    assert code == 1
    assert "unknown config key 'modelplane:[/x]'" in err.replace("\n", "")


def test_unknown_key_fix_reads_once(tmp_path: Path) -> None:
    raw = fleet()
    raw["clusters"][0]["nodePool"] = []
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    assert [(i.path, i.fix) for i in err.value.issues] == [
        ("clusters[0].nodePool", "did you mean 'nodePools'? Remove or rename it")
    ]


def test_a_boolean_is_not_a_count() -> None:
    raw = set_at("classes[0].devices[0].count", True)
    assert rejected_paths(raw) == ["classes[0].devices[0].count"]


# The message of each cloud rule that the cloud profile states (name form, name length, version
# form, tag limits), as a user reads it.
MESSAGES: list[tuple[str, str, Any, str]] = [
    ("GKE", "clusters[0].name", "1prod", "GKE cluster names start with a letter, not '1prod'"),
    ("GKE", "clusters[0].nodePools[1].name", "1cpu", "GKE node pool names start with a letter, not '1cpu'"),
    ("AKS", "clusters[0].name", "a" * 55, "the name is the AKS dnsPrefix, which holds at most 54 characters, not 55"),
    ("EKS", "clusters[0].eks.kubernetesVersion", "1.35.2", "EKS takes a major.minor version, not '1.35.2'"),
    (
        "EKS",
        "clusters[0].labels",
        {"aws:team": "ml"},
        "the tag key 'aws:team' uses the prefix 'aws:' that AWS reserves",
    ),
    ("EKS", "clusters[0].labels", {"t" * 129: "ml"}, "an AWS tag key holds 1-128 characters, not 129"),
    ("EKS", "clusters[0].labels", {"team": "x" * 257}, "an AWS tag value holds at most 256 characters, not 257"),
]


@pytest.mark.parametrize(("source", "path", "value", "message"), MESSAGES)
def test_a_cloud_rule_says_what_the_cloud_refuses(source: str, path: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        fleet_of(set_at(path, value, source))
    assert message in [i.problem for i in err.value.issues]
