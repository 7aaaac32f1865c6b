"""Rules across keys of the fleet: blocks, unique names, references between classes, clusters, pools and deployments."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from clouds import CLOUDS, PROVISIONED, cloud, profile
from clouds.spec import Cloud
from infra.checks.clusters import (
    check_capacity_claims,
    check_cloud_names,
    check_owner_version,
    check_taints,
    check_version,
)
from infra.config.base import OwnerClusterBlock, ProvisionedClusterBlock
from infra.config.issues import ConfigIssue, duplicates, fields_of, unique_names
from infra.config.model import (
    ClaimMode,
    Fleet,
    InferenceClass,
    InferenceCluster,
    ModelDeploymentSpec,
    NodePool,
)
from infra.config.names import NAMESPACE
from infra.config.roles import (
    CPU_CLAIM_CAPACITY,
    CPU_CLAIM_DRIVER,
    claimed_cpus,
    claimed_drivers,
    pools_without_role,
    role_of,
)
from infra.profiles import nodes_per_zone_at_start, pool_nodes, zone_count


def check_references(fleet: Fleet) -> list[ConfigIssue]:
    """Cross-field rules that a single field cannot express: blocks, names, references, bounds."""
    issues = unique_names([c.name for c in fleet.classes], "classes[{i}].name", "class")
    for ci, cls in enumerate(fleet.classes):
        issues += _check_class(ci, cls)
    cluster_names = [c.name for c in fleet.clusters]
    issues += unique_names(cluster_names, "clusters[{i}].name", "cluster")
    for ki, cluster in enumerate(fleet.clusters):
        issues += _check_cluster_block(fleet, ki, cluster)
        issues += _check_pools(fleet, ki, cluster)
    for di, dep in enumerate(fleet.deployments):
        issues += _check_deployment(fleet, di, dep)
    issues += _check_deployment_names(fleet)
    return issues


def _check_deployment_names(fleet: Fleet) -> list[ConfigIssue]:
    """A deployment's name is its own on its cluster, across namespaces: it names the deployment's
    component and so every object under it, and its pods' label, which its Service, its PodMonitor and
    its InferencePool select (`infra.vocabulary.DEPLOYMENT_LABEL`): two of one name would take each
    other's objects and pods."""
    issues: list[ConfigIssue] = []
    seen: dict[tuple[str, str], int] = {}
    for di, dep in enumerate(fleet.deployments):
        first = seen.setdefault((dep.cluster, dep.name), di)
        if first != di:
            issues.append(
                ConfigIssue(
                    f"deployments[{di}].name",
                    f"deployments[{first}] is also named '{dep.name}' on cluster '{dep.cluster}'",
                    "give each deployment on a cluster its own name (it names its objects and the label its "
                    "Service and InferencePool select), e.g. " + f"{dep.name}-{dep.namespace}",
                )
            )
    return issues


def _check_class(ci: int, cls: InferenceClass) -> list[ConfigIssue]:
    """One block, the provider's, under `provisioning`; unique device names."""
    issues = unique_names([d.name for d in cls.devices], f"classes[{ci}].devices[{{i}}].name", "device")
    prov = cls.provisioning
    # What a class needs chooses a machine only where it names none (`infra.checks.supply`).
    names_machine = prov is not None and getattr(prov, cloud(prov.provider).key) is not None
    if cls.min_gpu_memory_gib is not None and (prov is None or names_machine):
        issues.append(
            ConfigIssue(
                f"classes[{ci}].minGpuMemoryGib",
                "minGpuMemoryGib chooses a machine for a class that names a provider and no machine, but this "
                + ("class has no provisioning" if prov is None else "class names its machine"),
                "remove minGpuMemoryGib, or remove the machine block to let the plan choose the machine",
            )
        )
    if prov is None:
        return issues
    wanted = cloud(prov.provider).key
    if getattr(prov, wanted) is None and (cls.accelerator is not None or cls.min_gpu_memory_gib is not None):
        return issues  # the class says what it needs, and no machine fitted it (`infra.checks.supply` says so)
    if cls.accelerator is not None:
        issues.append(
            ConfigIssue(
                f"classes[{ci}].accelerator",
                f"the class provisions on {prov.provider}, whose machine block names the accelerator",
                f"move it to classes[{ci}].provisioning.{wanted}.accelerator (a class-level accelerator describes "
                "an Existing cluster's nodes)",
            )
        )
    if getattr(prov, wanted) is None:
        issues.append(
            ConfigIssue(
                f"classes[{ci}].provisioning.{wanted}",
                f"provider is {prov.provider} but the '{wanted}' block is missing",
                f"add a '{wanted}' block with the machine for {prov.provider}",
            )
        )
    issues += stray_blocks(prov, f"classes[{ci}].provisioning", PROVISIONED, wanted, "provider", prov.provider)
    return issues


