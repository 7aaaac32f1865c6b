"""Shared fixtures: fleets as plain dicts, run through the real program under mocks."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from infra.config.model import Fleet
from infra.config.stackfile import parse_fleet
from program.main import run
from tooling.mockrun import MockRun, Registration, run_under_mocks
from tooling.stackconfig import runtime_config

# Example cluster and machine blocks per provisioned cloud, shared by the tests that build fleets.
CLUSTER_BLOCKS: dict[str, dict[str, Any]] = {
    "GKE": {"project": "my-project", "region": "us-central1", "kubernetesVersion": "1.36"},
    "EKS": {"region": "us-east-1", "kubernetesVersion": "1.36"},
    "AKS": {"location": "eastus", "kubernetesVersion": "1.36"},
    "Civo": {"region": "LON1", "kubernetesVersion": "1.36.0-k3s1"},
    "Vultr": {"region": "ewr", "kubernetesVersion": "v1.36.1+3"},
    "Nebius": {"projectId": "project-e00test", "region": "eu-north1", "kubernetesVersion": "1.36"},
    "DigitalOcean": {"region": "nyc2", "kubernetesVersion": "1.36.1-do.0"},
    "OCI": {"compartmentId": "ocid1.compartment.oc1..test", "region": "us-ashburn-1", "kubernetesVersion": "v1.36.1"},
}
GPU_BLOCKS: dict[str, dict[str, Any]] = {
    "GKE": {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-l4", "count": 1}},
    "EKS": {"instanceType": "g6.xlarge", "accelerator": {"type": "nvidia-l4", "count": 1}},
    "AKS": {"vmSize": "Standard_NC24ads_A100_v4", "accelerator": {"type": "nvidia-a100", "count": 1}},
    "Civo": {"size": "an.g1.l40s.kube.x1", "accelerator": {"type": "nvidia-l40s", "count": 1}},
    "Vultr": {"plan": "vcg-l40s-16c-180g-48vram", "accelerator": {"type": "nvidia-l40s", "count": 1}},
    "Nebius": {
        "platform": "gpu-h100-sxm",
        "preset": "1gpu-16vcpu-200gb",
        "accelerator": {"type": "nvidia-h100-80gb", "count": 1},
    },
    "DigitalOcean": {"size": "gpu-l40sx1-48gb", "accelerator": {"type": "nvidia-l40s", "count": 1}},
    "OCI": {"shape": "BM.GPU.L40S.4", "accelerator": {"type": "nvidia-l40s", "count": 4}},
}
CPU_BLOCKS: dict[str, dict[str, Any]] = {
    "GKE": {"machineType": "c3-standard-8"},
    "EKS": {"instanceType": "m7i.2xlarge"},
    "AKS": {"vmSize": "Standard_D8s_v5"},
    "Civo": {"size": "g4p.kube.medium"},
    "Vultr": {"plan": "vc2-8c-32gb"},
    "Nebius": {"platform": "cpu-d3", "preset": "8vcpu-32gb"},
    "DigitalOcean": {"size": "c-8"},
    "OCI": {"shape": "VM.Standard.E5.Flex", "ocpus": 4, "memoryInGbs": 32},
}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say it last, where it is read, when a tier was skipped for a missing tool (tests/tools.py)."""
    from tests.tools import NOT_RUN

    said = set()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        message = longrepr[-1] if isinstance(longrepr, tuple) else str(longrepr or "")
        if NOT_RUN in message:
            said.add(message.removeprefix("Skipped: "))
    for message in sorted(said):
        terminalreporter.write_sep("!", message, red=True, bold=True)


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


def assert_protected_but_providers(result: MockRun) -> None:
    """`modelplane:protect` covers everything a cluster registers except its providers
    (`ClusterComponent.provider_options` says why), the cluster component itself included."""
    providers = [r for r in result.resources if r.type.startswith("pulumi:providers:")]
    assert providers, "the run registered no provider"
    assert [r.name for r in providers if r.protect] == []
    assert [r.name for r in result.resources if r not in providers and not r.protect] == []


