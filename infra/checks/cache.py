"""Rules on a shared weight cache (`cache.volume: Shared`): storage the cluster can give it, and one model to hold.

A shared cache is a ReadWriteMany claim per cluster, namespace and model (`infra.shared_cache`): the
cloud must offer such storage (`CloudProfile.shared_cache`), an Existing cluster's owner must name
its class, the claim must be at least what the class provisions, and the engine must say which
model it serves. `infra.checks.services.check_serving` runs these beside its other cache rules; the
rule that several pods cannot share a ReadWriteOnce claim is there too, and its fix names `Shared`
for the pods of a multi-node group, which a claim of one node can never serve.
"""

from __future__ import annotations

from clouds import profile
from infra.config.issues import ConfigIssue
from infra.config.model import Fleet, InferenceCluster, ModelCache, ModelDeploymentSpec
from infra.formats import parse_quantity
from infra.shared_cache import shares_cache, weights_model


def shared_cache_issues(
    fleet: Fleet, di: int, dep: ModelDeploymentSpec, cluster: InferenceCluster
) -> list[ConfigIssue]:
    """What stops deployment `di`'s shared cache on `cluster`: no storage, no class, too small, no model."""
    cache = dep.cache
    if cache is None or not shares_cache(dep):
        return []
    dpath = f"deployments[{di}]"
    storage = profile(cluster.source).shared_cache
    if storage is None:
        return [
            ConfigIssue(
                f"{dpath}.cache.volume",
                f"{cluster.source} cluster '{cluster.name}' has no ReadWriteMany storage this program provides, "
                "which a Shared cache needs (docs/serving.md, Shared weight cache)",
                f"use volume: NodeLocal{keys_dropped(cache)}, which each node keeps for its own pods",
            )
        ]
    issues: list[ConfigIssue] = []
    if storage.storage_class is None and cache.storage_class_name is None:
        issues.append(
            ConfigIssue(
                f"{dpath}.cache.storageClassName",
                f"a Shared cache on {cluster.source} cluster '{cluster.name}' claims your ReadWriteMany StorageClass, "
                "and none is named",
                "set storageClassName to a class of the cluster that provisions ReadWriteMany volumes (NFS, CephFS, "
                f"a cloud file service), or use volume: NodeLocal{keys_dropped(cache)}",
            )
        )
    size = parse_quantity(cache.size) if cache.size is not None else None
    if cache.storage_class_name is None and storage.min_gib and size is not None and size < storage.min_gib * 2**30:
        issues.append(
            ConfigIssue(
                f"{dpath}.cache.size",
                f"size {cache.size} is below the {storage.min_gib} GiB {storage.storage_class} provisions at least "
                f"({storage.source})",
                f"set size: {storage.min_gib}Gi or more (the class bills that much whatever the weights take), or use "
                f"volume: NodeLocal{keys_dropped(cache)}",
            )
        )
    model = weights_model(dep)
    if model is None:
        issues.append(
            ConfigIssue(
                f"{dpath}.args",
                "a Shared cache holds the model the engine serves, and the args name none with --model",
                "add '--model <Hugging Face model id>' to args, or use volume: PersistentVolumeClaim",
            )
        )
        return issues
    first = next(
        d
        for d in fleet.deployments
        if d.cluster == dep.cluster and d.namespace == dep.namespace and shares_cache(d) and weights_model(d) == model
    )
    named = first.cache.storage_class_name if first.cache is not None else None
    if first is not dep and cache.storage_class_name != named:
        issues.append(
            ConfigIssue(
                f"{dpath}.cache.storageClassName",
                f"deployment '{dep.name}' shares the cache of model '{model}' with deployment '{first.name}', "
                f"whose class is {named or 'the cloud default'}; one claim has one class",
                f"set storageClassName: {named}" if named else "remove storageClassName",
            )
        )
    return issues


def keys_dropped(cache: ModelCache) -> str:
    """What a fix that turns a cache NodeLocal must also say: a NodeLocal cache refuses the claim's
    keys (`infra.config.deployments.ModelCache`), so they go too, or the next plan stops on them."""
    keys = [k for k, v in (("size", cache.size), ("storageClassName", cache.storage_class_name)) if v]
    return f" and remove {' and '.join(keys)}" if keys else ""
