"""Property tests over generated fleets.

The strategy builds fleets that keep every device rule (each pool has a class of its own, whose
vendor, GPU count and provisioning block match its cluster's cloud), so a valid fleet must be
accepted and its pools marked by role. Then one pool's class is broken in exactly one way, and
exactly that rule must fire, on exactly that pool, with the message of that check.
"""

from __future__ import annotations

import copy
import re
import sys
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from clouds import CLOUDS, PROVISIONED
from infra.checks import devices
from infra.checks.devices import (
    ACCELERATOR_DRIVER_MISMATCH,
    CLASS_PROVIDER_MISMATCH,
    UNSUPPORTED_DEVICES,
    Violation,
    check_fleet,
)
from infra.config.model import Fleet
from infra.facts import CPU_LABEL, GPU_LABEL, POOL_LABEL, VENDOR_TAINT_KEY, derive_fleet
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, fleet_of

# The provisioned clouds that serve NVIDIA GPUs only: a class breaks the same rules on each (a cloud
# that sells AMD machines too judges an AMD accelerator by its own rules).
PROVIDERS = [c.source for c in PROVISIONED if c.profile.gpu_vendors == ("nvidia",)]
SOURCES = [*PROVIDERS, *(c.source for c in CLOUDS if not c.provisioned)]
# The keys that name a machine in each cloud's machine block (Nebius: platform and preset).
MACHINE_KEYS = {
    c.source: [f.alias or name for name, f in c.machine_block.model_fields.items() if f.is_required()]
    for c in PROVISIONED
    if c.machine_block is not None
}
NVIDIA, AMD, CPU, NET = "gpu.nvidia.com", "gpu.amd.com", "dra.cpu", "dra.net"
# Kept modest: the suite runs on shared machines (about two seconds for both tests).
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def device(name: str, driver: str, count: int = 1) -> dict[str, Any]:
    return {"name": name, "driver": driver, "deviceClassName": driver, "count": count}


@st.composite
def pool_class(draw: st.DrawFn, name: str, source: str, kind: str | None = None) -> dict[str, Any]:
    """A class (of `kind`, or any) that keeps every rule on a cluster of `source`."""
    kinds = ["nvidia", "cpu"] + (["amd", "byo-driver"] if source == "Existing" else [])
    kind = kind or draw(st.sampled_from(kinds))
    count = draw(st.integers(1, 8))
    devices = {
        "nvidia": [device("gpu", NVIDIA, count)],
        "amd": [device("gpu", AMD, count)],
        "cpu": [device("cpu", CPU)],
        "byo-driver": [device("tpu", "tpu.example.com")],
    }[kind]
    if kind == "nvidia" and source == "EKS" and draw(st.booleans()):
        devices.append(device("efa", NET, draw(st.integers(1, 4))))  # EFA rides along, EKS only
    if draw(st.booleans()):
        devices.append({"name": "nic", "claim": "Synthetic", "driver": "nic.nvidia.com", "count": 8})
    cls: dict[str, Any] = {"name": name, "devices": devices}
    if source in PROVIDERS:
        block: dict[str, Any] = dict(CPU_BLOCKS[source])
        if kind == "nvidia":
            block["accelerator"] = {"type": draw(st.sampled_from(["nvidia-l4", "nvidia-h100"])), "count": count}
        cls["provisioning"] = {"provider": source, source.lower(): block}
    elif draw(st.booleans()):
        # An Existing cluster ignores provisioning, even another cloud's and a mismatched one.
        other = draw(st.sampled_from(PROVIDERS))
        block = dict(CPU_BLOCKS[other], accelerator={"type": "amd-mi300x", "count": count + 1})
        cls["provisioning"] = {"provider": other, other.lower(): block}
    return cls


@st.composite
def valid_fleet(draw: st.DrawFn) -> dict[str, Any]:
    classes: list[dict[str, Any]] = []
    clusters = []
    for k in range(draw(st.integers(1, 3))):
        source = draw(st.sampled_from(SOURCES))
        pools = []
        for j in range(draw(st.integers(1, 3))):
            name = f"c{k}-{j}"
            classes.append(draw(pool_class(name, source)))
            pools.append({"name": f"p{j}", "className": name})
        block = CLUSTER_BLOCKS.get(source, {})
        clusters.append({"name": f"k{k}", "source": source, source.lower(): dict(block), "nodePools": pools})
    return {"classes": classes, "clusters": clusters}


