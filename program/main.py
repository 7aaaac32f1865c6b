"""The Pulumi program: stack config -> fleet -> rules -> one cluster component and serving stack each.

`run()` is what `__main__.py` calls under the Pulumi CLI: it reads the config, checks the fleet
once (`infra.checks.guard.check`) and hands the result to `deploy`. `modelplane plan` has checked
the stack file itself and calls `deploy` under Pulumi's mock runtime; `deploy` never knows which.
It reads every kubeconfig secret once, stops with `pulumi.RunError` before registering anything
when the config is bad, a device rule or a cloud's rule is broken, or the fleet is empty (a
program that registered fewer resources would make `pulumi up` delete the rest), then builds the
fleet.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from clouds import cloud
from components.base import CloudProviders, ClusterArgs, ClusterComponent
from components.budget import BudgetComponent
from components.features.cache import CACHE_LABELS, SharedCacheArgs, SharedWeightCache
from components.features.fleet import FleetExport, FleetExportArgs, FleetService, FleetServiceArgs
from components.features.routing import ClusterGateway, ClusterGatewayArgs, ModelService, ModelServiceArgs
from components.model_deployment import (
    ModelDeployment,
    ModelDeploymentArgs,
    namespace_resource,
    namespaces_of,
)
from components.serving_stack import ServingStack, ServingStackArgs
from infra.checks.guard import Checked, guard_report
from infra.config.issues import ConfigError, ConfigIssue, located
from infra.config.model import Fleet, ModelDeploymentSpec
from infra.config.names import FLEET_KEYS, NAMESPACE, SECRET_FLEET_KEYS
from infra.config.stackfile import check_existing_secrets, kubeconfig_keys, namespace_key_issues, parse_checked
from infra.facts import ClusterFacts
from infra.serving.fleet import BackendKind, fleet_exports, fleet_routes
from infra.serving.pods import pod_placement
from infra.serving.routes import gateway_namespace, picker_deployments, service_routes


def stack_file() -> str:
    """The name of the stack file this run's config comes from, as errors name it."""
    return f"Pulumi.{pulumi.get_stack()}.yaml"


def config_keys() -> tuple[list[str], list[str]]:
    """(plain, secret) `modelplane:` keys of this run, without the namespace.

    The language host hands config over through `set_all_config` or the `PULUMI_CONFIG`
    environment (both read by `pulumi.runtime.config.get_config`), so both are listed.
    """
    full = set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())
    secret = set(runtime_config.get_config_secret_keys_env())
    keys = sorted(k.partition(":")[2] for k in full if k.partition(":")[0] == NAMESPACE)
    is_secret = [runtime_config.is_config_secret(f"{NAMESPACE}:{k}") or f"{NAMESPACE}:{k}" in secret for k in keys]
    return [k for k, s in zip(keys, is_secret, strict=True) if not s], [
        k for k, s in zip(keys, is_secret, strict=True) if s
    ]


def read_checked(file: str) -> Checked:
    """The fleet from this stack's `modelplane:` config, validated and checked by the same parser as the plan.

    Each key is read as the CLI hands it over: a structured value as JSON text, a scalar as its
    text. A fleet key stored as a secret is refused without reading it: `Config.get_object` would
    put the decrypted text into its `ConfigTypeError` when it is not JSON. The exception is
    `SECRET_FLEET_KEYS` (`deployments` and `services`, secret as a whole once one env value or API
    key is `secure:`): it is read as raw text and never echoed. Other `modelplane:` keys are checked by the same rule as
    the plan's.
    """
    cfg = pulumi.Config(NAMESPACE)
    plain_keys, secret_keys = config_keys()
    issues = located(namespace_key_issues([], secret_keys, set()), file)
    raw: dict[str, Any] = {}
    for key in FLEET_KEYS:
        secret = key in secret_keys
        if secret and key not in SECRET_FLEET_KEYS:
            continue
        # A secret is read as the raw config text, never through `Config.get_object`, whose error
        # would echo the decrypted value.
        text = runtime_config.get_config(f"{NAMESPACE}:{key}") if secret else cfg.get(key)
        if text is None:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            if secret:
                issues.append(
                    ConfigIssue(
                        f"config.{NAMESPACE}:{key}",
                        "the secret value is not the list this key takes (its text is not shown)",
                        "write the list in the stack file and mark only the values that are secret with `secure:`",
                        file=file,
                    )
                )
                continue
            value = text  # a scalar (or a number Python will not read): the parser says what the key takes
        except RecursionError:
            issues.append(
                ConfigIssue(
                    f"config.{NAMESPACE}:{key}", "the value nests too deeply to read", "flatten the value", file=file
                )
            )
            continue
        if secret and key == "deployments" and isinstance(value, list):
            value = [secure_env(d) for d in value]
        if secret and key == "services" and isinstance(value, list):
            value = [secure_keys(s) for s in value]
        if value is not None:  # `key:` with no value is the key left out, as in the plan
            raw[key] = value
    if issues:
        raise ConfigError(issues)
    checked = parse_checked(raw, file)
    issues = located(namespace_key_issues(plain_keys, [], kubeconfig_keys(raw)), file)
    if issues:
        raise ConfigError(issues)
    return checked


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


