"""The serving-stack catalog: which components each cloud installs, as data.

A component is a row: adding a chart is adding a row, never a code path. The catalog is a common
part (every cloud) plus one list per cloud; `catalog_for(cloud)` is their concatenation. Values are
data too (`infra.serving.values` builds them per cloud); the ServingStack only turns rows into Helm
releases.

Two rules live here and nowhere else:
- the join (`join_components`): which rows a cluster installs, from the DRA drivers it claims;
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
from dataclasses import dataclass, field
from typing import Any

from clouds import PROFILES, SOURCES, profile
from infra.facts import ClusterFacts
from infra.serving import telemetry
from infra.serving import values as v
from infra.serving.mirror import served_from
from infra.vocabulary import AMD_GPU_DRIVER as AMD
from infra.vocabulary import AUTOSCALING_FEATURE, VENDOR_DRIVER
from infra.vocabulary import CPU_DRIVER as CPU
from infra.vocabulary import NET_DRIVER as NET
from infra.vocabulary import NVIDIA_GPU_DRIVER as NVIDIA

__all__ = ["AMD", "CPU", "NET", "NVIDIA"]

# The keys of the GPU operators' rows, which other steps look for (the serving stack, the joins).
NVIDIA_OPERATOR_KEY = "gpu-operator"
AMD_OPERATOR_KEY = "amd-gpu-operator"


@dataclass(frozen=True)
class Component:
    """One catalog row.

    Release names are `mp-<chart>`: stable across versions, short enough for Helm's 53-character
    limit, and never equal to a release a cluster's owner installed by hand, so Helm never adopts
    (and later deletes) a user's release.
    """

    key: str
    chart: str
    repo: str
    version: str
    namespace: str
    dra_drivers: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)
    # Some of its pods run at `system-node-critical` or `system-cluster-critical`, which some
    # clouds admit outside kube-system only under a ResourceQuota (`CloudProfile.critical_pods_quota`).
    critical_pods: bool = False
    # Serving features it is for (`infra.vocabulary.AUTOSCALING_FEATURE`): a row with features installs
    # only on a cluster whose deployments use one of them (`ClusterFacts.features`).
    features: tuple[str, ...] = ()
    # What its dependents need of a copy the cluster already runs (`existing.preinstalled`); empty
    # means the version pinned here, the one they were checked against (`needs_of`).
    needs: str = ""

    # Set when the chart comes from `modelplane:chartMirror` (`infra.serving.mirror.served_from`):
    # the row's own repository and pin, while `repo` and `version` say what the mirror serves.
    public_repo: str | None = None
    pinned_version: str | None = None

    @property
    def mirrored(self) -> bool:
        return self.public_repo is not None

    @property
    def chart_source(self) -> dict[str, str]:
        """Where the chart comes from, as the plan and the policy pack read it: `mirror` or `public`,
        the row's public repository and its pinned version (`repo` and `version` are what is served)."""
        return {
            "from": "mirror" if self.mirrored else "public",
            "publicRepo": self.public_repo or self.repo,
            "pinnedVersion": self.pinned_version or self.version,
        }

    @property
    def release(self) -> str:
        return f"mp-{self.chart}"

    @property
    def oci(self) -> bool:
        return self.repo.startswith("oci://")


class CatalogError(Exception):
    """A catalog that breaks a rule; raised when the module loads, naming the rows involved."""


# --------------------------------------------------------------------------------------------
# Rows. Versions are exact: a range would let `pulumi up` install a chart nobody reviewed.

JETSTACK = "https://charts.jetstack.io"
PROMETHEUS = "https://prometheus-community.github.io/helm-charts"
NFD_REPO = "https://kubernetes-sigs.github.io/node-feature-discovery/charts"
NGC = "https://helm.ngc.nvidia.com/nvidia"
ROCM = "https://rocm.github.io/gpu-operator"
KEDA_REPO = "https://kedacore.github.io/charts"


def _common(cloud: str) -> list[Component]:
    """Components every cloud installs; the device-stack rows are tagged with their driver."""
    return _neutral_rows(cloud) + _gpu_operator_rows(cloud) + _nvidia_driver_rows(cloud) + _cpu_driver_rows(cloud)


