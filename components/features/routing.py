"""Routing: publish a model deployment through its cluster's Envoy Gateway.

modelplane pairs each ModelDeployment with a ModelService that gives it an address through a
Gateway API HTTPRoute; here a `modelplane:services[]` entry does the same on the deployment's own
cluster. `ClusterGateway` is the cluster's entry point (a GatewayClass for Envoy Gateway, which the
serving stack installs on every cluster, and one Gateway, with a TLS listener and a cert-manager
Certificate per TLS host); `ModelService` is one HTTPRoute to the deployment's Service. Both exist
only on a cluster with at least one service, built from the services resolved against their
deployments (`infra.serving.routes`, which the placement audit reads too).
`infra.checks.services.check_serving` has already resolved each service to exactly one deployment and
rejected clashing routes and TLS without a host.

Not here: the address. Envoy Gateway writes it to the Gateway's `status.addresses` once the cloud
gives its LoadBalancer Service one; the stack output names the Gateway and the route.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra import tokens
from infra.config.clusters import FleetGateway
from infra.config.model import IssuerRef, Routing
from infra.facts import ClusterFacts
from infra.serving.fleet import FLEET_CERT_SECRET, FLEET_LISTENER, FleetRoute
from infra.serving.picker import DESTINATION_HEADER, EXT_PROC_PORT, picker_name, queue_seconds
from infra.serving.routes import GATEWAY_NAME, HTTP_LISTENER, RouteBackend, ServiceRoute, gateway_namespace

GATEWAY_API = "gateway.networking.k8s.io/v1"
GATEWAY_GROUP = "gateway.networking.k8s.io"
# Envoy Gateway's own policies (api/v1alpha1/groupversion_info.go at v1.8.3).
ENVOY_GATEWAY_API = "gateway.envoyproxy.io/v1alpha1"
# How long the gateway waits for each of the picker's answers: the standalone picker's Envoy
# configuration (config/charts/standalone/values.yaml `message_timeout: 1000s` at GAIE v1.5.0), or
# the picker's queue with a margin for its scheduling and the engine's first byte.
STANDALONE_MESSAGE_SECONDS = 1000
QUEUE_MARGIN_SECONDS = 60
CERT_MANAGER_API = "cert-manager.io/v1"
# The controller Envoy Gateway reconciles GatewayClasses for
# (https://github.com/envoyproxy/gateway/blob/v1.8.3/examples/kubernetes/quickstart.yaml).
ENVOY_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
# Our own class, as our own Gateway (`infra.serving.routes.GATEWAY_NAME`): a name of ours never
# adopts a class the cluster's owner runs.
GATEWAY_CLASS_NAME = "modelplane"
HTTP_PORT = 80
HTTPS_PORT = 443
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


# --------------------------------------------------------------------------------------------
# The cluster's Gateway


@dataclass(frozen=True)
class ClusterGatewayArgs:
    facts: ClusterFacts
    routes: Sequence[ServiceRoute | FleetRoute]
    # The cluster's fleet listener, when other clusters' fleet services reach its deployments
    # (`clusters[].gateway`), and the namespaces of those deployments.
    fleet: FleetGateway | None = None
    export_namespaces: Sequence[str] = ()


def listeners(
    routes: Sequence[ServiceRoute | FleetRoute],
    fleet: FleetGateway | None = None,
    export_namespaces: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Plain HTTP on 80 for services without TLS; one HTTPS listener per TLS host on 443; and the
    fleet listener on 443 for the cluster's gateway host, which other clusters reach.

    Routes attach only from the namespaces of the deployments they publish (and of fleet services,
    `infra.serving.fleet.FLEET_NAMESPACE`), so no other namespace can put a route on this Gateway.
    """
    allowed = {
        "namespaces": {
            "from": "Selector",
            "selector": {
                "matchExpressions": [
                    {
                        "key": NAMESPACE_NAME_LABEL,
                        "operator": "In",
                        "values": sorted({r.namespace for r in routes} | set(export_namespaces)),
                    }
                ]
            },
        }
    }
    out: list[dict[str, Any]] = []
    if any(r.spec.tls is None for r in routes):
        out.append({"name": HTTP_LISTENER, "protocol": "HTTP", "port": HTTP_PORT, "allowedRoutes": allowed})
    for r in routes:
        if r.spec.tls is not None:
            out.append(
                {
                    "name": r.listener,
                    "protocol": "HTTPS",
                    "port": HTTPS_PORT,
                    "hostname": r.spec.host,
                    "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": r.tls_secret}]},
                    "allowedRoutes": allowed,
                }
            )
    if fleet is not None and export_namespaces:
        out.append(
            {
                "name": FLEET_LISTENER,
                "protocol": "HTTPS",
                "port": HTTPS_PORT,
                "hostname": fleet.host,
                "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": FLEET_CERT_SECRET}]},
                "allowedRoutes": allowed,
            }
        )
    return out


