"""Rules on serving: the engine's port, memory and cache, `services[]` and autoscaling across keys."""

from __future__ import annotations

from clouds import profile
from infra.checks.cache import keys_dropped, shared_cache_issues
from infra.checks.parallelism import (
    cache_size_issues,
    claimed_gpus,
    gpu_memory_gib,
    memory_fix,
    parallelism_issues,
    weights_issues,
)
from infra.checks.routing import check_scale_from_zero, check_services
from infra.config.base import OwnerClusterBlock
from infra.config.issues import ConfigIssue
from infra.config.model import (
    CacheVolume,
    Fleet,
)
from infra.config.roles import claimed_drivers, role_of
from infra.formats import parse_quantity
from infra.serving.autoscaling import PROMETHEUS_COMPONENT, unwatched
from infra.serving.vllm_args import PORT_FLAG, port_args


def check_serving(fleet: Fleet) -> list[ConfigIssue]:
    """The engine's port, memory and cache, and `services[]` references (docs/serving.md)."""
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(fleet.deployments):
        dpath = f"deployments[{di}]"
        for ai, value in port_args(dep.args):
            if value == str(dep.port):
                continue
            shown = f"'{PORT_FLAG} {value}'" if value else f"'{PORT_FLAG}' without a value"
            issues.append(
                ConfigIssue(
                    f"{dpath}.args[{ai}]",
                    f"args set {shown} but the deployment's port is {dep.port}",
                    f"remove it from args and set {dpath}.port"
                    + (f": {value}" if value and value.isdigit() else "")
                    + " (the container, probes, Service and route all follow port)",
                )
            )
        try:
            cluster = fleet.cluster_named(dep.cluster)
            pool = next(p for p in cluster.node_pools if p.name == dep.pool)
            role = role_of(claimed_drivers(fleet.class_named(pool.class_name)))
        except (KeyError, StopIteration):
            continue  # an unknown reference, reported by check_references
        if role == "GPU":
            cls = fleet.class_named(pool.class_name)
            gpus = claimed_gpus(cls, dep) * dep.nodes
            issues += parallelism_issues(dpath, dep.args, gpus, dep.nodes)
            issues += weights_issues(dpath, dep.args, gpus, gpu_memory_gib(cluster, cls))
        if role == "GPU" and dep.memory is None:
            issues.append(
                ConfigIssue(
                    f"{dpath}.memory",
                    f"deployment '{dep.name}' runs on GPU pool '{dep.pool}' without a memory request",
                    memory_fix(fleet, cluster, pool.class_name, dep.shm_size),
                )
            )
        if dep.memory is not None and (parse_quantity(dep.memory) or 0) <= (parse_quantity(dep.shm_size) or 0):
            issues.append(
                ConfigIssue(
                    f"{dpath}.memory",
                    f"memory {dep.memory} does not exceed shmSize {dep.shm_size}, which counts against it",
                    "raise memory above shmSize plus what the engine needs",
                )
            )
        cache = dep.cache
        pods = dep.peak_replicas * dep.nodes
        if cache is not None and cache.volume is CacheVolume.PERSISTENT_VOLUME_CLAIM and pods > 1:
            spread = (
                f"{dep.peak_replicas} replicas"
                if dep.nodes == 1
                else f"{pods} pods ({dep.peak_replicas} x {dep.nodes} nodes)"
            )
            drop = keys_dropped(cache)
            # A multi-node group reads one model on every node: a Shared cache downloads it once for
            # them all, where the cloud has ReadWriteMany storage (`infra.checks.cache`).
            shared = profile(cluster.source).shared_cache is not None
            issues.append(
                ConfigIssue(
                    f"{dpath}.cache.volume",
                    f"a PersistentVolumeClaim cache is ReadWriteOnce: one node mounts it, not {spread}",
                    f"use volume: NodeLocal{drop} for several replicas, or {dep.peak_replicas_key}: 1"
                    if dep.nodes == 1
                    else "use volume: Shared, one ReadWriteMany copy every pod of every group reads, or "
                    f"volume: NodeLocal{drop}, which each pod keeps on its own node"
                    if shared
                    else f"use volume: NodeLocal{drop}, which each pod of a group keeps on its own node",
                )
            )
        if (
            cache is not None
            and cache.volume is CacheVolume.PERSISTENT_VOLUME_CLAIM
            and cache.storage_class_name is None
            and profile(cluster.source).cache_storage_class is None
        ):
            issues.append(
                ConfigIssue(
                    f"{dpath}.cache.storageClassName",
                    f"{cluster.source} cluster '{cluster.name}' has no StorageClass this program provides",
                    "set storageClassName to a class the cluster has (install its CSI driver first), "
                    f"or use volume: NodeLocal{keys_dropped(cache)}",
                )
            )
        issues += shared_cache_issues(fleet, di, dep, cluster)
        if cache is not None and cache.size is not None:
            issues += cache_size_issues(dpath, dep.args, cache.size)
    issues.extend(check_services(fleet))
    return issues