def _runs_own_gpu_operator(cloud: str) -> bool:
    """Whether the stack installs NFD and the GPU Operator itself, rather than building on the cloud's."""
    # Where the cloud runs its own GPU Operator (with NFD), ours would be a second owner of the
    # same nodes and CRDs; the DRA driver then builds on the cloud's operator.
    return not profile(cloud).nvidia.managed_operator


def _neutral_rows(cloud: str) -> list[Component]:
    """Certificates, metrics, the gateway, multi-node serving and telemetry: no device driver's rows."""
    # The neutral rows are pinned to the releases their values below were checked against (each
    # chart's values.yaml at that tag); moving one is editing its row after checking those keys.
    return [
        Component(
            "cert-manager",
            "cert-manager",
            JETSTACK,
            "v1.20.2",
            "cert-manager",
            values=v.cert_manager(cloud),
            # The dependents' webhooks take their certificates through cert-manager's CRDs
            # (`values.cert_manager`), the `cert-manager.io/v1` API cert-manager serves from v1.0.0
            # on (cert-manager's v1.0 release notes: the API graduated to v1).
            needs="cert-manager v1.0.0 or later (the `cert-manager.io/v1` API)",
        ),
        Component(
            "kube-prometheus-stack",
            "kube-prometheus-stack",
            PROMETHEUS,
            "84.4.0",
            "monitoring",
            values=v.kube_prometheus_stack(cloud),
        ),
        Component(
            "envoy-gateway",
            "gateway-helm",
            "oci://docker.io/envoyproxy",
            "v1.8.4",
            "envoy-gateway-system",
            depends_on=("cert-manager",),
            values=v.envoy_gateway(cloud),
        ),
        Component(
            "leader-worker-set",
            "lws",
            "oci://registry.k8s.io/lws/charts",
            "v0.8.0",
            "lws-system",
            values=v.leader_worker_set(cloud),
        ),
        # 2.20.2: the latest KEDA release when pinned, built against Kubernetes 1.35's client
        # (go.mod of kedacore/keda v2.20.2: k8s.io/client-go v0.35.5), so it serves the 1.34+ clusters
        # here; its CRDs (`keda.sh/v1alpha1` ScaledObject) come with the chart (values.yaml
        # `crds.install: true` @ kedacore/charts v2.20.2). Installed only for autoscaled deployments.
        Component(
            "keda",
            "keda",
            KEDA_REPO,
            "2.20.2",
            "keda",
            depends_on=("kube-prometheus-stack",),
            values=v.keda(cloud),
            features=(AUTOSCALING_FEATURE,),
        ),
        Component(
            "opentelemetry-collector",
            telemetry.CHART,
            telemetry.CHART_REPO,
            telemetry.CHART_VERSION,
            telemetry.NAMESPACE,
            values=telemetry.collector_values(cloud),
        ),
    ]


def _gpu_operator_rows(cloud: str) -> list[Component]:
    """Node feature discovery and NVIDIA's GPU Operator, unless the cloud runs its own operator."""
    if not _runs_own_gpu_operator(cloud):
        return []
    gpu_tags = tuple(VENDOR_DRIVER[vendor] for vendor in profile(cloud).gpu_vendors)
    return [
        # 0.19.0: the NFD release gpu-operator v26.7.0 bundles as its subchart (Chart.yaml at
        # that tag); both GPU stacks read its `pci-10de` / `amd-gpu` labels.
        Component(
            "node-feature-discovery",
            "node-feature-discovery",
            NFD_REPO,
            "0.19.0",
            "node-feature-discovery",
            dra_drivers=gpu_tags,
            values=v.node_feature_discovery(cloud),
        ),
        # v26.3.3: DRA with the operator needs v25.10.0 or later with the device plugin off
        # (NVIDIA GPU Operator docs, "NVIDIA DRA Driver for GPUs"); v26.3.3 is that line's
        # latest patch when pinned. Its daemonsets run at system-node-critical (values.yaml).
        Component(
            NVIDIA_OPERATOR_KEY,
            "gpu-operator",
            NGC,
            "v26.3.3",
            "gpu-operator",
            dra_drivers=(NVIDIA,),
            depends_on=("node-feature-discovery", "cert-manager", "kube-prometheus-stack"),
            values=v.nvidia_gpu_operator(cloud),
            critical_pods=True,
        ),
    ]


