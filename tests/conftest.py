"""Shared fixtures: fleets as plain dicts, run through the real program under mocks."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from infra.config import Fleet, parse_fleet
from infra.mockrun import MockRun, Registration, run_under_mocks
from infra.program import run
from infra.stackconfig import runtime_config


def run_fleet(
    raw: Mapping[str, Any], stack: str = "test", secrets: Mapping[str, str] | None = None, preview: bool = False
) -> MockRun:
    """Run the program under mocks with `raw` as the stack's `modelplane:` config."""
    if secrets is None:
        secrets = (
            {"kubeconfig": "opaque"} if any(c.get("source") == "Existing" for c in raw.get("clusters", [])) else {}
        )
    config, secret_keys = runtime_config(raw, secrets)
    return run_under_mocks(run, stack, config, secret_keys, preview=preview)


def fleet_of(raw: Mapping[str, Any]) -> Fleet:
    return parse_fleet(copy.deepcopy(dict(raw)), "Pulumi.test.yaml")


def of_type(result: MockRun, type_token: str) -> list[Registration]:
    return [r for r in result.resources if r.type == type_token]


def named(result: MockRun, name: str) -> Registration:
    found = [r for r in result.resources if r.name == name]
    assert len(found) == 1, f"expected one resource named {name}, got {[r.name for r in result.resources]}"
    return found[0]


def gpu_class(
    name: str, provider: str, block: dict[str, Any], driver: str = "gpu.nvidia.com", count: int = 1
) -> dict[str, Any]:
    return {
        "name": name,
        "devices": [{"name": "gpu", "driver": driver, "deviceClassName": driver, "count": count}],
        "provisioning": {"provider": provider, provider.lower(): block},
    }


def cpu_class(name: str, provider: str | None, block: dict[str, Any] | None = None, cpus: str = "6") -> dict[str, Any]:
    cls: dict[str, Any] = {
        "name": name,
        "devices": [
            {
                "name": "cpu",
                "driver": "dra.cpu",
                "deviceClassName": "dra.cpu",
                "capacity": {"dra.cpu/cpu": {"value": cpus}},
            }
        ],
    }
    if provider is not None:
        cls["provisioning"] = {"provider": provider, provider.lower(): block or {}}
    return cls


@pytest.fixture(autouse=True)
def _isolated_runtime() -> Iterator[None]:
    """Each test starts from clean Pulumi runtime settings and a fresh event loop."""
    from infra.mockrun import _reset_runtime

    _reset_runtime()
    yield
    _reset_runtime()
