"""Values written the way people write them elsewhere: a size without its unit, a budget with a
currency sign, a route path with a trailing slash, a cache smaller than the model.

Each is refused at its path with a fix that spells the value to write; the test writes that value
where the error points and plans the stack again, which must then be clean. The stack is the
committed nebius-prod example (Qwen2.5-72B on eight H100s, a 300Gi cache, a service at /qwen72b).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling.plan import plan_stack

ROOT = Path(__file__).resolve().parent.parent
FILE = "Pulumi.test.yaml"


def example() -> dict[str, Any]:
    """The nebius-prod stack's config, keyed without the `modelplane:` prefix."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.nebius-prod.yaml").read_text(encoding="utf-8"))
    return {k.removeprefix("modelplane:"): v for k, v in doc["config"].items()}


def plan(tmp_path: Path, fleet: dict[str, Any]) -> dict[str, Any]:
    path = tmp_path / FILE
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in fleet.items()}}), encoding="utf-8")
    return plan_stack(path, display=FILE)


def parts(path: str) -> list[str | int]:
    """`deployments[0].cache.size` as `["deployments", 0, "cache", "size"]`."""
    return [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]


def put(fleet: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = parts(path)
    node: Any = fleet
    for part in parents:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[last] = value


def apply_fix(fleet: dict[str, Any], error: dict[str, str]) -> None:
    """Write the `key: value` the error's fix ends with at the error's path."""
    fix = re.search(r"Fix: .*?(\w+): (\S+) \(in " + re.escape(FILE) + r"\)$", error["message"])
    assert fix is not None, error["message"]
    assert error["path"].endswith(fix[1]), (error["path"], fix[1])
    put(fleet, error["path"], yaml.safe_load(f"{fix[1]}: {fix[2]}")[fix[1]])


def refused_then_clean(tmp_path: Path, fleet: dict[str, Any], path: str, message: str) -> None:
    doc = plan(tmp_path, fleet)
    assert doc["errors"] == [{"path": path, "message": f"{message} (in {FILE})"}]
    apply_fix(fleet, doc["errors"][0])
    fixed = plan(tmp_path, fleet)
    assert (fixed["ok"], fixed["errors"]) == (True, []), fixed["violations"]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # A bare number is bytes; the fix keeps the number and spells the unit.
        (
            "deployments[0].memory",
            24,
            "24 has no unit, so Kubernetes reads it as 24 bytes. Fix: write the unit: memory: 24Gi",
        ),
        (
            "deployments[0].memory",
            "262144",
            "'262144' has no unit, so Kubernetes reads it as 262144 bytes. Fix: write the unit: memory: 262144Mi",
        ),
        (
            "deployments[0].cache.size",
            "300",
            "'300' has no unit, so Kubernetes reads it as 300 bytes. Fix: write the unit: size: 300Gi",
        ),
        (
            "deployments[0].shmSize",
            16,
            "16 has no unit, so Kubernetes reads it as 16 bytes. Fix: write the unit: shmSize: 16Gi",
        ),
    ],
)
def test_a_size_without_its_unit_is_refused_with_the_unit_and_the_fix_plans_clean(
    tmp_path: Path, path: str, value: Any, message: str
) -> None:
    fleet = example()
    put(fleet, path, value)
    refused_then_clean(tmp_path, fleet, path, message)


def test_a_bare_byte_count_of_a_gibibyte_or_more_is_taken_as_written(tmp_path: Path) -> None:
    fleet = example()
    put(fleet, "deployments[0].memory", str(256 * 2**30))
    doc = plan(tmp_path, fleet)
    assert (doc["ok"], doc["errors"]) == (True, [])


def test_a_cache_smaller_than_the_models_weights_is_refused_with_a_size_that_holds_them(tmp_path: Path) -> None:
    fleet = example()
    put(fleet, "deployments[0].cache.size", "20Gi")
    refused_then_clean(
        tmp_path,
        fleet,
        "deployments[0].cache.size",
        "cache size 20Gi is less than the 33.5 GiB the weights of model 'Qwen/Qwen2.5-72B-Instruct' take even at "
        "4 bits a weight (72B parameters): the download would fill the volume and the engine stop before it "
        "serves. Fix: set size above the model's checkpoint with room to spare, e.g. size: 170Gi",
    )


@pytest.mark.parametrize(
    ("written", "plain"),
    [("$500,000", "500000"), ("500000 USD", "500000"), ("half a million", "5000")],
)
def test_a_budget_written_as_money_is_refused_with_the_plain_number(tmp_path: Path, written: str, plain: str) -> None:
    fleet = example()
    fleet["budget"] = {"monthlyUsd": written}
    message = (
        f"'{written}' is not a plain number. Fix: write the amount in USD without a currency sign, unit or "
        f"thousands separator: monthlyUsd: {plain}"
    )
    if plain == "5000":  # no number to keep: the fix shows the form, which this stack's cost exceeds
        assert plan(tmp_path, fleet)["errors"] == [{"path": "budget.monthlyUsd", "message": f"{message} (in {FILE})"}]
        return
    refused_then_clean(tmp_path, fleet, "budget.monthlyUsd", message)


@pytest.mark.parametrize(("written", "plain"), [("/qwen72b/", "/qwen72b"), ("/team/qwen72b//", "/team/qwen72b")])
def test_a_route_path_with_a_trailing_slash_is_refused_with_the_path_without_it(
    tmp_path: Path, written: str, plain: str
) -> None:
    fleet = example()
    put(fleet, "services[0].path", written)
    refused_then_clean(
        tmp_path,
        fleet,
        "services[0].path",
        f"'{written}' ends with '/': a route's path prefix is written without one (the gateway ignores it, and "
        f"{plain} matches {plain}/ and every path under it). Fix: drop the trailing slash: path: {plain}",
    )


def test_a_number_written_with_words_around_it_gets_a_fix_that_says_to_write_it_plain(tmp_path: Path) -> None:
    fleet = example()
    fleet["deployments"][0]["autoscaling"] = {
        "maxReplicas": 2,
        "metric": "RequestsWaiting",
        "target": "5 requests",
    }
    [error] = plan(tmp_path, fleet)["errors"]
    assert error["path"] == "deployments[0].autoscaling.target"
    assert error["message"].endswith(
        "(got '5 requests'). Fix: write a plain number, without a unit, currency sign or thousands separator "
        f"(in {FILE})"
    )


def test_a_gpu_memory_capacity_without_its_unit_is_refused_and_the_unit_plans_clean(tmp_path: Path) -> None:
    """A device's `memory` capacity is bytes as the DRA drivers publish it; `196592` is 192 KiB of GPU."""
    from tests.test_regions_and_names import assert_clean, only_error, plan_with

    def memory(value: Any) -> Any:
        def change(config: dict[str, Any]) -> None:
            config["modelplane:classes"][1]["devices"][0]["capacity"]["memory"] = {"value": value}

        return change

    error = only_error(plan_with(tmp_path, "byo-mixed", memory(196592)))
    assert error["path"] == "classes[1].devices[0].capacity"
    assert "'196592' has no unit, so Kubernetes reads it as 196592 bytes" in error["message"]
    assert "Fix: write the unit: memory: {value: 196592Mi}" in error["message"]
    assert_clean(plan_with(tmp_path, "byo-mixed", memory("196592Mi")))
