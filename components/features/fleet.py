"""Fleet services: one route over deployments in several clusters and external endpoints.

`FleetService` is the serving cluster's part: one Envoy Gateway `Backend` per backend (a DNS name,
`infra.serving.fleet`), the HTTPRoute that splits requests over them by weight, an `HTTPRouteFilter`
that sets each request's Host to its backend's name and injects an external endpoint's key, a
`BackendTrafficPolicy` with the health checks and retries failover needs, and, when the service
asks for callers' keys, a `SecurityPolicy` with them. `FleetExport` is another cluster's part: the
route on its gateway host that sends the service's requests to its deployment.
`infra.checks.fleet` has resolved every name and the order; this module only builds objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.features.routing import ENVOY_GATEWAY_API, GATEWAY_API, GATEWAY_GROUP, gateway_route
from infra import tokens
from infra.config.model import IssuerRef
from infra.serving.fleet import (
    CALLER_KEY_HEADER,
    FLEET_LISTENER,
    SERVICE_HEADER,
    BackendKind,
    FleetBackend,
    FleetRoute,
    trust_secret,
)

ENVOY_GATEWAY_GROUP = "gateway.envoyproxy.io"
CERT_MANAGER_API = "cert-manager.io/v1"
# Active health check: a TCP connect, the one check every backend answers without a key or a route
# of its own (an external endpoint wants its key on every HTTP path; another cluster's gateway routes
# by the service's header). Envoy Gateway's defaults for the timings
# (api/v1alpha1/healthcheck_types.go `ActiveHealthCheck` at v1.8.3: timeout 1s, interval 3s,
# unhealthyThreshold 3, healthyThreshold 1). `tcp` with neither `send` nor `receive` is a connect
# only; the CRD wants the field whenever the type is TCP ("If Health Checker type is TCP, tcp field
# needs to be set").
ACTIVE_HEALTH_CHECK = {
    "type": "TCP",
    "tcp": {},
    "timeout": "1s",
    "interval": "3s",
    "unhealthyThreshold": 3,
    "healthyThreshold": 1,
}
# Outlier detection: a backend answering 5xx (a remote gateway with no ready replica answers 503)
# or failing to connect is ejected. `maxEjectionPercent` defaults to 10 (healthcheck_types.go
# `PassiveHealthCheck`), which would keep a failing tier of few backends in service and so never
# fail over: 100 lets a whole tier go.
PASSIVE_HEALTH_CHECK = {
    "consecutive5XxErrors": 3,
    "consecutiveGatewayErrors": 3,
    "interval": "3s",
    "baseEjectionTime": "30s",
    "maxEjectionPercent": 100,
}
# A request that could not reach a backend, or got its 503, goes to another (api/v1alpha1/retry_types.go
# `RetryOn.triggers`); an answer that has begun is never retried by Envoy.
RETRY = {
    "numRetries": 2,
    "retryOn": {"triggers": ["connect-failure", "reset", "retriable-status-codes"], "httpStatusCodes": [503]},
    "perRetry": {"backOff": {"baseInterval": "100ms", "maxInterval": "1s"}},
}
# Envoy Gateway reads an injected credential from the Secret's `credential` key
# (api/v1alpha1/httproutefilter_types.go `InjectedCredential` at v1.8.3).
CREDENTIAL_KEY = "credential"


def backend_spec(backend: FleetBackend) -> dict[str, Any]:
    """An Envoy Gateway `Backend` of one DNS name (api/v1alpha1/backend_types.go at v1.8.3).

    `fallback: true` puts it in Envoy priority 1 (the second tier). TLS: another cluster's gateway is
    checked against the fleet CA the serving side holds (`trust_secret`, its `ca.crt`), an
    external endpoint against the system's CAs; the SNI is the backend's own name either way
    (`BackendTLSSettings.sni`; unset, Envoy Gateway would send the client's Host).
    """
    # The endpoint's `hostname` too: Envoy's auto host rewrite (`upstream_filter_spec`) takes the
    # Host from the chosen endpoint's hostname (Envoy RouteAction.auto_host_rewrite).
    spec: dict[str, Any] = {
        "endpoints": [{"hostname": backend.host, "fqdn": {"hostname": backend.host, "port": backend.port}}]
    }
    if backend.tier > 0:
        spec["fallback"] = True
    if backend.kind is BackendKind.REMOTE:
        spec["tls"] = {
            "caCertificateRefs": [{"group": "", "kind": "Secret", "name": trust_secret(backend.service)}],
            "sni": backend.host,
        }
    elif backend.kind is BackendKind.EXTERNAL:
        spec["tls"] = {"wellKnownCACertificates": "System", "sni": backend.host}
    return spec


def upstream_filter_spec(route: FleetRoute) -> dict[str, Any]:
    """Envoy Gateway's `HTTPRouteFilter` on the rule (api/v1alpha1/httproutefilter_types.go at v1.8.3):
    the Host becomes the chosen backend's DNS name (`hostname.type: Backend`, Envoy's auto host
    rewrite), which another cluster's gateway and an external endpoint route by; and the external
    endpoint's key goes in `Authorization`. On the rule, not on a backend: a backend's own filter
    would give it an Envoy cluster of its own and lose the failover order (`infra.checks.fleet`)."""
    spec: dict[str, Any] = {"urlRewrite": {"hostname": {"type": "Backend"}}}
    if route.keyed_external is not None:
        spec["credentialInjection"] = {
            "overwrite": True,
            "credential": {"valueRef": {"group": "", "kind": "Secret", "name": upstream_key_secret(route)}},
        }
    return spec


def upstream_key_secret(route: FleetRoute) -> str:
    return f"{route.name}-upstream-key"


def callers_secret(route: FleetRoute) -> str:
    return f"{route.name}-callers"


def fleet_route_spec(route: FleetRoute, gateway_ns: str) -> dict[str, Any]:
    """The HTTPRoute: the service's host and path to its Backends, weighted; every request carries
    the service's name in `SERVICE_HEADER`, which other clusters' gateways route by."""
    path = route.spec.route_path
    filters: list[dict[str, Any]] = []
    if path != "/":
        filters.append(
            {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}
        )
    filters.append(
        {
            "type": "RequestHeaderModifier",
            "requestHeaderModifier": {"set": [{"name": SERVICE_HEADER, "value": route.name}]},
        }
    )
    filters.append(
        {
            "type": "ExtensionRef",
            "extensionRef": {"group": ENVOY_GATEWAY_GROUP, "kind": "HTTPRouteFilter", "name": f"{route.name}-upstream"},
        }
    )
    rule = {
        "matches": [{"path": {"type": "PathPrefix", "value": path}}],
        "filters": filters,
        "backendRefs": [
            {"group": ENVOY_GATEWAY_GROUP, "kind": "Backend", "name": b.name, "weight": b.spec.weight}
            for b in route.backends
        ],
        # As a deployment's route (`components.features.routing.route_spec`): no cut of long answers.
        "timeouts": {"request": "0s"},
    }
    return gateway_route(gateway_ns, route.listener, route.spec.host, [rule])


def traffic_policy_spec(route: FleetRoute) -> dict[str, Any]:
    """Health checks, active and passive, and retries over the route's backends
    (api/v1alpha1/backendtrafficpolicy_types.go `healthCheck`, `retry` at v1.8.3)."""
    return {
        "targetRefs": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute", "name": route.name}],
        "healthCheck": {"active": dict(ACTIVE_HEALTH_CHECK), "passive": dict(PASSIVE_HEALTH_CHECK)},
        "retry": RETRY,
    }


def security_policy_spec(route: FleetRoute) -> dict[str, Any]:
    """Callers' keys (api/v1alpha1/api_key_auth_types.go at v1.8.3): a request without one of the
    Secret's values in `CALLER_KEY_HEADER` is refused, and the key is removed before it goes on."""
    return {
        "targetRefs": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute", "name": route.name}],
        "apiKeyAuth": {
            "credentialRefs": [{"group": "", "kind": "Secret", "name": callers_secret(route)}],
            "extractFrom": [{"headers": [CALLER_KEY_HEADER]}],
            "sanitize": True,
        },
    }