def _nvidia_driver_rows(cloud: str) -> list[Component]:
    """NVIDIA's DRA driver, on our GPU Operator or on the cloud's."""
    return [
        # 0.4.1: the release EKS's DRA guide installs, the first line published from
        # kubernetes-sigs (0.4.0 moved the chart there). Controller at system-cluster-critical,
        # kubelet plugin at system-node-critical (deployments/helm/dra-driver-nvidia-gpu/values.yaml @v0.4.1).
        Component(
            "dra-driver-nvidia-gpu",
            "dra-driver-nvidia-gpu",
            "oci://registry.k8s.io/dra-driver-nvidia/charts",
            "0.4.1",
            "dra-driver-nvidia-gpu",
            dra_drivers=(NVIDIA,),
            depends_on=(NVIDIA_OPERATOR_KEY,) if _runs_own_gpu_operator(cloud) else (),
            values=v.dra_driver_nvidia_gpu(cloud),
            critical_pods=True,
        ),
    ]


def _cpu_driver_rows(cloud: str) -> list[Component]:
    """The CPU DRA driver, dra-driver-cpu."""
    return [
        # Pinned once for every cloud, Existing included. 0.3.0 or later: 0.2.0 reads neither
        # `nodeSelector` nor `driverConfig` (deployment/helm/dra-driver-cpu/templates @v0.2.0). Its
        # DaemonSet's priority class is fixed at system-node-critical (templates/daemonset.yaml).
        Component(
            "dra-driver-cpu",
            "dra-driver-cpu",
            "oci://registry.k8s.io/dra-driver-cpu/charts",
            "0.3.0",
            "dra-driver-cpu",
            dra_drivers=(CPU,),
            values=v.dra_driver_cpu(cloud),
            critical_pods=True,
        ),
    ]


def _per_cloud(cloud: str) -> list[Component]:
    if "amd" in profile(cloud).gpu_vendors:
        # On a cloud whose catalog has AMD machines (its profile's `gpu_vendors`) and on Existing,
        # where the owner brings the hardware; the device rules accept `gpu.amd.com` on exactly these.
        return [
            Component(
                AMD_OPERATOR_KEY,
                "gpu-operator-charts",
                ROCM,
                "v1.5.1",
                "kube-amd-gpu",
                dra_drivers=(AMD,),
                depends_on=("cert-manager", "node-feature-discovery"),
                values=v.amd_gpu_operator(cloud),
            ),
        ]
    return []


# Drivers a cloud installs outside the serving stack, from its profile. EKS installs aws-dranet
# (`dra.net`) with the cluster when a pool claims it (EFA pools); see clouds/eks/component.py.
EXTERNAL_DRIVERS: Mapping[str, tuple[str, ...]] = {
    c: p.external_drivers for c, p in PROFILES.items() if p.external_drivers
}


def catalog_for(cloud: str) -> list[Component]:
    if cloud not in SOURCES:
        raise KeyError(f"unknown cloud {cloud!r}; known: {', '.join(SOURCES)}")
    return _common(cloud) + _per_cloud(cloud)


# --------------------------------------------------------------------------------------------
# Rules


# The GPU operators: the rows an Existing cluster's owner may already run (`ownerGpuOperator`).
# Two copies of an operator reconcile the same custom resources and fight over every node.
GPU_OPERATOR_KEYS = (NVIDIA_OPERATOR_KEY, AMD_OPERATOR_KEY)


