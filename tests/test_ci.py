"""What CI needs to preview the committed stacks with the real CLI: decryptable secrets, a stack to preview, a PR comment."""

from __future__ import annotations

import re
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
    assert with_secrets == 2  # byo-amd and recipe-qwen-mi325x


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


def test_a_fork_pull_request_skips_what_needs_secrets_or_a_writable_token() -> None:
    fork_guard = "github.event.pull_request.head.repo.full_name == github.repository"
    jobs = workflow()["jobs"]
    assert jobs["preview"]["if"] == fork_guard
    comment = next(s for s in jobs["test-and-plan"]["steps"] if s.get("name") == "Comment the diff on the pull request")
    assert comment["if"] == fork_guard


def test_the_plan_is_kept_diffed_and_judged_with_the_committed_pack_config() -> None:
    from tooling.cli import read_pack_config

    steps = workflow()["jobs"]["test-and-plan"]["steps"]
    runs = [str(s.get("run", "")) for s in steps]
    assert any("plan --all --json --policy-pack-config policy-config.json > plan.json" in r for r in runs)
    assert any(
        s.get("uses", "").startswith("actions/upload-artifact@") and s["with"]["path"] == "plan.json" for s in steps
    )
    assert any("diff -u plan-base.json plan.json" in r for r in runs)
    assert read_pack_config(ROOT / "policy-config.json") == {"cost-over-budget": "mandatory"}
