"""The plan and the program run the checks once per run: the plan hands the program the stack it checked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import infra.checks.guard
from tooling.plan import plan_stack

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("stack", ["civo-dev", "byo-mixed"])
def test_an_offline_plan_runs_the_checks_once(monkeypatch: pytest.MonkeyPatch, stack: str) -> None:
    runs: list[str] = []
    supply: Callable[..., Any] = infra.checks.guard.supply_fleet

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append(stack)
        return supply(*args, **kwargs)

    # Every run of `check` begins with the supply; a program that checked the fleet again would count twice.
    monkeypatch.setattr(infra.checks.guard, "supply_fleet", counted)
    doc = plan_stack(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    assert doc["ok"], doc["errors"]
    assert doc["resources"], "the program ran and registered the fleet"
    assert runs == [stack]