def join_components(
    catalog: Sequence[Component],
    dra_drivers: Iterable[str] | None,
    owner_gpu_operator: bool = False,
    preinstalled: Iterable[str] = (),
    features: Iterable[str] = (),
) -> list[Component]:
    """The components a cluster installs.

    An untagged component always installs; a tagged one installs only when at least one of its
    drivers is claimed. Unset drivers mean none are claimed: only untagged components install.
    A cluster whose owner runs the GPU operator gets no operator row, and a cluster that already
    runs a component (`existing.preinstalled`) gets no second copy of it: two copies fight over
    the same CRDs and webhooks. The rows that depend on a left-out one still install, against the
    cluster's own copy (`relied_on` says what they need of it). A row for a serving feature
    installs only where a deployment uses the feature: KEDA only where one is autoscaled.
    """
    claimed = set(dra_drivers or ())
    own = set(preinstalled)
    used = set(features)
    return [
        c
        for c in catalog
        if (not c.dra_drivers or claimed.intersection(c.dra_drivers))
        and (not c.features or used.intersection(c.features))
        and not (owner_gpu_operator and c.key in GPU_OPERATOR_KEYS)
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


def needs_of(component: Component) -> str:
    """What dependents need of a cluster's own copy of `component`."""
    return component.needs or f"{component.chart} {component.version}, the version its dependents were checked against"


def relied_on(facts: ClusterFacts) -> list[dict[str, Any]]:
    """The components the cluster runs itself that the stack would have installed, with who needs them and what."""
    catalog = CATALOG[facts.source]
    full = {
        c.key: c for c in join_components(catalog, facts.dra_drivers, facts.owner_gpu_operator, features=facts.features)
    }
    installed = cluster_components(facts)
    out = []
    for key in facts.preinstalled:
        component = full.get(key)
        if component is None:
            continue  # not one this cluster's pools would install
        dependents = [c.release for c in installed if key in c.depends_on]
        out.append(
            {
                "key": key,
                "chart": component.chart,
                "pinnedVersion": component.version,
                "dependents": dependents,
                "needs": needs_of(component),
            }
        )
    return out


def check_dependencies(cloud: str, catalog: Sequence[Component]) -> None:
    """The dependency rule: a dependency is untagged or carries every driver its dependent carries.

    Then whatever set of drivers a cluster claims, the join keeps every dependency of every
    component it keeps. Also rejects duplicate keys, unknown dependencies and cycles.
    """
    by_key: dict[str, Component] = {}
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


def _cycles(by_key: Mapping[str, Component]) -> list[str]:
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


def install_order(components: Sequence[Component]) -> list[Component]:
    """Components sorted so each comes after its dependencies (stable otherwise)."""
    by_key = {c.key: c for c in components}
    done: list[Component] = []
    seen: set[str] = set()

    def visit(c: Component) -> None:
        if c.key in seen:
            return
        seen.add(c.key)
        for d in c.depends_on:
            if d in by_key:
                visit(by_key[d])
        done.append(c)

    for c in components:
        visit(c)
    return done


def supported_drivers(cloud: str) -> list[str]:
    """DRA drivers a cloud can serve: every tag in its catalog plus its external drivers."""
    tags = {d for c in CATALOG[cloud] for d in c.dra_drivers}
    return sorted(tags | set(EXTERNAL_DRIVERS.get(cloud, ())))


def cluster_components(facts: ClusterFacts) -> list[Component]:
    """The components this cluster installs: its cloud's catalog joined with its claimed drivers
    and less what the cluster already runs, each from where the stack's chart mirror serves it."""
    joined = join_components(
        CATALOG[facts.source], facts.dra_drivers, facts.owner_gpu_operator, facts.preinstalled, facts.features
    )
    return [served_from(c, facts.chart_mirror) for c in joined]


def component_keys() -> set[str]:
    """Every component key of every cloud's catalog: what `modelplane:chartMirror.components` may name."""
    return {c.key for rows in CATALOG.values() for c in rows}


def release_values(facts: ClusterFacts) -> dict[str, Mapping[str, Any]]:
    """Release name -> values of the components the cluster installs, as the catalog builds them."""
    return {c.release: c.values for c in cluster_components(facts)}


def critical_pod_namespaces(components: Sequence[Component]) -> list[str]:
    """Namespaces of the components whose pods run at a system-critical priority."""
    return sorted({c.namespace for c in components if c.critical_pods})


def check_served_drivers(cloud: str, catalog: Sequence[Component]) -> None:
    """The catalog's tags plus the external drivers are exactly the drivers the cloud's profile serves."""
    tags = {d for c in catalog for d in c.dra_drivers} | set(EXTERNAL_DRIVERS.get(cloud, ()))
    expected = set(profile(cloud).supported_drivers)
    if tags != expected:
        raise CatalogError(
            f"{cloud}: the catalog serves {sorted(tags)} but the cloud profile says {sorted(expected)}; "
            "tag the rows or change the profile's gpu_vendors / external_drivers so they agree"
        )


def needed_by_others(catalog: Sequence[Component]) -> set[str]:
    """Keys some other component depends on; their releases wait until ready (helm --wait)."""
    return {d for c in catalog for d in c.depends_on}


def load_catalog() -> dict[str, list[Component]]:
    catalog = {cloud: catalog_for(cloud) for cloud in SOURCES}
    for cloud, rows in catalog.items():
        check_dependencies(cloud, rows)
        check_served_drivers(cloud, rows)
    return catalog


CATALOG: dict[str, list[Component]] = load_catalog()
