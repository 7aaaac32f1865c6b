"""Generated files are current: docs from code, golden plans from stacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tooling.cli import display_path, stack_files
from tooling.generated import generated_docs
from tooling.plan import plan_stack

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "run `make docs` (modelplane docs) and commit the result"


@pytest.mark.parametrize("path", sorted(generated_docs()))
def test_generated_doc_is_current(path: str) -> None:
    committed = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).exists() else ""
    assert committed == generated_docs()[path], f"{path} is stale: {REGENERATE}"


@pytest.mark.parametrize("path", stack_files(), ids=lambda p: p.name)
def test_every_stack_in_stacks_plans_clean(path: Path) -> None:
    doc = plan_stack(path, display=display_path(path))
    assert doc["ok"], (doc["errors"], doc["violations"])


# Golden plans pin the example stacks this repository ships; a stack someone adds to stacks/ has
# no golden plan and is checked only by the test above.
GOLDEN = sorted((ROOT / "tests" / "golden").glob("*.json"))


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.stem)
def test_example_stack_matches_its_golden_plan(golden: Path) -> None:
    path = ROOT / "stacks" / f"Pulumi.{golden.stem}.yaml"
    assert path.is_file(), f"golden plan {golden.name} has no stack file: remove it or restore {path.name}"
    doc = plan_stack(path, display=display_path(path))
    expected = json.loads(golden.read_text(encoding="utf-8"))
    assert json.loads(json.dumps(doc)) == expected, (
        f"plan of {doc['stack']} changed: run `make golden` and review the diff"
    )
