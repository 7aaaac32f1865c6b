"""Rules on adopting a running cluster (`clusters[].<cloud>.adopt`, `nodePools[].adopt`).

An adopted cluster or pool is taken into the stack with the engine's import (docs/adopting.md): its
import ID must be written, in the shape its cloud's provider imports (`Cloud.adoption`), and must
name the cluster and pool the stack file describes. A wrong ID fails only when `pulumi up` reads
the resource (`resource '...' does not exist`) or, worse, reads another one; so it is judged here,
before anything registers. Not here: whether the running resource matches the stack file, which
only the provider's read can tell (`components.adoption`).
"""

from __future__ import annotations

import re

from clouds import cloud
from clouds.spec import ImportIds
from infra.config.base import Adoption, ProvisionedClusterBlock
from infra.config.issues import ConfigIssue
from infra.config.model import Fleet, InferenceCluster
from infra.config.roles import claimed_drivers
from infra.shared_cache import shares_cache
from infra.vocabulary import NET_DRIVER

# The groups of an `ImportIds` pattern named by their meaning in messages; any other group that is
# not a field of the cluster's block (AKS `subscription`, `resourceGroup`) must only be the same in
# the cluster's ID and its pools'.
_NAME_GROUPS = ("cluster", "pool")
_SPOKEN = {"resourceGroup": "resource group"}


def check_adoption(fleet: Fleet) -> list[ConfigIssue]:
    """Each `adopt` block: on a cloud that imports, with an ID of the cloud's shape naming its own cluster and pool."""
    issues: list[ConfigIssue] = []
    for ki, cluster in enumerate(fleet.clusters):
        issues += _cluster_issues(ki, cluster)
        issues += _network_issues(fleet, ki, cluster)
    return issues


def _cluster_issues(ki: int, cluster: InferenceCluster) -> list[ConfigIssue]:
    owner = cloud(cluster.source)
    block = getattr(cluster, owner.key, None)
    base = f"clusters[{ki}]"
    adopted_pools = [(pi, p.adopt) for pi, p in enumerate(cluster.node_pools) if p.adopt is not None]
    if not isinstance(block, ProvisionedClusterBlock) or block.adopt is None:
        return [
            ConfigIssue(
                f"{base}.nodePools[{pi}].adopt",
                f"pool '{cluster.node_pools[pi].name}' is adopted, but its cluster '{cluster.name}' is not: the "
                "program would create the cluster, and a new cluster has no running pool to adopt",
                f"adopt the cluster too (`{owner.key}.adopt.id`), or remove the pool's `adopt`",
            )
            for pi, _ in adopted_pools
        ]
    ids = owner.adoption
    if ids is None:
        return [
            ConfigIssue(
                f"{base}.{owner.key}.adopt",
                f"a running {cluster.source} cluster cannot be adopted yet: the program knows no import IDs for "
                f"{cluster.source}'s cluster and pools",
                "remove `adopt` and let the program create the cluster, or run the cluster as an Existing one "
                "(docs/existing-clusters.md)",
            )
        ]
    issues, running = _cluster_id_issues(f"{base}.{owner.key}.adopt.id", block.adopt, ids, block)
    for pi, pool_adopt in adopted_pools:
        pool = cluster.node_pools[pi]
        issues += _pool_id_issues(f"{base}.nodePools[{pi}].adopt.id", pool_adopt, ids, block, running, pool.name)
    return issues


def _cluster_id_issues(
    path: str, adopt: Adoption, ids: ImportIds, block: ProvisionedClusterBlock
) -> tuple[list[ConfigIssue], dict[str, str] | None]:
    """The cluster ID's problems, and what it names that no field of the block does (its `cluster`, an AKS
    resource group...; None when it names nothing)."""
    if not adopt.id:
        return [
            ConfigIssue(
                path,
                "an adopted cluster needs the import ID of the running cluster",
                f"write it as {ids.cluster_shape} (listed by {ids.listed_by})",
            )
        ], None
    match = ids.cluster.fullmatch(adopt.id)
    if match is None:
        return [
            ConfigIssue(
                path,
                f"'{adopt.id}' is not a cluster import ID",
                f"write it as {ids.cluster_shape} (listed by {ids.listed_by})",
            )
        ], None
    running = {k: v for k, v in match.groupdict().items() if k == "cluster" or not _block_field(block, k)}
    return _disagreements(path, match, block, ids.cluster_shape), running


