"""Kubernetes' scheduling model: taints and tolerations, node selectors, required node affinity.

It answers "can this pod be placed on a node of that pool": the nodes each pool yields (labels and
taints from `infra.facts`, plus the labels node discovery puts on the hardware) and the matching
rules of the Kubernetes scheduler. `infra.serving.pods` builds the engine pods' placement with
these types; the offline plan's placement audit (`tooling.placement`) applies the same rules
to every node agent the serving stack installs. It models taints, node selectors and required
node affinity, not resources, pod affinity or topology spread: it answers "can this pod be placed
on that node", not "will it fit".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra.facts import ClusterFacts, NodeTaint, PoolFacts

# --------------------------------------------------------------------------------------------
# Kubernetes scheduling rules

# Taints with these effects keep a pod off a node unless tolerated; PreferNoSchedule only scores.
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # the API's default when unset
    value: str = ""
    effect: str = ""  # empty: every effect

    @classmethod
    def from_values(cls, raw: Mapping[str, Any]) -> Toleration:
        return cls(
            key=str(raw.get("key") or ""),
            operator=str(raw.get("operator") or "Equal"),
            value=str(raw.get("value") or ""),
            effect=str(raw.get("effect") or ""),
        )

    def tolerates(self, taint: NodeTaint) -> bool:
        """Kubernetes' `Toleration.ToleratesTaint` (k8s.io/api/core/v1/toleration.go)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return False

    @property
    def wildcard(self) -> bool:
        """An empty key with Exists matches every key: every taint (of its effect, or all)."""
        return not self.key and self.operator == "Exists"

    def as_json(self) -> dict[str, str]:
        out = {"key": self.key, "operator": self.operator}
        if self.value:
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        return out


def exact_tolerations(taints: Sequence[NodeTaint]) -> list[Toleration]:
    """One toleration per taint that matches it and nothing else (key, value, effect): how the
    stack's workloads tolerate a cluster's own taints (`ClusterFacts.taints`), never by wildcard."""
    return [Toleration(key=t.key, operator="Equal", value=t.value, effect=t.effect) for t in taints]


def untolerated(tolerations: Sequence[Toleration], taints: Sequence[NodeTaint]) -> list[NodeTaint]:
    """The blocking taints no toleration matches; empty means the taints admit the pod."""
    return [t for t in taints if t.effect in BLOCKING_EFFECTS and not any(tol.tolerates(t) for tol in tolerations)]


def selector_matches(node_selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == str(v) for k, v in node_selector.items())


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = str(expr.get("key", ""))
    op = expr.get("operator")
    values = [str(v) for v in expr.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    exprs = term.get("matchExpressions") or []
    # A term with no expressions matches nothing; matchFields (node names) cannot be judged from a
    # pool, so such a term never counts as a match here.
    if not exprs or term.get("matchFields"):
        return False
    return all(_expression_matches(e, labels) for e in exprs)


def affinity_matches(affinity: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Required node affinity: any term (OR) whose expressions all (AND) match."""
    required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(_term_matches(t, labels) for t in required.get("nodeSelectorTerms") or [])


# --------------------------------------------------------------------------------------------
# Nodes

OS_LABEL = "kubernetes.io/os"
# The nodes of an Existing cluster outside its declared pools (the owner's control plane and
# general nodes): nothing labels or taints them for us, and no driver belongs there.
UNPOOLED = "(unpooled)"

# Labels that appear on a GPU node because of its hardware, whoever sets them: NFD's PCI vendor
# label for NVIDIA's classes 0300/0302 (10de; the config `infra.serving.values.node_feature_discovery`
# gives NFD); `nvidia.com/gpu.present`, set by the GPU operator (and by GKE and EKS AL2023 images);
# `feature.node.kubernetes.io/amd-gpu`, set by the AMD operator's NodeFeatureRule on AMD's PCI
# device ids (ROCm/gpu-operator v1.5.1 helm-charts-k8s/templates/gpu-nfd-default-rule.yaml). AMD
# Instinct cards are of no class that config labels, so no `pci-1002` label appears.
# Chart defaults select on these, so the audit's nodes carry them.
DISCOVERED_LABELS: Mapping[str, Mapping[str, str]] = {
    "nvidia": {"feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.present": "true"},
    "amd": {"feature.node.kubernetes.io/amd-gpu": "true"},
}


@dataclass(frozen=True)
class Node:
    """A representative node of a pool."""

    pool: str
    role: str
    vendor: str | None
    labels: Mapping[str, str]
    taints: tuple[NodeTaint, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "role": self.role,
            "labels": dict(sorted(self.labels.items())),
            "taints": [t.as_json() for t in self.taints],
        }


def node_of(pool: PoolFacts) -> Node:
    labels = {OS_LABEL: "linux", **pool.labels}
    if pool.vendor is not None:
        labels.update(DISCOVERED_LABELS.get(pool.vendor, {}))
    return Node(pool.name, pool.role, pool.vendor, labels, pool.node_taints)


def nodes_of(cluster: ClusterFacts) -> list[Node]:
    nodes = [node_of(p) for p in cluster.pools]
    if not any(p.role == "System" for p in cluster.pools):
        nodes.insert(0, Node(UNPOOLED, "System", None, {OS_LABEL: "linux"}, ()))
    return nodes


def pod_admits(
    node_selector: Mapping[str, str],
    affinity: Mapping[str, Any] | None,
    tolerations: Sequence[Toleration],
    node: Node,
) -> bool:
    return (
        selector_matches(node_selector, node.labels)
        and affinity_matches(affinity, node.labels)
        and not untolerated(tolerations, node.taints)
    )


@dataclass(frozen=True)
class PodPlacement:
    """The placement a model deployment's pods get (built by `infra.serving.pods.pod_placement`)."""

    name: str
    pool: str
    node_selector: Mapping[str, str]
    tolerations: tuple[Toleration, ...]
    affinity: Mapping[str, Any] | None = None
    # A replica of several nodes is one gang: `group_nodes` pods, one per node, placed together or
    # not at all (a LeaderWorkerSet group, `components.features.multinode`); `groups` is how many at most.
    group_nodes: int = 1
    groups: int = 1
