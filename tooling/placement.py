"""The placement audit of the offline plan: which pools each node agent and each model deployment can land on.

For one cluster it takes the nodes each pool yields (`infra.placement.nodes_of`), reads the
placement of every node agent the serving stack installs from the Helm values the releases carry, at
the values paths its chart row names (`infra.serving.chart.NodeAgent`, falling back to the chart's
defaults), and applies Kubernetes' scheduling rules (`infra.placement`) to every (workload, node)
pair. It then checks:

- `agent-reach`: each device stack's node agent reaches every pool of its vendor or role;
- `agent-off-pool`: a confined agent (a driver) stays off every other pool;
- `driver-on-system-pool`: no GPU or CPU driver lands on the system pool (or, on an Existing
  cluster, on the owner's nodes outside the declared pools);
- `wildcard-toleration`: nothing tolerates every taint but an agent whose row says why
  (`NodeAgent.tolerates_every_taint`);
- `deployment-placement`: each model deployment can land only on its own pool; a replica of several
  nodes counts as one gang of that many whole nodes, all or nothing, so it lands only on a pool
  that admits its pods and has that many nodes (a provisioned pool at its largest);
- `gateway-placement`: the proxies of a cluster's Gateway (when it publishes services) land on
  system nodes only, never on a GPU or CPU pool, and on at least one node.

It reads values; it never writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra.facts import ClusterFacts
from infra.placement import (
    Node,
    PodPlacement,
    Toleration,
    affinity_matches,
    nodes_of,
    pod_admits,
    selector_matches,
    untolerated,
)
from infra.serving.catalog import node_agents
from infra.serving.chart import NodeAgent, ValuesPath
from infra.serving.fleet import has_gateway
from infra.serving.pods import gateway_proxy_placement, placements
from tooling.hooks import PlanContext

# --------------------------------------------------------------------------------------------
# Node agents of the serving stack: their placement read from the values paths their rows name

_MISSING: Any = object()


def _get(values: Mapping[str, Any], path: ValuesPath) -> Any:
    current: Any = values
    for part in path:
        if not isinstance(current, Mapping) or part not in current:
            return _MISSING
        current = current[part]
    return current


@dataclass(frozen=True)
class AgentPlacement:
    """How one agent is placed, as resolved from its release's values."""

    agent: NodeAgent
    node_selector: Mapping[str, str]
    affinity: Mapping[str, Any] | None
    tolerations: tuple[Toleration, ...]

    def admits(self, node: Node) -> bool:
        return pod_admits(self.node_selector, self.affinity, self.tolerations, node)


def agent_placement(agent: NodeAgent, values: Mapping[str, Any]) -> AgentPlacement | None:
    """The agent's placement from the release values, or None when the values turn it off."""
    if agent.enabled is not None:
        enabled = _get(values, agent.enabled)
        if not (agent.enabled_default if enabled is _MISSING else bool(enabled)):
            return None
    raw_tols = _get(values, agent.tolerations)
    tols = agent.default_tolerations if raw_tols is _MISSING else (raw_tols or ())
    selector: Mapping[str, str] = agent.default_node_selector
    for i, path in enumerate(agent.node_selectors):
        found = _get(values, path)
        last = i == len(agent.node_selectors) - 1
        # An empty component selector defers to the shared one; an empty last one selects every node.
        if found is not _MISSING and (found or last):
            selector = {str(k): str(v) for k, v in (found or {}).items()}
            break
    affinity = agent.default_affinity
    if agent.affinity is not None:
        found = _get(values, agent.affinity)
        if found is not _MISSING:
            affinity = found or None  # `affinity: null` or `{}` clears the chart's default
    return AgentPlacement(
        agent, selector, affinity, tuple(Toleration.from_values(t) for t in tols if isinstance(t, Mapping))
    )


# --------------------------------------------------------------------------------------------
# Deployments and the report


@dataclass(frozen=True)
class PlacementViolation:
    check: str
    subject: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {"check": self.check, "subject": self.subject, "message": self.message}


