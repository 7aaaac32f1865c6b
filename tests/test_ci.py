"""What CI needs to preview the committed stacks with the real CLI: decryptable secrets, a stack to preview, a PR comment."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
# Pulumi's passphrase provider: `encryptionsalt: v1:<salt>:v1:<nonce>:<ciphertext of "pulumi">` and each
# value `v1:<nonce>:<ciphertext>`, base64 (pulumi/pulumi v3.259.0, pkg/secrets/passphrase/manager.go and
# sdk/go/common/resource/config/crypt.go, `symmetricCrypter`).
B64 = r"[A-Za-z0-9+/]+=*"
SALT = re.compile(rf"^v1:{B64}:v1:{B64}:{B64}$")
CIPHERTEXT = re.compile(rf"^v1:{B64}:{B64}$")


def secure_values(value: Any) -> list[str]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return [str(value["secure"])]
        return [s for v in value.values() for s in secure_values(v)]
    if isinstance(value, list):
        return [s for v in value for s in secure_values(v)]
    return []


def test_every_committed_secret_is_passphrase_ciphertext_with_its_salt() -> None:
    with_secrets = 0
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        doc = yaml.safe_load(path.read_text())
        values = secure_values(doc.get("config") or {})
        if not values:
            continue
        with_secrets += 1
        assert SALT.match(str(doc.get("encryptionsalt") or "")), f"{path.name} has secrets but no encryptionsalt"
        assert all(CIPHERTEXT.match(v) for v in values), f"{path.name} holds a secret no passphrase decrypts"
    assert with_secrets == 5  # byo-amd, byo-fleet, byo-mixed, byo-multinode and recipe-qwen-mi325x


def test_preview_job_can_comment_and_creates_missing_stacks() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text())
    job = workflow["jobs"]["preview"]
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    step = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert step["with"]["upsert"] is True and step["with"]["comment-on-pr"] is True
    assert step["with"]["policyPacks"] == "policies"
    assert step["with"]["policyPackConfigs"] == "policy-config.json"


def workflow() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text()))


def test_ci_never_falls_back_to_a_public_passphrase() -> None:
    text = (ROOT / ".github" / "workflows" / "preview.yml").read_text()
    env = workflow()["jobs"]["preview"]["env"]
    assert env["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"
    assert "|| 'modelplane-example-stacks'" not in text


def test_the_preview_job_only_previews_and_skips_the_per_step_snapshot() -> None:
    job = workflow()["jobs"]["preview"]
    assert job["env"]["PULUMI_SKIP_CHECKPOINTS"] == "true"
    commands = [s["with"]["command"] for s in job["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@")]
    assert commands == ["preview"]
    assert not any("pulumi up" in str(s.get("run", "")) for s in job["steps"])


def test_a_fork_pull_request_skips_what_needs_secrets_or_a_writable_token() -> None:
    fork_guard = "github.event.pull_request.head.repo.full_name == github.repository"
    jobs = workflow()["jobs"]
    assert jobs["preview"]["if"] == fork_guard
    comment = next(s for s in jobs["test-and-plan"]["steps"] if s.get("name") == "Comment the plan on the pull request")
    assert comment["if"] == fork_guard


def test_the_plan_is_kept_diffed_and_judged_with_the_committed_pack_config() -> None:
    from tooling.cli import read_pack_config

    steps = workflow()["jobs"]["test-and-plan"]["steps"]
    runs = [str(s.get("run", "")) for s in steps]
    assert any("plan --all --json --policy-pack-config policy-config.json > plan.json" in r for r in runs)
    assert any(
        s.get("uses", "").startswith("actions/upload-artifact@") and "plan.json" in s["with"]["path"].split()
        for s in steps
    )
    # The base branch is planned with this branch's pack config, and compared resource by resource.
    assert any("--policy-pack-config pr-policy-config.json" in r and "cp policy-config.json" in r for r in runs)
    assert any("--against plan-base.json" in r for r in runs)
    assert read_pack_config(ROOT / "policy-config.json") == {"cost-over-budget": "mandatory"}


# --------------------------------------------------------------------------------------------
# The workflow's own shell steps, run as the runner runs them (bash -eo pipefail), on committed plans.


def step(name: str) -> str:
    steps = workflow()["jobs"]["test-and-plan"]["steps"]
    return str(next(s for s in steps if s.get("name") == name)["run"])


def run_step(name: str, folder: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = folder / "step.sh"
    # The expressions GitHub fills in before the shell sees the script.
    script.write_text(step(name).replace("${{ steps.plan.outputs.code }}", "0"))
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": f"{folder / 'bin'}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), **(env or {})},
    )


def fake_tools(folder: Path) -> None:
    """`uv run --frozen modelplane` runs this checkout's command; `gh api` answers from comments.json and logs."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(
        f'#!/bin/sh\nshift 2\n[ "$1" = modelplane ] && shift\nexec {sys.executable} -m tooling.cli "$@"\n'
    )
    (bin_dir / "gh").write_text(
        "#!/bin/sh\n"
        'echo "$*" >> gh-calls.txt\n'
        'expr=""; prev=""\n'
        'for a in "$@"; do [ "$prev" = --jq ] && expr="$a"; prev="$a"; done\n'
        'if [ -n "$expr" ]; then jq -r "$expr" comments.json; fi\n'
    )
    for tool in ("uv", "gh"):
        (bin_dir / tool).chmod(0o755)


