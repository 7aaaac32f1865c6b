"""Run a stack of this project under the real Pulumi engine, with test providers for the clouds.

What is real: the Pulumi CLI (`engine/build.sh`), its engine (previews, updates, state, secrets,
the analyzer protocol), a local file backend with the passphrase secrets provider, the program
(`program.main.run`) through the Python SDK's own language runtime server (Automation API's
inline program; the CLI attaches with `--client`), and the policy pack (`policies/`), launched as
an executable analyzer plugin.

What stands in: the providers (`tests/engine/provider.py`, installed as plugins in a private
`PULUMI_HOME`; the kubernetes one sends its objects to a real kube-apiserver per cluster,
`tests/engine/kube.py`), and the language host binary `pulumi-language-python`, which no registry serves:
the pack launcher below runs the command its `RunPlugin` would run for a Python pack.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from infra.config.stackfile import load_stack_file
from program.main import run as program
from tests.engine.forkserver import socket_path
from tests.engine.kube import ServerPool
from tests.engine.schema import SDK_PACKAGES
from tests.tools import tool
from tooling.mockrun import run_under_mocks
from tooling.stackconfig import config_of

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "modelplane"
# The committed stacks' secrets are encrypted under this passphrase (their `encryptionsalt`).
PASSPHRASE = "modelplane-example-stacks"


def cli_root() -> Path | None:
    """The directory holding bin/pulumi, from `engine/build.sh --locate`; None when there is none."""
    out = subprocess.run(
        ["bash", str(ROOT / "engine" / "build.sh"), "--locate"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return Path(out) if out else None


def sdk_plugin(package: str) -> tuple[str, str]:
    """(plugin name, plugin version) the program's SDK asks the engine for: its pulumi-plugin.json's
    `name` and `version`, else the package and its distribution version (ediri-vultr's file names
    neither).

    A parameterized SDK names the plugin it parameterizes, not itself: pulumi-nebius 0.6.73 names
    `terraform-provider` 1.5.0 with the parameterization `nebius` 0.6.73, and the engine loads that
    plugin and calls its `Parameterize` (pkg/resource/deploy/providers/registry.go at v3.274.1,
    `loadParameterizedProvider`; the plugin's name and version sit in the provider's `__internal`).
    """
    module = SDK_PACKAGES[package]
    spec = __import__("importlib.util").util.find_spec(module)
    plugin = json.loads((Path(spec.origin).parent / "pulumi-plugin.json").read_text())
    name = str(plugin.get("name") or package)
    if plugin.get("version"):
        return name, str(plugin["version"])
    dist = {"ediri_vultr": "ediri-vultr"}.get(module, module.replace("_", "-"))
    return name, metadata.version(dist)


LAUNCH = Path(__file__).with_name("launch.py")
# The real provider, where a tier runs it (`Engine.real`): the build of `engine/build.sh`.
REAL_KUBERNETES = "pulumi-resource-kubernetes"


def install_plugins(home: Path, real: bool = False) -> None:
    """One launcher per provider plugin, where the engine looks for `pulumi-resource-<name>`
    (sdk/go/common/workspace/plugins.go, `PluginDescriptor.Dir`/`File`).

    With `real`, the kubernetes plugin is the real provider (`engine/build.sh
    pulumi-resource-kubernetes`, v4.25.0), installed under the version the locked SDK names
    (4.34.2): the engine then logs that the plugin reports an older version, and runs it.
    tests/engine/test_real_provider_schema.py holds every input the program sets to its schema.

    A test provider is forked from this process's fork server (`forkserver.py`), which has
    imported it already; where none answers, the launcher runs it as a process of its own.
    """
    server = socket_path()
    for name, version in sorted({sdk_plugin(package) for package in SDK_PACKAGES}):
        folder = home / "plugins" / f"resource-{name}-v{version}"
        folder.mkdir(parents=True, exist_ok=True)
        launcher = folder / f"pulumi-resource-{name}"
        if real and name == "kubernetes":
            launcher.unlink(missing_ok=True)
            launcher.symlink_to(tool(REAL_KUBERNETES))
            continue
        launcher.write_text(
            f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -S -E "{LAUNCH}" "{server}" {name} {version} "$@"\n'
        )
        launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        # The engine trusts a plugin folder only once its install has finished (`.lock` gone,
        # a `<dir>.partial` marker absent); a plain folder with the binary is a finished install.


def pack_launcher(folder: Path) -> Path:
    """An executable analyzer plugin that runs `policies/` as the language host's `RunPlugin` does
    (`python -u -m pulumi.policy <engine address> <pack dir>`, in the pack's folder).

    The engine launches an executable `--policy-pack` path directly with the engine's address and
    reads `PulumiPolicy.yaml` beside it (pkg/resource/plugin/analyzer_plugin.go at v3.274.1). The
    flags it puts before the address (`--tracing <endpoint>` when the CLI traces,
    pkg/resource/plugin/plugin.go `buildPluginArguments`) go through: `pulumi.policy` takes them.
    """
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "policies" / "PulumiPolicy.yaml", folder / "PulumiPolicy.yaml")
    launcher = folder / "modelplane-pack"
    pack = ROOT / "policies"
    launcher.write_text(
        f'#!/bin/sh\ncd "{pack}" && PYTHONPATH="{ROOT}" exec "{sys.executable}" -u -m pulumi.policy "$@" "{pack}"\n'
    )
    launcher.chmod(0o755)
    return launcher


@dataclass
class Ops:
    """What reached the test providers: creates, updates, deletes, constructs (ops.jsonl)."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def of(self, op: str) -> list[str]:
        return [e["urn"] for e in self.entries if e["op"] == op]

    def changes(self) -> list[dict[str, Any]]:
        """Creates, updates and deletes (a multi-language component is constructed on every run)."""
        return [e for e in self.entries if e["op"] in ("create", "update", "delete")]


@dataclass
class Engine:
    """A private Pulumi installation and backend, and a copy of the project's files to run from."""

    base: Path
    cli: Path
    kube: ServerPool | None = None
    # The real kubernetes provider in place of the test one (`install_plugins`).
    real: bool = False
    project: Path = field(init=False)
    home: Path = field(init=False)
    providers: Path = field(init=False)
    pack: Path = field(init=False)
    env: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.project = self.base / "project"
        self.home = self.base / "pulumi-home"
        self.providers = self.base / "providers"
        backend = self.base / "backend"
        for folder in (self.project / "stacks", self.home, self.providers, backend):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "Pulumi.yaml", self.project / "Pulumi.yaml")
        for stack_file in (ROOT / "stacks").glob("Pulumi.*.yaml"):
            shutil.copy(stack_file, self.project / "stacks" / stack_file.name)
        install_plugins(self.home, self.real)
        self.pack = pack_launcher(self.base / "pack")
        scratch = self.base / "tmp"
        scratch.mkdir(exist_ok=True)
        self.env = {
            "PULUMI_BACKEND_URL": backend.as_uri(),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "MODELPLANE_TEST_PROVIDER_DIR": str(self.providers),
            **(self.kube.env() if self.kube else {}),
            # The real provider writes each cluster's kubeconfig to a file under $TMPDIR and never
            # removes it (provider/pkg/provider/provider.go, Configure, through util.go `writeKubeconfigToFile`); Helm keeps
            # its repository index and chart cache under its HELM_* homes (helm.sh/helm/v3
            # pkg/cli/environment.go). Both stay inside the run's folder.
            "TMPDIR": str(scratch),
            "HELM_CACHE_HOME": str(self.base / "helm" / "cache"),
            "HELM_CONFIG_HOME": str(self.base / "helm" / "config"),
            "HELM_DATA_HOME": str(self.base / "helm" / "data"),
        }

    def stack_file(self, stack: str) -> Path:
        return self.project / "stacks" / f"Pulumi.{stack}.yaml"

    def config(self, stack: str) -> dict[str, Any]:
        """The `config:` block of a stack file, as written."""
        doc = yaml.safe_load(self.stack_file(stack).read_text()) or {}
        return dict(doc.get("config") or {})

    def write_config(self, stack: str, config: dict[str, Any]) -> None:
        """Replace the `config:` block of a stack file (its encryption salt is kept)."""
        path = self.stack_file(stack)
        doc = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
        doc["config"] = config
        path.write_text(yaml.safe_dump(doc, sort_keys=False))

    def write_fleet(self, stack: str, raw: dict[str, Any]) -> None:
        """A stack whose `modelplane:` config is `raw` (a fleet as the tests build it)."""
        self.write_config(stack, {f"{PROJECT}:{k}": v for k, v in raw.items()})

    def rename_project(self, name: str) -> None:
        """Call the project `name`, as a user's own repository would (Pulumi.yaml's `name`).

        Its Pulumi.yaml then declares no `config:` block, as docs/getting-started.md's does not: the
        CLI refuses a type on a key outside the project's namespace ("Configuration key
        'modelplane:classes' is not namespaced by the project and should not define a type").
        """
        path = self.project / "Pulumi.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["name"] = name
        doc.pop("config", None)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))

    def shell(self, command: str) -> subprocess.CompletedProcess[str]:
        """Run a command line as a user would in the project's folder, with this engine's CLI."""
        env = {
            **os.environ,
            **self.env,
            "PULUMI_HOME": str(self.home),
            "PATH": f"{self.cli / 'bin'}:{os.environ['PATH']}",
        }
        return subprocess.run(command, shell=True, cwd=self.project, env=env, capture_output=True, text=True)

    def stack(self, name: str, fn: Callable[[], None] = program) -> auto.Stack:
        opts = auto.LocalWorkspaceOptions(
            work_dir=str(self.project),
            pulumi_home=str(self.home),
            env_vars=self.env,
            pulumi_command=auto.PulumiCommand(root=str(self.cli)),
        )
        project = yaml.safe_load((self.project / "Pulumi.yaml").read_text())["name"]
        return auto.create_or_select_stack(stack_name=name, project_name=project, program=fn, opts=opts)

    def ops(self) -> Ops:
        log = self.providers / "ops.jsonl"
        if not log.exists():
            return Ops()
        return Ops([json.loads(line) for line in log.read_text().splitlines() if line.strip()])

    def kube_applied(self) -> list[dict[str, Any]]:
        """What the kubernetes test provider applied to an API server: each object as sent and as
        the server stored it (`kube.jsonl`), in order."""
        log = self.providers / "kube.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]

    def reset_ops(self) -> None:
        for name in ("ops.jsonl", "changes.count", "kube.jsonl"):
            (self.providers / name).unlink(missing_ok=True)

    def export(self, stack: auto.Stack) -> dict[str, Any]:
        return dict(stack.export_stack().deployment)

    def plant_drift(self, drift: dict[str, dict[str, Any]]) -> None:
        (self.providers / "drift.json").write_text(json.dumps(drift))