def kind_of(cls: dict[str, Any]) -> str:
    drivers = {d["driver"] for d in cls["devices"] if d.get("claim", "DRA") == "DRA"}
    return "cpu" if drivers == {CPU} else "nvidia" if NVIDIA in drivers else "amd" if AMD in drivers else "byo"


def breaks_for(source: str, cls: dict[str, Any]) -> list[str]:
    """The single-rule breaks that apply to a class on a cluster of `source`."""
    kind = kind_of(cls)
    out = []
    if source in PROVIDERS:
        out += ["other-provider", "no-provisioning"]
        if source != "EKS" or kind == "nvidia":
            out += ["unsupported-driver"]
        if kind == "nvidia":
            out += ["drop-accelerator", "fewer-gpus", "more-gpus", "wrong-vendor", "add-dra-cpu"]
        if kind == "cpu":
            out += ["cpu-with-accelerator"]
    else:
        if kind in ("nvidia", "amd"):
            out += ["second-vendor", "add-dra-cpu"]
    return out


# (policy, the check's message) per break; each message identifies one check of that policy.
EXPECTED = {
    "other-provider": (CLASS_PROVIDER_MISMATCH, r"the class provisions on \w+ but the cluster's source is \w+"),
    "no-provisioning": (CLASS_PROVIDER_MISMATCH, r"the class has no provisioning but the cluster's source is \w+"),
    "unsupported-driver": (UNSUPPORTED_DEVICES, r"\w+ clusters cannot serve driver (dra\.net|gpu\.amd\.com) \(.*\)"),
    "drop-accelerator": (ACCELERATOR_DRIVER_MISMATCH, r"the class claims gpu\.nvidia\.com but its \w+ block sets no "),
    "fewer-gpus": (ACCELERATOR_DRIVER_MISMATCH, r"the class claims \d+ GPU devices but accelerator\.count is \d+"),
    "more-gpus": (ACCELERATOR_DRIVER_MISMATCH, r"the class claims \d+ GPU devices but accelerator\.count is \d+"),
    "wrong-vendor": (ACCELERATOR_DRIVER_MISMATCH, r"accelerator amd-mi300x is a amd GPU but the class claims gpu"),
    "add-dra-cpu": (ACCELERATOR_DRIVER_MISMATCH, r"the class claims dra\.cpu next to a GPU driver"),
    "cpu-with-accelerator": (ACCELERATOR_DRIVER_MISMATCH, r"the class claims only dra\.cpu but sets accelerator"),
    "second-vendor": (ACCELERATOR_DRIVER_MISMATCH, r"the class claims GPUs of two vendors"),
}


def apply_break(draw: st.DrawFn, how: str, source: str, cls: dict[str, Any]) -> None:
    prov = cls.get("provisioning")
    block = prov[source.lower()] if prov is not None and source in PROVIDERS else None
    gpu = next((d for d in cls["devices"] if d["driver"] in (NVIDIA, AMD)), None)
    if how == "other-provider":
        other = draw(st.sampled_from([p for p in PROVIDERS if p != source]))
        moved = dict(block or {})
        for key in MACHINE_KEYS[source]:
            moved.pop(key, None)
        moved.update(dict.fromkeys(MACHINE_KEYS[other], "m"))
        cls["provisioning"] = {"provider": other, other.lower(): moved}
    elif how == "no-provisioning":
        del cls["provisioning"]
    elif how == "unsupported-driver" and source == "EKS":
        # EKS serves dra.net; AMD GPUs run on Existing clusters only.
        assert block is not None and gpu is not None
        gpu.update(driver=AMD, deviceClassName=AMD)
        block["accelerator"]["type"] = "amd-mi300x"
    elif how == "unsupported-driver":
        cls["devices"].append(device("efa", NET))  # dra.net: installed outside the stack, on EKS only
    elif how == "drop-accelerator":
        assert block is not None
        del block["accelerator"]
    elif how in ("fewer-gpus", "more-gpus"):
        assert block is not None and gpu is not None
        have = block["accelerator"]["count"]
        if how == "fewer-gpus" and have == 1:
            block["accelerator"]["count"] = 2  # one device, two GPUs on the machine
        elif how == "fewer-gpus":
            gpu["count"] = draw(st.integers(1, have - 1))
        else:
            gpu["count"] = have + draw(st.integers(1, 8))
    elif how == "wrong-vendor":
        assert block is not None
        block["accelerator"]["type"] = "amd-mi300x"
    elif how == "add-dra-cpu":
        cls["devices"].append(device("cpu", CPU))
    elif how == "cpu-with-accelerator":
        assert block is not None
        block["accelerator"] = {"type": "nvidia-l4", "count": 1}
    elif how == "second-vendor":
        assert gpu is not None
        cls["devices"].append(device("other-gpu", AMD if gpu["driver"] == NVIDIA else NVIDIA))
    else:
        raise AssertionError(how)


