"""`engine/build.sh` uses a `pulumi` on the PATH only when it is at least the pinned version."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.engine.harness import ROOT
from tests.tools import engine_tools


def locate(tmp_path: Path, on_path_version: str) -> str:
    fake = tmp_path / "somewhere" / "bin"
    fake.mkdir(parents=True)
    cli = fake / "pulumi"
    cli.write_text(f"#!/bin/sh\necho v{on_path_version}\n")
    cli.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        # An empty cache: only the PATH can answer.
        "MODELPLANE_TOOLS_CACHE": str(tmp_path / "cache"),
    }
    script = ROOT / "engine" / "build.sh"
    return subprocess.run(["bash", str(script), "--locate"], env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize(
    ("version", "used"), [("3.274.1", True), ("3.280.0", True), ("3.274.0", False), ("3.99.9", False)]
)
def test_a_pulumi_on_the_path_is_used_only_from_the_pinned_version_on(tmp_path: Path, version: str, used: bool) -> None:
    found = locate(tmp_path, version).strip()
    assert (found == str(tmp_path / "somewhere")) is used, found


def test_an_unknown_tool_is_refused_with_the_ones_it_builds(tmp_path: Path) -> None:
    script = ROOT / "engine" / "build.sh"
    done = subprocess.run(["bash", str(script), "--locate", "kubectl"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert (
        "unknown tool 'kubectl' (pulumi, kube-apiserver, etcd, otelcol, kube-controller-manager, kube-scheduler, "
        "kwok, lws, pulumi-resource-kubernetes, prometheus-operator, prometheus, keda, keda-adapter, epp or egctl)"
        in done.stderr
    )


def test_make_engine_builds_every_tool_the_script_builds() -> None:
    # The refusal names every tool engine/build.sh knows; `make engine` (the Makefile's
    # ENGINE_TOOLS) must build each, or a fresh machine skips the tests of the one it left out.
    script = ROOT / "engine" / "build.sh"
    done = subprocess.run(["bash", str(script), "--locate", "kubectl"], capture_output=True, text=True, check=False)
    named = done.stderr.split("(", 1)[1].split(")", 1)[0].replace(" or ", ", ").split(", ")
    assert sorted(named) == sorted(engine_tools())


@pytest.mark.parametrize(
    "name",
    [
        "kube-apiserver",
        "etcd",
        "otelcol",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "lws",
        "prometheus-operator",
        "prometheus",
        "keda",
        "keda-adapter",
        "epp",
        "egctl",
    ],
)
def test_a_tool_of_another_version_in_the_cache_is_not_used(tmp_path: Path, name: str) -> None:
    # A binary that answers with another version, where the pinned one would be: not located.
    script = ROOT / "engine" / "build.sh"
    versions = {
        "kube-apiserver": "v1.36.0",
        "etcd": "v3.6.8",
        "otelcol": "v0.161.0",
        "kube-controller-manager": "v1.36.0",
        "kube-scheduler": "v1.36.0",
        "kwok": "v0.8.0",
        "lws": "v0.8.0",
        "prometheus-operator": "v0.90.1",
        "prometheus": "v3.11.3",
        "keda": "v2.20.2",
        "keda-adapter": "v2.20.2",
        "epp": "v1.5.0",
        "egctl": "v1.8.3",
    }
    folder = tmp_path / "cache" / f"{name}-{versions[name]}" / "bin"
    folder.mkdir(parents=True)
    (folder / name).write_text("#!/bin/sh\necho 'version 0.0.1'\n")
    (folder / name).chmod(0o755)
    env = {**os.environ, "MODELPLANE_TOOLS_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(["bash", str(script), "--locate", name], env=env, capture_output=True, text=True, check=True)
    assert done.stdout == ""


def test_a_provider_build_without_its_stamp_or_of_another_module_version_is_not_used(tmp_path: Path) -> None:
    # The provider has no version flag: only the stamp of the module version it was built from counts.
    script = ROOT / "engine" / "build.sh"
    folder = tmp_path / "cache" / "pulumi-resource-kubernetes-v4.25.0" / "bin"
    folder.mkdir(parents=True)
    binary = folder / "pulumi-resource-kubernetes"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    env = {**os.environ, "MODELPLANE_TOOLS_CACHE": str(tmp_path / "cache")}

    def located() -> str:
        args = ["bash", str(script), "--locate", "pulumi-resource-kubernetes"]
        return subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout.strip()

    assert located() == ""
    (folder / "pulumi-resource-kubernetes.version").write_text("v4.0.0-20250101000000-000000000000\n")
    assert located() == ""
    (folder / "pulumi-resource-kubernetes.version").write_text("v4.0.0-20260115033456-f47bc2d6f199\n")
    assert located() == str(tmp_path / "cache" / "pulumi-resource-kubernetes-v4.25.0")