class ClusterGateway(pulumi.ComponentResource):
    """The GatewayClass, Gateway and TLS certificates of one cluster's published services."""

    gateway_name: pulumi.Output[str]

    def __init__(self, name: str, args: ClusterGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        namespace = gateway_namespace(args.facts)
        super().__init__(
            tokens.GATEWAY,
            name,
            {"cluster": args.facts.name, "namespace": namespace, "services": [r.name for r in args.routes]},
            opts,
        )
        child = pulumi.ResourceOptions(parent=self)
        gateway_class = k8s.apiextensions.CustomResource(
            f"{name}-class",
            api_version=GATEWAY_API,
            kind="GatewayClass",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=GATEWAY_CLASS_NAME),
            spec={"controllerName": ENVOY_GATEWAY_CONTROLLER},
            opts=child,
        )
        certificates = [
            self._certificate(name, namespace, r.name, r.tls_secret, r.spec.host, r.spec.tls.issuer_ref)
            for r in args.routes
            if r.spec.tls is not None and r.spec.host is not None
        ]
        if args.fleet is not None and args.export_namespaces:
            certificates.append(
                self._certificate(
                    name, namespace, FLEET_LISTENER, FLEET_CERT_SECRET, args.fleet.host, args.fleet.issuer_ref
                )
            )
        self.gateway = k8s.apiextensions.CustomResource(
            f"{name}-gateway",
            api_version=GATEWAY_API,
            kind="Gateway",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=GATEWAY_NAME, namespace=namespace),
            spec={
                "gatewayClassName": GATEWAY_CLASS_NAME,
                "listeners": listeners(args.routes, args.fleet, args.export_namespaces),
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway_class, *certificates]),
        )
        self.gateway_name = pulumi.Output.from_input(GATEWAY_NAME)
        self.register_outputs({"gatewayName": self.gateway_name})

    def _certificate(
        self, name: str, namespace: str, listener: str, secret: str, host: str, issuer: IssuerRef
    ) -> k8s.apiextensions.CustomResource:
        """The certificate of a TLS host, in the Gateway's namespace where its listener reads it.

        An explicit Certificate rather than cert-manager's Gateway annotation: the annotation
        needs cert-manager's `config.enableGatewayAPI`, which the serving stack does not set
        (https://cert-manager.io/docs/usage/gateway/).
        """
        return k8s.apiextensions.CustomResource(
            f"{name}-{listener}-certificate",
            api_version=CERT_MANAGER_API,
            kind="Certificate",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=secret, namespace=namespace),
            spec={
                "secretName": secret,
                "dnsNames": [host],
                "issuerRef": {"group": "cert-manager.io", "kind": issuer.kind, "name": issuer.name},
            },
            opts=pulumi.ResourceOptions(parent=self),
        )


# --------------------------------------------------------------------------------------------
# One route per service


@dataclass(frozen=True)
class ModelServiceArgs:
    route: ServiceRoute
    gateway_namespace: str


def route_spec(route: ServiceRoute, gateway_ns: str) -> dict[str, Any]:
    """The HTTPRoute: the service's host and path prefix to the deployment's Service port."""
    path = route.spec.route_path
    rule: dict[str, Any] = {
        "matches": [{"path": {"type": "PathPrefix", "value": path}}],
        "backendRefs": [_backend_ref(route, b) for b in route.backends],
        # Envoy's route timeout defaults to 15s, counted to the end of the response, which cuts long
        # or streamed completions (Envoy RouteAction.timeout; Envoy Gateway v1.8 sets it only from
        # the route). "0s" disables it (Gateway API HTTPRouteTimeouts); idle timeouts still apply.
        "timeouts": {"request": "0s"},
    }
    if path != "/":
        # The engine serves /v1/... at its root: strip the service's prefix on the way in
        # (Gateway API HTTPURLRewriteFilter, ReplacePrefixMatch; Envoy Gateway "HTTP URL Rewrite").
        rule["filters"] = [
            {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}
        ]
    return gateway_route(gateway_ns, route.listener, route.spec.host, [rule])