# The kind of class, and the cloud, that each break needs.
NEEDS: dict[str, tuple[str, list[str]]] = {
    "other-provider": ("cpu", PROVIDERS),
    "no-provisioning": ("nvidia", PROVIDERS),
    "unsupported-driver": ("nvidia", PROVIDERS),
    "drop-accelerator": ("nvidia", PROVIDERS),
    "fewer-gpus": ("nvidia", PROVIDERS),
    "more-gpus": ("nvidia", PROVIDERS),
    "wrong-vendor": ("nvidia", PROVIDERS),
    "add-dra-cpu": ("nvidia", SOURCES),
    "cpu-with-accelerator": ("cpu", PROVIDERS),
    "second-vendor": ("amd", ["Existing"]),
}


@st.composite
def broken_fleet(draw: st.DrawFn, how: str) -> tuple[dict[str, Any], str, str]:
    """A valid fleet with one pool's class broken `how`: (fleet, cluster, pool)."""
    raw = draw(valid_fleet())
    classes = {c["name"]: c for c in raw["classes"]}
    candidates = [
        (cluster, pool)
        for cluster in raw["clusters"]
        for pool in cluster["nodePools"]
        if how in breaks_for(cluster["source"], classes[pool["className"]])
    ]
    if not candidates:  # add a cluster with a pool this break applies to
        kind, sources = NEEDS[how]
        source = draw(st.sampled_from(sources))
        cls = draw(pool_class("extra", source, kind))
        raw["classes"].append(cls)
        pool = {"name": "extra", "className": "extra"}
        block = CLUSTER_BLOCKS.get(source, {})
        raw["clusters"].append({"name": "extra", "source": source, source.lower(): dict(block), "nodePools": [pool]})
        classes["extra"] = cls
        candidates = [(raw["clusters"][-1], pool)]
    cluster, pool = draw(st.sampled_from(candidates))
    apply_break(draw, how, cluster["source"], classes[pool["className"]])
    return raw, cluster["name"], pool["name"]


@SETTINGS
@given(valid_fleet())
def test_valid_fleets_are_accepted_and_their_pools_marked_by_role(raw: dict[str, Any]) -> None:
    fleet = fleet_of(raw)  # a ConfigError here fails the test: every generated fleet is valid
    assert check_fleet(fleet) == []
    event(f"pools: {sum(len(c['nodePools']) for c in raw['clusters'])}")
    classes = {c["name"]: c for c in raw["classes"]}
    for cluster, facts in zip(raw["clusters"], derive_fleet(fleet), strict=True):
        system, *pools = facts.pools if cluster["source"] != "Existing" else (None, *facts.pools)
        if system is not None:
            assert (system.name, system.role, system.taints) == ("system", "System", ())
        assert [p.name for p in pools] == [p["name"] for p in cluster["nodePools"]]
        for pool, declared in zip(pools, cluster["nodePools"], strict=True):
            kind = kind_of(classes[declared["className"]])
            assert pool.labels[POOL_LABEL] == pool.name
            keys = {t.key for t in pool.taints}
            if kind == "cpu":
                assert pool.role == "CPU"
                assert pool.accelerator is None and GPU_LABEL not in pool.labels
                assert pool.labels[CPU_LABEL] == "true" and keys == {CPU_LABEL}
            elif kind in ("nvidia", "amd"):
                vendor = kind
                assert (pool.role, pool.vendor) == ("GPU", vendor)
                assert keys == {VENDOR_TAINT_KEY[vendor]}
                assert CPU_LABEL not in pool.labels
                if cluster["source"] != "Existing":
                    assert pool.accelerator is not None and pool.labels[GPU_LABEL] == pool.accelerator.type
            else:
                assert pool.role == "GPU"


