"""The serving-stack catalog: which charts each cloud installs, and the rules over its rows.

A chart is a row (`infra.serving.chart.Chart`): adding a chart is adding a row, never a code path.
The rows are data in `infra.serving.rows`, a common part (every cloud) plus one list per cloud;
`catalog_for(cloud)` is their concatenation, and `CATALOG` holds it for every cloud. Values are data
too (`infra.serving.values` builds them per cloud); the ServingStack only turns rows into Helm
releases.

Two rules live here and nowhere else:
- the join (`join_charts`): which rows a cluster installs, from the DRA drivers it claims;
- the dependency rule (`check_dependencies`): filtering can never remove a dependency from under a
  dependent. It runs for every cloud when this module is imported, so a broken catalog cannot load.

`supported_drivers(cloud)` is derived from the tags, plus drivers a cloud installs outside the
stack (`EXTERNAL_DRIVERS`). Which vendors' rows a cloud carries comes from its profile
(`infra.profiles`), and the catalog checks when it loads that its tags give exactly the drivers
the profile says the cloud serves, so the device rules (which read the profile) and the catalog
can never disagree.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from clouds import PROFILES, SOURCES, profile
from infra.facts import ClusterFacts
from infra.placement import exact_tolerations
from infra.serving.chart import Chart, NodeAgent
from infra.serving.mirror import served_from
from infra.serving.rows import AMD_OPERATOR_KEY, NFD_KEY, NVIDIA_OPERATOR_KEY, cloud_rows, common_rows
from infra.vocabulary import AMD_GPU_DRIVER as AMD
from infra.vocabulary import CPU_DRIVER as CPU
from infra.vocabulary import NET_DRIVER as NET
from infra.vocabulary import NVIDIA_GPU_DRIVER as NVIDIA

__all__ = ["AMD", "CPU", "NET", "NVIDIA"]


class CatalogError(Exception):
    """A catalog that breaks a rule; raised when the module loads, naming the rows involved."""


# Drivers a cloud installs outside the serving stack, from its profile. EKS installs aws-dranet
# (`dra.net`) with the cluster when a pool claims it (EFA pools); see clouds/eks/component.py.
EXTERNAL_DRIVERS: Mapping[str, tuple[str, ...]] = {
    c: p.external_drivers for c, p in PROFILES.items() if p.external_drivers
}


def catalog_for(cloud: str) -> list[Chart]:
    if cloud not in SOURCES:
        raise KeyError(f"unknown cloud {cloud!r}; known: {', '.join(SOURCES)}")
    return common_rows(cloud) + cloud_rows(cloud)


# --------------------------------------------------------------------------------------------
# Rules


# The GPU operators: the rows an Existing cluster's owner may already run (`ownerGpuOperator`).
# Two copies of an operator reconcile the same custom resources and fight over every node.
GPU_OPERATOR_KEYS = (NVIDIA_OPERATOR_KEY, AMD_OPERATOR_KEY)


def owner_operator_keys(dra_drivers: Iterable[str] | None) -> frozenset[str]:
    """The rows an owner's GPU operators stand in for (`ownerGpuOperator`), given the drivers claimed.

    Always the operators. Also NFD where the pools claim AMD GPUs and no NVIDIA ones: the AMD
    operator's chart installs its own NFD by default (ROCm/gpu-operator v1.5.1
    helm-charts-k8s/values.yaml, `node-feature-discovery.enabled: true`; Chart.yaml makes it a
    subchart on that condition), nothing else of ours reads NFD's labels there, and two NFD masters
    rewrite each other's node labels. Where NVIDIA is claimed our NFD stays: the NVIDIA DRA
    driver's node affinity reads its `pci-10de` labels, and the owner's operators run with their
    bundled NFD off (docs/existing-clusters.md).
    """
    claimed = set(dra_drivers or ())
    if AMD in claimed and NVIDIA not in claimed:
        return frozenset((*GPU_OPERATOR_KEYS, NFD_KEY))
    return frozenset(GPU_OPERATOR_KEYS)


def join_charts(
    catalog: Sequence[Chart],
    dra_drivers: Iterable[str] | None,
    owner_gpu_operator: bool = False,
    preinstalled: Iterable[str] = (),
    features: Iterable[str] = (),
) -> list[Chart]:
    """The components a cluster installs.

    An untagged component always installs; a tagged one installs only when at least one of its
    drivers is claimed. Unset drivers mean none are claimed: only untagged components install.
    A cluster whose owner runs the GPU operator gets no operator row (nor NFD where only the AMD
    operator would read it: `owner_operator_keys`), and a cluster that already runs a component
    (`existing.preinstalled`) gets no second copy of it: two copies fight over the same CRDs and
    webhooks. The rows that depend on a left-out one still install, against the
    cluster's own copy (`relied_on` says what they need of it). A row for a serving feature
    installs only where a deployment uses the feature: KEDA only where one is autoscaled.
    """
    claimed = set(dra_drivers or ())
    own = set(preinstalled)
    if owner_gpu_operator:
        own |= owner_operator_keys(claimed)
    used = set(features)
    return [
        c
        for c in catalog
        if (not c.dra_drivers or claimed.intersection(c.dra_drivers))
        and (not c.features or used.intersection(c.features))
        and c.key not in own
    ]


def preinstalled_problems(cloud: str, names: Sequence[str]) -> list[tuple[int, str, str]]:
    """`(index, problem, fix)` for each `existing.preinstalled` name that is not a catalog component, or repeats."""
    keys = [c.key for c in CATALOG[cloud]]
    problems = []
    for i, name in enumerate(names):
        if name not in keys:
            close = difflib.get_close_matches(name, keys, n=1)
            fix = f"did you mean '{close[0]}'?" if close else f"use a catalog component key: {', '.join(keys)}"
            problems.append((i, f"'{name}' is not a serving-stack component of the {cloud} catalog", fix))
        elif name in names[:i]:
            problems.append((i, f"'{name}' is listed twice", "list each component once"))
    return problems


def needs_of(row: Chart) -> str:
    """What dependents need of a cluster's own copy of `row`'s chart."""
    return row.needs or f"{row.chart} {row.version}, the version its dependents were checked against"


def relied_on(facts: ClusterFacts) -> list[dict[str, Any]]:
    """The components the cluster runs itself that the stack would have installed, with who needs them and what."""
    catalog = CATALOG[facts.source]
    full = {
        c.key: c for c in join_charts(catalog, facts.dra_drivers, facts.owner_gpu_operator, features=facts.features)
    }
    installed = cluster_charts(facts)
    out = []
    for key in facts.preinstalled:
        row = full.get(key)
        if row is None:
            continue  # not one this cluster's pools would install
        dependents = [c.release for c in installed if key in c.depends_on]
        out.append(
            {
                "key": key,
                "chart": row.chart,
                "pinnedVersion": row.version,
                "dependents": dependents,
                "needs": needs_of(row),
            }
        )
    return out


def check_dependencies(cloud: str, catalog: Sequence[Chart]) -> None:
    """The dependency rule: a dependency is untagged or carries every driver its dependent carries.

    Then whatever set of drivers a cluster claims, the join keeps every dependency of every
    component it keeps. Also rejects duplicate keys, unknown dependencies and cycles.
    """
    by_key: dict[str, Chart] = {}
    problems: list[str] = []
    for c in catalog:
        if c.key in by_key:
            problems.append(f"{cloud}: key '{c.key}' appears twice")
        by_key[c.key] = c
    releases = [c.release for c in catalog]
    for r in {r for r in releases if releases.count(r) > 1}:
        problems.append(f"{cloud}: release name '{r}' appears twice")
    for c in catalog:
        for dep_key in c.depends_on:
            dep = by_key.get(dep_key)
            if dep is None:
                problems.append(f"{cloud}: '{c.key}' depends on '{dep_key}', which the {cloud} catalog does not list")
                continue
            missing = set(c.dra_drivers) - set(dep.dra_drivers)
            if dep.dra_drivers and missing:
                problems.append(
                    f"{cloud}: '{c.key}' (tagged {', '.join(c.dra_drivers)}) depends on '{dep_key}' "
                    f"(tagged {', '.join(dep.dra_drivers)}), which lacks {', '.join(sorted(missing))}: a cluster "
                    f"claiming only {sorted(missing)[0]} would install '{c.key}' without it; untag '{dep_key}' "
                    f"or add the missing tags to it"
                )
    problems.extend(f"{cloud}: {p}" for p in _cycles(by_key))
    if problems:
        raise CatalogError("the serving-stack catalog breaks the dependency rule:\n  " + "\n  ".join(problems))


def _cycles(by_key: Mapping[str, Chart]) -> list[str]:
    state: dict[str, int] = {}
    found: list[str] = []

    def visit(key: str, trail: list[str]) -> None:
        if state.get(key) == 2 or key not in by_key:
            return
        if state.get(key) == 1:
            found.append("dependency cycle " + " -> ".join([*trail[trail.index(key) :], key]))
            return
        state[key] = 1
        for d in by_key[key].depends_on:
            visit(d, [*trail, key])
        state[key] = 2

    for k in by_key:
        visit(k, [])
    return found


def install_order(rows: Sequence[Chart]) -> list[Chart]:
    """Components sorted so each comes after its dependencies (stable otherwise)."""
    by_key = {c.key: c for c in rows}
    done: list[Chart] = []
    seen: set[str] = set()

    def visit(c: Chart) -> None:
        if c.key in seen:
            return
        seen.add(c.key)
        for d in c.depends_on:
            if d in by_key:
                visit(by_key[d])
        done.append(c)

    for c in rows:
        visit(c)
    return done


def supported_drivers(cloud: str) -> list[str]:
    """DRA drivers a cloud can serve: every tag in its catalog plus its external drivers."""
    tags = {d for c in CATALOG[cloud] for d in c.dra_drivers}
    return sorted(tags | set(EXTERNAL_DRIVERS.get(cloud, ())))


def cluster_charts(facts: ClusterFacts) -> list[Chart]:
    """The components this cluster installs: its cloud's catalog joined with its claimed drivers
    and less what the cluster already runs, each from where the stack's chart mirror serves it.

    Every node agent tolerates the cluster's own taints, which its pools' nodes carry
    (`infra.facts.derive_cluster`), and the taints spot pools' nodes carry for how they are bought
    (`ClusterFacts.capacity_taints`: AKS's own, an Existing owner's): a driver or exporter that did
    not would leave the pools without devices or metrics. The controllers need not: they run on the system pool, which carries none.
    """
    joined = join_charts(
        CATALOG[facts.source], facts.dra_drivers, facts.owner_gpu_operator, facts.preinstalled, facts.features
    )
    own_taints = [t.as_json() for t in exact_tolerations((*facts.taints, *facts.capacity_taints))]
    return [served_from(c, facts.chart_mirror).tolerating(own_taints) for c in joined]


def chart_keys() -> set[str]:
    """Every component key of every cloud's catalog: what `modelplane:chartMirror.components` may name."""
    return {c.key for rows in CATALOG.values() for c in rows}


