"""Rules on `services[]`: what each names, how it routes, its splits, and scale from zero through a picker.

A service publishes one deployment (`deployment`) or a weighted split over several (`backends`),
through its cluster's Envoy Gateway, by the deployment's endpoint picker (`routing: Picker`) or by
the gateway's own balancing over the deployment's Service (`routing: Service`). What the picker is
and how the gateway reaches it: `components.features.picker` and `components.features.routing`.

After these rules `infra.serving.routes.service_routes` resolves each service to its deployments
without asking again. A fleet service (other clusters' deployments, external endpoints) has its own
rules, `infra.checks.fleet`; here it only takes its route on its serving cluster.
"""

from __future__ import annotations

from infra.checks.fleet import check_fleet_service
from infra.config.issues import ConfigIssue, unique_names
from infra.config.model import Fleet, ModelDeploymentSpec, ModelServiceSpec, Routing
from infra.serving.routes import picker_routed
from infra.serving.vllm_args import served_model


def check_services(fleet: Fleet) -> list[ConfigIssue]:
    issues = unique_names([s.name for s in fleet.services], "services[{i}].name", "service")
    routes: dict[tuple[str, str, str], int] = {}
    for si, svc in enumerate(fleet.services):
        spath = f"services[{si}]"
        if svc.fleet:
            found = check_fleet_service(fleet, si)
            issues += found
            if found:
                continue
            key = (str(svc.cluster), svc.host or "", svc.route_path)
            if key in routes:
                issues.append(_same_route(spath, svc, routes[key], key[0]))
            else:
                routes[key] = si
            continue
        resolved, unresolved = _resolve(fleet, spath, svc)
        if unresolved or len(resolved) != len(svc.targets):
            issues += unresolved
            continue
        issues += _check_split(spath, svc, resolved)
        if svc.tls is not None and svc.host is None:
            issues.append(
                ConfigIssue(
                    f"{spath}.tls",
                    "TLS needs a host to issue the certificate for",
                    f"set {spath}.host to the DNS name clients use, or remove tls",
                )
            )
        key = (resolved[0].cluster, svc.host or "", svc.route_path)
        if key in routes:
            issues.append(_same_route(spath, svc, routes[key], key[0]))
        else:
            routes[key] = si
    return issues


def _same_route(spath: str, svc: ModelServiceSpec, other: int, cluster: str) -> ConfigIssue:
    return ConfigIssue(
        f"{spath}.path",
        f"services[{other}] already routes {svc.host or '(any host)'}{svc.route_path} on cluster '{cluster}'",
        "give each service on a cluster its own host or path",
    )


def _target_path(spath: str, svc: ModelServiceSpec, i: int) -> str:
    return f"{spath}.backends[{i}].deployment" if svc.backends is not None else f"{spath}.deployment"


def _resolve(fleet: Fleet, spath: str, svc: ModelServiceSpec) -> tuple[list[ModelDeploymentSpec], list[ConfigIssue]]:
    """Each deployment the service names, found once; or the issues that keep it from being found."""
    found: list[ModelDeploymentSpec] = []
    issues: list[ConfigIssue] = []
    for i, target in enumerate(svc.targets):
        path = _target_path(spath, svc, i)
        matches = [
            d
            for d in fleet.deployments
            if d.name == target.deployment and (target.cluster or svc.cluster) in (None, d.cluster)
        ]
        if not matches:
            names = sorted({d.name for d in fleet.deployments})
            issues.append(
                ConfigIssue(
                    path,
                    f"no deployment '{target.deployment}'" + (f" on cluster '{svc.cluster}'" if svc.cluster else ""),
                    f"use one of: {', '.join(names) or '(none declared)'}",
                )
            )
        elif len({d.cluster for d in matches}) == 1 and len(matches) > 1:
            # Two of one name on one cluster, refused at the second one's name (`infra.checks.references`):
            # nothing to resolve here, and nothing more to say.
            continue
        elif len(matches) > 1:
            issues.append(
                ConfigIssue(
                    f"{spath}.cluster",
                    f"deployment '{target.deployment}' runs on clusters {', '.join(d.cluster for d in matches)}",
                    "set cluster to the one whose gateway publishes this service",
                )
            )
        else:
            found.append(matches[0])
    return found, issues


