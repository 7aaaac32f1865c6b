"""Values a cloud refuses that used to plan clean, and typos whose fix named nothing to pick.

Each case changes one key of a committed stack, checks the error's path and fix, then applies the fix
the message gives and plans again clean: a region the cloud does not have, a GCP project ID with
capitals, a VKE version not in VKE's spelling, and a misspelt machine type.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.checks.machines import zone_fix
from tooling.plan import plan_stack

ROOT = Path(__file__).resolve().parent.parent
STACKS = ROOT / "stacks"
Config = dict[str, Any]


def plan_with(tmp_path: Path, stack: str, change: Callable[[Config], None]) -> dict[str, Any]:
    """The plan of committed `stack` with `change` applied to its `config:` mapping."""
    doc = yaml.safe_load((STACKS / f"Pulumi.{stack}.yaml").read_text())
    change(doc["config"])
    path = tmp_path / f"Pulumi.{stack}-changed.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return plan_stack(path)


def cluster_block(config: Config, key: str) -> Config:
    block: Config = config["modelplane:clusters"][0][key]
    return block


def assert_clean(plan: dict[str, Any]) -> None:
    assert plan["ok"], (plan["errors"], plan["violations"])


def only_error(plan: dict[str, Any]) -> dict[str, str]:
    assert not plan["ok"]
    [error] = plan["errors"]
    return error


# --------------------------------------------------------------------------------------------
# Regions (clouds/gke/zones.py, clouds/eks/zones.py, clouds/oci/machines.py)


def drop_zones(config: Config) -> None:
    """The first cluster's pools without zones; a capacity block's pool goes, as it lives in its block's zone."""
    cluster = config["modelplane:clusters"][0]
    cluster["nodePools"] = [p for p in cluster["nodePools"] if p.get("capacity", {}).get("type") != "CapacityBlock"]
    for pool in cluster["nodePools"]:
        pool.pop("zones", None)


@pytest.mark.parametrize(
    ("stack", "key", "wrong", "meant"),
    [
        ("gke-prod", "gke", "us-central-1", "us-central1"),
        ("eks-prod", "eks", "us-east1", "us-east-1"),
        ("oci-us-chicago-1", "oci", "us-chicago1", "us-chicago-1"),
    ],
)
def test_a_region_the_cloud_does_not_have_is_refused_with_the_nearest_and_the_nearest_plans_clean(
    tmp_path: Path, stack: str, key: str, wrong: str, meant: str
) -> None:
    def region(value: str) -> Callable[[Config], None]:
        def change(config: Config) -> None:
            drop_zones(config)
            cluster_block(config, key)["region"] = value

        return change

    error = only_error(plan_with(tmp_path, stack, region(wrong)))
    assert error["path"] == f"clusters[0].{key}.region"
    assert f"'{wrong}' is not a " in error["message"]
    assert f"did you mean '{meant}'" in error["message"]
    assert f"set clusters[0].{key}.uncataloguedRegion: true" in error["message"]
    assert_clean(plan_with(tmp_path, stack, region(meant)))


def test_a_region_the_catalog_does_not_list_yet_plans_with_uncatalogued_region(tmp_path: Path) -> None:
    def new_region(config: Config) -> None:
        drop_zones(config)
        cluster_block(config, "eks").update(region="ap-east-2", uncataloguedRegion=True)

    assert_clean(plan_with(tmp_path, "eks-prod", new_region))


def test_the_zone_fix_of_a_region_that_does_not_exist_does_not_say_drop_zones() -> None:
    fix = zone_fix("GKE", "us-central-1", "us-central-1a", "clusters[0].nodePools[0]")
    assert "drop zones" not in fix
    assert "e.g. us-central1: us-central1-a, us-central1-b, us-central1-c, us-central1-f" in fix
    # A real region keeps the old fix.
    assert "drop zones" in zone_fix("GKE", "us-central1", "us-central1-e", "clusters[0].nodePools[0]")