def node_agents() -> list[NodeAgent]:
    """Every node agent of every cloud's rows, once, in the order the placement report lists them."""
    agents = {(a.release, a.workload): a for rows in CATALOG.values() for c in rows for a in c.node_agents}
    return sorted(agents.values(), key=lambda a: a.listed)


def release_values(facts: ClusterFacts) -> dict[str, Mapping[str, Any]]:
    """Release name -> values of the components the cluster installs, as the catalog builds them."""
    return {c.release: c.values for c in cluster_charts(facts)}


def critical_pod_namespaces(rows: Sequence[Chart]) -> list[str]:
    """Namespaces of the charts whose pods run at a system-critical priority."""
    return sorted({c.namespace for c in rows if c.critical_pods})


def check_served_drivers(cloud: str, catalog: Sequence[Chart]) -> None:
    """The catalog's tags plus the external drivers are exactly the drivers the cloud's profile serves."""
    tags = {d for c in catalog for d in c.dra_drivers} | set(EXTERNAL_DRIVERS.get(cloud, ()))
    expected = set(profile(cloud).supported_drivers)
    if tags != expected:
        raise CatalogError(
            f"{cloud}: the catalog serves {sorted(tags)} but the cloud profile says {sorted(expected)}; "
            "tag the rows or change the profile's gpu_vendors / external_drivers so they agree"
        )


def needed_by_others(catalog: Sequence[Chart]) -> set[str]:
    """Keys some other component depends on; their releases wait until ready (helm --wait)."""
    return {d for c in catalog for d in c.depends_on}


def load_catalog() -> dict[str, list[Chart]]:
    catalog = {cloud: catalog_for(cloud) for cloud in SOURCES}
    for cloud, rows in catalog.items():
        check_dependencies(cloud, rows)
        check_served_drivers(cloud, rows)
    return catalog


CATALOG: dict[str, list[Chart]] = load_catalog()
