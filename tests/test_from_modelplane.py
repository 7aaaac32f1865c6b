"""`modelplane from-modelplane`: modelplane XRs in, a stack file of ours out, planned as `modelplane plan` plans it.

The fixtures (tests/fixtures/modelplane/) are our own files in the shape modelplane's published docs
and examples write (modelplaneai/modelplane `docs/manifests/` at v0.3.1). The plan-clean cases cover
the fixtures served from one cluster; `fleet/` (a service over two clusters and an external
endpoint) is asserted as text, the shape fleet services take.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling.from_modelplane import ConvertError, Options, convert, read_files, stack_text
from tooling.plan import plan_stack

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "modelplane"
OPTIONS = Options(
    cluster_values={"gke.project": "my-project", "nebius.projectId": "project-e00example", "nebius.region": "eu-north1"}
)


def fixture_files(name: str) -> list[Path]:
    return sorted((FIXTURES / name).glob("*.yaml"))


def converted(name: str, options: Options = OPTIONS) -> tuple[str, dict[str, Any]]:
    conv = convert(read_files(fixture_files(name)), options)
    text = stack_text(conv, [p.name for p in fixture_files(name)])
    return text, yaml.safe_load(text)["config"]


def notes(text: str, kind: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(f"# {kind}: ")]


@pytest.mark.parametrize("name", ["gke-l4", "aks-cache", "byo-multinode", "nebius-cache"])
def test_converted_fixture_plans_clean(name: str, tmp_path: Path) -> None:
    text, _ = converted(name)
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(text, encoding="utf-8")
    doc = plan_stack(path, display=path.name)
    assert doc["errors"] == []
    assert [v for v in doc["violations"] if v["enforcement"] == "mandatory"] == []
    assert doc["ok"] is True
    assert doc["deployments"], "the converted stack plans its deployments"


def test_gke_fixture_maps_class_cluster_deployment_and_service() -> None:
    _, config = converted("gke-l4")
    [cls] = config["modelplane:classes"]
    assert cls["provisioning"] == {
        "provider": "GKE",
        "gke": {"machineType": "g2-standard-8", "diskSizeGb": 150, "accelerator": {"type": "nvidia-l4", "count": 1}},
    }
    [cluster] = config["modelplane:clusters"]
    # modelplane's XRD default for GKE (1.35) is written out; the project comes from the option.
    assert cluster["gke"] == {"project": "my-project", "region": "us-central1", "kubernetesVersion": "1.35"}
    assert cluster["taints"] == [{"key": "example.com/team", "value": "ml", "effect": "NoSchedule"}]
    assert cluster["nodePools"] == [
        {"name": "l4", "className": "gke-l4", "nodeCount": 1, "minNodeCount": 0, "maxNodeCount": 3,
         "zones": ["us-central1-a", "us-central1-c"]}
    ]  # fmt: skip
    [dep] = config["modelplane:deployments"]
    assert (dep["name"], dep["namespace"], dep["cluster"], dep["pool"]) == ("qwen3-8b", "ml-team", "gke-central", "l4")
    assert dep["devices"] == [{"name": "gpu", "count": 1}]
    assert dep["env"] == {"VLLM_LOGGING_LEVEL": "INFO"}
    assert config["modelplane:services"] == [{"name": "qwen3-8b", "deployment": "qwen3-8b"}]


def test_every_unmapped_field_gets_its_line() -> None:
    text, _ = converted("gke-l4")
    unmapped = {line.split(": ")[2] for line in notes(text, "not mapped")}
    assert unmapped == {
        "spec.cluster.gke.credentials",
        "spec.template.metadata",
        "spec.template.spec.tolerations",
        "spec.template.spec.engines[0].name",
        "spec.template.spec.engines[0].members[0].template.spec.imagePullSecrets",
        "spec.template.spec.engines[0].members[0].template.spec.containers[0].env[1].valueFrom",
    }
    [secret] = [line for line in notes(text, "not mapped") if "valueFrom" in line]
    assert "pulumi config set --secret --path" in secret


def test_model_cache_becomes_a_shared_cache_and_the_model_its_repository() -> None:
    text, config = converted("aks-cache")
    deps = {d["name"]: d for d in config["modelplane:deployments"]}
    stable = deps["qwen-72b"]
    assert stable["args"][:4] == ["--model", "Qwen/Qwen2.5-72B-Instruct-AWQ", "--revision", "main"]
    assert stable["cache"] == {"volume": "Shared", "size": "150Gi"}
    assert stable["replicas"] == 2  # both replicas on the one cluster that has the pool
    # `--port` becomes the deployment's port: ours passes it to the engine itself.
    assert deps["qwen-72b-next"]["port"] == 8080 and not any("--port" in a for a in deps["qwen-72b-next"]["args"])
    # The split's weights: 90 and 10 over one endpoint each, in lowest terms.
    [svc] = config["modelplane:services"]
    assert svc == {
        "name": "qwen-72b",
        "backends": [{"deployment": "qwen-72b", "weight": 9}, {"deployment": "qwen-72b-next", "weight": 1}],
    }
    assert any("spec.huggingFace.authSecret" in line for line in notes(text, "not mapped"))


def test_multinode_engine_becomes_a_group_reading_the_cache() -> None:
    text, config = converted("byo-multinode")
    [dep] = config["modelplane:deployments"]
    assert dep["nodes"] == 2
    assert dep["devices"] == [{"name": "gpu", "count": 8}]
    # Ours adds the group flags to each pod; modelplane's, with its own variables, are left out.
    assert not any(
        a.startswith(("--nnodes", "--node-rank", "--master-addr", "--headless", "--port")) for a in dep["args"]
    )
    assert dep["args"][:2] == ["--model", "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8"]
    assert dep["cache"] == {"volume": "Shared", "size": "600Gi", "storageClassName": "nfs-rwx"}
    assert config["modelplane:clusters"][0]["existing"] == {"kubeconfigKey": "kubeconfig"}
    assert any("modelplane:kubeconfig" in line for line in notes(text, "fill in"))
    assert any("spec.cluster.existing.identitySecretRef" in line for line in notes(text, "not mapped"))


def test_cache_where_ours_has_no_shared_storage_is_kept_on_each_node() -> None:
    text, config = converted("nebius-cache")
    [cluster] = config["modelplane:clusters"]
    assert cluster["nebius"] == {"projectId": "project-e00example", "region": "eu-north1", "kubernetesVersion": "1.34"}
    [dep] = config["modelplane:deployments"]
    # `vllm serve /mnt/models` as the command: the model is the cache's repository, as args.
    assert dep["args"][:2] == ["--model", "mistralai/Mistral-Small-3.2-24B-Instruct-2506"]
    assert dep["cache"] == {"volume": "NodeLocal"}
    assert any("no ReadWriteMany storage on Nebius" in line for line in notes(text, "chosen"))
    assert not any("spec.cluster.nebius:" in line for line in notes(text, "not mapped"))


def test_keep_paths_routes_services_at_modelplanes_path() -> None:
    _, config = converted("gke-l4", Options(cluster_values=OPTIONS.cluster_values, keep_paths=True))
    assert config["modelplane:services"][0]["path"] == "/ml-team/qwen3-8b"


def test_fleet_service_spreads_replicas_and_writes_cluster_and_external_backends() -> None:
    # Asserted as text: the fleet-service shape (`services[].cluster`, backends naming a cluster or
    # an external endpoint), not planned here.
    text, config = converted("fleet")
    deps = sorted((d["cluster"], d["replicas"]) for d in config["modelplane:deployments"])
    assert deps == [("eks-l4-single", 1), ("gke-l4-single", 1)]  # modelplane spreads replicas: one a cluster
    assert (
        "  modelplane:services:\n"
        "  - name: llama\n"
        "    cluster: eks-l4-single\n"
        "    backends:\n"
        "    - deployment: llama-3-1-8b\n"
        "      cluster: gke-l4-single\n"
        "      weight: 9\n"
        "    - deployment: llama-3-1-8b\n"
        "      cluster: eks-l4-single\n"
        "      weight: 9\n"
        "    - external:\n"
        "        url: https://api.together.xyz\n"
        "      weight: 2\n"
    ) in text
    assert any("external.apiKey" in line for line in notes(text, "fill in"))


def test_gke_cluster_without_project_is_left_for_the_user_and_refused_by_the_plan(tmp_path: Path) -> None:
    text, config = converted("gke-l4", Options())
    assert config["modelplane:clusters"][0]["gke"]["project"] == "FILL-IN"
    assert any("--gke-project" in line for line in notes(text, "fill in"))
    path = tmp_path / "Pulumi.unfilled.yaml"
    path.write_text(text, encoding="utf-8")
    doc = plan_stack(path, display=path.name)
    assert not doc["ok"] and any(e["path"].endswith("gke.project") for e in doc["errors"])


def test_kind_not_of_modelplane_is_refused_naming_the_file() -> None:
    bad = FIXTURES / "bad" / "not-modelplane.yaml"
    with pytest.raises(ConvertError) as err:
        read_files([bad])
    [problem] = err.value.problems
    assert problem.startswith(f"{bad}: document 1: apiVersion/kind apps/v1/Deployment is not a modelplane kind")


def test_missing_required_field_is_refused_with_its_path() -> None:
    bad = FIXTURES / "bad" / "missing-image.yaml"
    with pytest.raises(ConvertError) as err:
        read_files([bad])
    [problem] = err.value.problems
    assert problem.startswith(
        f"{bad}: ModelDeployment qwen: spec.template.spec.engines[0].members[0].template.spec.containers[0].image is missing"
    )
    assert "Fix: set " in problem


@pytest.mark.parametrize(
    "cel",
    [
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("70Gi")) >= 0',
        'device.driver == "gpu.amd.com" && device.capacity["gpu.amd.com"].memory.compareTo(quantity("20Gi")) >= 0',
    ],
)
def test_deployment_no_pool_can_hold_is_refused(cel: str) -> None:
    xrs = read_files(fixture_files("gke-l4"))
    dep = next(x for x in xrs if x.kind == "ModelDeployment")
    dep.doc["spec"]["template"]["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"][0]["selectors"] = [
        {"cel": cel}
    ]
    with pytest.raises(ConvertError) as err:
        convert(xrs, OPTIONS)
    assert "no InferenceCluster among the files has a pool whose class offers gpu x1" in err.value.problems[0]


def test_replicas_fill_the_pools_nodes_and_the_rest_is_noted() -> None:
    # The GKE pool has at most 3 nodes and each replica takes one: a fourth finds none free.
    xrs = read_files(fixture_files("gke-l4"))
    next(x for x in xrs if x.kind == "ModelDeployment").doc["spec"]["replicas"] = 4
    conv = convert(xrs, OPTIONS)
    assert [d["replicas"] for d in conv.deployments] == [4]
    [over] = [
        n for n in conv.notes if n.kind == "chosen" and n.path == "spec.replicas" and "no pool with free nodes" in n.why
    ]
    assert over.why.startswith("1 replica(s)")


def test_cluster_source_we_do_not_have_is_refused_with_its_path() -> None:
    xrs = read_files(fixture_files("gke-l4"))
    cluster = next(x for x in xrs if x.kind == "InferenceCluster")
    cluster.doc["spec"]["cluster"] = {"source": "VultrBaremetal", "vultrBaremetal": {"region": "ord"}}
    with pytest.raises(ConvertError) as err:
        convert(xrs, OPTIONS)
    assert (
        "InferenceCluster gke-central: spec.cluster.source: VultrBaremetal is not a cluster source of ours"
        in (err.value.problems[0])
    )


def test_cluster_whose_taint_the_deployment_does_not_tolerate_takes_no_replica() -> None:
    xrs = read_files(fixture_files("gke-l4"))
    dep = next(x for x in xrs if x.kind == "ModelDeployment")
    dep.doc["spec"]["template"]["spec"]["tolerations"] = [{"key": "example.com/other", "operator": "Exists"}]
    with pytest.raises(ConvertError) as err:
        convert(xrs, OPTIONS)
    assert "no taint its tolerations do not match" in err.value.problems[0]


def test_command_writes_the_stack_and_bad_input_exits_1(tmp_path: Path) -> None:
    out = tmp_path / "Pulumi.gke.yaml"
    run = subprocess.run(
        [sys.executable, "-m", "tooling.cli", "from-modelplane", *map(str, fixture_files("gke-l4")), "-o", str(out),
         "--gke-project", "my-project"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "1 classes, 1 clusters, 1 deployments, 1 services" in run.stderr
    assert yaml.safe_load(out.read_text())["config"]["modelplane:services"] == [
        {"name": "qwen3-8b", "deployment": "qwen3-8b"}
    ]
    bad = subprocess.run(
        [sys.executable, "-m", "tooling.cli", "from-modelplane", str(FIXTURES / "bad" / "not-modelplane.yaml")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert bad.returncode == 1 and "not a modelplane kind" in bad.stderr and "Traceback" not in bad.stderr
