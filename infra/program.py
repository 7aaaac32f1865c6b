"""The Pulumi program: stack config -> fleet -> rules -> one cluster component and serving stack each.

`run()` is what `__main__.py` calls under the Pulumi CLI, and what `modelplane plan` runs under
Pulumi's mock runtime; it never knows which. It reads config once, stops with `pulumi.RunError`
before registering anything when the config is bad or a device rule is broken (a program that
registered fewer resources would make `pulumi up` delete the rest), then builds the fleet.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime.config import is_config_secret

from components.base import ClusterComponent
from components.clusters import cluster_component
from components.model_deployment import (
    ModelDeployment,
    ModelDeploymentArgs,
    namespace_resource,
    namespaces_of,
)
from components.model_service import (
    ClusterGateway,
    ClusterGatewayArgs,
    ModelService,
    ModelServiceArgs,
    gateway_namespace,
    service_routes,
)
from components.serving_stack import ServingStack, ServingStackArgs
from infra.config import FLEET_KEYS, NAMESPACE, ConfigError, Fleet, parse_fleet
from infra.cost import Budget
from infra.devices import Violation, fleet_violations
from infra.facts import ClusterFacts, derive_fleet


def read_fleet() -> Fleet:
    """The fleet from this stack's `modelplane:` config, validated by the same parser as the plan."""
    cfg = pulumi.Config(NAMESPACE)
    raw: dict[str, Any] = {}
    for key in FLEET_KEYS:
        value = cfg.get_object(key)
        if value is not None:
            raw[key] = value
    if is_config_secret(f"{NAMESPACE}:deployments") and isinstance(raw.get("deployments"), list):
        raw["deployments"] = [secure_env(d) for d in raw["deployments"]]
    return parse_fleet(raw, f"Pulumi.{pulumi.get_stack()}.yaml")


def secure_env(deployment: Any) -> Any:
    """Every env value of a deployment as a secure one.

    A `secure:` value anywhere under `modelplane:deployments` makes the engine mark the whole key
    secret and hand it over decrypted (pulumi/pulumi#3342), so which env value was secure is lost;
    all of them then go through the deployment's Secret rather than one in plain text.
    """
    if not isinstance(deployment, dict) or not isinstance(deployment.get("env"), dict):
        return deployment
    env = {k: v if isinstance(v, dict) else {"secure": v} for k, v in deployment["env"].items()}
    return {**deployment, "env": env}


def guard(fleet: Fleet, file: str = "") -> None:
    """Stop the run, before any resource is registered, when a mandatory device rule is broken.

    Advisory rules (`unknown-machine-type`) never stop a run; the policy pack reports them.
    """
    violations = [v for v in fleet_violations(fleet, file) if v.mandatory]
    if violations:
        raise pulumi.RunError(format_violations(violations))


def format_violations(violations: list[Violation]) -> str:
    lines = [f"{len(violations)} device rule violation(s); nothing was created, changed or deleted:"]
    lines += [f"  [{v.policy}] {v.message}" for v in violations]
    return "\n".join(lines)


def run() -> None:
    try:
        fleet = read_fleet()
    except ConfigError as err:
        raise pulumi.RunError(f"invalid stack config; nothing was created, changed or deleted:\n{err}") from None
    guard(fleet, f"Pulumi.{pulumi.get_stack()}.yaml")
    if fleet.budget is not None:
        Budget("budget", fleet.budget.monthly_usd, f"Pulumi.{pulumi.get_stack()}.yaml")
    cfg = pulumi.Config(NAMESPACE)
    class_specs = {c.name: c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet.classes}
    exported: dict[str, Any] = {}
    endpoints: dict[str, Any] = {}
    for facts in derive_fleet(fleet):
        kubeconfig = None
        if facts.spec.existing is not None:
            kubeconfig = cfg.require_secret(facts.spec.existing.kubeconfig_key)
        cluster = cluster_component(facts, class_specs, fleet.protect, kubeconfig)
        stack = ServingStack(
            f"{facts.name}-stack",
            ServingStackArgs(facts=facts),
            opts=pulumi.ResourceOptions(parent=cluster, providers={"kubernetes": cluster.provider}),
        )
        models = deploy_models(fleet, facts, cluster, stack)
        endpoints.update(publish_services(fleet, facts, cluster, stack, models))
        exported[facts.name] = {
            "source": facts.source,
            "kubeconfig": cluster.kubeconfig,
            "draDrivers": list(facts.dra_drivers),
            "schedulablePools": cluster.schedulable_pools,
            "releases": stack.release_names,
        }
    pulumi.export("clusters", exported)
    # Each service's endpoint: its Gateway, scheme, host, path and OpenAI base URL.
    pulumi.export("endpoints", endpoints)


# --------------------------------------------------------------------------------------------
# Model deployments (SPEC 8)


def deploy_models(
    fleet: Fleet, facts: ClusterFacts, cluster: ClusterComponent, stack: ServingStack
) -> dict[str, ModelDeployment]:
    """One ModelDeployment per `deployments[]` entry on this cluster, after its serving stack.

    Each waits for the ServingStack (its DRA drivers and DeviceClasses) and uses the cluster's
    provider. Namespaces are the cluster's, shared by the deployments in them.
    """
    deployments = [d for d in fleet.deployments if d.cluster == facts.name]
    provider = pulumi.ResourceOptions(parent=cluster, providers={"kubernetes": cluster.provider})
    namespaces = {ns: namespace_resource(facts.name, ns, provider) for ns in namespaces_of(deployments)}
    models = {}
    for dep in deployments:
        needs: list[pulumi.Resource] = [stack]
        if dep.namespace in namespaces:
            needs.append(namespaces[dep.namespace])
        models[dep.name] = ModelDeployment(
            f"{facts.name}-{dep.name}",
            ModelDeploymentArgs(spec=dep, cluster=facts, pool=facts.pool(dep.pool)),
            opts=pulumi.ResourceOptions.merge(provider, pulumi.ResourceOptions(depends_on=needs)),
        )
    return models


def publish_services(
    fleet: Fleet,
    facts: ClusterFacts,
    cluster: ClusterComponent,
    stack: ServingStack,
    models: dict[str, ModelDeployment],
) -> dict[str, Any]:
    """The cluster's Gateway (only when a service is published on it) and one route per service.

    The Gateway waits for the serving stack (Envoy Gateway's CRDs and cert-manager's); a route
    waits for the Gateway and for the deployment whose Service it targets.
    """
    routes = service_routes(fleet, facts.name)
    if not routes:
        return {}
    provider = pulumi.ResourceOptions(parent=cluster, providers={"kubernetes": cluster.provider})
    gateway = ClusterGateway(
        f"{facts.name}-gateway",
        ClusterGatewayArgs(facts=facts, routes=routes),
        opts=pulumi.ResourceOptions.merge(provider, pulumi.ResourceOptions(depends_on=[stack])),
    )
    namespace = gateway_namespace(facts)
    endpoints = {}
    for route in routes:
        service = ModelService(
            f"{facts.name}-modelservice-{route.name}",
            ModelServiceArgs(route=route, gateway_namespace=namespace),
            opts=pulumi.ResourceOptions.merge(
                provider, pulumi.ResourceOptions(depends_on=[gateway, models[route.deployment.name]])
            ),
        )
        endpoints[route.name] = service.endpoint
    return endpoints