@dataclass(frozen=True)
class PlacementReport:
    cluster: str
    nodes: tuple[Node, ...]
    workloads: tuple[tuple[AgentPlacement, tuple[str, ...]], ...]  # placement, pools it lands on
    deployments: tuple[tuple[PodPlacement, tuple[str, ...]], ...]
    violations: tuple[PlacementViolation, ...]
    gateways: tuple[tuple[PodPlacement, tuple[str, ...]], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations

    def lands_on(self, release: str, workload: str) -> tuple[str, ...]:
        for placed, pools in self.workloads:
            if (placed.agent.release, placed.agent.workload) == (release, workload):
                return pools
        raise KeyError((release, workload))

    def as_json(self) -> dict[str, Any]:
        gateways = {"gateways": [{"name": g.name, "pools": list(pools)} for g, pools in self.gateways]}
        return {
            "cluster": self.cluster,
            "ok": self.ok,
            "nodes": [n.as_json() for n in self.nodes],
            "workloads": [
                {
                    "release": p.agent.release,
                    "workload": p.agent.workload,
                    "nodeSelector": dict(p.node_selector),
                    "tolerations": [t.as_json() for t in p.tolerations],
                    "pools": list(pools),
                }
                for p, pools in self.workloads
            ],
            "deployments": [
                {"name": d.name, "pool": d.pool, "pools": list(pools), "gangs": gangs_json(d)}
                for d, pools in self.deployments
            ],
            # Only on a cluster that publishes services.
            **(gateways if self.gateways else {}),
            "violations": [v.as_json() for v in self.violations],
        }


def gangs_json(dep: PodPlacement) -> dict[str, int] | None:
    """A multi-node deployment's gangs as the audit counts them: how many at most, the pods (one per
    node) of each, and the whole nodes they take together; None for pods of one node each."""
    if dep.group_nodes == 1:
        return None
    return {"count": dep.groups, "nodes": dep.group_nodes, "wholeNodes": dep.groups * dep.group_nodes}


def _targets(serves: str, nodes: Sequence[Node]) -> set[str]:
    if serves == "cpu":
        return {n.pool for n in nodes if n.role == "CPU"}
    if serves == "gpu":
        return {n.pool for n in nodes if n.role == "GPU"}
    return {n.pool for n in nodes if n.role == "GPU" and n.vendor == serves}


def audit(
    cluster: ClusterFacts,
    releases: Mapping[str, Mapping[str, Any]],
    deployments: Sequence[PodPlacement],
    gateways: Sequence[PodPlacement] = (),
) -> PlacementReport:
    """Audit one cluster: `releases` maps each installed release name to its values."""
    nodes = nodes_of(cluster)
    violations: list[PlacementViolation] = []
    workloads: list[tuple[AgentPlacement, tuple[str, ...]]] = []
    for agent in node_agents():
        if agent.release not in releases:
            continue
        placed = agent_placement(agent, releases[agent.release])
        if placed is None:
            continue
        lands = tuple(n.pool for n in nodes if placed.admits(n))
        workloads.append((placed, lands))
        violations += _wildcard_violations(placed)
        violations += _agent_pool_violations(placed, lands, nodes)
    placed_deployments: list[tuple[PodPlacement, tuple[str, ...]]] = []
    sizes = pool_sizes(cluster)
    for dep in deployments:
        admitting = _pod_lands(dep, nodes)
        lands = tuple(p for p in admitting if holds_gang(dep, sizes.get(p)))
        placed_deployments.append((dep, lands))
        violations += _deployment_violations(dep, lands, admitting, sizes)
    placed_gateways: list[tuple[PodPlacement, tuple[str, ...]]] = []
    for gw in gateways:
        lands = _pod_lands(gw, nodes)
        placed_gateways.append((gw, lands))
        violations += _gateway_violations(gw, lands, nodes)
    return PlacementReport(
        cluster.name,
        tuple(nodes),
        tuple(workloads),
        tuple(placed_deployments),
        tuple(violations),
        tuple(placed_gateways),
    )


def pool_sizes(cluster: ClusterFacts) -> dict[str, int]:
    """The most nodes each pool of a provisioned cluster has; none for an Existing cluster, whose
    `nodeCount` does not say how many nodes its owner runs."""
    return {p.name: p.nodes for p in cluster.pools} if cluster.profile.provisioned else {}


def holds_gang(dep: PodPlacement, size: int | None) -> bool:
    """Whether a pool of at most `size` nodes (None: unknown) can take one whole gang of `dep`.

    A gang's pods start together or not at all, one per node: a pool with fewer nodes than a gang
    runs none of its pods, though each pod alone would fit a node.
    """
    return size is None or size >= dep.group_nodes


def _pod_lands(pod: PodPlacement, nodes: Sequence[Node]) -> tuple[str, ...]:
    """The pools (one entry per node) whose nodes admit the pod."""
    return tuple(n.pool for n in nodes if pod_admits(pod.node_selector, pod.affinity, pod.tolerations, n))


def _wildcard_violations(placed: AgentPlacement) -> list[PlacementViolation]:
    """`wildcard-toleration`: an agent outside the allowlist that tolerates every taint."""
    agent = placed.agent
    subject = f"{agent.release}/{agent.workload}"
    wild = [t for t in placed.tolerations if t.wildcard]
    if not wild or agent.tolerates_every_taint:
        return []
    return [
        PlacementViolation(
            "wildcard-toleration",
            subject,
            f"{subject} tolerates every taint{' with effect ' + wild[0].effect if wild[0].effect else ''} "
            "(empty key, operator Exists); scope its tolerations to the taints of the pools it serves",
        )
    ]


def _agent_pool_violations(
    placed: AgentPlacement, lands: tuple[str, ...], nodes: Sequence[Node]
) -> list[PlacementViolation]:
    """The pools an agent serves but cannot reach and, for a confined agent, the pools it lands on but does not serve."""
    agent = placed.agent
    if agent.serves is None:
        return []
    subject = f"{agent.release}/{agent.workload}"
    targets = _targets(agent.serves, nodes)
    violations: list[PlacementViolation] = []
    for node in nodes:
        if node.pool in targets and node.pool not in lands:
            violations.append(
                PlacementViolation(
                    "agent-reach", subject, f"{subject} cannot reach pool '{node.pool}': {_why(placed, node)}"
                )
            )
        elif agent.confined and node.pool not in targets and node.pool in lands:
            check = "driver-on-system-pool" if node.role == "System" else "agent-off-pool"
            violations.append(
                PlacementViolation(
                    check,
                    subject,
                    f"{subject} lands on {node.role} pool '{node.pool}', which it does not serve; "
                    "give it a nodeSelector or affinity for its own pools and tolerate only their taints",
                )
            )
    return violations


def _deployment_violations(
    dep: PodPlacement, lands: tuple[str, ...], admitting: tuple[str, ...], sizes: Mapping[str, int]
) -> list[PlacementViolation]:
    """`deployment-placement`: a deployment that can land anywhere but its own pool, or a gang that
    can land on no pool whole."""
    if lands == (dep.pool,):
        return []
    where = ", ".join(f"'{p}'" for p in lands) or "no pool"
    short = [p for p in admitting if p not in lands]
    gangs = (
        f"; a replica is a gang of {dep.group_nodes} pods on {dep.group_nodes} nodes, placed together or not at "
        "all, and " + ", ".join(f"pool '{p}' has at most {sizes[p]} node{'s' if sizes[p] != 1 else ''}" for p in short)
        if short
        else ""
    )
    return [
        PlacementViolation(
            "deployment-placement",
            f"deployment/{dep.name}",
            f"deployment '{dep.name}' targets pool '{dep.pool}' but can land on {where}{gangs}",
        )
    ]


def _gateway_violations(gw: PodPlacement, lands: tuple[str, ...], nodes: Sequence[Node]) -> list[PlacementViolation]:
    """`gateway-placement`: gateway proxies that can land off the system nodes, or nowhere."""
    off = [n.pool for n in nodes if n.pool in lands and n.role != "System"]
    if not off and lands:
        return []
    where = ", ".join(f"'{p}'" for p in off) if off else "no node"
    return [
        PlacementViolation(
            "gateway-placement",
            f"gateway/{gw.name}",
            f"the proxies of gateway {gw.name} can land on {where}; they belong on system nodes",
        )
    ]


def _why(placed: AgentPlacement, node: Node) -> str:
    if not selector_matches(placed.node_selector, node.labels):
        return f"nodeSelector {dict(placed.node_selector)} does not match the pool's labels"
    if not affinity_matches(placed.affinity, node.labels):
        return "its required node affinity matches none of the pool's labels"
    missing = untolerated(placed.tolerations, node.taints)
    return "it does not tolerate " + ", ".join(f"{t.key}={t.value}:{t.effect}" for t in missing)


def placement_hook(ctx: PlanContext) -> None:
    """The plan's `placement` section; every violation is a mandatory plan violation."""
    reports = []
    for facts, cluster_doc in zip(ctx.facts, ctx.doc["clusters"], strict=True):
        releases = {r["name"]: r["values"] for r in cluster_doc["releases"]}
        deployments = [p for d in ctx.stack.fleet.deployments if d.cluster == facts.name for p in placements(d, facts)]
        gateways = [gateway_proxy_placement(facts)] if has_gateway(ctx.stack.fleet, facts.name) else []
        report = audit(facts, releases, deployments, gateways)
        reports.append(report.as_json())
        for v in report.violations:
            ctx.doc["violations"].append(
                {
                    "policy": "placement",
                    "enforcement": "mandatory",
                    "message": f"cluster '{facts.name}': {v.message} [{v.check}]",
                    "resource": f"{facts.name}/{v.subject}",
                }
            )
    ctx.doc["placement"] = reports