def secure_keys(service: Any) -> Any:
    """A service's API keys (callers' `apiKeys`, an external endpoint's `apiKey`) as secure values
    again: the engine hands `modelplane:services` over decrypted as a whole once one is `secure:`
    (pulumi/pulumi#3342), and these keys take only secure values."""
    if not isinstance(service, dict):
        return service
    out = dict(service)
    if isinstance(out.get("apiKeys"), list):
        out["apiKeys"] = [_secure(k) for k in out["apiKeys"]]
    if isinstance(out.get("backends"), list):
        out["backends"] = [_secure_external(b) for b in out["backends"]]
    return out


def _secure(value: Any) -> Any:
    return {"secure": value} if isinstance(value, str) else value


def _secure_external(backend: Any) -> Any:
    if not isinstance(backend, dict) or not isinstance(backend.get("external"), dict):
        return backend
    external = backend["external"]
    if "apiKey" not in external:
        return backend
    return {**backend, "external": {**external, "apiKey": _secure(external["apiKey"])}}


def read_kubeconfigs(fleet: Fleet, file: str) -> dict[str, pulumi.Output[str]]:
    """Every Existing cluster's kubeconfig secret, by cluster name, read before anything registers."""
    cfg = pulumi.Config(NAMESPACE)
    present: dict[str, str] = {}
    found: dict[str, pulumi.Output[str]] = {}
    for cluster in fleet.clusters:
        owner = cluster.owner_block
        if owner is None:
            continue
        key = owner.kubeconfig_key
        secret = cfg.get_secret(key)
        if secret is not None:
            present[key] = ""
            found[cluster.name] = secret
    written = {"clusters": [c.model_dump(by_alias=True, mode="json") for c in fleet.clusters]}
    issues = located(check_existing_secrets(written, present), file)
    if issues:
        raise ConfigError(issues)
    return found


def run() -> None:
    """The program under the Pulumi CLI: the stack's config read and checked once, then `deploy`."""
    try:
        checked = read_checked(stack_file())
    except ConfigError as err:
        raise pulumi.RunError(f"invalid stack config; nothing was created, changed or deleted:\n{err}") from None
    deploy(checked)


def deploy(checked: Checked) -> None:
    """Register the fleet of a checked stack, or stop before the first registration when the checks stop it."""
    file = stack_file()
    fleet, facts = checked.fleet, checked.facts
    try:
        if checked.stops:
            raise pulumi.RunError(guard_report(checked))
        kubeconfigs = read_kubeconfigs(fleet, file)
    except ConfigError as err:
        raise pulumi.RunError(f"invalid stack config; nothing was created, changed or deleted:\n{err}") from None
    if fleet.budget is not None:
        BudgetComponent("budget", fleet.budget.monthly_usd, file)
    class_specs = {c.name: c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet.classes}
    exported: dict[str, Any] = {}
    endpoints: dict[str, Any] = {}
    providers = CloudProviders()
    for cluster_facts in facts:
        args = ClusterArgs(cluster_facts, class_specs, fleet.protect, kubeconfigs.get(cluster_facts.name), providers)
        cluster: ClusterComponent = cloud(cluster_facts.source).component_class()(cluster_facts.name, args)
        stack = ServingStack(
            f"{cluster_facts.name}-stack",
            ServingStackArgs(facts=cluster_facts, inference_pools=bool(picker_deployments(fleet, cluster_facts.name))),
            opts=pulumi.ResourceOptions(parent=cluster, providers={"kubernetes": cluster.provider}),
        )
        models = deploy_models(fleet, cluster_facts, cluster, stack)
        endpoints.update(publish_services(fleet, cluster_facts, cluster, stack, models))
        exported[cluster_facts.name] = {
            "source": cluster_facts.source,
            "kubeconfig": cluster.kubeconfig,
            "draDrivers": list(cluster_facts.dra_drivers),
            "schedulablePools": cluster.schedulable_pools,
            "releases": stack.release_names,
        }
    pulumi.export("clusters", exported)
    # Each service's endpoint: its Gateway, scheme, host, path and OpenAI base URL; a fleet
    # service's also its backends, weights and failover order.
    pulumi.export("endpoints", endpoints)


# --------------------------------------------------------------------------------------------
# Model deployments (docs/serving.md)


