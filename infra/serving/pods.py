"""Where the serving layer's pods run: a model deployment's engine pods and the Gateway's proxies.

The program places its pods with these (`components.model_deployment`), and the placement audit
(`tooling.placement`) checks the same placements against every pool's nodes, so they are facts of
the deployment and the cluster, built below the components. They register nothing; the scheduling
rules that judge them are `infra.placement`'s.
"""

from __future__ import annotations

from infra.config.model import ModelDeploymentSpec
from infra.facts import POOL_LABEL, ClusterFacts
from infra.placement import PodPlacement, Toleration, exact_tolerations
from infra.serving.routes import GATEWAY_NAME, gateway_namespace
from infra.vocabulary import ROLE_TAINT_KEYS

# The workload of a deployment's replicas above its floor, on its spot pool, is named after the
# deployment with this suffix (`components.model_deployment`).
SPOT_SUFFIX = "-spot"


def engine_tolerations(cluster: ClusterFacts, pool: str) -> list[Toleration]:
    """Every role's taint (harmless where a taint is absent: the pool nodeSelector, not the
    tolerations, is what places the pod), then one exact toleration per cluster taint and per
    taint the pool's nodes carry for how they are bought (a spot pool's: `PoolFacts.capacity_taints`)."""
    out = [Toleration(key=k, operator="Exists", effect="NoSchedule") for k in ROLE_TAINT_KEYS]
    return out + exact_tolerations((*cluster.taints, *cluster.pool(pool).capacity_taints))


def pod_placement(spec: ModelDeploymentSpec, cluster: ClusterFacts, pool: str | None = None) -> PodPlacement:
    """Where the engine's pods may run: the pool's nodes (`pool`, the deployment's own unless its
    spot pool is meant), whatever they are tainted with; a replica of several nodes as a gang of
    that many pods."""
    pool = pool or spec.pool
    floor = spec.floor_replicas
    return PodPlacement(
        name=spec.name if pool == spec.pool else f"{spec.name}{SPOT_SUFFIX}",
        pool=pool,
        node_selector={POOL_LABEL: pool},
        tolerations=tuple(engine_tolerations(cluster, pool)),
        group_nodes=spec.nodes,
        groups=(floor if pool == spec.pool else spec.peak_replicas - floor) if floor else spec.peak_replicas,
    )


def placements(spec: ModelDeploymentSpec, cluster: ClusterFacts) -> list[PodPlacement]:
    """The placements of a deployment's pods: on its pool, and with a floor on its spot pool too."""
    out = [pod_placement(spec, cluster)]
    if spec.spot_pool is not None:
        out.append(pod_placement(spec, cluster, spec.spot_pool))
    return out


def gateway_proxy_placement(facts: ClusterFacts) -> PodPlacement:
    """Where Envoy Gateway runs the Gateway's proxy pods: no nodeSelector, no tolerations.

    Envoy Gateway's default proxy pod spec is empty (`DefaultKubernetesPod` in
    api/v1alpha1/kubernetes_helpers.go at v1.8.3) and this program sets no EnvoyProxy, so the
    proxies go to untainted nodes: the system pool, never a tainted GPU or CPU pool.
    """
    return PodPlacement(name=f"{gateway_namespace(facts)}/{GATEWAY_NAME}", pool="", node_selector={}, tolerations=())