@pytest.mark.parametrize("how", sorted(EXPECTED))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_one_broken_rule_is_reported_once_on_the_broken_pool(how: str, data: st.DataObject) -> None:
    raw, cluster, pool = data.draw(broken_fleet(how))
    policy, problem = EXPECTED[how]
    found = check_fleet(fleet_of(copy.deepcopy(raw)))
    assert [(v.policy, v.cluster, v.pool) for v in found] == [(policy, cluster, pool)], (how, found)
    assert re.match(problem, found[0].problem), (how, found[0].problem)


# The properties must earn their name: each planted wrong rule below makes one of them fail. The
# planted runs use their own settings (no example database, so a planted failure is never replayed
# against the real rules) over the same strategies and assertions as the tests above.
PLANTED = settings(
    max_examples=30,
    deadline=None,
    database=None,
    phases=[Phase.generate],  # a planted failure needs finding, not shrinking
    suppress_health_check=[HealthCheck.too_slow],
)


def always_reject(fleet: Fleet) -> list[Violation]:
    """A rule that rejects every pool of every fleet, whatever it claims."""
    return [
        Violation(CLASS_PROVIDER_MISMATCH, c.name, p.name, p.class_name, None, "planted", "none")
        for c in fleet.clusters
        for p in c.node_pools
    ]


def never_reject(fleet: Fleet) -> list[Violation]:
    """A rule that accepts every fleet."""
    return []


def first_pool_only(fleet: Fleet) -> list[Violation]:
    """The real rules, reported on the fleet's first pool whichever pool broke them."""
    first = (fleet.clusters[0].name, fleet.clusters[0].node_pools[0].name)
    return [replace(v, cluster=first[0], pool=first[1]) for v in devices.check_fleet(fleet)]


def run_planted(
    property_test: Any, rule: Any, monkeypatch: pytest.MonkeyPatch, strategies: dict[str, Any], **args: Any
) -> None:
    """Run `property_test`'s body under `rule` in place of the device rules."""
    monkeypatch.setattr(sys.modules[__name__], "check_fleet", rule)
    PLANTED(given(**strategies)(property_test.hypothesis.inner_test))(**args)


def test_the_valid_fleet_property_fails_under_a_rule_that_rejects_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AssertionError):
        run_planted(
            test_valid_fleets_are_accepted_and_their_pools_marked_by_role,
            always_reject,
            monkeypatch,
            {"raw": valid_fleet()},
        )


@pytest.mark.parametrize("rule", [always_reject, never_reject, first_pool_only], ids=lambda r: r.__name__)
def test_the_broken_fleet_property_fails_under_a_rule_that_misses_or_misplaces_a_break(
    rule: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AssertionError):
        run_planted(
            test_one_broken_rule_is_reported_once_on_the_broken_pool,
            rule,
            monkeypatch,
            {"data": st.data()},
            how="fewer-gpus",
        )


def test_the_planted_runs_pass_under_the_real_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the harness above fails because of the planted rule, not of itself."""
    run_planted(
        test_valid_fleets_are_accepted_and_their_pools_marked_by_role,
        devices.check_fleet,
        monkeypatch,
        {"raw": valid_fleet()},
    )
    run_planted(
        test_one_broken_rule_is_reported_once_on_the_broken_pool,
        devices.check_fleet,
        monkeypatch,
        {"data": st.data()},
        how="fewer-gpus",
    )
