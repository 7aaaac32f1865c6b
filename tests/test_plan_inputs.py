"""`resources[].inputs` shows inputs as the engine sees them: secrets masked, unknowns marked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pulumi.output import Unknown
from pulumi.runtime import rpc

from tooling.mockrun import OPAQUE_SECRET
from tooling.plan import engine_view

ROOT = Path(__file__).resolve().parent.parent


def test_secret_and_unknown_inputs_are_masked_whatever_is_underneath() -> None:
    inputs = {
        "kubeconfig": rpc.wrap_rpc_secret("apiVersion: v1\nusers: [{user: {token: abc}}]"),
        "endpoint": Unknown(),
        "id": rpc.UNKNOWN,
        "nested": {"list": [rpc.wrap_rpc_secret({"password": "p"}), 3.0, 1.5, "plain"]},
    }
    assert engine_view(inputs) == {
        "kubeconfig": "[secret]",
        "endpoint": "[unknown]",
        "id": "[unknown]",
        "nested": {"list": ["[secret]", 3, 1.5, "plain"]},
    }


@pytest.mark.parametrize("golden", sorted((ROOT / "tests" / "golden").glob("*.json")), ids=lambda p: p.stem)
def test_no_plan_shows_a_secret_value(golden: Path) -> None:
    doc = json.loads(golden.read_text(encoding="utf-8"))
    text = json.dumps(doc["resources"])
    assert OPAQUE_SECRET not in text
    assert '"token": "mock"' not in text  # the mock kubeconfig's credential
    kubeconfigs = [r["inputs"]["kubeconfig"] for r in doc["resources"] if r["type"] == "pulumi:providers:kubernetes"]
    assert kubeconfigs and set(kubeconfigs) == {"[secret]"}
