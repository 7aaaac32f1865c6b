"""A chart is one row: schedulability, the placement audit and the stand-in charts read the row alone."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from clouds import machine
from infra.checks.schedulable import most_pod_memory, node_agents_memory
from infra.facts import derive_fleet
from infra.formats import parse_quantity
from infra.reservations import MIB
from infra.serving.catalog import CATALOG, node_agents, release_values
from infra.serving.chart import Chart, DeviceClass, NodeAgent
from tests.conftest import fleet_of, gke_fleet
from tests.engine.standins import files_of
from tooling.placement import audit

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("infra", "clouds", "components", "policies", "program", "tooling")

# A chart no cloud installs: one node agent for the GPU pools that asks for memory and tolerates every
# taint, and a DeviceClass.
FAKE = Chart(
    "fake-agent",
    "fake-agent",
    "https://charts.example",
    "1.0.0",
    "fake",
    values={"daemon": {"tolerations": [{"operator": "Exists"}]}},
    agents=(
        NodeAgent(
            "daemon",
            serves="gpu",
            confined=True,
            tolerations=("daemon", "tolerations"),
            node_selectors=(("daemon", "nodeSelector"),),
            memory="100Mi",
            listed=99,
        ),
    ),
    device_class=DeviceClass("fake.example.com", "device.driver == 'fake.example.com'"),
)


def test_every_node_agent_carries_its_values_paths_memory_and_release_on_its_row() -> None:
    for cloud, rows in CATALOG.items():
        for row in rows:
            for agent in row.node_agents:
                assert agent.release == row.release, (cloud, row.key)
                assert agent.workload and agent.tolerations, (cloud, row.key)
                assert all(agent.node_selectors), (cloud, row.key)
                assert agent.roles, (cloud, row.key)
                assert not agent.memory or parse_quantity(agent.memory) is not None, (cloud, row.key)
    listed = [a.listed for a in node_agents()]
    assert len(set(listed)) == len(listed) and all(n > 0 for n in listed)


def test_no_product_module_spells_a_catalog_charts_release_name() -> None:
    # `Chart.release` is the one place the `mp-<chart>` rule is applied.
    names = {c.release for rows in CATALOG.values() for c in rows}
    literal = re.compile(r"""["'](mp-[a-z0-9-]+)["']""")
    found = [
        (str(path.relative_to(ROOT)), name)
        for folder in PRODUCT
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name in literal.findall(path.read_text(encoding="utf-8"))
        if name in names
    ]
    standins = (ROOT / "tests" / "engine" / "standins.py").read_text(encoding="utf-8")
    found += [("tests/engine/standins.py", n) for n in literal.findall(standins) if n in names]
    assert found == []


def test_a_row_added_to_the_catalog_reaches_schedulability_placement_and_its_stand_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cf = derive_fleet(fleet_of(gke_fleet()))[0]
    gpu, cpu = cf.pool("gpu"), cf.pool("cpu")
    assert gpu.machine is not None
    row = machine("GKE", gpu.machine)
    assert row is not None
    before = (node_agents_memory(cf, gpu), node_agents_memory(cf, cpu), most_pod_memory("GKE", row, "GPU"))

    monkeypatch.setitem(CATALOG, "GKE", [*CATALOG["GKE"], FAKE])

    assert node_agents_memory(cf, gpu) == before[0] + 100 * MIB
    assert node_agents_memory(cf, cpu) == before[1]
    assert most_pod_memory("GKE", row, "GPU") == before[2] - Decimal(100 * MIB)
    report = audit(cf, release_values(cf), [])
    assert report.lands_on("mp-fake-agent", "daemon")
    assert ("wildcard-toleration", "mp-fake-agent/daemon") in {(v.check, v.subject) for v in report.violations}
    files = files_of(FAKE)
    assert {"templates/daemon.yaml", "templates/deviceclass.yaml"} <= set(files)
    assert "fake.example.com" in files["templates/deviceclass.yaml"]