def check_autoscaling(fleet: Fleet) -> list[ConfigIssue]:
    """`autoscaling` across keys: it replaces `replicas`, and a Prometheus must see its metric.
    Scale from zero, which needs the picker's queue: `infra.checks.routing.check_scale_from_zero`.

    KEDA owns the replica count of an autoscaled deployment; a `replicas` beside it would be a
    second owner, reset by every `pulumi up`. At `minReplicas: 0` the first request after an idle
    spell waits for a whole start (a node too, where the pool scales down): the pull, the weights'
    download and their load. A model cache keeps the download out of that wait; without one every
    cold start downloads the weights again.
    """
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(fleet.deployments):
        scaling = dep.autoscaling
        if scaling is None:
            continue
        dpath = f"deployments[{di}]"
        if "replicas" in dep.model_fields_set:
            issues.append(
                ConfigIssue(
                    f"{dpath}.replicas",
                    f"deployment '{dep.name}' sets both replicas and autoscaling; the autoscaler owns the replica count",
                    f"remove replicas, or remove autoscaling for a fixed count (bounds: {dpath}.autoscaling.minReplicas "
                    "and maxReplicas)",
                )
            )
        issues += check_scale_from_zero(fleet, di)
        issues += _unseen_by_prometheus(fleet, dep.cluster, f"{dpath}.autoscaling", dep.name)
    return issues


def _unseen_by_prometheus(fleet: Fleet, cluster_name: str, path: str, name: str) -> list[ConfigIssue]:
    """An autoscaled deployment on a cluster that runs its own kube-prometheus-stack and names no
    Prometheus: the stack installs none there, so KEDA's default address answers nothing, and the
    owner's Prometheus selects only PodMonitors labelled `release: <its release>` by default
    (values.yaml `podMonitorSelectorNilUsesHelmValues: true`, templates/prometheus/prometheus.yaml
    @ kube-prometheus-stack-84.4.0)."""
    ci = next((i for i, c in enumerate(fleet.clusters) if c.name == cluster_name), None)
    if ci is None:
        return []  # check_references reports the unknown cluster
    cluster = fleet.clusters[ci]
    block = getattr(cluster, cluster.cloud.key, None)
    if not isinstance(block, OwnerClusterBlock) or not unwatched(block.preinstalled, block.prometheus):
        return []
    cpath = f"clusters[{ci}].{cluster.cloud.key}"
    return [
        ConfigIssue(
            path,
            f"deployment '{name}' is autoscaled on cluster '{cluster_name}', which runs its own "
            f"{PROMETHEUS_COMPONENT} ({cpath}.preinstalled) and names no Prometheus: the stack installs none "
            "there, so the autoscaler would read no metric",
            f"set {cpath}.prometheus.url to your Prometheus's in-cluster address (kube-prometheus-stack's "
            "Service `<fullname>-prometheus`, port 9090) and "
            f"{cpath}.prometheus.podMonitorLabels to what its podMonitorSelector selects "
            "(kube-prometheus-stack's default: {release: <its release name>}), or remove autoscaling",
        )
    ]