@dataclass(frozen=True)
class FleetServiceArgs:
    route: FleetRoute
    gateway_namespace: str
    # The serving cluster's gateway issuer, for the fleet CA; None when no backend is another cluster's.
    trust_issuer: IssuerRef | None


class FleetService(pulumi.ComponentResource):
    """A fleet service on its serving cluster: its Backends, route, filter and policies."""

    endpoint: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: FleetServiceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        route = args.route
        endpoint = route.endpoint(args.gateway_namespace)
        super().__init__(tokens.FLEET_SERVICE, name, endpoint, opts)
        ns = route.namespace
        needs: list[pulumi.Resource] = []
        if route.remote and args.trust_issuer is not None:
            needs.append(self._trust(name, route, args.trust_issuer))
        secrets = self._secrets(name, route)
        backends = [
            self._object(f"{name}-backend-{b.index}", "Backend", b.name, ns, backend_spec(b), needs)
            for b in route.backends
        ]
        upstream = self._object(
            f"{name}-upstream", "HTTPRouteFilter", f"{route.name}-upstream", ns, upstream_filter_spec(route), secrets
        )
        self.route = k8s.apiextensions.CustomResource(
            f"{name}-route",
            api_version=GATEWAY_API,
            kind="HTTPRoute",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=route.name, namespace=ns, labels={"modelplane.ai/service": route.name}
            ),
            spec=fleet_route_spec(route, args.gateway_namespace),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*backends, upstream]),
        )
        self.policies = [
            self._object(
                f"{name}-traffic-policy",
                "BackendTrafficPolicy",
                route.name,
                ns,
                traffic_policy_spec(route),
                [self.route],
            )
        ]
        if route.spec.api_keys:
            self.policies.append(
                self._object(
                    f"{name}-security-policy",
                    "SecurityPolicy",
                    route.name,
                    ns,
                    security_policy_spec(route),
                    [self.route, *secrets],
                )
            )
        self.endpoint = pulumi.Output.from_input(endpoint)
        self.register_outputs({"endpoint": self.endpoint})

    def _object(
        self, name: str, kind: str, obj: str, ns: str, spec: dict[str, Any], needs: list[pulumi.Resource]
    ) -> k8s.apiextensions.CustomResource:
        return k8s.apiextensions.CustomResource(
            name,
            api_version=ENVOY_GATEWAY_API,
            kind=kind,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=obj, namespace=ns),
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, depends_on=needs),
        )

    def _secrets(self, name: str, route: FleetRoute) -> list[pulumi.Resource]:
        """The external endpoint's key and the callers' keys, each a Secret whose data is a secret
        Output: the state and the plan hold them encrypted or masked."""
        out: list[pulumi.Resource] = []
        keyed = route.keyed_external
        if keyed is not None and keyed.spec.external is not None and keyed.spec.external.api_key is not None:
            key = keyed.spec.external.api_key.secure
            out.append(
                self._secret(
                    f"{name}-upstream-key",
                    upstream_key_secret(route),
                    route.namespace,
                    {CREDENTIAL_KEY: f"Bearer {key}"},
                )
            )
        if route.spec.api_keys:
            # One entry per caller; Envoy Gateway takes each key's name as the caller's id
            # (internal/gatewayapi/securitypolicy.go `buildAPIKeyAuth` at v1.8.3).
            keys = {f"caller-{i}": k.secure for i, k in enumerate(route.spec.api_keys)}
            out.append(self._secret(f"{name}-callers", callers_secret(route), route.namespace, keys))
        return out

    def _secret(self, name: str, obj: str, ns: str, data: dict[str, str]) -> k8s.core.v1.Secret:
        return k8s.core.v1.Secret(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=obj, namespace=ns),
            type="Opaque",
            string_data=pulumi.Output.secret(data),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _trust(self, name: str, route: FleetRoute, issuer: IssuerRef) -> k8s.apiextensions.CustomResource:
        """The fleet CA on the serving side: a certificate of its own gateway's CA issuer, whose
        Secret carries the CA in `ca.crt` (cert-manager docs, "CA" issuer), the key a Backend's
        `caCertificateRefs` reads (backend_types.go `BackendTLSSettings`)."""
        return k8s.apiextensions.CustomResource(
            f"{name}-trust",
            api_version=CERT_MANAGER_API,
            kind="Certificate",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=trust_secret(route.name), namespace=route.namespace),
            spec={
                "secretName": trust_secret(route.name),
                "commonName": trust_secret(route.name),
                "issuerRef": {"group": "cert-manager.io", "kind": issuer.kind, "name": issuer.name},
            },
            opts=pulumi.ResourceOptions(parent=self),
        )


