"""Rules on a cluster's block: the Kubernetes version, capacity claims against it, and names and tags the cloud accepts."""

from __future__ import annotations

import re

from clouds import did_you_mean, profile
from infra.config.base import ProvisionedClusterBlock
from infra.config.issues import ConfigIssue
from infra.config.model import (
    ClaimMode,
    Fleet,
    InferenceCluster,
)
from infra.config.names import cut, shown
from infra.config.roles import CPU_CLAIM_CAPACITY, CPU_CLAIM_DRIVER
from infra.profiles import CloudProfile
from infra.vocabulary import ROLE_TAINT_KEYS

# DRA (resource.k8s.io/v1) is GA and on by default from Kubernetes 1.34; every driver we install
# (NVIDIA DRA 0.4, dra-driver-cpu, AMD's DRA mode) claims devices through it.
MIN_KUBERNETES = (1, 34)
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)")


def check_version(path: str, version: str) -> list[ConfigIssue]:
    m = _VERSION_RE.match(version)
    if m is None:
        return [
            ConfigIssue(
                path,
                f"'{version}' is not a Kubernetes version",
                "write it as the cloud does, e.g. 1.34 or 1.34.1-k3s1",
            )
        ]
    if (int(m[1]), int(m[2])) < MIN_KUBERNETES:
        floor = ".".join(map(str, MIN_KUBERNETES))
        return [
            ConfigIssue(path, f"Kubernetes {version} predates DRA's v1 API (GA in {floor})", f"use {floor} or newer")
        ]
    return []


# A claim on the consumable capacity `dra.cpu/cpu` (dra-driver-cpu's grouped mode) is allocated
# only with the DRAConsumableCapacity feature gate: alpha (off) in 1.34 and 1.35, beta and on by
# default from 1.36 (KEP-5075; kubernetes-sigs/dra-driver-cpu docs/user/installation.md on main).
# Managed clouds do not turn on alpha gates, so on an older cluster such a claim never schedules.
MIN_KUBERNETES_CONSUMABLE_CAPACITY = (1, 36)
CAPACITY_FLOOR = ".".join(map(str, MIN_KUBERNETES_CONSUMABLE_CAPACITY))


def capacity_claiming_pools(fleet: Fleet, cluster: InferenceCluster) -> list[str]:
    """The cluster's pools whose class claims consumable capacity (`dra.cpu/cpu`), as errors name them."""
    classes = {c.name: c for c in fleet.classes}
    return [
        f"'{pool.name}' (class '{pool.class_name}')"
        for pool in cluster.node_pools
        if pool.class_name in classes
        and any(
            d.claim is ClaimMode.DRA and d.driver == CPU_CLAIM_DRIVER and CPU_CLAIM_CAPACITY in d.capacity
            for d in classes[pool.class_name].devices
        )
    ]


def check_owner_version(fleet: Fleet, cluster: InferenceCluster, path: str, version: str | None) -> list[ConfigIssue]:
    """An owner-run cluster's Kubernetes version: optional, but required once a pool claims capacity,
    where the version decides whether the claim can ever schedule (`check_capacity_claims`)."""
    if version is not None:
        return check_version(path, version) or check_capacity_claims(fleet, cluster, path, version)
    return _capacity_issue(
        fleet,
        cluster,
        path,
        f"which schedules only from Kubernetes {CAPACITY_FLOOR} (the DRAConsumableCapacity gate), but the cluster "
        "does not say which version it runs",
        f'set kubernetesVersion to the version the cluster runs (`kubectl version`), e.g. kubernetesVersion: "{CAPACITY_FLOOR}"',
    )


def check_capacity_claims(fleet: Fleet, cluster: InferenceCluster, path: str, version: str) -> list[ConfigIssue]:
    m = _VERSION_RE.match(version)
    if m is None or (int(m[1]), int(m[2])) >= MIN_KUBERNETES_CONSUMABLE_CAPACITY:
        return []
    return _capacity_issue(
        fleet,
        cluster,
        path,
        f"which needs the DRAConsumableCapacity feature gate: off before Kubernetes {CAPACITY_FLOOR}, so on {version} "
        "the claim never schedules",
        f"use Kubernetes {CAPACITY_FLOOR} or newer on this cluster, where the gate is on by default",
    )


def _capacity_issue(fleet: Fleet, cluster: InferenceCluster, path: str, why: str, fix: str) -> list[ConfigIssue]:
    """One issue naming the cluster's pools that claim capacity, or none when no pool does."""
    claiming = capacity_claiming_pools(fleet, cluster)
    if not claiming:
        return []
    return [ConfigIssue(path, f"pool {', '.join(claiming)} claims capacity {CPU_CLAIM_CAPACITY}, {why}", fix)]


def region_unlisted(cloud: CloudProfile, region: str) -> bool:
    """The cloud has a sourced list of its regions (`Zones.regions`) and `region` is not on it."""
    return bool(cloud.zones.regions) and region not in cloud.zones.regions