def deploy_models(
    fleet: Fleet, facts: ClusterFacts, cluster: ClusterComponent, stack: ServingStack
) -> dict[str, ModelDeployment]:
    """One ModelDeployment per `deployments[]` entry on this cluster, after its serving stack.

    Each waits for the ServingStack (its DRA drivers and DeviceClasses) and uses the cluster's
    provider. Namespaces are the cluster's, shared by the deployments in them.
    """
    deployments = [d for d in fleet.deployments if d.cluster == facts.name]
    picked = {(d.namespace, d.name) for d in picker_deployments(fleet, facts.name)}
    provider = pulumi.ResourceOptions(parent=cluster, providers={"kubernetes": cluster.provider})
    namespaces = {ns: namespace_resource(facts.name, ns, provider) for ns in namespaces_of(deployments)}
    caches = shared_caches(facts, deployments, stack, namespaces, provider)
    models = {}
    for dep in deployments:
        needs: list[pulumi.Resource] = [stack]
        if dep.namespace in namespaces:
            needs.append(namespaces[dep.namespace])
        needs += [c for c in caches if dep.name in c.readers]
        models[dep.name] = ModelDeployment(
            f"{facts.name}-{dep.name}",
            ModelDeploymentArgs(
                spec=dep, cluster=facts, pool=facts.pool(dep.pool), picker=(dep.namespace, dep.name) in picked
            ),
            opts=pulumi.ResourceOptions.merge(provider, pulumi.ResourceOptions(depends_on=needs)),
        )
    return models


def shared_caches(
    facts: ClusterFacts,
    deployments: list[ModelDeploymentSpec],
    stack: ServingStack,
    namespaces: Mapping[str, pulumi.Resource],
    provider: pulumi.ResourceOptions,
) -> list[SharedWeightCache]:
    """The cluster's shared weight caches (`ClusterFacts.shared_caches`), before the deployments that read them.

    Each waits for the serving stack and its namespace; its Job runs where the first deployment
    sharing it runs, and the deployments wait for its claim to exist.
    """
    out = []
    by_name = {d.name: d for d in deployments}
    for cache in facts.shared_caches:
        needs: list[pulumi.Resource] = [stack]
        if cache.namespace in namespaces:
            needs.append(namespaces[cache.namespace])
        first = by_name[cache.deployments[0]]
        out.append(
            SharedWeightCache(
                f"{facts.name}-cache-{cache.namespace}-{cache.claim}",
                SharedCacheArgs(cache, pod_placement(first, facts), CACHE_LABELS),
                opts=pulumi.ResourceOptions.merge(provider, pulumi.ResourceOptions(depends_on=needs)),
            )
        )
    return out


def publish_services(
    fleet: Fleet,
    facts: ClusterFacts,
    cluster: ClusterComponent,
    stack: ServingStack,
    models: dict[str, ModelDeployment],
) -> dict[str, Any]:
    """The cluster's Gateway (only when a service is published on it, or other clusters' fleet
    services reach a deployment of it), one route per service, each fleet service this cluster
    serves (`components.features.fleet`) and the routes of its deployments other clusters reach.

    The Gateway waits for the serving stack (Envoy Gateway's CRDs and cert-manager's); a route
    waits for the Gateway and for the deployments of this cluster it targets.
    """
    routes = service_routes(fleet, facts.name)
    served = fleet_routes(fleet, facts.name)
    exports = fleet_exports(fleet, facts.name)
    if not (routes or served or exports):
        return {}
    own_gateway = fleet.cluster_named(facts.name).gateway
    provider = pulumi.ResourceOptions(parent=cluster, providers={"kubernetes": cluster.provider})
    gateway = ClusterGateway(
        f"{facts.name}-gateway",
        ClusterGatewayArgs(
            facts=facts,
            routes=[*routes, *served],
            fleet=own_gateway,
            export_namespaces=sorted({b.deployment.namespace for _, b in exports if b.deployment is not None}),
        ),
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
    for fleet_route in served:
        local = [
            models[b.deployment.name] for b in fleet_route.backends if b.kind is BackendKind.LOCAL and b.deployment
        ]
        fleet_service = FleetService(
            f"{facts.name}-fleetservice-{fleet_route.name}",
            FleetServiceArgs(
                route=fleet_route,
                gateway_namespace=namespace,
                trust_issuer=own_gateway.issuer_ref if own_gateway is not None else None,
            ),
            opts=pulumi.ResourceOptions.merge(provider, pulumi.ResourceOptions(depends_on=[gateway, *local])),
        )
        endpoints[fleet_route.name] = fleet_service.endpoint
    for fleet_route, backend in exports:
        assert backend.deployment is not None
        FleetExport(
            f"{facts.name}-fleetexport-{fleet_route.name}",
            FleetExportArgs(route=fleet_route, backend=backend, gateway_namespace=namespace),
            opts=pulumi.ResourceOptions.merge(
                provider, pulumi.ResourceOptions(depends_on=[gateway, models[backend.deployment.name]])
            ),
        )
    return endpoints
