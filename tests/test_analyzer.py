"""The pack, run as the engine runs it (a `pulumi.policy` process spoken to over gRPC), on the program's output."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cpu_class, run_fleet
from tooling.analyzer import RESOURCES_PER_PROCESS, PackViolation, pack_processes, run_policy_pack
from tooling.mockrun import Registration
from tooling.pack_process import PolicyPackError

BYO = {
    "classes": [
        {
            "name": "mi325x-byo",
            "devices": [{"name": "gpu", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com"}],
        },
        {
            "name": "h100-byo",
            "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8}],
        },
        cpu_class("cpu-byo", None, cpus="14"),
    ],
    "clusters": [
        {
            "name": "byo-lab",
            "source": "Existing",
            "existing": {"kubernetesVersion": "1.36", "kubeconfigKey": "kubeconfig"},
            "nodePools": [
                {"name": "mi325x", "className": "mi325x-byo"},
                {"name": "h100", "className": "h100-byo"},
                {"name": "cpu", "className": "cpu-byo"},
            ],
        }
    ],
}


@pytest.fixture(scope="module")
def byo_resources() -> list[Registration]:
    result = run_fleet(BYO, stack="byo")
    assert result.error is None
    return result.resources


def mandatory(violations: list[PackViolation]) -> list[PackViolation]:
    return [v for v in violations if v.enforcement == "mandatory"]


def with_inputs(resources: list[Registration], name: str, edit: Any) -> list[Registration]:
    """The same resources, one of them with its inputs changed by `edit`."""
    out = []
    for r in resources:
        if r.name == name:
            inputs = copy.deepcopy(dict(r.inputs))
            edit(inputs)
            r = dataclasses.replace(r, inputs=inputs)
        out.append(r)
    return out


def test_existing_fleet_from_the_program_passes_the_pack(byo_resources: list[Registration]) -> None:
    assert run_policy_pack(byo_resources, stack="byo") == []


def planned(key: str, edit: Any) -> Any:
    def apply(inputs: dict[str, Any]) -> None:
        for release in inputs["releases"]:
            if release["key"] == key:
                edit(release)

    return apply


def test_amd_operator_with_kmm_on_is_a_mandatory_violation(byo_resources: list[Registration]) -> None:
    def kmm_on(release: dict[str, Any]) -> None:
        release["values"]["kmm"] = {"enabled": True, "watch": False}

    found = run_policy_pack(
        with_inputs(byo_resources, "byo-lab-stack", planned("amd-gpu-operator", kmm_on)), stack="byo"
    )
    assert [(v.policy, v.enforcement, v.resource) for v in found] == [
        ("amd-operator-values", "mandatory", "byo-lab-stack")
    ]
    assert found[0].message.startswith("release mp-gpu-operator-charts: kmm.enabled must be false")


def test_release_removed_from_the_stack_is_a_stack_violation(byo_resources: list[Registration]) -> None:
    without = [r for r in byo_resources if r.name != "byo-lab-stack-dra-driver-cpu"]
    found = mandatory(run_policy_pack(without, stack="byo"))
    assert [(v.policy, v.resource) for v in found] == [("device-stack-filtered", "byo-lab-stack")]


def test_floating_image_is_rejected_through_the_engine_protocol(byo_resources: list[Registration]) -> None:
    def float_image(release: dict[str, Any]) -> None:
        release["values"]["image"] = "registry.k8s.io/dra-driver-cpu:latest"

    found = run_policy_pack(
        with_inputs(byo_resources, "byo-lab-stack", planned("dra-driver-cpu", float_image)), stack="byo"
    )
    assert {(v.policy, v.enforcement) for v in found} == {("pinned-versions", "mandatory")}


def unprotected_cluster() -> Registration:
    token = "gcp:container/cluster:Cluster"
    return Registration(
        type=token,
        name="gke-a-cluster",
        parent=None,
        urn=f"urn:pulumi:byo::modelplane::{token}::gke-a-cluster",
        inputs={"location": "us-central1", "initialNodeCount": 1},
        custom=True,
    )


def test_unprotected_cluster_is_advisory_by_default() -> None:
    found = run_policy_pack([unprotected_cluster()], stack="byo")
    assert [(v.policy, v.enforcement) for v in found] == [("protect-clusters", "advisory")]


def test_unprotected_cluster_is_mandatory_when_the_pack_config_says_so() -> None:
    found = run_policy_pack([unprotected_cluster()], stack="byo", config={"protect-clusters": "mandatory"})
    assert [(v.policy, v.enforcement, v.resource) for v in found] == [
        ("protect-clusters", "mandatory", "gke-a-cluster")
    ]
    exempt = {"protect-clusters": {"enforcementLevel": "mandatory", "exemptResources": ["gke-a-cluster"]}}
    assert run_policy_pack([unprotected_cluster()], stack="byo", config=exempt) == []


def test_disabled_policy_reports_nothing() -> None:
    assert run_policy_pack([unprotected_cluster()], stack="byo", config={"all": "disabled"}) == []


def test_resources_dealt_over_two_pack_processes_get_the_verdicts_of_one(
    byo_resources: list[Registration], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Resource violations on both processes (the kmm value on one resource, unprotected clusters
    # on others) and a stack violation (a release removed), in the order queued.
    def kmm_on(release: dict[str, Any]) -> None:
        release["values"]["kmm"] = {"enabled": True, "watch": False}

    broken = with_inputs(byo_resources, "byo-lab-stack", planned("amd-gpu-operator", kmm_on))
    broken = [r for r in broken if r.name != "byo-lab-stack-dra-driver-cpu"]
    clusters = [dataclasses.replace(unprotected_cluster(), name=f"gke-{n}-cluster") for n in range(3)]
    resources = [clusters[0], *broken, *clusters[1:]]
    one = run_policy_pack(resources, stack="byo", processes=1)
    assert {v.policy for v in one} == {"amd-operator-values", "device-stack-filtered", "protect-clusters"}
    started: list[list[str]] = []
    popen = subprocess.Popen

    def counting(args: list[str], **kw: Any) -> subprocess.Popen[str]:
        started.append(args)
        return popen(args, **kw)

    monkeypatch.setattr("tooling.pack_process.subprocess.Popen", counting)
    assert run_policy_pack(resources, stack="byo", processes=2) == one
    assert len(started) == 2


@pytest.mark.parametrize(
    ("resources", "cores", "processes"),
    [(0, 2, 1), (RESOURCES_PER_PROCESS - 1, 2, 1), (2 * RESOURCES_PER_PROCESS, 2, 2), (10**5, 2, 2), (10**5, 1, 1)],
)
def test_a_pack_process_per_core_while_each_has_enough_resources(
    monkeypatch: pytest.MonkeyPatch, resources: int, cores: int, processes: int
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    assert pack_processes(resources) == processes


def test_unknown_policy_in_pack_config_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown policies: no-such-policy"):
        run_policy_pack([], stack="byo", config={"no-such-policy": "mandatory"})


def test_a_pack_that_cannot_start_is_reported_with_its_error(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text("raise SystemExit('broken pack')\n")
    with pytest.raises(PolicyPackError, match="broken pack"):
        run_policy_pack([], stack="byo", pack_dir=tmp_path, timeout=30)


RECORDING_PACK = """
import json, os, sys, threading, time
from concurrent import futures