# --------------------------------------------------------------------------------------------
# Names and versions a cloud refuses


def test_a_gcp_project_id_with_capitals_is_refused_and_its_lowercase_plans_clean(tmp_path: Path) -> None:
    def project(value: str) -> Callable[[Config], None]:
        return lambda config: cluster_block(config, "gke").update(project=value)

    error = only_error(plan_with(tmp_path, "gke-prod", project("My-Project")))
    assert error["path"] == "clusters[0].gke.project"
    assert "6-30 lowercase letters, digits and hyphens" in error["message"]
    assert "e.g. 'my-project'" in error["message"]
    assert_clean(plan_with(tmp_path, "gke-prod", project("my-project")))


@pytest.mark.parametrize("bad", ["prj", "1project", "my-project-", "my_project"])
def test_other_project_ids_gcp_refuses_are_refused(tmp_path: Path, bad: str) -> None:
    error = only_error(plan_with(tmp_path, "gke-prod", lambda c: cluster_block(c, "gke").update(project=bad)))
    assert error["path"] == "clusters[0].gke.project"


def test_a_vke_version_not_in_vkes_spelling_is_refused_and_its_example_plans_clean(tmp_path: Path) -> None:
    def version(value: str) -> Callable[[Config], None]:
        return lambda config: cluster_block(config, "vultr").update(kubernetesVersion=value)

    error = only_error(plan_with(tmp_path, "vultr-dev", version("1.36")))
    assert error["path"] == "clusters[0].vultr.kubernetesVersion"
    assert "Vultr takes `v<major>.<minor>.<patch>+<build>`" in error["message"]
    assert 'e.g. "v1.36.2+1"' in error["message"]
    assert_clean(plan_with(tmp_path, "vultr-dev", version("v1.36.2+1")))


# --------------------------------------------------------------------------------------------
# A misspelt machine type


def machine_type(index: int, value: str) -> Callable[[Config], None]:
    return lambda config: config["modelplane:classes"][index]["provisioning"]["gke"].update(machineType=value)


def test_a_misspelt_machine_type_gets_the_nearest_names_and_the_nearest_plans_clean(tmp_path: Path) -> None:
    plan = plan_with(tmp_path, "gke-prod", machine_type(0, "g2-standrad-8"))
    assert not plan["ok"]
    # One per pool of the class (on demand and reserved).
    unknown = [v for v in plan["violations"] if v["policy"] == "unknown-machine-type"]
    assert len(unknown) == 2 and all("did you mean 'g2-standard-8'" in v["message"] for v in unknown)
    assert_clean(plan_with(tmp_path, "gke-prod", machine_type(0, "g2-standard-8")))


def test_a_deployment_on_a_class_left_without_devices_by_a_typo_gets_no_empty_list(tmp_path: Path) -> None:
    def typo_and_deployment(machine: str) -> Callable[[Config], None]:
        def change(config: Config) -> None:
            machine_type(1, machine)(config)
            config["modelplane:deployments"] = [
                {
                    "name": "qwen",
                    "namespace": "ml-team",
                    "cluster": "gke-us-central1",
                    "pool": "cpu",
                    "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
                    "args": ["--model", "Qwen/Qwen2.5-0.5B-Instruct"],
                    "memory": "16Gi",
                    "replicas": 1,
                    "devices": [{"name": "cpu", "count": 1}],
                }
            ]

        return change

    plan = plan_with(tmp_path, "gke-prod", typo_and_deployment("c3-standrad-8"))
    assert not plan["ok"]
    by_path = {e["path"]: e["message"] for e in plan["errors"]}
    assert "did you mean 'c3-standard-8'" in by_path["classes[1].devices"]
    device = by_path["deployments[0].devices[0].name"]
    assert "use one of: " not in device
    assert "give classes[1] its devices first" in device
    assert_clean(plan_with(tmp_path, "gke-prod", typo_and_deployment("c3-standard-8")))
