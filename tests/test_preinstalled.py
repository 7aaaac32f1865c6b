"""`existing.preinstalled`: components an Existing cluster already runs are left out, their dependents stay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tooling.plan import plan_stack

ROOT = Path(__file__).resolve().parent.parent


def byo_amd(tmp_path: Path, preinstalled: list[str]) -> Path:
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.byo-amd.yaml").read_text())
    doc["config"]["modelplane:clusters"][0]["existing"]["preinstalled"] = preinstalled
    path = tmp_path / "Pulumi.byo-amd.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def releases(doc: dict[str, Any]) -> dict[str, list[str]]:
    return {r["name"]: r["dependsOn"] for r in doc["clusters"][0]["releases"]}


def test_a_preinstalled_component_is_left_out_and_its_dependents_stay(tmp_path: Path) -> None:
    base = plan_stack(ROOT / "stacks" / "Pulumi.byo-amd.yaml")
    doc = plan_stack(byo_amd(tmp_path, ["cert-manager", "kube-prometheus-stack"]))
    assert doc["ok"], doc["errors"] + doc["violations"]
    before, after = releases(base), releases(doc)
    assert set(before) - set(after) == {"mp-cert-manager", "mp-kube-prometheus-stack"}
    # The dependents install still, no longer after a release of ours.
    assert "mp-cert-manager" in before["mp-gateway-helm"] and after["mp-gateway-helm"] == []
    assert after["mp-gpu-operator"] == ["mp-node-feature-discovery"]
    registered = {r["name"] for r in doc["resources"]}
    assert "byo-lab-stack-cert-manager" not in registered and "byo-lab-stack-envoy-gateway" in registered
    # The plan says it relies on the cluster's own copy, who needs it and what they need of it.
    own = {o["key"]: o for o in doc["clusters"][0]["preinstalled"]}
    assert set(own) == {"cert-manager", "kube-prometheus-stack"}
    assert own["cert-manager"]["dependents"] == ["mp-gateway-helm", "mp-gpu-operator", "mp-gpu-operator-charts"]
    assert own["cert-manager"]["needs"] == "cert-manager v1.0.0 or later (the `cert-manager.io/v1` API)"
    assert own["kube-prometheus-stack"]["needs"].startswith("kube-prometheus-stack 84.4.0, the version")


def test_a_name_outside_the_catalog_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    doc = plan_stack(byo_amd(tmp_path, ["cert-manager", "kube-prometheus-stak", "cert-manager"]))
    assert doc["ok"] is False and doc["resources"] == []
    assert [(e["path"], e["message"].split(" (in ")[0]) for e in doc["errors"]] == [
        (
            "clusters[0].existing.preinstalled[1]",
            "'kube-prometheus-stak' is not a serving-stack component of the Existing catalog. "
            "Fix: did you mean 'kube-prometheus-stack'?",
        ),
        ("clusters[0].existing.preinstalled[2]", "'cert-manager' is listed twice. Fix: list each component once"),
    ]