def _pool_id_issues(
    path: str,
    adopt: Adoption,
    ids: ImportIds,
    block: ProvisionedClusterBlock,
    running: dict[str, str] | None,
    pool_name: str,
) -> list[ConfigIssue]:
    if not adopt.id:
        return [
            ConfigIssue(
                path,
                f"adopted pool '{pool_name}' needs the import ID of the running pool",
                f"write it as {ids.pool_shape} (listed by {ids.listed_by}), or remove `adopt` to create the pool",
            )
        ]
    match = ids.pool.fullmatch(adopt.id)
    if match is None:
        return [ConfigIssue(path, f"'{adopt.id}' is not a pool import ID", f"write it as {ids.pool_shape}")]
    issues = _disagreements(path, match, block, ids.pool_shape)
    for group, value in (running or {}).items():
        if match[group] != value:
            issues.append(
                ConfigIssue(
                    path,
                    f"the ID names {_SPOKEN.get(group, group)} '{match[group]}', and the adopted cluster's is '{value}'"
                    if group != "cluster"
                    else f"the ID names cluster '{match['cluster']}', and the adopted cluster is '{value}'",
                    "write the ID of a pool of the adopted cluster",
                )
            )
    if match["pool"] != pool_name:
        issues.append(
            ConfigIssue(
                path,
                f"the ID names pool '{match['pool']}', and the stack file names this pool '{pool_name}': the pool "
                "keeps its running name",
                f"rename the pool to '{match['pool']}' in the stack file",
            )
        )
    return issues


def _disagreements(path: str, match: re.Match[str], block: ProvisionedClusterBlock, shape: str) -> list[ConfigIssue]:
    """Where the ID's parts differ from the block's fields of the same meaning (place, project)."""
    issues = []
    for group, value in match.groupdict().items():
        field = _block_field(block, group)
        if group in _NAME_GROUPS or field is None:
            continue
        written = getattr(block, field)
        if value != written:
            issues.append(
                ConfigIssue(
                    path,
                    f"the ID's {field} is '{value}', and the cluster's block says '{written}'",
                    f"write the ID of the running resource ({shape}) and the block's `{field}` alike",
                )
            )
    return issues


def _block_field(block: ProvisionedClusterBlock, group: str) -> str | None:
    """The block's field an ID group means (`place`: its region or location), or None when it has none."""
    field = block.PLACE_FIELD if group == "place" else group
    return field if field in type(block).model_fields else None


def _network_issues(fleet: Fleet, ki: int, cluster: InferenceCluster) -> list[ConfigIssue]:
    """What an adopted cluster cannot have where it lacks the network the program builds (`needs_own_network`)."""
    owner = cloud(cluster.source)
    why = owner.adoption.needs_own_network if owner.adoption else None
    # A cluster without its block is `check_references`'s to report.
    block = getattr(cluster, owner.key, None)
    if not isinstance(block, ProvisionedClusterBlock) or block.adopt is None or why is None:
        return []
    issues = [
        ConfigIssue(
            f"clusters[{ki}].nodePools[{pi}]",
            f"pool '{pool.name}' is created in adopted cluster '{cluster.name}' and "
            f"{'names zones' if pool.zones else f'claims {NET_DRIVER}'}: {why}",
            "adopt a running pool that has them, or remove `zones` (and the class's "
            f"{NET_DRIVER} devices) so the pool runs in the cluster's subnets",
        )
        for pi, pool in enumerate(cluster.node_pools)
        if pool.adopt is None and (pool.zones or NET_DRIVER in _claimed(fleet, pool.class_name))
    ]
    if any(d.cluster == cluster.name and shares_cache(d) for d in fleet.deployments):
        issues.append(
            ConfigIssue(
                f"clusters[{ki}].{owner.key}.adopt",
                f"a deployment shares a weight cache on adopted cluster '{cluster.name}': {why}",
                "give the deployments on it `cache.volume: NodeLocal`, or run the cluster as an Existing one "
                "with its own ReadWriteMany class (docs/existing-clusters.md)",
            )
        )
    return issues


def _claimed(fleet: Fleet, class_name: str) -> list[str]:
    """The DRA drivers a class claims; none for a class the stack file does not have (`check_references` says so)."""
    cls = next((c for c in fleet.classes if c.name == class_name), None)
    return claimed_drivers(cls) if cls is not None else []
