"""The checks (`infra.checks`): run once per plan, the plan handing the program the stack it checked,
and never told the stack file's name, which is attached where their issues are reported."""

from __future__ import annotations

import ast
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


def test_no_check_takes_the_file_name() -> None:
    takes = [
        f"{path.relative_to(ROOT)}:{node.lineno} {getattr(node, 'name', 'lambda')}"
        for path in sorted((ROOT / "infra" / "checks").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        and any(a.arg == "file" for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs])
    ]
    assert takes == []