def gateway_route(gateway_ns: str, listener: str, host: str | None, rules: list[dict[str, Any]]) -> dict[str, Any]:
    """An HTTPRoute's spec on one listener of the stack's Gateway, for `host` (every host when None)."""
    spec: dict[str, Any] = {
        "parentRefs": [
            {
                "group": GATEWAY_GROUP,
                "kind": "Gateway",
                "name": GATEWAY_NAME,
                "namespace": gateway_ns,
                "sectionName": listener,
            }
        ],
        "rules": rules,
    }
    if host is not None:
        spec["hostnames"] = [host]
    return spec


def _backend_ref(route: ServiceRoute, backend: RouteBackend) -> dict[str, Any]:
    """A deployment's Service, with its weight in a split (Gateway API `HTTPBackendRef.weight`, relative)."""
    ref: dict[str, Any] = {"name": backend.deployment.name, "port": backend.deployment.port}
    if len(route.backends) > 1:
        ref["weight"] = backend.weight
    return ref


def ext_proc_policy_spec(route: ServiceRoute) -> dict[str, Any]:
    """Envoy Gateway's external processor on the route: every request goes to the deployment's picker
    first (api/v1alpha1/ext_proc_types.go at v1.8.3; docs "Envoy External Processing").

    The picker answers a request's headers only once it has its body and has scheduled it, and follows
    the response to account for it (pkg/epp/handlers/server.go at GAIE v1.5.0): both bodies stream in
    full duplex, as the project's standalone Envoy configuration sends them
    (config/charts/standalone/values.yaml: `FULL_DUPLEX_STREAMED` both ways). With that mode Envoy
    Gateway refuses `failOpen` (its CEL rule on ExtProc), so a picker that does not answer fails the
    request (the pool's `failureMode: FailClose`, `infra.serving.picker.pool_spec`).

    `messageTimeout` bounds the wait for each answer, which includes the time the picker holds a
    request in its queue: the standalone configuration's 1000 s, or longer than the queue.
    """
    dep = route.deployment
    held = queue_seconds(dep) or 0
    return {
        "targetRefs": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute", "name": route.name}],
        "extProc": [
            {
                "backendRefs": [{"name": picker_name(dep), "port": EXT_PROC_PORT}],
                "processingMode": {
                    "request": {"body": "FullDuplexStreamed"},
                    "response": {"body": "FullDuplexStreamed"},
                },
                "messageTimeout": f"{max(STANDALONE_MESSAGE_SECONDS, held + QUEUE_MARGIN_SECONDS)}s",
            }
        ],
    }


def traffic_policy_spec(route: ServiceRoute) -> dict[str, Any]:
    """The route's load balancer sends each request to the pod the picker named in its header
    (api/v1alpha1/loadbalancer_types.go `EndpointOverride` at v1.8.3; docs "Load Balancing",
    "Endpoint Override"), and, where the header names no pod of the route, balances by least
    requests, Envoy Gateway's default."""
    return {
        "targetRefs": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute", "name": route.name}],
        "loadBalancer": {
            "type": "LeastRequest",
            "endpointOverride": {"extractFrom": [{"header": DESTINATION_HEADER}]},
        },
    }


class ModelService(pulumi.ComponentResource):
    """The HTTPRoute that publishes one deployment, or a split over several, on its cluster's Gateway,
    and for a picker-routed service the gateway's policies that send each request where its picker says."""

    endpoint: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: ModelServiceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        route = args.route
        endpoint = route.endpoint(args.gateway_namespace)
        super().__init__(tokens.MODEL_SERVICE, name, endpoint, opts)
        self.route = k8s.apiextensions.CustomResource(
            f"{name}-route",
            api_version=GATEWAY_API,
            kind="HTTPRoute",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=route.name, namespace=route.namespace, labels={"modelplane.ai/service": route.name}
            ),
            spec=route_spec(route, args.gateway_namespace),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.policies: list[k8s.apiextensions.CustomResource] = []
        if route.routing is Routing.PICKER:
            meta = k8s.meta.v1.ObjectMetaArgs(name=route.name, namespace=route.namespace)
            child = pulumi.ResourceOptions(parent=self, depends_on=[self.route])
            self.policies = [
                k8s.apiextensions.CustomResource(
                    f"{name}-{suffix}",
                    api_version=ENVOY_GATEWAY_API,
                    kind=kind,
                    metadata=meta,
                    spec=spec,
                    opts=child,
                )
                for suffix, kind, spec in (
                    ("picker-policy", "EnvoyExtensionPolicy", ext_proc_policy_spec(route)),
                    ("traffic-policy", "BackendTrafficPolicy", traffic_policy_spec(route)),
                )
            ]
        self.endpoint = pulumi.Output.from_input(endpoint)
        self.register_outputs({"endpoint": self.endpoint})
