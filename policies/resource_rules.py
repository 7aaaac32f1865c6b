"""Resource-level policies on what the program installs: releases and model deployments.

Each reads one resource's inputs in its provider's spelling (camelCase, numbers as floats, see
`policies.props`); the engine sends `Analyze` a resource's inputs in a first preview, an update
and `pulumi policy analyze` alike (pulumi/pulumi v3.259.0, pkg/resource/deploy/step_generator.go
and analyze_snapshot.go). The policies on clusters and node pools are `policies.pool_rules`;
`RESOURCE_POLICIES` lists both modules' in the order the pack runs them.

The release rules judge the releases a ServingStack plans (`components.serving_stack
.planned_release`: chart, version, values, the same arguments its Releases are given), which the
stack registers as literal inputs; a Release outside a ServingStack is judged on its own inputs.
A value that is unknown in a preview is said so (`policies.props.undecided`), never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from infra import tokens
from infra.checks.reclaim import RECLAIM_ALL_REPLICAS, reclaim_advisory
from infra.formats import EXACT_CHART_VERSION, image_problem, tag_problem
from infra.multinode import MULTINODE_FABRIC, fabric_advisory
from policies.pool_rules import pool_role_marking, protect_clusters
from policies.props import get, mappings, plain, undecided

# --------------------------------------------------------------------------------------------
# pinned-versions


def _is_image_key(key: str) -> bool:
    return key == "image" or key.endswith("Image")


def image_problems(values: Any, path: str = "values", image_context: bool = False) -> list[str]:
    """Images in Helm values that are untagged or float (`latest`), with where they are.

    Shapes: `image: repo:tag`, `<x>Image: repo:tag`, `image: {repository, tag}` (or `digest`),
    `{repository, tag}` anywhere, `image: {tag}` over the chart's repository, and NVIDIA's
    `{repository, image, version}`.
    """
    found: list[str] = []
    values = plain(values)
    if isinstance(values, dict):
        repository = values.get("repository")
        # (the image as messages name it, the key holding its tag) for each mapping shape.
        shape: tuple[str, str] | None = None
        if isinstance(repository, str) and isinstance(values.get("image"), str) and "version" in values:
            shape = (f"image {repository}/{values['image']}", "version")
        elif isinstance(repository, str) and (image_context or "tag" in values):
            shape = (f"image {repository}", "tag")
        elif image_context and values.get("tag"):
            # `image: {tag: ...}` alone overrides the chart's tag and keeps its repository: Helm
            # overlays user values on the chart's values.yaml key by key
            # (https://helm.sh/docs/v3/chart_template_guide/values_files/), so the tag still floats.
            shape = ("the chart's image", "tag")
        if shape is not None:
            image, tag_key = shape
            problem = tag_problem(values.get(tag_key), values.get("digest"))
            if problem:
                found.append(f"{path}: {image} {problem}")
        nvidia_shape = isinstance(repository, str) and "version" in values
        for key, value in values.items():
            here = f"{path}.{key}"
            if _is_image_key(key) and isinstance(value, str):
                if value and not nvidia_shape:
                    problem = image_problem(value)
                    if problem:
                        found.append(f"{here}: image {value} {problem}")
                continue
            found.extend(image_problems(value, here, image_context=_is_image_key(key)))
    elif isinstance(values, list):
        for i, item in enumerate(values):
            found.extend(image_problems(item, f"{path}[{i}]"))
    return found


def release_name(args_name: str, props: Mapping[str, Any]) -> str:
    """The Helm release name (`mp-<chart>`), or the resource name when none is set."""
    name = props.get("name")
    return str(name) if name else args_name


def chart_name(props: Mapping[str, Any]) -> str:
    """The chart's own name, whether given as `repo/chart`, `oci://.../chart` or bare."""
    return str(props.get("chart") or "").rstrip("/").rsplit("/", 1)[-1]


def parent_type(urn: str) -> str:
    """The type of a resource's parent, read from its URN (`...::<parent type>$<type>::<name>`)."""
    parts = urn.split("::")
    types = parts[2].split("$") if len(parts) > 3 else []
    return types[-2] if len(types) > 1 else ""


