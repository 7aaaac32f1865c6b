"""A chart row of the serving-stack catalog: everything the stack, its checks and its tests know of one chart.

A row says where the chart comes from (repository, pinned version), what it is for (driver tags,
features, dependencies), its values (built by its function in `infra.serving.values`), its node
agents (the DaemonSets it runs on every node it admits: the values paths that place them, their
memory, the pools they serve) and what its chart installs beside its workloads (DeviceClass, CRDs,
hook Job). The catalog (`infra.serving.catalog`) lists the rows per cloud; schedulability
(`infra.checks.schedulable`), the placement audit (`tooling.placement`), the chart mirror
(`infra.serving.mirror`) and the test tier's stand-in charts read them from there, so adding a chart
is adding a row and its values. This module holds the row's shape, never a row.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from infra.config.roles import Role

ValuesPath = tuple[str, ...]


def any_label_in(*pairs: tuple[str, str]) -> dict[str, Any]:
    """Required node affinity: one term per (label, value), so any one of them admits a node."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": k, "operator": "In", "values": [v]}]} for k, v in pairs
                ]
            }
        }
    }


@dataclass(frozen=True)
class NodeAgent:
    """A DaemonSet-like workload of a chart and the values paths that place it.

    Defaults are the chart's own (its values.yaml at the row's pinned version), used when the
    values leave a path unset. `serves` is the pools the agent must reach: a GPU vendor (`nvidia`,
    `amd`), `gpu` (every GPU pool) or `cpu`; None for agents that belong on every node. A `confined`
    agent must also stay off every other pool.
    """

    workload: str
    serves: str | None
    confined: bool
    tolerations: ValuesPath
    default_tolerations: tuple[Mapping[str, Any], ...] = ()
    # Tried in order; the first one set wins (a component selector, then the shared one).
    node_selectors: tuple[ValuesPath, ...] = ()
    default_node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: ValuesPath | None = None
    default_affinity: Mapping[str, Any] | None = None
    enabled: ValuesPath | None = None
    enabled_default: bool = True
    # The memory it requests on each node (its chart's `resources.requests.memory`), which
    # schedulability takes from what a node gives the deployments' pods; empty when it requests none.
    memory: str = ""
    # Why it may tolerate every taint; empty for an agent that must not (`wildcard-toleration`).
    tolerates_every_taint: str = ""
    # Its place in the placement report, which has listed the agents in this order since the
    # report was written; a new agent takes the next number.
    listed: int = 0
    # The release that runs it, `Chart.release`: set by its row (`Chart.node_agents`), never written.
    release: str = ""

    @property
    def roles(self) -> frozenset[Role]:
        """The roles of the pools whose nodes it runs on, as `serves` names them."""
        if self.serves is None:
            return frozenset({"System", "GPU", "CPU"})
        return frozenset({"CPU"}) if self.serves == "cpu" else frozenset({"GPU"})


@dataclass(frozen=True)
class DeviceClass:
    """The DeviceClass a chart creates: its name, its CEL selector, and the values path that turns it
    off (None: always created)."""

    name: str
    cel: str
    created_by: ValuesPath | None = None


@dataclass(frozen=True)
class Chart:
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
    # Its per-node workloads, as the placement audit and schedulability read them.
    agents: tuple[NodeAgent, ...] = ()
    # What the chart installs beside its workloads, which the test tier's stand-in of it carries too:
    # the DeviceClass it creates, the CRD bundles it ships (by the API they serve) and whether it
    # runs a post-install hook Job.
    device_class: DeviceClass | None = None
    crds: tuple[str, ...] = ()
    post_install_hook: bool = False

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

    @property
    def node_agents(self) -> tuple[NodeAgent, ...]:
        """Its agents, each naming the release that runs it."""
        return tuple(replace(a, release=self.release) for a in self.agents)

    def tolerating(self, extra: Sequence[Mapping[str, Any]]) -> Chart:
        """The row with `extra` added to every node agent's tolerations: what its values set there,
        or the chart's default where they set nothing (a list value replaces the chart's default
        whole, so the default must be carried over). The catalog adds a cluster's own taints
        this way (`infra.serving.catalog.cluster_charts`), on every cloud's rows alike."""
        if not extra or not self.agents:
            return self
        values: dict[str, Any] = copy.deepcopy(dict(self.values))
        for agent in self.agents:
            *parents, leaf = agent.tolerations
            at = values
            for part in parents:
                at = at.setdefault(part, {})
            have = list(at.get(leaf, agent.default_tolerations))
            at[leaf] = have + [dict(t) for t in extra if dict(t) not in have]
        return replace(self, values=values)
