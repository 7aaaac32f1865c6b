"""`make demo`'s choices, without a cluster: the runs themselves are test_real_up.py's."""

from __future__ import annotations

import pytest

from tests.engine import demo


def test_the_demo_offers_the_existing_example_stacks_and_only_those() -> None:
    stacks = demo.existing_stacks()
    assert demo.DEFAULT_STACK in stacks
    assert {"byo-amd", "byo-mixed", "recipe-qwen-mi325x"} <= set(stacks)
    assert not {"gke-prod", "eks-prod", "civo-dev"} & set(stacks)


def test_a_stack_that_is_not_existing_is_refused_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--stack", "gke-prod"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stacks/Pulumi.gke-prod.yaml: not an Existing example stack; choose one of: ")
    assert "byo-mixed" in err
