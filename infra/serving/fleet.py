"""Fleet services resolved: one service over deployments in several clusters and external endpoints.

A fleet service (`ModelServiceSpec.fleet`) is served by the Gateway of the cluster it names
(`services[].cluster`). Every backend becomes one Envoy Gateway `Backend` of a DNS name there: a
deployment of that cluster by its Service's cluster-local name, another cluster's deployment by that
cluster's gateway host (`clusters[].gateway.host`, over TLS), an external endpoint by its URL's host
(over TLS). One kind of address for all keeps the backends in one Envoy cluster, the only place a
failover tier applies (`infra.checks.fleet` has the rule and its source). The other cluster publishes
the deployment on its gateway host to requests that carry the service's header (`FleetExport`).

It is not the rules (`infra.checks.fleet` has resolved every name and order) and registers nothing
(`components.features.fleet` builds the objects).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from infra.config.model import Fleet, ModelDeploymentSpec, ModelServiceSpec, ServiceBackend
from infra.serving.routes import GATEWAY_NAME, GatewayListener, served, service_routes

# The namespace of a fleet service's route, Backends and policies on its serving cluster: one that
# every cluster has, since a fleet service may serve no deployment of its own cluster.
FLEET_NAMESPACE = "default"
# The header the serving gateway adds to every request of a fleet service, and another cluster's
# gateway routes by: one gateway host carries every fleet service that cluster takes part in.
SERVICE_HEADER = "x-modelplane-service"
# The header callers send their key in (Envoy Gateway `APIKeyAuth.extractFrom.headers`).
CALLER_KEY_HEADER = "x-api-key"
# The HTTPS listener of a cluster's gateway that other clusters reach (`clusters[].gateway`).
FLEET_LISTENER = "fleet"
FLEET_PORT = 443
# The gateway's own certificate for its fleet listener (`clusters[].gateway`).
FLEET_CERT_SECRET = "modelplane-fleet-gateway"
# Kubernetes' default cluster domain, the name a Service answers by from any namespace
# (kubernetes.io/docs/concepts/services-networking/dns-pod-service/).
CLUSTER_DOMAIN = "cluster.local"


def trust_secret(service: str) -> str:
    """The serving side's copy of the fleet CA for one service: the Secret of a certificate of its
    own gateway's issuer, whose `ca.crt` is that CA."""
    return f"{service}-fleet-ca"


class BackendKind(StrEnum):
    LOCAL = "Local"  # a deployment of the serving cluster
    REMOTE = "Remote"  # a deployment of another cluster, through that cluster's gateway
    EXTERNAL = "External"  # an OpenAI-compatible endpoint outside the fleet