def judged_releases(args: ResourceValidationArgs) -> list[tuple[str, Mapping[str, Any]]]:
    """The releases this resource states, each with its release name: a ServingStack's plan,
    or a Release of its own outside any ServingStack (its stack judges the others)."""
    if args.resource_type == tokens.SERVING_STACK:
        with undecided(f"the releases planned by {args.name}"):
            planned = mappings(args.props.get("releases"))
            return [(release_name(str(r.get("key") or args.name), r), r) for r in planned]
    if args.resource_type == tokens.RELEASE and parent_type(args.urn) != tokens.SERVING_STACK:
        return [(release_name(args.name, args.props), args.props)]
    return []


def _validate_pinned_versions(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for release, props in judged_releases(args):
        with undecided(f"the chart version or values of release {release}"):
            version = str(plain(props.get("version")) or "")
            problems = image_problems(props.get("values") or {})
        if not EXACT_CHART_VERSION.match(version):
            shown = f"'{version}'" if version else "no version"
            report_violation(
                f"release {release} (chart {chart_name(props)}) pins {shown}; pin an exact chart version", None
            )
        for problem in problems:
            report_violation(f"release {release}: {problem}; pin an exact tag", None)


pinned_versions = ResourceValidationPolicy(
    name="pinned-versions",
    description="Every release pins an exact chart version, and no image in its values is untagged or `latest`.",
    validate=_validate_pinned_versions,
)

# --------------------------------------------------------------------------------------------
# amd-operator-values

AMD_OPERATOR_CHART = "gpu-operator-charts"


def amd_operator_problems(values: Any) -> list[str]:
    """Where the AMD GPU operator's values undo what `infra.serving.values.amd_gpu_operator` sets (chart defaults in parentheses)."""
    problems = []
    if get(values, "kmm", "enabled") is not False:
        problems.append("kmm.enabled must be false (the chart enables KMM, which this stack never uses)")
    if get(values, "kmm", "watch") is not False:
        problems.append(
            "kmm.watch must be false (the chart has the operator watch KMM's resources, whose CRDs only "
            "the disabled KMM subchart installs, so the operator cannot start)"
        )
    if get(values, "crds", "defaultCR", "upgrade") is not True:
        problems.append(
            "crds.defaultCR.upgrade must be true (the chart renders its DeviceConfig at install only, "
            "so later values never reach it)"
        )
    spec = get(values, "deviceConfig", "spec")
    if get(spec, "draDriver", "enable") is True and get(spec, "devicePlugin", "enableDevicePlugin") is not False:
        problems.append(
            "deviceConfig.spec.devicePlugin.enableDevicePlugin must be false when the DRA driver is on "
            "(the chart enables the device plugin; the operator rejects both together)"
        )
    return problems


def _validate_amd_operator_values(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for release, props in judged_releases(args):
        with undecided(f"the chart or values of release {release}"):
            if chart_name(props) != AMD_OPERATOR_CHART:
                continue
            problems = amd_operator_problems(plain(props.get("values") or {}))
        for problem in problems:
            report_violation(f"release {release}: {problem}", None)


amd_operator_values = ResourceValidationPolicy(
    name="amd-operator-values",
    description=(
        "The AMD GPU operator keeps kmm.enabled: false, kmm.watch: false, crds.defaultCR.upgrade: true, and never enables "
        "the device plugin with the DRA driver."
    ),
    validate=_validate_amd_operator_values,
)

# --------------------------------------------------------------------------------------------
# no-wildcard-tolerations


def _is_tolerations_key(key: str) -> bool:
    return key == "tolerations" or key.endswith("Tolerations")


def wildcard_tolerations(value: Any, path: str) -> list[str]:
    """Paths of tolerations that tolerate every taint: no key, operator Exists.

    Only tolerations are read: an unknown value elsewhere (a name computed in preview) is
    skipped; an unknown toleration raises `UnknownValueError` (see `undecided`).
    """
    found: list[str] = []
    if isinstance(value, Mapping):
        for key in value:
            here = f"{path}.{key}"
            if _is_tolerations_key(str(key)):
                item = plain(value[key])
                for i, t in enumerate(item if isinstance(item, list) else []):
                    if isinstance(t, dict) and not t.get("key") and t.get("operator") == "Exists":
                        found.append(f"{here}[{i}]")
                continue
            try:
                item = value[key]
            except UnknownValueError:
                continue
            found.extend(wildcard_tolerations(item, here))
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        for i in range(len(value)):
            try:
                item = value[i]
            except UnknownValueError:
                continue
            found.extend(wildcard_tolerations(item, f"{path}[{i}]"))
    return found


def _validate_no_wildcard_tolerations(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    judged: list[tuple[str, list[str]]] = []
    allowed = args.get_config().get("allowedReleases") or []
    for release, props in judged_releases(args):
        if release not in allowed:
            with undecided(f"the tolerations in the values of release {release}"):
                judged.append((f"release {release}", wildcard_tolerations(props.get("values") or {}, "values")))
    if args.resource_type == tokens.DEPLOYMENT:
        with undecided(f"the pod tolerations of deployment {args.name}"):
            judged.append((f"deployment {args.name}", wildcard_tolerations(args.props.get("spec") or {}, "spec")))
    for where, found in judged:
        for path in found:
            report_violation(
                f"{where}: {path} tolerates every taint (empty key, operator Exists); tolerate the taint keys "
                "of the pools it runs on",
                None,
            )


no_wildcard_tolerations = ResourceValidationPolicy(
    name="no-wildcard-tolerations",
    description="No release or workload tolerates every taint (empty key with operator Exists).",
    validate=_validate_no_wildcard_tolerations,
    config_schema=PolicyConfigSchema(
        properties={
            "allowedReleases": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Release names (mp-<chart>) allowed to tolerate every taint, e.g. a node exporter.",
            }
        }
    ),
)

# --------------------------------------------------------------------------------------------
# mirror-chart-version


def _validate_mirror_chart_version(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for release, props in judged_releases(args):
        with undecided(f"the chart source of release {release}"):
            source = plain(props.get("chartSource")) or {}
            version = str(plain(props.get("version")) or "")
        if not isinstance(source, dict) or source.get("from") != "mirror":
            continue
        pinned = str(source.get("pinnedVersion") or "")
        if version != pinned:
            report_violation(
                f"release {release} (component {props.get('key') or release}) installs chart {chart_name(props)} "
                f"{version} from the mirror {props.get('repo')}, not the pinned {pinned}; its values were checked "
                f"against {pinned} only. Fix: serve {pinned} from the mirror, or review the values against {version}",
                None,
            )


mirror_chart_version = ResourceValidationPolicy(
    name="mirror-chart-version",
    description=(
        "A release whose chart comes from `modelplane:chartMirror` at another version than the catalog's pin "
        "is reported: its values were checked against the pin only."
    ),
    validate=_validate_mirror_chart_version,
    # Advisory: a mirror may hold another release on purpose (modelplane:chartMirror.components.<key>.version).
    enforcement_level=EnforcementLevel.ADVISORY,
)

# --------------------------------------------------------------------------------------------
# multinode-fabric


def _validate_multinode_fabric(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The advisory of `infra.multinode.fabric_advisory`, on the facts a model deployment registers."""
    if args.resource_type != tokens.MODEL_DEPLOYMENT:
        return
    props = args.props
    with undecided(f"the nodes and fabric of model deployment {args.name}"):
        nodes = plain(props.get("nodes"))
        source = plain(props.get("source"))
        fabric = plain(props.get("fabric"))
    # The engine hands numbers over as floats.
    if not isinstance(nodes, int | float) or not isinstance(source, str):
        return
    fabric = fabric if isinstance(fabric, str) else None
    advisory = fabric_advisory(source, str(plain(props.get("name")) or args.name), int(nodes), fabric)
    if advisory is not None:
        report_violation(advisory, None)


multinode_fabric = ResourceValidationPolicy(
    name=MULTINODE_FABRIC,
    description=(
        "A model deployment whose replicas span several nodes on a pool without a high-speed fabric claim "
        "(EFA, InfiniBand) is reported, with how to claim the cloud's fabric."
    ),
    validate=_validate_multinode_fabric,
    # Advisory: the group runs, only slower; a small model over a few nodes may be worth it.
    enforcement_level=EnforcementLevel.ADVISORY,
)

# --------------------------------------------------------------------------------------------
# reclaim-all-replicas


def _validate_reclaim_all_replicas(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The advisory of `infra.checks.reclaim.reclaim_advisory`, on the facts a model deployment registers."""
    if args.resource_type != tokens.MODEL_DEPLOYMENT:
        return
    props = args.props
    with undecided(f"the capacity of model deployment {args.name}"):
        reclaimable = plain(props.get("reclaimable"))
        floor = plain(props.get("floor"))
        replicas = plain(props.get("peakReplicas"))
        startup = plain(props.get("startupSeconds"))
    # The engine hands numbers over as floats.
    if reclaimable is not True or not isinstance(replicas, int | float) or not isinstance(startup, int | float):
        return
    name = str(plain(props.get("name")) or args.name)
    advisory = reclaim_advisory(name, True, int(floor or 0), int(replicas), int(startup))
    if advisory is not None:
        report_violation(advisory, None)


reclaim_all_replicas = ResourceValidationPolicy(
    name=RECLAIM_ALL_REPLICAS,
    description=(
        "A model deployment whose every replica runs on a spot pool is reported, with what a reclaim costs it "
        "and how to keep a floor on capacity that is not reclaimable."
    ),
    validate=_validate_reclaim_all_replicas,
    # Advisory: a deployment that may stop for a while (a batch or test model) can run on spot alone.
    enforcement_level=EnforcementLevel.ADVISORY,
)

RESOURCE_POLICIES = [
    pool_role_marking,
    pinned_versions,
    mirror_chart_version,
    multinode_fabric,
    reclaim_all_replicas,
    amd_operator_values,
    no_wildcard_tolerations,
    protect_clusters,
]

# Each policy's longer explanation, which docs/policies.md prints after its description; the engine never sees it.
DETAILS: dict[str, str] = {
    pinned_versions.name: (
        "The chart version is exact: no range, no wildcard, not empty. No image floats (`latest`, `*-latest`). "
        "The image shapes checked are `image`, `*Image`, `{repository, tag}` and NVIDIA's "
        "`{repository, image, version}`."
    ),
    mirror_chart_version.name: (
        "The catalog's pin is `chartMirror.components.<key>.version`; the report names the component, the "
        "served and the pinned version."
    ),
    multinode_fabric.name: (
        "Replicas span several nodes when `nodes` > 1. A fabric is EFA through a `dra.net` device (EKS), "
        "InfiniBand through `infinibandFabric` (Nebius) or an RDMA-capable ND-series size (AKS). The message "
        "says how to claim the cloud's fabric, or that the cloud offers none the program sets up (GKE's "
        "GPUDirect-TCPX needs multi-networking; Civo, Vultr, DigitalOcean, OCI and Existing clusters)."
    ),
    reclaim_all_replicas.name: (
        "Every replica is on reclaimable capacity when the deployment's `pool` has `capacity.type: Spot` and it "
        "keeps no `floor` on another pool (`spotPool`). The message counts the replicas a reclaim takes and the "
        "start-up time (`startupSeconds`) their replacements may need."
    ),
    amd_operator_values.name: (
        "On the `gpu-operator-charts` release: `deviceConfig.spec.devicePlugin.enableDevicePlugin` stays off "
        "while `deviceConfig.spec.draDriver.enable` is on."
    ),
    no_wildcard_tolerations.name: "Reads every release's values and every Deployment.",
}

# Where each rule is decided (backticked paths and names the docs test resolves).
HOMES: dict[str, str] = {
    pinned_versions.name: "`policies/resource_rules.py` (`image_problems`)",
    mirror_chart_version.name: "`infra/serving/mirror.py` (`served_from`)",
    multinode_fabric.name: "`infra/multinode.py` (`fabric_advisory`)",
    reclaim_all_replicas.name: "`infra/checks/reclaim.py` (`reclaim_advisory`)",
    amd_operator_values.name: "values: `infra/serving/values.py`; rule: `policies/resource_rules.py` (`amd_operator_problems`)",
    no_wildcard_tolerations.name: "`policies/resource_rules.py` (`wildcard_tolerations`)",
}
