"""A fleet kept in another Pulumi project: its `__main__.py` calls the installed program.

The project lives in a temporary folder outside this repository and holds only what
docs/getting-started.md tells a user to write: `Pulumi.yaml`, the two-line `__main__.py` and a
stack file. The program runs from the installed package under Pulumi's mock runtime, and the
`modelplane` command plans the project's stacks from there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from tests.conftest import CLUSTER_BLOCKS, cpu_class

ROOT = Path(__file__).resolve().parent.parent

# Exactly the __main__.py of docs/getting-started.md ("Your own fleet").
MAIN = '"""My fleet: the modelplane program, with this project\'s stack files."""\n\nfrom program.main import run\n\nrun()\n'

PULUMI_YAML = textwrap.dedent(
    """\
    name: my-fleet
    runtime:
      name: python
      options:
        toolchain: uv
    stackConfigDir: stacks
    """
)

RUN_UNDER_MOCKS = textwrap.dedent(
    """\
    import json, runpy, sys
    from pathlib import Path

    import infra
    from infra.config.stackfile import load_stack_file
    from tooling.mockrun import run_under_mocks
    from tooling.stackconfig import config_of

    stack = load_stack_file(Path("stacks/Pulumi.dev.yaml"))
    config, secret_keys = config_of(stack)
    result = run_under_mocks(lambda: runpy.run_path("__main__.py", run_name="__main__"), stack.stack, config, secret_keys)
    print(json.dumps({
        "error": None if result.error is None else str(result.error),
        "types": sorted({r.type for r in result.resources}),
        "infra": infra.__file__,
    }))
    """
)


def user_project(tmp_path: Path) -> Path:
    project = tmp_path / "my-fleet"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text(PULUMI_YAML, encoding="utf-8")
    (project / "__main__.py").write_text(MAIN, encoding="utf-8")
    config = {
        "modelplane:classes": [cpu_class("cpu", "Civo", {"size": "g4p.kube.medium"})],
        "modelplane:clusters": [
            {
                "name": "mine",
                "source": "Civo",
                "civo": CLUSTER_BLOCKS["Civo"],
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
    }
    (project / "stacks" / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    return project


def outside(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run from the project folder, with nothing of this repository on the path but the installed package."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PWD")}
    return subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=300, env=env)


def test_documented_main_runs_the_installed_program_from_another_project(tmp_path: Path) -> None:
    project = user_project(tmp_path)
    assert ROOT not in project.parents
    out = outside(project, sys.executable, "-c", RUN_UNDER_MOCKS)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["error"] is None
    assert "civo:index/kubernetesCluster:KubernetesCluster" in result["types"]
    assert "kubernetes:helm.sh/v3:Release" in result["types"]
    assert not Path(result["infra"]).is_relative_to(project)


def test_modelplane_plans_the_other_projects_stacks_by_name_and_by_path(tmp_path: Path) -> None:
    project = user_project(tmp_path)
    modelplane = str(Path(sys.executable).with_name("modelplane"))
    by_name = outside(project, modelplane, "plan", "--stack", "dev", "--json")
    assert by_name.returncode == 0, by_name.stderr
    assert json.loads(by_name.stdout)["ok"] is True
    by_path = outside(
        tmp_path, modelplane, "plan", "--stack-file", str(project / "stacks" / "Pulumi.dev.yaml"), "--json"
    )
    assert by_path.returncode == 0, by_path.stderr
    doc = json.loads(by_path.stdout)
    assert doc["stack"] == "dev" and [c["name"] for c in doc["clusters"]] == ["mine"]


def test_the_wheel_packages_everything_the_program_and_pack_import() -> None:
    import tomllib

    packages = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]["build"][
        "targets"
    ]["wheel"]["packages"]
    code = "import sys, program.main, policies.pack, tooling.cli; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    ours = {name.split(".")[0] for name in out.stdout.split() if (ROOT / name.split(".")[0]).is_dir()}
    assert ours <= set(packages), f"imported from the checkout but not in the wheel: {ours - set(packages)}"
    assert (ROOT / "policies" / "PulumiPolicy.yaml").is_file()  # inside a packaged folder, so it ships