def resources(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    return list(deployment.get("resources") or [])


# What the engine holds beyond the program's own registrations: the objects a `yaml/v2:ConfigFile`
# expands to in the Kubernetes provider (the offline plan registers the component alone:
# docs/policies.md, "Remote components are not constructed"), and the `pulumi` provider the
# provider's construct calls read resources through.
EXPANDED_BY_PROVIDER = "kubernetes:yaml/v2:ConfigFile"
ENGINE_PROVIDER = "pulumi:providers:pulumi"


def urns(deployment: dict[str, Any]) -> set[str]:
    """The program's registrations in the state: what the offline plan registers too."""
    held = resources(deployment)
    expanded = {r["urn"] for r in held if r.get("type") == EXPANDED_BY_PROVIDER}
    return {r["urn"] for r in held if r.get("parent") not in expanded and r.get("type") != ENGINE_PROVIDER}


def walk_secrets(value: Any) -> Iterator[Any]:
    """Every value in exported state that the engine stores as a secret (its `4dabf18193072939515e22adb298388d` sig)."""
    if isinstance(value, dict):
        if value.get("4dabf18193072939515e22adb298388d") == "1b47061264138c4ac30d75fd1eb44270":
            yield value
            return
        for item in value.values():
            yield from walk_secrets(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk_secrets(item)


def mock_urns(stack_file: Path) -> set[str]:
    """What the offline plan registers for this stack in an update, with the root stack."""
    stack = load_stack_file(stack_file)
    config, secret_keys = config_of(stack)
    result = run_under_mocks(program, stack.stack, config, secret_keys, preview=False)
    assert result.error is None, result.error
    assert result.stack is not None
    return {r.urn for r in result.resources} | {result.stack.urn}


def assert_secrets_kept(state: dict[str, Any], stack: auto.Stack) -> None:
    """Every kubeconfig a provider takes or the stack exports is a secret, and no secret config
    value of the stack appears in the state in plain text."""
    text = json.dumps(state)
    for resource in resources(state):
        if resource["type"] == "pulumi:providers:kubernetes":
            assert list(walk_secrets(resource["inputs"]["kubeconfig"])), f"{resource['urn']}: kubeconfig in plain text"
    outputs = next(r for r in resources(state) if r["type"] == "pulumi:pulumi:Stack")["outputs"]
    for cluster, exported in outputs["clusters"].items():
        assert list(walk_secrets(exported["kubeconfig"])), f"the exported kubeconfig of {cluster} is in plain text"
    for key, value in stack.get_all_config().items():
        if value.secret:
            assert json.dumps(value.value)[1:-1] not in text, f"{key} is stored in plain text"
