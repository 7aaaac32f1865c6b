"""The tests' lists of clouds come from the registry, so a new cloud runs every "for every cloud" test.

A hand-written tuple of cloud names drifts: one that left out OCI kept the GPU Operator value
tests from ever running there. A test about every cloud takes `clouds.SOURCES` (or `CLOUDS`,
`BY_SOURCE`); a test about some clouds filters the registry by the profile field it is about
(`profile(c).provisioned`, `profile(c).nvidia.managed_operator`). This test reads every test module
and reports a literal list, tuple or set of three or more cloud names that is not the registry's
clouds. A literal subset is reported even when it equals some profile field's filter today: it
names no field, so nothing keeps it equal (the list of provisioned clouds that left out OCI
matched the clouds with a scale-from-zero statement, by chance).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from clouds import CLOUDS, SOURCES

TESTS = Path(__file__).resolve().parent
# Every cloud name the registry knows; a list naming three of these is a list of clouds.
CLOUD_NAMES = frozenset(SOURCES)
SHORTEST_LIST = 3


def cloud_lists(source: str) -> Iterator[tuple[int, list[str]]]:
    """(line, names) of each literal list, tuple or set in `source` made only of three or more cloud names."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.List | ast.Tuple | ast.Set):
            continue
        names = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in CLOUD_NAMES]
        if len(names) >= SHORTEST_LIST and len(names) == len(node.elts):
            yield node.lineno, names


def drifting_lists(source: str) -> list[tuple[int, list[str]]]:
    """The cloud lists in `source` that are not the registry's clouds."""
    return [(line, names) for line, names in cloud_lists(source) if frozenset(names) != CLOUD_NAMES]


def test_no_test_module_spells_a_cloud_list_other_than_the_registrys() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}: {names}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, names in drifting_lists(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_a_hand_written_cloud_list_that_leaves_a_cloud_out_is_reported() -> None:
    every = ", ".join(f'"{s}"' for s in SOURCES)
    provisioned = ", ".join(f'"{c.source}"' for c in CLOUDS if c.profile.provisioned)
    all_but_oci = ", ".join(f'"{s}"' for s in SOURCES if s != "OCI")
    module = f"EVERY = ({every})\nPROVISIONED = [{provisioned}]\nDRIFTED = ({all_but_oci})\n"
    assert [line for line, _ in drifting_lists(module)] == [2, 3]
    # A list of a few clouds with expectations beside them is a table, not a cloud list.
    assert drifting_lists('CASES = [("GKE", 1), ("EKS", 2), ("AKS", 3)]\nMIXED = ("GKE", "EKS", "AKS", 0)\n') == []