# --------------------------------------------------------------------------------------------
# Another cluster's part


def export_route_spec(route: FleetRoute, backend: FleetBackend, gateway_ns: str, host: str) -> dict[str, Any]:
    """The route on this cluster's fleet listener: requests for `host` carrying the service's header
    go to the deployment's Service. The `Authorization` the serving side may have injected for an
    external endpoint of the service is removed: it is not this deployment's."""
    assert backend.deployment is not None
    return gateway_route(
        gateway_ns,
        FLEET_LISTENER,
        host,
        [
            {
                "matches": [
                    {
                        "path": {"type": "PathPrefix", "value": "/"},
                        "headers": [{"name": SERVICE_HEADER, "value": route.name}],
                    }
                ],
                "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"remove": ["Authorization"]}}],
                "backendRefs": [{"name": backend.deployment.name, "port": backend.deployment.port}],
                "timeouts": {"request": "0s"},
            }
        ],
    )


@dataclass(frozen=True)
class FleetExportArgs:
    route: FleetRoute
    backend: FleetBackend
    gateway_namespace: str


class FleetExport(pulumi.ComponentResource):
    """A deployment of this cluster that another cluster's fleet service reaches through this gateway."""

    def __init__(self, name: str, args: FleetExportArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        backend = args.backend
        assert backend.deployment is not None
        super().__init__(
            tokens.FLEET_EXPORT,
            name,
            {"service": args.route.name, "servedBy": args.route.cluster, "deployment": backend.deployment.name},
            opts,
        )
        self.route = k8s.apiextensions.CustomResource(
            f"{name}-route",
            api_version=GATEWAY_API,
            kind="HTTPRoute",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"{args.route.name}-fleet",
                namespace=backend.deployment.namespace,
                labels={"modelplane.ai/service": args.route.name},
            ),
            spec=export_route_spec(args.route, backend, args.gateway_namespace, backend.host),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})