def stray_blocks(
    holder: object, base: str, clouds: Sequence[Cloud], wanted: str, key: str, value: str
) -> list[ConfigIssue]:
    """A block of another cloud than the one `key` names (a class's provider, a cluster's source):
    only the named cloud's block is read, so another one is a mistake, never a second setting."""
    return [
        ConfigIssue(
            f"{base}.{other}",
            f"a '{other}' block is set but {key} is {value}",
            f"remove the '{other}' block or set {key} to match it",
        )
        for other in (c.key for c in clouds if c.key != wanted)
        if getattr(holder, other) is not None
    ]


def _check_cluster_block(fleet: Fleet, ki: int, cluster: InferenceCluster) -> list[ConfigIssue]:
    """One block, the source's; its version and the names the cloud's API holds it to."""
    issues: list[ConfigIssue] = []
    base = f"clusters[{ki}]"
    wanted = cluster.cloud.key
    block = getattr(cluster, wanted)
    if block is None:
        if not cluster.provisioned:  # the cluster is the owner's: its block names the kubeconfig
            hint = (
                f"add '{wanted}: {{kubeconfigKey: kubeconfig}}' and set that key with "
                f"`pulumi config set --secret {NAMESPACE}:kubeconfig < path/to/kubeconfig`"
            )
        else:
            # The keys the block needs (an opt-in such as `uncataloguedRegion` or `adopt` is not one).
            needed = [
                f for f in fields_of(cluster.cloud.cluster_block) if not f.startswith("uncatalogued") and f != "adopt"
            ]
            hint = f"add a '{wanted}' block ({', '.join(needed)})"
        issues.append(
            ConfigIssue(f"{base}.{wanted}", f"source is {cluster.source} but the '{wanted}' block is missing", hint)
        )
    issues += stray_blocks(cluster, base, CLOUDS, wanted, "source", cluster.source)
    version_path = f"{base}.{wanted}.kubernetesVersion"
    if isinstance(block, ProvisionedClusterBlock):
        issues.extend(
            check_version(version_path, block.kubernetes_version)
            or check_capacity_claims(fleet, cluster, version_path, block.kubernetes_version)
        )
    elif isinstance(block, OwnerClusterBlock):
        issues.extend(check_owner_version(fleet, cluster, version_path, block.kubernetes_version))
    issues.extend(check_cloud_names(base, cluster))
    issues.extend(check_taints(base, cluster))
    return issues


def _check_pools(fleet: Fleet, ki: int, cluster: InferenceCluster) -> list[ConfigIssue]:
    """Unique pool names other than `system`, known classes, and node-count bounds the cloud can honour."""
    issues: list[ConfigIssue] = []
    base = f"clusters[{ki}]"
    class_names = [c.name for c in fleet.classes]
    pool_names = [p.name for p in cluster.node_pools]
    for name in duplicates(pool_names) | ({"system"} & set(pool_names)):
        idx = [i for i, n in enumerate(pool_names) if n == name]
        pi = idx[1] if len(idx) > 1 else idx[0]
        problem = (
            "pool name 'system' is reserved for the system pool every cluster gets"
            if name == "system" and len(idx) == 1
            else f"pool name '{name}' is declared twice in cluster '{cluster.name}'"
        )
        issues.append(
            ConfigIssue(f"{base}.nodePools[{pi}].name", problem, "give each pool a unique name other than 'system'")
        )
    for pi, pool in enumerate(cluster.node_pools):
        ppath = f"{base}.nodePools[{pi}]"
        if pool.class_name not in class_names:
            close = difflib.get_close_matches(pool.class_name, class_names, n=1)
            hint = (
                f"did you mean '{close[0]}'?"
                if close
                else f"declare it under modelplane:classes or use one of: {', '.join(class_names) or '(none declared)'}"
            )
            issues.append(ConfigIssue(f"{ppath}.className", f"unknown class '{pool.class_name}'", hint))
        lo, hi = pool.min_node_count, pool.max_node_count
        if (lo is None) != (hi is None):
            missing = "maxNodeCount" if hi is None else "minNodeCount"
            issues.append(
                ConfigIssue(
                    f"{ppath}.{missing}",
                    "autoscaling needs both minNodeCount and maxNodeCount",
                    f"set {missing} too, or remove the other bound",
                )
            )
        elif lo is not None and hi is not None:
            if lo > hi:
                issues.append(
                    ConfigIssue(
                        f"{ppath}.minNodeCount",
                        f"minNodeCount {lo} is greater than maxNodeCount {hi}",
                        "make minNodeCount <= nodeCount <= maxNodeCount",
                    )
                )
            elif not lo <= pool.node_count <= hi:
                issues.append(
                    ConfigIssue(
                        f"{ppath}.nodeCount",
                        f"nodeCount {pool.node_count} is outside {lo}..{hi}",
                        "make minNodeCount <= nodeCount <= maxNodeCount",
                    )
                )
        issues += check_pool_start(ppath, cluster.source, pool)
        if lo is not None and hi is not None and not profile(cluster.source).scaling.autoscaler:
            issues.append(
                ConfigIssue(
                    f"{ppath}.minNodeCount",
                    f"{cluster.source} pools do not autoscale (nothing scales them between "
                    "minNodeCount and maxNodeCount)",
                    "remove minNodeCount and maxNodeCount and set nodeCount to the nodes the pool needs",
                )
            )
        elif lo == 0 and pool.class_name in class_names:
            issues += check_gpu_scale_from_zero(ppath, cluster.source, pool, fleet.class_named(pool.class_name))

    return issues