def check_region(base: str, cluster: InferenceCluster) -> list[ConfigIssue]:
    """A provisioned cluster's region is one its cloud has, where the program holds a sourced list of them.

    A region that does not exist (`us-central-1` on GKE, `us-east1` on EKS) plans clean otherwise once
    no pool lists a zone, and fails only when the cloud is asked to create the network.
    """
    cloud = profile(cluster.source)
    block = getattr(cluster, cluster.cloud.key)
    if not isinstance(block, ProvisionedClusterBlock) or getattr(block, "uncatalogued_region", False):
        return []
    region = block.place
    if not region_unlisted(cloud, region):
        return []
    at = f"{base}.{cluster.cloud.key}"
    key = type(block).model_fields[block.PLACE_FIELD].alias or block.PLACE_FIELD
    return [
        ConfigIssue(
            f"{at}.{key}",
            f"{shown(region)} is not a region of {cloud.name}: the region catalog ({cloud.zones.regions_from}) does "
            "not list it",
            f"{did_you_mean(region, cloud.zones.regions)}write a region {cloud.name} has; if "
            f"the region exists and the catalog does not list it yet, set {at}.uncataloguedRegion: true",
        )
    ]


def check_taints(base: str, cluster: InferenceCluster) -> list[ConfigIssue]:
    """The cluster's taints can go onto its pools' nodes beside the role taints (`infra.facts`).

    A node's taints are unique by key and effect: the API server refuses a node that repeats a
    pair (k8s.io/kubernetes pkg/apis/core/validation/validation.go @ v1.36.0, `validateNodeTaints`:
    "taints must be unique by key and effect pair"), so a repeat would leave the pool's nodes
    unregistered. A role taint's key is the program's: a cluster taint with it would change what
    the device stacks, scoped to those keys, tolerate.
    """
    issues: list[ConfigIssue] = []
    seen: set[tuple[str, str]] = set()
    for ti, taint in enumerate(cluster.taints):
        where = f"{base}.taints[{ti}]"
        if taint.key in ROLE_TAINT_KEYS:
            issues.append(
                ConfigIssue(
                    f"{where}.key",
                    f"{shown(taint.key)} is a taint key the program sets on pools by their role "
                    f"({', '.join(ROLE_TAINT_KEYS)}); a cluster taint with it would clash with the pools' own",
                    "use a key of your own, e.g. example.com/dedicated",
                )
            )
        elif (taint.key, str(taint.effect)) in seen:
            issues.append(
                ConfigIssue(
                    where,
                    f"a second taint {shown(taint.key)} with effect {taint.effect}: a node's taints are unique by "
                    "key and effect, and the API server refuses a node that repeats one",
                    "keep one of the two, or give them different effects",
                )
            )
        seen.add((taint.key, str(taint.effect)))
    return issues


def check_cloud_names(base: str, cluster: InferenceCluster) -> list[ConfigIssue]:
    """The names and values a cluster's cloud API refuses (its `CloudProfile`), checked where the fleet declares them."""
    issues = check_region(base, cluster)
    cloud = profile(cluster.source)
    if cloud.naming.rule is not None:
        rule = cloud.naming.rule
        if not rule.pattern.match(cluster.name):
            issues.append(
                ConfigIssue(
                    f"{base}.name", f"{cloud.name} cluster names {rule.says}, not {shown(cluster.name)}", rule.fix
                )
            )
        for pi, pool in enumerate(cluster.node_pools):
            if not rule.pattern.match(pool.name):
                issues.append(
                    ConfigIssue(
                        f"{base}.nodePools[{pi}].name",
                        f"{cloud.name} node pool names {rule.says}, not {shown(pool.name)}",
                        rule.fix,
                    )
                )
    if cloud.naming.max_length is not None and len(cluster.name) > cloud.naming.max_length:
        issues.append(
            ConfigIssue(
                f"{base}.name",
                f"the name is the {cloud.name} {cloud.naming.used_as}, which holds at most {cloud.naming.max_length} "
                f"characters, not {len(cluster.name)}",
                f"shorten the name to {cloud.naming.max_length} characters",
            )
        )
    block = getattr(cluster, cluster.cloud.key)  # None when missing: check_references says so
    version = block.kubernetes_version if isinstance(block, ProvisionedClusterBlock) else None
    if cloud.version is not None and version is not None and not cloud.version.pattern.match(version):
        issues.append(
            ConfigIssue(
                f"{base}.{cluster.cloud.key}.kubernetesVersion",
                f"{cloud.name} takes {cloud.version.form}, not {shown(version)}",
                f"write it as {cloud.name} lists it, e.g. {cloud.version.example}",
            )
        )
    tags = cloud.label_tags
    if tags is not None:
        for key, value in cluster.labels.items():
            where = f"{base}.labels.{cut(key)}"
            if key.lower().startswith(tags.reserved_prefix):
                issues.append(
                    ConfigIssue(
                        where,
                        f"the tag key {shown(key)} uses the prefix '{tags.reserved_prefix}' that {tags.owner} reserves",
                        "rename the label",
                    )
                )
            elif not 1 <= len(key) <= tags.key_max:
                issues.append(
                    ConfigIssue(
                        where,
                        f"an {tags.owner} tag key holds 1-{tags.key_max} characters, not {len(key)}",
                        "shorten the key",
                    )
                )
            if len(value) > tags.value_max:
                issues.append(
                    ConfigIssue(
                        where,
                        f"an {tags.owner} tag value holds at most {tags.value_max} characters, not {len(value)}",
                        "shorten the value",
                    )
                )
    return issues
