"""The program's guard: every check that can fail runs before the first registration, with a path."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pulumi
import yaml

from infra.checks.guard import guard, guard_report
from infra.config.issues import ConfigIssue
from infra.config.stackfile import located_checked
from program.main import run
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, GPU_BLOCKS, cpu_class, fleet_of, gke_fleet, gpu_class, run_fleet
from tooling.mockrun import run_under_mocks
from tooling.plan import plan_stack
from tooling.stackconfig import runtime_config


def civo_cluster(name: str = "first") -> dict[str, Any]:
    return {
        "name": name,
        "source": "Civo",
        "civo": CLUSTER_BLOCKS["Civo"],
        "nodePools": [{"name": "cpu", "className": "civo-cpu"}],
    }


def fleet_with(second: dict[str, Any], *classes: dict[str, Any]) -> dict[str, Any]:
    """A valid Civo cluster first (it would register resources), then the cluster under test."""
    return {
        "classes": [cpu_class("civo-cpu", "Civo", CPU_BLOCKS["Civo"]), *classes],
        "clusters": [civo_cluster(), second],
    }


def refused(raw: dict[str, Any], secrets: dict[str, str] | None = None) -> str:
    result = run_fleet(raw, secrets=secrets)
    assert isinstance(result.error, pulumi.RunError), result.error
    assert result.resources == []
    return str(result.error)


def plan_errors(tmp_path: Path, raw: dict[str, Any], extra: dict[str, Any] | None = None) -> list[dict[str, str]]:
    config = {f"modelplane:{k}": v for k, v in raw.items()} | (extra or {})
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    doc = plan_stack(path, display="Pulumi.test.yaml")
    assert doc["ok"] is False and doc["resources"] == []
    return list(doc["errors"])


EKS_SEVEN_ZONES = {
    "name": "eks",
    "source": "EKS",
    "eks": CLUSTER_BLOCKS["EKS"],
    "nodePools": [
        # Names of the region's form (`infra.checks.machines.zone_problem`), seven of them.
        {"name": "a", "className": "eks-cpu", "zones": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]},
        # us-east-1 has six zones (clouds/eks/zones.py): the seventh is taken as not catalogued yet.
        {
            "name": "b",
            "className": "eks-cpu",
            "zones": ["us-east-1d", "us-east-1e", "us-east-1f", "us-east-1g"],
            "uncataloguedZones": True,
        },
    ],
}


def test_eks_pools_naming_seven_zones_register_nothing_and_name_the_pool(tmp_path: Path) -> None:
    raw = fleet_with(EKS_SEVEN_ZONES, cpu_class("eks-cpu", "EKS", CPU_BLOCKS["EKS"]))
    message = refused(raw)
    assert "Pulumi.test.yaml: clusters[1].nodePools[1].zones: the pools of cluster 'eks' name 7 zones" in message
    assert [e["path"] for e in plan_errors(tmp_path, raw)] == ["clusters[1].nodePools[1].zones"]


def test_a_cluster_at_the_zone_limit_passes_and_one_zone_over_it_is_the_issue() -> None:
    at_limit = copy.deepcopy(EKS_SEVEN_ZONES)
    at_limit["nodePools"][1]["zones"] = ["us-east-1d", "us-east-1e", "us-east-1f"]  # six distinct zones
    eks_cpu = cpu_class("eks-cpu", "EKS", CPU_BLOCKS["EKS"])
    assert located_checked(guard(fleet_of(fleet_with(at_limit, eks_cpu))), "Pulumi.test.yaml").issues == []
    assert located_checked(guard(fleet_of(fleet_with(EKS_SEVEN_ZONES, eks_cpu))), "Pulumi.test.yaml").issues == [
        ConfigIssue(
            "clusters[1].nodePools[1].zones",
            "the pools of cluster 'eks' name 7 zones; the EKS network has subnets for at most 6",
            "name at most 6 distinct zones across the cluster's pools",
            file="Pulumi.test.yaml",
        )
    ]


def test_aks_pools_whose_short_names_collide_register_nothing(tmp_path: Path) -> None:
    # `gpu-a` is not an AKS name, so it is shortened to `gpua` plus a digest: `gpua6f44f`.
    aks = {
        "name": "aks",
        "source": "AKS",
        "aks": CLUSTER_BLOCKS["AKS"],
        "nodePools": [{"name": "gpu-a", "className": "aks-gpu"}, {"name": "gpua6f44f", "className": "aks-gpu"}],
    }
    raw = fleet_with(aks, gpu_class("aks-gpu", "AKS", GPU_BLOCKS["AKS"]))
    assert located_checked(guard(fleet_of(raw)), "Pulumi.test.yaml").issues == [
        ConfigIssue(
            "clusters[1].nodePools[1].name",
            "pool 'gpua6f44f' gets the AKS agent pool name 'gpua6f44f', as pool 'gpu-a' does",
            "rename the pool: AKS names are 1-12 lowercase letters and digits, so longer names are shortened",
            file="Pulumi.test.yaml",
        )
    ]
    message = refused(raw)
    assert (
        "clusters[1].nodePools[1].name: pool 'gpua6f44f' gets the AKS agent pool name 'gpua6f44f', as pool 'gpu-a' does"
    ) in message
    assert [e["path"] for e in plan_errors(tmp_path, raw)] == ["clusters[1].nodePools[1].name"]


def test_missing_kubeconfig_secret_registers_nothing() -> None:
    existing = {
        "name": "byo",
        "source": "Existing",
        "existing": {"kubernetesVersion": "1.36", "kubeconfigKey": "byoKubeconfig"},
        "nodePools": [{"name": "cpu", "className": "byo-cpu"}],
    }
    raw = fleet_with(existing, cpu_class("byo-cpu", None))
    message = refused(raw, secrets={})
    assert (
        "Pulumi.test.yaml: clusters[1].existing.kubeconfigKey: no secret config key 'modelplane:byoKubeconfig' "
        "holds the kubeconfig of cluster 'byo'"
    ) in message


def test_every_existing_kubeconfig_is_read_before_anything_registers() -> None:
    existing = {
        "name": "byo",
        "source": "Existing",
        "existing": {"kubernetesVersion": "1.36", "kubeconfigKey": "byoKubeconfig"},
        "nodePools": [{"name": "cpu", "className": "byo-cpu"}],
    }
    raw = fleet_with(existing, cpu_class("byo-cpu", None))
    result = run_fleet(raw, secrets={"byoKubeconfig": "opaque"})
    assert result.error is None, result.error
    assert result.resources


def test_an_empty_fleet_refuses_to_run_and_points_to_destroy(tmp_path: Path) -> None:
    classes = [cpu_class("civo-cpu", "Civo", CPU_BLOCKS["Civo"])]
    for raw in ({"classes": classes}, {"classes": classes, "clusters": []}, {}):
        message = refused(raw)
        # The rule is the parser's (`infra.config.stackfile.parse_fleet`), so the plan and the program share it.
        assert "Pulumi.test.yaml: config.modelplane:clusters: no clusters are declared" in message
        assert "run `pulumi destroy`" in message
    assert [e["path"] for e in plan_errors(tmp_path, {"classes": classes, "clusters": []})] == [
        "config.modelplane:clusters"
    ]


def test_null_clusters_refuse_to_run() -> None:
    config, secret_keys = runtime_config({"clusters": None})
    result = run_under_mocks(run, "test", config, secret_keys)
    assert isinstance(result.error, pulumi.RunError) and result.resources == []
    assert "no clusters are declared" in str(result.error)


def test_a_fleet_key_stored_as_a_secret_is_refused_without_echoing_it() -> None:
    decrypted = "not-json-but-a-password-hunter2"
    config, _ = runtime_config({}, plain={"modelplane:clusters": decrypted})
    result = run_under_mocks(run, "test", config, ["modelplane:clusters"])
    assert isinstance(result.error, pulumi.RunError) and result.resources == []
    assert decrypted not in str(result.error)
    assert "config.modelplane:clusters: 'modelplane:clusters' is a secret but holds fleet config" in str(result.error)


def test_device_rule_violations_name_the_file_and_the_pool_path() -> None:
    vultr = {
        "name": "v",
        "source": "Vultr",
        "vultr": CLUSTER_BLOCKS["Vultr"],
        "nodePools": [{"name": "amd", "className": "amd"}],
    }
    amd = gpu_class("amd", "Vultr", copy.deepcopy(GPU_BLOCKS["Vultr"]), driver="gpu.amd.com")
    amd["provisioning"]["vultr"]["accelerator"]["type"] = "amd-mi325x"
    message = refused(fleet_with(vultr, amd))
    assert "[unsupported-devices] Pulumi.test.yaml: cluster 'v', pool 'amd', class 'amd'" in message
    assert "(at clusters[1].nodePools[0] (class classes[1]))" in message


def test_a_huge_or_deep_json_value_from_the_cli_is_an_error_not_a_traceback() -> None:
    for text in ("[" + "1" * 4301 + "]", "[" * 100_000 + "]" * 100_000):
        result = run_under_mocks(run, "test", {"modelplane:clusters": text}, [])
        assert isinstance(result.error, pulumi.RunError) and result.resources == []
        assert "Pulumi.test.yaml: " in str(result.error) and len(str(result.error)) < 1000


def test_a_misspelt_modelplane_key_stops_the_program_as_it_stops_the_plan() -> None:
    raw = fleet_with(civo_cluster("second"))
    config, secret_keys = runtime_config(raw, plain={"modelplane:protcet": "true"})
    result = run_under_mocks(run, "test", config, secret_keys)
    assert isinstance(result.error, pulumi.RunError) and result.resources == []
    assert (
        "Pulumi.test.yaml: config.modelplane:protcet: unknown config key 'modelplane:protcet'. "
        "Fix: did you mean 'modelplane:protect'? Remove or rename it"
    ) in str(result.error)


def test_a_kubeconfig_stored_as_plain_text_stops_the_program() -> None:
    existing = {
        "name": "byo",
        "source": "Existing",
        "existing": {"kubernetesVersion": "1.36"},
        "nodePools": [{"name": "cpu", "className": "byo-cpu"}],
    }
    raw = fleet_with(existing, cpu_class("byo-cpu", None))
    config, _ = runtime_config(raw, plain={"modelplane:kubeconfig": "apiVersion: v1"})
    result = run_under_mocks(run, "test", config, [])
    assert isinstance(result.error, pulumi.RunError) and result.resources == []
    assert "config.modelplane:kubeconfig: the kubeconfig key 'kubeconfig' holds a plain value" in str(result.error)


def test_a_device_rule_and_a_schedulability_issue_are_reported_in_one_run() -> None:
    # Independent checks report together: the program's stop names both at once.
    raw = gke_fleet()
    raw["classes"][0]["provisioning"]["gke"]["accelerator"] = {"type": "amd-mi300x", "count": 1}
    raw["deployments"] = [
        {
            "name": "qwen",
            "cluster": raw["clusters"][0]["name"],
            "pool": "cpu",
            "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
            "devices": [{"name": "cpu"}],
            "memory": "64Gi",  # more than a c3-standard-8 node (32 GB) can give
        }
    ]
    error = str(run_fleet(raw).error)
    assert "[accelerator-driver-mismatch]" in error
    assert "deployments[0].memory" in error
    checked = located_checked(guard(fleet_of(raw)), "Pulumi.test.yaml")
    violations, [issue] = checked.stopping_violations, checked.issues
    # The AMD type is wrong twice over: for the class's NVIDIA driver and for the g2 machine.
    assert [v.policy for v in violations] == ["accelerator-driver-mismatch", "accelerator-type-unknown"]
    assert issue.path == "deployments[0].memory"
    assert guard_report(checked) == (
        "2 device rule violation(s); nothing was created, changed or deleted:\n"
        + "".join(f"  [{v.policy}] {v.message}\n" for v in violations)
        + "invalid stack config; nothing was created, changed or deleted:\n"
        f"{issue}"
    )
    assert guard_report(checked) in error


def gke_pool_zones(zones: list[str], **pool: Any) -> dict[str, Any]:
    return {
        "name": "gke",
        "source": "GKE",
        "gke": CLUSTER_BLOCKS["GKE"],
        "nodePools": [{"name": "cpu", "className": "gke-cpu", "zones": zones, **pool}],
    }


def test_a_zone_letter_the_region_does_not_have_is_refused_at_its_path_with_the_regions_zones(tmp_path: Path) -> None:
    gke_cpu = cpu_class("gke-cpu", "GKE", CPU_BLOCKS["GKE"])
    assert CLUSTER_BLOCKS["GKE"]["region"] == "us-central1"
    raw = fleet_with(gke_pool_zones(["us-central1-a", "us-central1-e"]), gke_cpu)
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}), encoding="utf-8")
    doc = plan_stack(path, display="Pulumi.test.yaml")
    assert doc["ok"] is False and doc["resources"] == []
    assert doc["violations"] == [
        {
            "policy": "zone-outside-region",
            "enforcement": "mandatory",
            "message": "Pulumi.test.yaml: cluster 'gke', pool 'cpu', class 'gke-cpu': zone 'us-central1-e' is not a "
            "zone of us-central1 in the zone catalog (at clusters[name=gke].nodePools[name=cpu].zones[1]). Fix: list "
            "only zones of us-central1 (us-central1-a, us-central1-b, us-central1-c, us-central1-f) in the pool's "
            "zones, or drop zones to let the cloud choose; if the zone exists and the catalog does not list it yet, "
            "set clusters[name=gke].nodePools[name=cpu].uncataloguedZones: true",
            "resource": "gke/cpu",
        }
    ]
    # Both ways the fix names hold: the region's listed zones, or the pool saying its zones are not
    # catalogued yet.
    listed = fleet_with(gke_pool_zones(["us-central1-a", "us-central1-f"]), gke_cpu)
    taken = fleet_with(gke_pool_zones(["us-central1-a", "us-central1-e"], uncataloguedZones=True), gke_cpu)
    for fixed in (listed, taken):
        path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in fixed.items()}}), encoding="utf-8")
        doc = plan_stack(path, display="Pulumi.test.yaml")
        assert (doc["ok"], doc["errors"]) == (True, [])
        assert [v for v in doc["violations"] if v["policy"] == "zone-outside-region"] == []


def test_an_existing_class_accelerator_type_outside_the_vocabulary_is_refused_with_the_closest_name(
    tmp_path: Path,
) -> None:
    stack = yaml.safe_load((Path(__file__).parents[1] / "stacks" / "Pulumi.byo-amd.yaml").read_text(encoding="utf-8"))
    classes = stack["config"]["modelplane:classes"]
    assert classes[0]["name"] == "mi325x-byo"
    path = tmp_path / "Pulumi.byo-amd.yaml"

    def plan_with(accelerator: dict[str, Any], **flags: Any) -> dict[str, Any]:
        changed = copy.deepcopy(stack)
        changed["config"]["modelplane:classes"][0].update(accelerator=accelerator, **flags)
        path.write_text(yaml.safe_dump(changed), encoding="utf-8")
        return plan_stack(path, display="Pulumi.byo-amd.yaml")

    doc = plan_with({"type": "amd-mi325", "count": 1})
    assert doc["ok"] is False and doc["resources"] == []
    [v] = [v for v in doc["violations"] if v["policy"] == "accelerator-type-unknown"]
    assert v["enforcement"] == "mandatory"
    assert "accelerator type 'amd-mi325' is not in the accelerator vocabulary" in v["message"]
    assert "(at classes[name=mi325x-byo].accelerator.type)" in v["message"]
    assert "did you mean 'amd-mi325x'" in v["message"]
    assert "uncataloguedAccelerator: true" in v["message"]
    # Both ways the fix names hold: the vocabulary's name, or the class taking its type as written.
    for fixed, flags in (
        ({"type": "amd-mi325x", "count": 1}, {}),
        ({"type": "amd-mi325", "count": 1}, {"uncataloguedAccelerator": True}),
    ):
        doc = plan_with(fixed, **flags)
        assert (doc["ok"], doc["errors"]) == (True, [])
        assert [v for v in doc["violations"] if v["policy"] == "accelerator-type-unknown"] == []