def check_gpu_scale_from_zero(ppath: str, source: str, pool: NodePool, cls: InferenceClass) -> list[ConfigIssue]:
    """`minNodeCount: 0` on a GPU pool only where the cloud's autoscaler can bring it back up.

    Whether it can, and the source, is the cloud profile's `scaling.gpu_from_zero`
    (`infra.profiles.ScaleFromZero`); None (Existing) leaves it to the cluster's owner. CPU pools
    are not judged here. From one node up the Cluster Autoscaler copies a live node of the pool,
    ResourceSlices included, where its DRA handling is on (docs/serving.md, "GPU pools at zero
    nodes"), so one node is the least that scales.
    """
    stated = profile(source).scaling.gpu_from_zero
    if stated is None or stated.can or role_of(claimed_drivers(cls)) != "GPU":
        return []
    start = "" if pool.node_count >= 1 else " and nodeCount: 1"
    return [
        ConfigIssue(
            f"{ppath}.minNodeCount",
            f"GPU pool '{pool.name}' could not scale up again from minNodeCount 0: {stated.says}",
            f"set minNodeCount: 1{start} (from one node the autoscaler copies the live node's devices)",
        )
    ]


def check_pool_start(ppath: str, source: str, pool: NodePool) -> list[ConfigIssue]:
    """An autoscaled pool's first nodes fit its maxNodeCount where the cloud starts them per zone.

    GKE starts `nodes_per_zone_at_start` nodes in every zone of the pool (`infra.profiles.pool_nodes`),
    so nodeCount 1 over a regional pool's three zones starts three nodes, above a maxNodeCount of 2.
    """
    lo, hi = pool.min_node_count, pool.max_node_count
    if lo is None or hi is None or not lo <= pool.node_count <= hi:
        return []  # the bounds' own checks speak
    cloud = profile(source)
    zones = zone_count(cloud, pool.zones)
    started, _ = pool_nodes(pool.node_count, hi, zones)
    if started <= hi:
        return []
    per_zone = nodes_per_zone_at_start(pool.node_count, zones)
    spread = "the region's default zones" if not pool.zones else "its zones"
    return [
        ConfigIssue(
            f"{ppath}.maxNodeCount",
            f"{source} starts {per_zone} node(s) in each of the pool's {zones} zones ({spread}), {started} in "
            f"all, above maxNodeCount {hi}",
            f"raise maxNodeCount to {started}, or list fewer zones under zones (one zone starts nodeCount nodes)",
        )
    ]


def _check_deployment(fleet: Fleet, di: int, dep: ModelDeploymentSpec) -> list[ConfigIssue]:
    """The deployment's cluster, pool and devices exist, and the pool can have nodes."""
    dpath = f"deployments[{di}]"
    unknown = _check_target(fleet, dpath, dep)
    if unknown:
        return unknown
    pools = {p.name: p for p in fleet.cluster_named(dep.cluster).node_pools}
    issues = _check_schedulable(fleet, dpath, dep, pools)
    target = pools[dep.pool]
    if target.class_name not in [c.name for c in fleet.classes]:
        return issues
    return issues + _check_device_requests(fleet, dpath, dep, fleet.class_named(target.class_name))