def cpu_cluster_fleet(source: str, *names: str) -> dict[str, Any]:
    """Clusters of one source, each with one CPU pool (of the cloud's example machine, when provisioned)."""
    existing = source == "Existing"
    return {
        "classes": [cpu_class("cpu", None) if existing else cpu_class("cpu", source, CPU_BLOCKS[source])],
        "clusters": [
            {
                "name": name,
                "source": source,
                source.lower(): {"kubernetesVersion": "1.36"} if existing else CLUSTER_BLOCKS[source],
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
            for name in names
        ],
    }


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
    from tooling.mockrun import _reset_runtime

    _reset_runtime()
    yield
    _reset_runtime()


def cloud_fleet(source: str, cluster: str, deployments: list[dict[str, Any]]) -> dict[str, Any]:
    """A cluster `cluster` of `source` with a `gpu` and a `cpu` pool of the cloud's example machines."""
    return {
        "classes": [gpu_class("gpu", source, GPU_BLOCKS[source]), cpu_class("cpu", source, CPU_BLOCKS[source])],
        "clusters": [
            {
                "name": cluster,
                "source": source,
                source.lower(): CLUSTER_BLOCKS[source],
                "nodePools": [{"name": "gpu", "className": "gpu"}, {"name": "cpu", "className": "cpu"}],
            }
        ],
        "deployments": deployments,
    }


def gke_fleet() -> dict[str, Any]:
    """One GKE cluster `prod` with an L4 pool `gpu` (class `l4`) and a CPU pool `cpu` (class `cpu`)."""
    l4 = {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-l4", "count": 1}}
    return {
        "classes": [gpu_class("l4", "GKE", l4), cpu_class("cpu", "GKE", {"machineType": "c3-standard-8"})],
        "clusters": [
            {
                "name": "prod",
                "source": "GKE",
                "gke": {"project": "my-project", "region": "us-central1", "kubernetesVersion": "1.36"},
                "nodePools": [{"name": "gpu", "className": "l4"}, {"name": "cpu", "className": "cpu"}],
            }
        ],
    }


def _unit(item: pytest.Item) -> str:
    """The tests that must stay on one worker: a module's, where the module defines a fixture that
    lives longer than a test (the endpoint picker's cluster); otherwise the test alone."""
    defs = getattr(item, "_fixtureinfo", None)
    module = item.nodeid.split("::")[0]
    for fixturedefs in defs.name2fixturedefs.values() if defs else ():
        if any(d.scope in ("module", "package") and d.baseid == module for d in fixturedefs):
            return module
    return item.nodeid


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start every worker on its share of the engine tier, the local clusters first.

    Under `make test`'s work stealing (pytest-xdist's `worksteal`, xdist/scheduler/worksteal.py at
    3.8.0) each worker is first sent one contiguous share of the collection (`check_schedule`:
    `len(pending) // nodes_remaining`), and an idle worker takes the second half of the longest
    queue. In collection order the engine tier (tests/engine, collected first) was one worker's
    share, so its local-cluster tests of one to three minutes started where that worker reached
    them, the last near the end, and the run ended on one of them alone. Here each share starts
    with an equal part of the local-cluster tests, then of the rest of the engine tier, and the
    quick tests follow, where a worker that runs out takes them from the others."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers < 2:
        return
    engine_tier = [i for i in items if i.nodeid.startswith("tests/engine/")]
    units: dict[str, list[pytest.Item]] = {}
    for item in engine_tier:
        units.setdefault(_unit(item), []).append(item)
    # The local clusters (the `run` fixture, tests/engine/conftest.py) first, in collection order.
    ordered = sorted(units.values(), key=lambda unit: "run" not in getattr(unit[0], "fixturenames", ()))
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for n, unit in enumerate(ordered):
        shares[n % workers].extend(unit)
    rest = [i for i in items if not i.nodeid.startswith("tests/engine/")]
    # Fill each share to the size the scheduler sends (the first shares are the smaller ones).
    remaining = len(items)
    for n, share in enumerate(shares):
        size = remaining // (workers - n)
        remaining -= size
        fill = max(0, size - len(share))
        share.extend(rest[:fill])
        del rest[:fill]
    items[:] = [i for share in shares for i in share] + rest
