"""Service routes: each `modelplane:services[]` entry resolved against the deployment it publishes.

A `ServiceRoute` is what a published service needs of its deployment (namespace, port, listener,
TLS secret) and the endpoint the stack output and the plan show. The program builds the Gateway and
the HTTPRoutes from these routes (`components.features.routing`), and the placement audit asks which
clusters publish any (`tooling.placement`), so they live below the components and register nothing.
It is not the rules: `infra.checks.services.check_serving` has already resolved each service to exactly
one deployment and rejected clashing routes and TLS without a host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.config.model import Fleet, ModelDeploymentSpec, ModelServiceSpec, Routing
from infra.facts import ClusterFacts
from infra.serving.catalog import CATALOG

# Our own Gateway: a name of ours never adopts a Gateway the cluster's owner runs.
GATEWAY_NAME = "modelplane"
# The serving stack's Envoy Gateway row (infra.serving.catalog); the Gateway lives in its namespace.
ENVOY_GATEWAY_COMPONENT = "envoy-gateway"
HTTP_LISTENER = "http"


@dataclass(frozen=True)
class RouteBackend:
    """One deployment a route sends requests to, with its weight (Gateway API `backendRefs[].weight`)."""

    deployment: ModelDeploymentSpec
    weight: int


class GatewayListener:
    """Where a service's route listens on the stack's Gateway: its own HTTPS listener and
    certificate Secret when the service has `tls`, else the shared HTTP listener."""

    spec: ModelServiceSpec

    @property
    def listener(self) -> str:
        return f"https-{self.spec.name}" if self.spec.tls is not None else HTTP_LISTENER

    @property
    def tls_secret(self) -> str:
        return f"{self.spec.name}-tls"

    @property
    def scheme(self) -> str:
        return "https" if self.spec.tls is not None else "http"


@dataclass(frozen=True)
class ServiceRoute(GatewayListener):
    """A service resolved against its deployments: what its HTTPRoute and listener need.

    `check_serving` has made every backend one deployment on one cluster, in one namespace, serving
    one model, so the first backend speaks for the namespace and the cluster.
    """

    spec: ModelServiceSpec
    backends: tuple[RouteBackend, ...]

    @property
    def deployment(self) -> ModelDeploymentSpec:
        return self.backends[0].deployment

    @property
    def routing(self) -> Routing:
        return self.spec.resolved_routing

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def namespace(self) -> str:
        return self.deployment.namespace

    def endpoint(self, gateway_namespace: str) -> dict[str, Any]:
        """The endpoint as the stack output and the plan show it (the address is the Gateway's)."""
        path = self.spec.route_path
        base = path.rstrip("/")
        return {
            "service": self.name,
            "cluster": self.deployment.cluster,
            "deployment": self.deployment.name,
            "routing": str(self.routing),
            "backends": [{"deployment": b.deployment.name, "weight": b.weight, **self._pool(b)} for b in self.backends],
            "gateway": f"{gateway_namespace}/{GATEWAY_NAME}",
            "scheme": self.scheme,
            "host": self.spec.host,
            "path": path,
            # The OpenAI-compatible base URL; without a host, {address} is the Gateway's address.
            "url": f"{self.scheme}://{self.spec.host or '{address}'}{base}/v1",
        }

    def _pool(self, backend: RouteBackend) -> dict[str, str]:
        """The InferencePool a picker-routed backend goes through (`infra.serving.picker`)."""
        return {"inferencePool": backend.deployment.name} if self.routing is Routing.PICKER else {}


def service_routes(fleet: Fleet, cluster: str) -> list[ServiceRoute]:
    """The services published on one cluster, each with its deployments (resolved by check_serving)."""
    out = []
    for svc in fleet.services:
        if svc.fleet:
            continue  # served through Backends (`infra.serving.fleet`)
        backends = tuple(RouteBackend(served(fleet, str(t.deployment), svc.cluster), t.weight) for t in svc.targets)
        if backends[0].deployment.cluster == cluster:
            out.append(ServiceRoute(svc, backends))
    return out


def served(fleet: Fleet, name: str, cluster: str | None) -> ModelDeploymentSpec:
    """The one deployment a service names (check_serving has made it one)."""
    [dep] = [d for d in fleet.deployments if d.name == name and cluster in (None, d.cluster)]
    return dep


def picker_routed(fleet: Fleet, dep: ModelDeploymentSpec) -> bool:
    """Some service routes to the deployment through its picker. Read from the names alone, so the
    rules (`infra.checks.routing`) ask it before the services are known to resolve; once they do,
    a service names exactly one deployment."""
    return any(
        svc.resolved_routing is Routing.PICKER
        and not svc.fleet
        and any(t.deployment == dep.name for t in svc.targets)
        and svc.cluster in (None, dep.cluster)
        for svc in fleet.services
    )


def picker_deployments(fleet: Fleet, cluster: str) -> list[ModelDeploymentSpec]:
    """The deployments on a cluster that a picker routes to: each gets its InferencePool and picker."""
    return [d for d in fleet.deployments if d.cluster == cluster and picker_routed(fleet, d)]


def gateway_namespace(facts: ClusterFacts) -> str:
    # The catalog row's namespace, installed or not: a cluster that runs its own Envoy Gateway
    # (`existing.preinstalled`) runs it there too (docs/existing-clusters.md).
    return next(c.namespace for c in CATALOG[facts.source] if c.key == ENVOY_GATEWAY_COMPONENT)