@dataclass(frozen=True)
class FleetBackend:
    """One backend of a fleet service: what its `Backend` object and the plan need."""

    service: str
    index: int
    spec: ServiceBackend
    kind: BackendKind
    tier: int
    host: str
    port: int
    deployment: ModelDeploymentSpec | None = None

    @property
    def name(self) -> str:
        """The `Backend` object's name on the serving cluster."""
        return f"{self.service}-{self.index}"

    @property
    def tls(self) -> bool:
        return self.kind is not BackendKind.LOCAL

    @property
    def cluster(self) -> str | None:
        return self.deployment.cluster if self.deployment is not None else None

    def shown(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backend": self.spec.shown_name, "kind": str(self.kind), "weight": self.spec.weight}
        out["tier"] = self.tier
        if self.kind is BackendKind.EXTERNAL:
            ext = self.spec.external
            assert ext is not None
            out["url"] = ext.url
            out["model"] = ext.model
            out["apiKey"] = "set" if ext.api_key is not None else None
        else:
            assert self.deployment is not None
            out["cluster"] = self.deployment.cluster
            out["deployment"] = self.deployment.name
        out["address"] = f"{self.host}:{self.port}"
        return out


@dataclass(frozen=True)
class FleetRoute(GatewayListener):
    """A fleet service resolved against its serving cluster and its backends."""

    spec: ModelServiceSpec
    cluster: str
    backends: tuple[FleetBackend, ...]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def namespace(self) -> str:
        return FLEET_NAMESPACE

    @property
    def tiers(self) -> list[list[str]]:
        """The failover order as the plan shows it: each tier's backends by name."""
        count = max(b.tier for b in self.backends) + 1
        return [[b.spec.shown_name for b in self.backends if b.tier == t] for t in range(count)]

    @property
    def keyed_external(self) -> FleetBackend | None:
        """The external endpoint whose key the route injects (`infra.checks.fleet`: at most one)."""
        return next(
            (b for b in self.backends if b.spec.external is not None and b.spec.external.api_key is not None), None
        )

    @property
    def remote(self) -> list[FleetBackend]:
        return [b for b in self.backends if b.kind is BackendKind.REMOTE]

    def endpoint(self, gateway_namespace: str) -> dict[str, Any]:
        """The endpoint as the stack output and the plan show it; callers' keys only as a count."""
        path = self.spec.route_path
        return {
            "service": self.name,
            "cluster": self.cluster,
            "routing": "Fleet",
            "backends": [b.shown() for b in self.backends],
            "failover": self.tiers,
            "callerKeys": len(self.spec.api_keys) or None,
            "gateway": f"{gateway_namespace}/{GATEWAY_NAME}",
            "scheme": self.scheme,
            "host": self.spec.host,
            "path": path,
            "url": f"{self.scheme}://{self.spec.host or '{address}'}{path.rstrip('/')}/v1",
        }


def backend_tiers(svc: ModelServiceSpec) -> dict[int, int]:
    """Each backend's tier: from `failover` (validated to place every backend once), else all in 0."""
    if svc.failover is None:
        return {i: 0 for i in range(len(svc.targets))}
    return {i: t for t, tier in enumerate(svc.failover) for i in tier}


def fleet_route(fleet: Fleet, svc: ModelServiceSpec) -> FleetRoute:
    """A fleet service resolved (its names checked by `infra.checks.fleet`)."""
    assert svc.cluster is not None, "a fleet service names its cluster (validated)"
    tiers = backend_tiers(svc)
    backends = []
    for i, target in enumerate(svc.targets):
        if target.external is not None:
            ext = target.external
            backends.append(FleetBackend(svc.name, i, target, BackendKind.EXTERNAL, tiers[i], ext.host, ext.port))
            continue
        assert target.deployment is not None
        dep = served(fleet, target.deployment, target.cluster or svc.cluster)
        if dep.cluster == svc.cluster:
            host = f"{dep.name}.{dep.namespace}.svc.{CLUSTER_DOMAIN}"
            backends.append(FleetBackend(svc.name, i, target, BackendKind.LOCAL, tiers[i], host, dep.port, dep))
        else:
            gateway = fleet.cluster_named(dep.cluster).gateway
            assert gateway is not None, "a cluster a fleet service reaches has a gateway (validated)"
            backends.append(
                FleetBackend(svc.name, i, target, BackendKind.REMOTE, tiers[i], gateway.host, FLEET_PORT, dep)
            )
    return FleetRoute(svc, svc.cluster, tuple(backends))


def fleet_routes(fleet: Fleet, cluster: str) -> list[FleetRoute]:
    """The fleet services a cluster's gateway serves."""
    return [fleet_route(fleet, s) for s in fleet.services if s.fleet and s.cluster == cluster]


def fleet_exports(fleet: Fleet, cluster: str) -> list[tuple[FleetRoute, FleetBackend]]:
    """The deployments of a cluster that other clusters' fleet services reach through its gateway."""
    return [
        (route, b)
        for route in (fleet_route(fleet, s) for s in fleet.services if s.fleet)
        for b in route.remote
        if b.cluster == cluster
    ]


def has_gateway(fleet: Fleet, cluster: str) -> bool:
    """The program creates the cluster's Gateway: it publishes a service, serves a fleet service, or
    other clusters' fleet services reach a deployment of it."""
    return bool(service_routes(fleet, cluster) or fleet_routes(fleet, cluster) or fleet_exports(fleet, cluster))