def project(folder: Path) -> None:
    """A checkout of this branch: eks-prod's CPU pool on a bigger machine, civo-dev as committed."""
    (folder / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "policy-config.json"):
        (folder / name).write_text((ROOT / name).read_text())
    (folder / "stacks" / "Pulumi.civo-dev.yaml").write_text((ROOT / "stacks" / "Pulumi.civo-dev.yaml").read_text())
    eks = (ROOT / "stacks" / "Pulumi.eks-prod.yaml").read_text()
    assert "instanceType: m7i.2xlarge" in eks
    (folder / "stacks" / "Pulumi.eks-prod.yaml").write_text(
        eks.replace("instanceType: m7i.2xlarge", "instanceType: m7i.4xlarge")
    )


def test_the_workflow_compares_with_the_base_plan_and_keeps_one_comment(tmp_path: Path) -> None:
    project(tmp_path)
    fake_tools(tmp_path)
    # The base branch's plans: the committed golden plans of the same stacks.
    base = {
        "stacks": [json.loads((ROOT / "tests" / "golden" / f"{s}.json").read_text()) for s in ("civo-dev", "eks-prod")]
    }
    (tmp_path / "plan-base.json").write_text(json.dumps(base))

    compared = run_step("Compare with the base branch's plan", tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert (tmp_path / "plan-changes.code").read_text().strip() == "1"  # the protected replace
    written = run_step("Write the plan comment", tmp_path)
    assert written.returncode == 0, written.stderr
    comment = (tmp_path / "comment.md").read_text()
    lines = comment.splitlines()
    assert lines[0] == "<!-- modelplane offline plan -->"
    rows = [line for line in lines if line.startswith("| civo-dev") or line.startswith("| eks-prod")]
    civo = len(base["stacks"][0]["resources"])
    eks = len(base["stacks"][1]["resources"])
    assert rows == [
        f"| civo-dev | 0 | 0 | 0 | 0 | {civo} | clean |",
        # The CPU class's machine changes: its on-demand and spot pools are both replaced.
        f"| eks-prod | 0 | 1 | 2 | 0 | {eks - 3} | rejected |",
    ]
    assert any(
        "cannot replace 2 protected resource(s): eks-us-east-1-cpu (aws:eks/nodeGroup:NodeGroup); "
        "eks-us-east-1-cpu-spot (aws:eks/nodeGroup:NodeGroup)" in line
        for line in lines
    )
    assert "<details><summary>All 3 changes</summary>" in lines
    assert (
        "+- replace eks-prod/eks-us-east-1-cpu (aws:eks/nodeGroup:NodeGroup): replaced by instanceTypes[0] [protected]"
        in lines
    )

    env = {"GH_TOKEN": "t", "PR": "7", "REPO": "o/r"}
    (tmp_path / "comments.json").write_text(json.dumps([{"id": 11, "body": "an unrelated comment"}]))
    assert run_step("Comment the plan on the pull request", tmp_path, env).returncode == 0
    (tmp_path / "comments.json").write_text(json.dumps([{"id": 11, "body": "x"}, {"id": 12, "body": comment}]))
    assert run_step("Comment the plan on the pull request", tmp_path, env).returncode == 0
    calls = [c for c in (tmp_path / "gh-calls.txt").read_text().splitlines() if "--method" in c]
    assert calls == [
        "api --method POST repos/o/r/issues/7/comments -F body=@comment.md",
        "api --method PATCH repos/o/r/issues/comments/12 -F body=@comment.md",
    ]

    failed = run_step("Fail on a rejected plan", tmp_path)
    assert failed.returncode == 1 and "::error::" in failed.stdout and "protected" in failed.stdout


def test_the_comment_drops_whole_lines_past_its_limit_and_says_so(tmp_path: Path) -> None:
    changes = [
        {
            "op": "update",
            "urn": f"u{i}",
            "type": "kubernetes:helm.sh/v3:Release",
            "name": f"r{i}",
            "paths": [f"values.key{j}" for j in range(8)],
            "protected": False,
        }
        for i in range(2000)
    ]
    doc = {"stacks": [{"stack": "big", "ok": True, "changes": changes}]}
    (tmp_path / "plan-changes.json").write_text(json.dumps(doc))
    (tmp_path / "plan-changes.code").write_text("0\n")
    (tmp_path / "plan-changes.log").write_text("")
    written = run_step("Write the plan comment", tmp_path)
    assert written.returncode == 0, written.stderr
    comment = (tmp_path / "comment.md").read_text()
    assert len(comment.encode()) < 65536
    block = comment.split("```\n", 1)[1].split("\n```", 1)[0].splitlines()
    shown, note = block[:-1], block[-1]
    full = [
        f"~ update big/r{i} (kubernetes:helm.sh/v3:Release): " + ", ".join(f"values.key{j}" for j in range(8))
        for i in range(2000)
    ]
    assert shown == full[: len(shown)] and 0 < len(shown) < 2000
    assert note == f"... {2000 - len(shown)} more line(s) left out here: the full list is in the plan artifact"