import grpc
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

log = open(os.environ["PACK_CALL_LOG"], "a", buffering=1)
lock = threading.Lock()
busy = [0]


def record(call, **fields):
    with lock:
        log.write(json.dumps({"call": call, **fields}) + "\\\\n")


class Recorder(analyzer_pb2_grpc.AnalyzerServicer):
    def ConfigureStack(self, request, context):
        record("ConfigureStack", stack=request.stack, dry_run=request.dry_run, config=dict(request.config),
               secret_keys=list(request.config_secret_keys), env_config=json.loads(os.environ.get("PULUMI_CONFIG", "{}")))
        return analyzer_pb2.AnalyzerStackConfigureResponse()

    def GetAnalyzerInfo(self, request, context):
        record("GetAnalyzerInfo")
        return analyzer_pb2.AnalyzerInfo(
            name="recorder", version="1.0.0", supportsConfig=True,
            policies=[analyzer_pb2.PolicyInfo(name="fix-it", enforcementLevel=analyzer_pb2.ADVISORY)],
        )

    def Configure(self, request, context):
        record("Configure")
        return empty_pb2.Empty()

    def Remediate(self, request, context):
        record("Remediate", name=request.name)
        return analyzer_pb2.RemediateResponse()

    def Analyze(self, request, context):
        with lock:
            busy[0] += 1
            now = busy[0]
        time.sleep(0.01)  # let calls overlap if the client sends more than it should
        with lock:
            busy[0] -= 1
        record("Analyze", name=request.name, in_flight=now, props=json_format.MessageToDict(request.properties))
        return analyzer_pb2.AnalyzeResponse()

    def AnalyzeStack(self, request, context):
        record("AnalyzeStack", resources=[
            {"name": r.name, "type": r.type, "props": json_format.MessageToDict(r.properties)} for r in request.resources
        ])
        return analyzer_pb2.AnalyzeResponse()