def _check_target(fleet: Fleet, dpath: str, dep: ModelDeploymentSpec) -> list[ConfigIssue]:
    """The deployment's cluster exists and has its pool; the checks after this one need both."""
    cluster_names = [c.name for c in fleet.clusters]
    if dep.cluster not in cluster_names:
        return [
            ConfigIssue(
                f"{dpath}.cluster",
                f"unknown cluster '{dep.cluster}'",
                # parse_fleet refuses a fleet without clusters before these checks run.
                f"use one of: {', '.join(cluster_names)}",
            )
        ]
    pools = {p.name: p for p in fleet.cluster_named(dep.cluster).node_pools}
    if dep.pool not in pools:
        return [
            ConfigIssue(
                f"{dpath}.pool",
                f"cluster '{dep.cluster}' has no pool '{dep.pool}'",
                f"use one of: {', '.join(pools)}" if pools else f"give cluster '{dep.cluster}' a node pool first",
            )
        ]
    return []


def _check_schedulable(
    fleet: Fleet, dpath: str, dep: ModelDeploymentSpec, pools: dict[str, NodePool]
) -> list[ConfigIssue]:
    """A deployment with replicas needs a pool that can have nodes; `pools` are its cluster's, by name."""
    cluster_names = [c.name for c in fleet.clusters]
    target = pools[dep.pool]
    if dep.peak_replicas > 0 and target.node_count == 0 and target.max_node_count is None:
        return [
            ConfigIssue(
                f"{dpath}.pool",
                f"pool '{dep.pool}' of cluster '{dep.cluster}' has nodeCount 0 and no autoscaling, "
                f"so the {dep.peak_replicas} replica(s) can never be scheduled",
                f"give the pool nodeCount >= 1, or minNodeCount and maxNodeCount >= 1 (clusters[{cluster_names.index(dep.cluster)}]"
                f".nodePools[{list(pools).index(dep.pool)}]), or set replicas: 0",
            )
        ]
    return []


def _check_device_requests(
    fleet: Fleet, dpath: str, dep: ModelDeploymentSpec, cls: InferenceClass
) -> list[ConfigIssue]:
    """Each requested device is a DRA device of the pool's class, within its count, and a CPU claim names its CPUs."""
    issues: list[ConfigIssue] = []
    devices = {d.name: d for d in cls.devices}
    for ri, req in enumerate(dep.devices):
        rpath = f"{dpath}.devices[{ri}]"
        dev = devices.get(req.name)
        if dev is None and not devices:
            # A class whose devices come from its machine's catalog row has none while the machine is
            # unknown; that is the class's own error (`classes[i].devices`), and fixing it gives the device.
            ci = [c.name for c in fleet.classes].index(cls.name)
            issues.append(
                ConfigIssue(
                    f"{rpath}.name",
                    f"class '{cls.name}' has no devices, so none named '{req.name}'",
                    f"give classes[{ci}] its devices first (write them, or name a machine the catalog lists), "
                    "then name one of them here",
                )
            )
        elif dev is None:
            issues.append(
                ConfigIssue(
                    f"{rpath}.name",
                    f"class '{cls.name}' has no device '{req.name}'",
                    f"use one of: {', '.join(devices)}",
                )
            )
        elif dev.claim is not ClaimMode.DRA:
            issues.append(
                ConfigIssue(
                    f"{rpath}.name",
                    f"device '{req.name}' of class '{cls.name}' is Synthetic and cannot be claimed",
                    "claim a DRA device of the class",
                )
            )
        elif req.count > dev.count:
            issues.append(
                ConfigIssue(
                    f"{rpath}.count",
                    f"count {req.count} is more than the {dev.count} '{req.name}' devices class '{cls.name}' has per node",
                    f"request at most {dev.count}",
                )
            )
        elif dev.driver == CPU_CLAIM_DRIVER and claimed_cpus(dev) is None:
            issues.append(
                ConfigIssue(
                    f"{rpath}.name",
                    f"device '{req.name}' of class '{cls.name}' claims dra.cpu without a whole number of CPUs "
                    f"in capacity '{CPU_CLAIM_CAPACITY}'",
                    f"set classes[{fleet.classes.index(cls)}].devices[{cls.devices.index(dev)}].capacity."
                    f'{CPU_CLAIM_CAPACITY}.value to the CPUs a pod takes, such as "6"',
                )
            )
    return issues


def pools_without_devices(fleet: Fleet) -> list[ConfigIssue]:
    """Each pool whose class claims no CPU or GPU DRA device: it has no role (`infra.config.roles`)."""
    issues = []
    unsupplied = {c.name for c in fleet.classes if not c.devices}  # `supply_fleet` said so: no devices to take
    for ki, pi, cls in pools_without_role(fleet):
        if cls in unsupplied:
            continue
        issues.append(
            ConfigIssue(
                f"clusters[{ki}].nodePools[{pi}].className",
                f"class '{cls}' claims no CPU or GPU DRA device, so it cannot back a pool",
                "add a DRA device with a GPU driver or dra.cpu to the class, or use another class",
            )
        )
    return issues