def _check_split(spath: str, svc: ModelServiceSpec, deployments: list[ModelDeploymentSpec]) -> list[ConfigIssue]:
    """A split's deployments: distinct, on one cluster and in one namespace, serving one model, with
    a weight somewhere; and routed by the gateway, which is the only routing that honours weights."""
    if svc.backends is None:
        return []
    issues: list[ConfigIssue] = []
    first = deployments[0]
    for i, dep in enumerate(deployments[1:], start=1):
        path = _target_path(spath, svc, i)
        if dep.name in {d.name for d in deployments[:i]}:
            issues.append(ConfigIssue(path, f"deployment '{dep.name}' is named twice", "name each deployment once"))
        elif dep.cluster != first.cluster:
            issues.append(
                ConfigIssue(
                    path,
                    f"deployment '{dep.name}' runs on cluster '{dep.cluster}', and '{first.name}' on "
                    f"'{first.cluster}': a split is one cluster's route",
                    f"split only deployments of cluster '{first.cluster}'",
                )
            )
        elif dep.namespace != first.namespace:
            # An HTTPRoute reaches a Service in another namespace only through a ReferenceGrant there
            # (Gateway API `BackendObjectReference.Namespace`), which the program does not create.
            issues.append(
                ConfigIssue(
                    path,
                    f"deployment '{dep.name}' runs in namespace '{dep.namespace}', and '{first.name}' in "
                    f"'{first.namespace}'",
                    f"run the split's deployments in one namespace (namespace: {first.namespace})",
                )
            )
        elif served_model(dep.args) != served_model(first.args):
            issues.append(
                ConfigIssue(
                    path,
                    f"deployment '{dep.name}' serves {_model(dep)} and '{first.name}' serves {_model(first)}: "
                    "a client asking one model would be answered by another",
                    "split only deployments that serve the same model (the same --model or "
                    "--served-model-name), e.g. a new image or new arguments of one model",
                )
            )
    if all(b.weight == 0 for b in svc.backends):
        issues.append(
            ConfigIssue(
                f"{spath}.backends",
                "every backend has weight 0, so the gateway would send nothing anywhere",
                "give at least one backend a weight above 0 (weights are relative, e.g. 90 and 10)",
            )
        )
    if svc.routing is Routing.PICKER:
        # Envoy Gateway v1.8.3 attaches an external processor to a route, not to one of its backends
        # (api/v1alpha1/envoyextensionypolicy_types.go: targetRefs are Gateways and routes), and the
        # gateway picks the weighted backend after the processor has answered: one picker cannot
        # serve a split, and two cannot share a route.
        issues.append(
            ConfigIssue(
                f"{spath}.routing",
                "a split is routed by the gateway's weights, and Envoy Gateway runs one endpoint picker per route, "
                "before it picks the weighted backend",
                "remove routing (a split routes by Service), or publish each deployment as its own service "
                "with routing: Picker",
            )
        )
    return issues


def _model(dep: ModelDeploymentSpec) -> str:
    model = served_model(dep.args)
    return f"'{model}'" if model else "the model its image names (its args name none)"


# What a held request waits for besides the engine's own start (`startupSeconds`): KEDA's look at
# the queue, every `pollingInterval`, 30 s by default (keda.sh/docs/2.20/reference/scaledobject-spec),
# after Prometheus has scraped it, every 30 s by default (prometheus-operator's default
# `scrapeInterval`, Documentation/api-reference/api.md `PrometheusSpec` at v0.90.1).
WAKE_SECONDS = 30 + 30


def check_scale_from_zero(fleet: Fleet, di: int) -> list[ConfigIssue]:
    """`minReplicas: 0` and `queueSeconds`: a deployment wakes from zero on its first request only
    when a picker holds that request (its flow control) and KEDA reads the picker's queue; the
    request must be held past KEDA's look, the scheduling and the engine's whole start."""
    dep = fleet.deployments[di]
    scaling = dep.autoscaling
    if scaling is None:
        return []
    spath = f"deployments[{di}].autoscaling"
    routed = picker_routed(fleet, dep)
    needed = dep.startup_seconds + WAKE_SECONDS
    if scaling.min_replicas == 0 and not routed:
        # The engine's own metric exists only while an engine runs: at zero replicas its query
        # returns nothing, and with no picker holding requests nothing else says one came.
        return [
            ConfigIssue(
                f"{spath}.minReplicas",
                f"at minReplicas 0 deployment '{dep.name}' would never start again: no service routes to it "
                "through its endpoint picker, which alone holds a request while no replica runs",
                f"publish it with a service that routes by its picker (services[].deployment: {dep.name}, routing "
                f"unset or Picker) and set {spath}.queueSeconds to at least {needed}, or set minReplicas: 1",
            )
        ]
    if scaling.queue_seconds is None:
        if scaling.min_replicas == 0:
            return [
                ConfigIssue(
                    f"{spath}.queueSeconds",
                    f"at minReplicas 0 deployment '{dep.name}' needs its picker to hold the first request "
                    "while a replica starts, and no queue is set",
                    f"set queueSeconds: {needed} (startupSeconds {dep.startup_seconds} and {WAKE_SECONDS} s for "
                    "Prometheus and KEDA to see the request), or set minReplicas: 1",
                )
            ]
        return []
    if not routed:
        return [
            ConfigIssue(
                f"{spath}.queueSeconds",
                f"deployment '{dep.name}' has no endpoint picker to queue in: no service routes to it with routing Picker",
                "remove queueSeconds, or publish it with a service whose routing is Picker",
            )
        ]
    if scaling.min_replicas == 0 and scaling.queue_seconds < needed:
        return [
            ConfigIssue(
                f"{spath}.queueSeconds",
                f"the picker would give up on deployment '{dep.name}''s first request after {scaling.queue_seconds} s, "
                f"before a replica declared to take up to {dep.startup_seconds} s to start (startupSeconds), and "
                f"{WAKE_SECONDS} s for Prometheus and KEDA to see the request, could answer it",
                f"set queueSeconds: {needed} or more, or lower deployments[{di}].startupSeconds to what a start takes",
            )
        ]
    return []