server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
analyzer_pb2_grpc.add_AnalyzerServicer_to_server(Recorder(), server)
port = server.add_insecure_port("127.0.0.1:0")
server.start()
sys.stdout.write(f"{port}\\\\n")
sys.stdout.flush()
server.wait_for_termination()
"""


@pytest.mark.parametrize(
    ("pack_config", "per_resource"),
    [({}, ["Analyze"]), ({"fix-it": "remediate"}, ["Remediate", "Analyze"])],
)
def test_client_calls_the_pack_in_the_engines_order_with_its_payloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pack_config: dict[str, str], per_resource: list[str]
) -> None:
    import json

    (tmp_path / "__main__.py").write_text(RECORDING_PACK.replace("\\\\n", "\\n"))
    calls_log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PACK_CALL_LOG", str(calls_log))
    root = Registration(
        "pulumi:pulumi:Stack",
        "modelplane-s",
        None,
        "urn:pulumi:s::modelplane::pulumi:pulumi:Stack::modelplane-s",
        {},
        False,
        outputs={"clusters": {"a": 1}},
    )
    resources = [
        Registration(
            "kubernetes:helm.sh/v3:Release",
            f"r{i}",
            None,
            f"urn:pulumi:s::modelplane::kubernetes:helm.sh/v3:Release::r{i}",
            {"chart": "c", "version": "1.0.0"},
            True,
            outputs={},
        )
        for i in range(12)
    ]
    config = {"modelplane:protect": "true", "modelplane:kubeconfig": "<secret>"}
    found = run_policy_pack(
        resources,
        stack="s",
        dry_run=True,
        root=root,
        stack_config=config,
        secret_keys=["modelplane:kubeconfig"],
        pack_dir=tmp_path,
        in_flight=3,
        config=pack_config,
    )
    assert found == []
    calls = [json.loads(line) for line in calls_log.read_text().splitlines()]
    # Configured first, with the stack's config (also in PULUMI_CONFIG), then described and configured.
    assert [c["call"] for c in calls[:3]] == ["ConfigureStack", "GetAnalyzerInfo", "Configure"]
    assert calls[0] == {
        "call": "ConfigureStack",
        "stack": "s",
        "dry_run": True,
        "config": config,
        "secret_keys": ["modelplane:kubeconfig"],
        "env_config": config,
    }
    # Each resource, the root stack included, is analyzed on its inputs; remediated first when a
    # policy is configured to remediate (the engine always asks, and the pack's server answers only
    # from those policies).
    for name in ["modelplane-s", *(f"r{i}" for i in range(12))]:
        order = [c["call"] for c in calls if c.get("name") == name]
        assert order == per_resource
    assert {c["name"]: c["props"] for c in calls if c["call"] == "Analyze"}["r0"] == {"chart": "c", "version": "1.0.0"}
    # Never more resources in flight than asked for.
    assert max(c["in_flight"] for c in calls if c["call"] == "Analyze") <= 3
    # AnalyzeStack comes last, over the root stack and every resource, with their outputs.
    assert calls[-1]["call"] == "AnalyzeStack"
    assert calls[-1]["resources"][0] == {
        "name": "modelplane-s",
        "type": "pulumi:pulumi:Stack",
        "props": {"clusters": {"a": 1}},
    }
    assert [r["props"] for r in calls[-1]["resources"][1:]] == [{}] * 12


def test_a_failed_call_fails_the_run_and_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    failing = RECORDING_PACK.replace("\\\\n", "\\n").replace(
        "    def Analyze(self, request, context):\n",
        "    def Analyze(self, request, context):\n"
        '        record("Analyze", name=request.name, in_flight=0, props={})\n'
        '        context.abort(grpc.StatusCode.CANCELLED, "overloaded")\n',
    )
    (tmp_path / "__main__.py").write_text(failing)
    calls_log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PACK_CALL_LOG", str(calls_log))
    one = Registration(
        "kubernetes:helm.sh/v3:Release",
        "r0",
        None,
        "urn:pulumi:s::modelplane::kubernetes:helm.sh/v3:Release::r0",
        {},
        True,
    )
    with pytest.raises(PolicyPackError, match=r"(?s)failed on Analyze\(r0\).*CANCELLED"):
        run_policy_pack([one], stack="s", pack_dir=tmp_path)
    calls = [json.loads(line) for line in calls_log.read_text().splitlines()]
    assert [c["call"] for c in calls if c.get("name") == "r0"] == ["Analyze"]


def test_preview_advisories_name_the_version_pulumipolicy_yaml_states() -> None:
    from infra.config.stackfile import load_stack_file
    from program.main import run
    from tooling.mockrun import run_under_mocks
    from tooling.stackconfig import config_of

    stack = load_stack_file(Path(__file__).resolve().parent.parent / "stacks" / "Pulumi.recipe-qwen-cpu-civo.yaml")
    config, secret_keys = config_of(stack)
    result = run_under_mocks(run, stack.stack, config, secret_keys, preview=True)
    found = run_policy_pack(result.resources, stack.stack, dry_run=True, root=result.stack, stack_config=config)
    assert [(v.policy, v.enforcement) for v in found] == [("cpu-claim-resources", "advisory")]
    # PulumiPolicy.yaml says 0.1.0; the SDK on its own would write v0.0.1 here.
    assert found[0].message.startswith(
        "can't run policy 'cpu-claim-resources' from policy pack 'modelplane@v0.1.0' during preview: "
    )


def test_config_too_large_for_one_environment_string_still_reaches_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    (tmp_path / "__main__.py").write_text(RECORDING_PACK.replace("\\\\n", "\\n"))
    calls_log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PACK_CALL_LOG", str(calls_log))
    # 200 KB in one key: past Linux's 128 KiB limit for a single environment string.
    config = {"modelplane:clusters": "x" * 200_000}
    assert run_policy_pack([], stack="s", stack_config=config, pack_dir=tmp_path) == []
    configured = json.loads(calls_log.read_text().splitlines()[0])
    assert configured["config"] == config and configured["env_config"] == {}
