"""The `modelplane` command as a user runs it: a subprocess, its exit codes and its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}


def modelplane(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tooling.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


def stderr_lines(out: subprocess.CompletedProcess[str]) -> list[str]:
    return out.stderr.splitlines()


def check_shape(doc: dict[str, Any]) -> None:
    """The SPEC 9 document, key by key and type by type."""
    assert set(doc) >= {"stack", "ok", "errors", "violations", "clusters", "deployments", "resources"}
    assert isinstance(doc["stack"], str) and isinstance(doc["ok"], bool)
    for e in doc["errors"]:
        assert set(e) == {"path", "message"} and all(isinstance(v, str) for v in e.values())
    for v in doc["violations"]:
        assert set(v) == {"policy", "enforcement", "message", "resource"}
        assert v["enforcement"] in ("mandatory", "advisory")
    for c in doc["clusters"]:
        assert set(c) >= {"name", "source", "draDrivers", "supportedDrivers", "pools", "releases", "schedulablePools"}
        assert c["draDrivers"] == sorted(c["draDrivers"]) and c["supportedDrivers"] == sorted(c["supportedDrivers"])
        for p in c["pools"]:
            assert set(p) == {
                "name",
                "className",
                "role",
                "labels",
                "taints",
                "accelerator",
                "nodeCount",
                "minNodeCount",
                "maxNodeCount",
                "scaleFromZero",
                "createdNodes",
                "nodes",
                "machineType",
                "zones",
                "derived",
                "capacity",
                "priceBasis",
                "reclaimRisk",
                "capacityTaints",
            }
            assert isinstance(p["capacity"]["type"], str)
            assert p["priceBasis"] is None or isinstance(p["priceBasis"], str)
            assert p["reclaimRisk"] is None or isinstance(p["reclaimRisk"], str)
            assert p["machineType"] is None or isinstance(p["machineType"], str)
            # Taints the pool's nodes carry for how they are bought (a spot pool's), which the program tolerates.
            for t in p["capacityTaints"]:
                assert set(t) == {"key", "value", "effect"} and t["effect"] in EFFECTS
            assert all(isinstance(z, str) for z in p["zones"])
            assert p["role"] in ("GPU", "CPU", "System")
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in p["labels"].items())
            for t in p["taints"]:
                assert set(t) == {"key", "value", "effect"} and t["effect"] in EFFECTS
            assert p["accelerator"] is None or (
                set(p["accelerator"]) == {"type", "count"} and isinstance(p["accelerator"]["count"], int)
            )
            assert isinstance(p["nodeCount"], int)
            # GPU pools of a provisioned cloud say whether its autoscaler brings them back from zero.
            assert p["scaleFromZero"] is None or (p["role"] == "GPU" and isinstance(p["scaleFromZero"], bool))
            # One count: what the cloud creates, and the most the pool can have.
            assert 0 <= p["createdNodes"] <= p["nodes"]
        for r in c["releases"]:
            assert set(r) >= {"name", "chart", "repo", "version", "namespace", "draDrivers", "dependsOn", "values"}
            assert r["name"] == f"mp-{r['chart']}" and isinstance(r["values"], dict)
    for r in doc["resources"]:
        assert set(r) == {"type", "name", "parent", "urn", "protect", "inputs"} and isinstance(r["inputs"], dict)
        assert r["urn"].startswith(f"urn:pulumi:{doc['stack']}::modelplane::") and r["urn"].endswith(f"::{r['name']}")
        assert r["parent"] is None or isinstance(r["parent"], str)


def test_plan_json_of_existing_stack_matches_the_contract() -> None:
    out = modelplane("plan", "--stack", "byo-amd", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    check_shape(doc)
    assert doc["ok"] is True and doc["stack"] == "byo-amd"
    [cluster] = doc["clusters"]
    assert cluster["draDrivers"] == ["dra.cpu", "gpu.amd.com", "gpu.nvidia.com"]
    assert "mp-gpu-operator-charts" in {r["name"] for r in cluster["releases"]}
    assert any(r["type"] == "kubernetes:helm.sh/v3:Release" for r in doc["resources"])


def test_plan_all_wraps_every_stack() -> None:
    out = modelplane("plan", "--all", "--json")
    doc = json.loads(out.stdout)
    names = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    assert sorted(s["stack"] for s in doc["stacks"]) == names
    for s in doc["stacks"]:
        check_shape(s)
    # The fleet-wide total at the nodes each cloud creates, x 730 h a month:
    # aks-prod: NC24ads_A100_v4 3.673 + D8s_v5 0.384 + system D4s_v5 0.192 (Free tier) = 4.249 /h, 3101.77;
    # eks-prod: fee 0.10 + g6.xlarge 0.8048 + p5.48xlarge 55.04 + 2 x m7i.2xlarge 0.4032
    #   + system m6i.xlarge 0.192 = 56.9432 /h, 41568.54;
    # gke-prod: fee 0.10 + 1 per zone x 2 zones x g2-standard-8 0.85362 (nodeCount 1 starts one node
    #   in each zone) + 2 per zone x 3 zones x c3-standard-8 0.40322 + system 1 per zone x 3 zones
    #   x e2-standard-4 0.13402 = 4.62862 /h, 3378.89; vultr-dev: vc2-8c-32gb 160 + vc2-6c-16gb 80
    #   a month = 240.00; nebius-prod: gpu-h100-sxm/8gpu-128vcpu-1600gb 23.60 + cpu-d3/8vcpu-32gb
    #   0.1984 + system cpu-d3/4vcpu-16gb 0.0992 = 23.8976 /h, 17445.25; digitalocean-atl1:
    #   gpu-mi300x1-192gb 1.99 + c-8 0.25 + system s-4vcpu-8gb 0.07143 = 2.31143 /h, 1687.34;
    # eks-671b: fee 0.10 + 2 x p5.48xlarge 55.04 + system m6i.xlarge 0.192 = 110.372 /h, 80571.56,
    #   + its shared cache on EFS, 800 GiB x 0.30 = 240.00 a month: 80811.56;
    # nebius-671b: 2 x gpu-h100-sxm/8gpu-128vcpu-1600gb 23.60 + system cpu-d3/4vcpu-16gb 0.0992
    #   = 47.2992 /h, 34528.42; oci-us-chicago-1: fee 0.10 + BM.GPU.MI300X.8 48 + VM.Standard.E5.Flex
    #   4 OCPUs 32 GB 0.184 + system 2 OCPUs 16 GB 0.092 = 48.376 /h, 35314.48.
    # Those stacks' spot pools at the spot price read, and their reserved and block pools at the
    # owner's `capacity.hourlyPrice`, x 730: aks-prod + Standard_NC24ads_A100_v4 spot 0.444433 =
    # 324.44, + 3.67 (its reserved pool) = 2679.10; eks-prod + m7i.2xlarge spot 0.1819 + 2 x 31.46 (block) = 46064.39; gke-prod + 3 zones
    # x c3-standard-8 spot 0.06302 + 0.60 (reserved) = 576.01; nebius-prod + 1.25 (spot) + 2.00
    # (reserved) = 2372.50; oci-us-chicago-1 + 40 (reserved) = 29200.00, its VM.Standard.E5.Flex
    # spot pool unpriced (no spot price read).
    # Civo sizes, the Vultr L40S plan and the Civo, Vultr, Nebius and DigitalOcean fees have no
    # price: incomplete.
    assert (doc["cost"]["monthly"], doc["cost"]["complete"]) == (299292.69, False)


def test_malformed_stack_exits_1_with_paths_and_no_traceback(tmp_path: Path) -> None:
    bad = {
        "config": {
            "modelplane:classes": [
                {"name": "c", "devices": [{"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu"}]}
            ],
            "modelplane:clusters": [
                {
                    "name": "byo",
                    "source": "Existing",
                    "existing": {"kubernetesVersion": "1.36"},
                    "nodePools": [{"name": "p", "className": "nope"}],
                }
            ],
            "modelplane:kubeconfig": {"secure": "x"},
        }
    }
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump(bad), encoding="utf-8")
    out = modelplane("plan", "--stack-file", str(path), "--json")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr + out.stdout
    doc = json.loads(out.stdout)
    check_shape(doc)
    assert doc["ok"] is False
    assert doc["errors"][0]["path"] == "clusters[0].nodePools[0].className"
    assert "Pulumi.bad.yaml" in doc["errors"][0]["message"]
    # stderr carries the same verdicts, one line each, for a log that shows no stdout.
    assert stderr_lines(out) == [f"{path}: {e['path']}: error: {e['message']}" for e in doc["errors"]]
    human = modelplane("plan", "--stack-file", str(path))
    assert human.returncode == 1 and "clusters[0].nodePools[0].className" in human.stderr
    assert "clusters[0].nodePools[0].className" not in human.stdout
    assert "Traceback" not in human.stderr + human.stdout


def test_rule_violation_exits_1_and_names_the_policy(tmp_path: Path) -> None:
    bad = {
        "config": {
            "modelplane:classes": [
                {
                    "name": "amd",
                    "devices": [{"name": "g", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com"}],
                    "provisioning": {
                        "provider": "Vultr",
                        "vultr": {"plan": "x", "accelerator": {"type": "amd-mi300x", "count": 1}},
                    },
                }
            ],
            "modelplane:clusters": [
                {
                    "name": "v",
                    "source": "Vultr",
                    "vultr": {"region": "ewr", "kubernetesVersion": "v1.36.2+1"},
                    "nodePools": [{"name": "p", "className": "amd"}],
                }
            ],
        }
    }
    path = tmp_path / "Pulumi.amd-on-vultr.yaml"
    path.write_text(yaml.safe_dump(bad), encoding="utf-8")
    out = modelplane("plan", "--stack-file", str(path), "--json")
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    # Plan `x` is not in the machine catalog: a second rejection beside the first, in one run.
    assert [(v["policy"], v["enforcement"]) for v in doc["violations"]] == [
        ("unsupported-devices", "mandatory"),
        ("unknown-machine-type", "mandatory"),
    ]
    message = doc["violations"][0]["message"]
    assert "Pulumi.amd-on-vultr.yaml: cluster 'v', pool 'p', class 'amd'" in message
    assert "(at clusters[0].nodePools[0] (class classes[0]))" in message
    assert doc["resources"] == []  # stopped before registering anything
    assert doc["errors"] == []
    assert stderr_lines(out) == [
        f"{path}: {v['resource']}: {v['policy']} (mandatory): {v['message']}" for v in doc["violations"]
    ]


def test_bad_usage_exits_2() -> None:
    assert modelplane("plan").returncode == 2
    assert modelplane("plan", "--stack", "a", "--all").returncode == 2
    out = modelplane("plan", "--stack", "no-such-stack")
    assert out.returncode == 2 and "known stacks" in out.stderr


def test_out_writes_one_values_file_per_release(tmp_path: Path) -> None:
    out = modelplane("plan", "--stack", "byo-amd", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    files = sorted(p.name for p in (tmp_path / "byo-amd" / "byo-lab").iterdir())
    assert "mp-gpu-operator-charts.yaml" in files
    amd = yaml.safe_load((tmp_path / "byo-amd" / "byo-lab" / "mp-gpu-operator-charts.yaml").read_text())
    assert amd["kmm"]["enabled"] is False


def test_catalog_prints_the_matrix_and_drivers() -> None:
    out = modelplane("catalog")
    assert out.returncode == 0
    assert "| Existing | dra.cpu, gpu.amd.com, gpu.nvidia.com |" in out.stdout
    assert "| EKS | dra.cpu, dra.net, gpu.nvidia.com |" in out.stdout


def test_recipe_plans_show_deployments_and_placement() -> None:
    out = modelplane("plan", "--stack", "recipe-qwen-cpu-civo", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    [dep] = doc["deployments"]
    assert (dep["cluster"], dep["pool"], dep["poolRole"]) == ("civo-cpu", "cpu", "CPU")
    assert dep["claims"][0]["exactly"]["capacity"]["requests"]["dra.cpu/cpu"] == "6"
    assert dep["resources"]["requests"]["cpu"] == dep["resources"]["limits"]["cpu"] == "6"
    assert dep["nodeSelector"] == {"modelplane.ai/pool": "cpu"}
    [audit] = doc["placement"]
    assert audit["ok"] is True
    assert {d["name"]: d["pools"] for d in audit["deployments"]} == {"qwen": ["cpu"]}


def test_version_prints_the_package_version() -> None:
    out = modelplane("--version")
    assert out.returncode == 0 and out.stdout.startswith("modelplane ")


def test_help_lists_user_commands_only_and_maintainer_commands_still_run(tmp_path: Path) -> None:
    out = modelplane("--help")
    assert "plan" in out.stdout and "schema" in out.stdout
    assert "golden" not in out.stdout and "docs" not in out.stdout
    assert modelplane("docs", "--help").returncode == 0
    assert modelplane("golden", "--help").returncode == 0


def test_catalog_json_lists_components_and_drivers_per_cloud() -> None:
    out = modelplane("catalog", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["clouds"]["EKS"]["supportedDrivers"] == ["dra.cpu", "dra.net", "gpu.nvidia.com"]
    amd = {c["release"]: c for c in doc["clouds"]["Existing"]["components"]}["mp-gpu-operator-charts"]
    assert (amd["version"], amd["namespace"], amd["draDrivers"]) == ("v1.5.1", "kube-amd-gpu", ["gpu.amd.com"])


def test_schema_command_prints_the_committed_schema() -> None:
    out = modelplane("schema")
    assert out.returncode == 0
    assert json.loads(out.stdout) == json.loads((ROOT / "docs" / "stack.schema.json").read_text(encoding="utf-8"))


def test_human_plan_prints_lists_as_lists_and_shows_machines_zones_and_versions() -> None:
    out = modelplane("plan", "--stack", "gke-prod")
    assert out.returncode == 0, out.stderr
    assert "['" not in out.stdout
    assert "draDrivers: dra.cpu, gpu.nvidia.com" in out.stdout
    assert "region us-central1, kubernetesVersion 1.36" in out.stdout
    assert "on g2-standard-8" in out.stdout and "zones: us-central1-a, us-central1-b" in out.stdout


def test_silent_cases_are_errors_naming_what_is_missing(tmp_path: Path) -> None:
    cases = {
        "empty": ("", "line 1, column 1", "the stack file is empty"),
        "noconfig": ("encryptionsalt: v1:abc\n", "config", "no 'config:' section"),
        "nofleet": ("config:\n  gcp:project: p\n", "config", "has no modelplane: keys"),
    }
    for name, (text, where, problem) in cases.items():
        path = tmp_path / f"Pulumi.{name}.yaml"
        path.write_text(text, encoding="utf-8")
        out = modelplane("plan", "--stack-file", str(path), "--json")
        assert out.returncode == 1, (name, out.stderr)
        [error] = json.loads(out.stdout)["errors"]
        assert error["path"] == where and problem in error["message"], error
        assert stderr_lines(out) == [f"{path}: {where}: error: {error['message']}"]
        assert "modelplane:clusters" in error["message"] and f"Pulumi.{name}.yaml" in error["message"]


def over_budget_stack(tmp_path: Path) -> Path:
    """gke-prod with a budget far below its cost."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.gke-prod.yaml").read_text())
    doc["config"]["modelplane:budget"] = {"monthlyUsd": 10}
    path = tmp_path / "Pulumi.gke-prod.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_pack_config_makes_the_budget_mandatory_as_the_cli_would(tmp_path: Path) -> None:
    stack = over_budget_stack(tmp_path)
    advisory = modelplane("plan", "--stack-file", str(stack), "--json")
    assert advisory.returncode == 0
    assert [v["enforcement"] for v in json.loads(advisory.stdout)["violations"]] == ["advisory"]

    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"cost-over-budget": "mandatory"}))
    mandatory = modelplane("plan", "--stack-file", str(stack), "--json", "--policy-pack-config", str(config))
    assert mandatory.returncode == 1
    doc = json.loads(mandatory.stdout)
    assert [(v["policy"], v["enforcement"]) for v in doc["violations"]] == [("cost-over-budget", "mandatory")]
    assert doc["ok"] is False
    [line] = stderr_lines(mandatory)
    assert line.startswith(f"{stack}: ") and ": cost-over-budget (mandatory): " in line
    assert doc["violations"][0]["message"] in line


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ('{"cost-over-budgt": "mandatory"}', "policy pack config names unknown policies: cost-over-budgt (known: "),
        ('{"cost-over-budget": "blocking"}', "unknown enforcement level 'blocking' (use one of advisory, mandatory"),
        ('["cost-over-budget"]', "the pack config is not a JSON object"),
        ("{", "cannot read the pack config"),
    ],
)
def test_a_bad_pack_config_is_refused_with_what_is_wrong(tmp_path: Path, config: str, said: str) -> None:
    path = tmp_path / "policy-config.json"
    path.write_text(config)
    out = modelplane("plan", "--stack", "civo-dev", "--policy-pack-config", str(path))
    assert out.returncode == 2
    assert said in out.stderr
    assert "Traceback" not in out.stderr
