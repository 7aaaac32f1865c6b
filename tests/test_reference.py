"""The stack-file JSON Schema agrees with the loader: it accepts what loads and rejects, at the same
path, the malformed stacks the config tests hold; the reference documents every key."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from infra.config.issues import ConfigError
from infra.config.stackfile import load_stack_file
from tests.test_config import good_fleet
from tooling.reference import configuration_markdown, stack_schema, undocumented

ROOT = Path(__file__).resolve().parent.parent
VALIDATOR = jsonschema.Draft202012Validator(stack_schema())


def schema_paths(doc: Any) -> list[str]:
    """Each schema error as a loader path (`clusters[0].nodePools[1].nodeCount`)."""
    paths = []
    for error in leaves(VALIDATOR.iter_errors(doc)):
        loc: list[str | int] = list(error.absolute_path)
        # Errors about a mapping's keys sit at the mapping; the loader names the key.
        if error.validator in ("required", "dependentRequired"):
            wanted = (
                error.validator_value
                if error.validator == "required"
                else [k for keys in error.validator_value.values() for k in keys]
            )
            loc += [k for k in wanted if k not in error.instance][:1]
        elif error.validator == "additionalProperties":
            loc += sorted(set(error.instance) - set(error.schema.get("properties", {})))[:1]
        paths.append(loader_path(loc))
    return sorted(set(paths))


def leaves(errors: Iterable[jsonschema.ValidationError]) -> Iterator[jsonschema.ValidationError]:
    """An `anyOf` of a mapping and null (an optional block) fails inside the mapping: report that."""
    for error in errors:
        inner = [e for e in error.context or [] if not (e.validator == "type" and e.validator_value == "null")]
        if error.validator == "anyOf" and inner:
            yield from leaves(inner)
        else:
            yield error


def loader_path(loc: list[str | int]) -> str:
    out = ""
    if loc[:1] == ["config"] and len(loc) > 2:
        key = str(loc[1])
        if key.startswith("modelplane:") and key.split(":", 1)[1] in ("classes", "clusters", "deployments", "protect"):
            loc = [key.split(":", 1)[1], *loc[2:]]
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def loader_paths(tmp_path: Path, config: dict[str, Any]) -> list[str]:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_stack_file(path)
    return sorted({i.path for i in err.value.issues})


@pytest.mark.parametrize("path", sorted((ROOT / "stacks").glob("Pulumi.*.yaml")), ids=lambda p: p.name)
def test_schema_accepts_every_committed_stack(path: Path) -> None:
    assert schema_paths(yaml.safe_load(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("path", sorted((ROOT / "stacks").glob("Pulumi.*.yaml")), ids=lambda p: p.name)
def test_example_stack_declares_the_schema_for_editors(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../docs/stack.schema.json"


def _set(path: list[str | int], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        node: Any = config
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return edit


def _delete(path: list[str | int]) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        node: Any = config
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]

    return edit


C, K = "modelplane:classes", "modelplane:clusters"
# The shape errors of tests/test_config.py, each with the path the loader reports.
MALFORMED: dict[str, tuple[Callable[[dict[str, Any]], None], list[str]]] = {
    "word-for-a-number": (_set([K, 0, "nodePools", 1, "nodeCount"], "three"), ["clusters[0].nodePools[1].nodeCount"]),
    "quoted-number": (_set([K, 0, "nodePools", 1, "nodeCount"], "3"), ["clusters[0].nodePools[1].nodeCount"]),
    "unknown-key": (_set([K, 0, "nodePools", 0, "maxNodeCont"], 3), ["clusters[0].nodePools[0].maxNodeCont"]),
    "unknown-namespace-key": (_set(["modelplane:protcet"], True), ["config.modelplane:protcet"]),
    "system-pool-name": (_set([K, 0, "nodePools", 1, "name"], "system"), ["clusters[0].nodePools[1].name"]),
    "one-autoscaling-bound": (
        _set([K, 0, "nodePools", 0, "maxNodeCount"], 3),
        ["clusters[0].nodePools[0].minNodeCount"],
    ),
    "missing-source-block": (_delete([K, 0, "gke"]), ["clusters[0].gke"]),
    "block-of-another-source": (
        _set([K, 0, "eks"], {"region": "us-east-1", "kubernetesVersion": "1.34"}),
        ["clusters[0].eks"],
    ),
    "provisioning-block-of-another-provider": (
        _set([C, 0, "provisioning"], {"provider": "GKE", "eks": {"instanceType": "g6.xlarge"}}),
        ["classes[0].provisioning.eks", "classes[0].provisioning.gke"],
    ),
    "dra-device-without-class": (
        _delete([C, 0, "devices", 0, "deviceClassName"]),
        ["classes[0].devices[0].deviceClassName"],
    ),
    "attribute-with-two-values": (
        _set([C, 0, "devices", 0, "attributes"], {"productName": {"string": "L4", "int": 3}}),
        ["classes[0].devices[0].attributes.productName"],
    ),
    "capacity-not-a-quantity": (
        _set([C, 1, "devices", 0, "capacity", "dra.cpu/cpu", "value"], "six"),
        ["classes[1].devices[0].capacity.dra.cpu/cpu.value"],
    ),
    "kubernetes-before-dra": (_set([K, 0, "gke", "kubernetesVersion"], "1.31"), ["clusters[0].gke.kubernetesVersion"]),
    "version-as-a-number": (_set([K, 0, "gke", "kubernetesVersion"], 1.35), ["clusters[0].gke.kubernetesVersion"]),
    "accelerator-as-a-number": (
        _set([C, 0, "provisioning", "gke", "accelerator"], 4),
        ["classes[0].provisioning.gke.accelerator"],
    ),
    "plain-kubeconfig": (_set(["modelplane:kubeconfig"], "apiVersion: v1"), ["config.modelplane:kubeconfig"]),
    "no-clusters": (_delete([K]), ["config.modelplane:clusters"]),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_schema_rejects_what_the_loader_rejects_at_the_same_path(case: str, tmp_path: Path) -> None:
    edit, expected = MALFORMED[case]
    config = copy.deepcopy(good_fleet())
    edit(config)
    assert loader_paths(tmp_path, config) == expected
    assert schema_paths({"config": config}) == expected


def test_good_fleet_passes_both() -> None:
    assert schema_paths({"config": good_fleet()}) == []


def test_schema_requires_config_and_clusters() -> None:
    assert schema_paths({}) == ["config"]
    assert schema_paths({"config": {"gcp:project": "p"}}) == ["config.modelplane:clusters"]


def test_schema_accepts_secure_env_values_and_protect_as_pulumi_writes_it() -> None:
    config = good_fleet()
    config["modelplane:protect"] = "true"  # `pulumi config set modelplane:protect true`
    config["modelplane:deployments"] = [
        {
            "name": "m",
            "cluster": "prod",
            "pool": "gpu",
            "image": "vllm/vllm-openai:v0.23.0",
            "devices": [{"name": "gpu"}],
            "env": {"HF_TOKEN": {"secure": "AAABAJ"}, "PLAIN": "1"},
        }
    ]
    assert schema_paths({"config": config}) == []


def test_every_key_of_the_model_is_documented() -> None:
    assert undocumented() == []


def test_reference_lists_keys_with_type_default_and_allowed_values() -> None:
    text = configuration_markdown()
    assert "| `nodeCount` | whole number | `1` | 0..5000 |" in text
    assert "| `effect` | string | required | `NoSchedule`, `PreferNoSchedule`, `NoExecute` |" in text
    assert "| `modelplane:clusters` | list of mapping | required (at least one) |" in text
