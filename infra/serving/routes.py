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

from infra.config.model import Fleet, ModelDeploymentSpec, ModelServiceSpec
from infra.facts import ClusterFacts
from infra.serving.catalog import CATALOG

# Our own Gateway: a name of ours never adopts a Gateway the cluster's owner runs.
GATEWAY_NAME = "modelplane"
# The serving stack's Envoy Gateway row (infra.serving.catalog); the Gateway lives in its namespace.
ENVOY_GATEWAY_COMPONENT = "envoy-gateway"
HTTP_LISTENER = "http"


@dataclass(frozen=True)
class ServiceRoute:
    """A service resolved against its deployment: what its HTTPRoute and listener need."""

    spec: ModelServiceSpec
    deployment: ModelDeploymentSpec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def namespace(self) -> str:
        return self.deployment.namespace

    @property
    def listener(self) -> str:
        return f"https-{self.spec.name}" if self.spec.tls is not None else HTTP_LISTENER

    @property
    def tls_secret(self) -> str:
        return f"{self.spec.name}-tls"

    @property
    def scheme(self) -> str:
        return "https" if self.spec.tls is not None else "http"

    def endpoint(self, gateway_namespace: str) -> dict[str, Any]:
        """The endpoint as the stack output and the plan show it (the address is the Gateway's)."""
        path = self.spec.route_path
        base = path.rstrip("/")
        return {
            "service": self.name,
            "cluster": self.deployment.cluster,
            "deployment": self.deployment.name,
            "gateway": f"{gateway_namespace}/{GATEWAY_NAME}",
            "scheme": self.scheme,
            "host": self.spec.host,
            "path": path,
            # The OpenAI-compatible base URL; without a host, {address} is the Gateway's address.
            "url": f"{self.scheme}://{self.spec.host or '{address}'}{base}/v1",
        }


def service_routes(fleet: Fleet, cluster: str) -> list[ServiceRoute]:
    """The services published on one cluster, each with its deployment (resolved by check_serving)."""
    out = []
    for svc in fleet.services:
        [dep] = [d for d in fleet.deployments if d.name == svc.deployment and svc.cluster in (None, d.cluster)]
        if dep.cluster == cluster:
            out.append(ServiceRoute(svc, dep))
    return out


def gateway_namespace(facts: ClusterFacts) -> str:
    # The catalog row's namespace, installed or not: a cluster that runs its own Envoy Gateway
    # (`existing.preinstalled`) runs it there too (docs/existing-clusters.md).
    return next(c.namespace for c in CATALOG[facts.source] if c.key == ENVOY_GATEWAY_COMPONENT)
