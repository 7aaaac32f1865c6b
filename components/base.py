"""What every cluster component shares: its arguments, its outputs and its inputs for policies.

Each cloud's package (`clouds/<cloud>/component.py`) defines one `ClusterComponent`
subclass with the same outline: an explicit cloud provider for the cluster's own project, region or
account, then the steps the cloud has, under the same names everywhere: `_network()`,
`_identity()`, `_cluster()`, `_pools()`, `connect()` (the kubeconfig, a secret Output, and a
`kubernetes.Provider` for it), `_addons()` (what the cluster installs on itself through that
provider) and `finish()` (its outputs, registered last). Labels, taints, roles and accelerators come from `infra.facts`, and what differs between
clouds outside their own package from the cloud's registry record (`clouds`); a cloud module only spells them the way its
API wants. Checks that can fail run in the program's guard before anything registers, not here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import pulumi
import pulumi_kubernetes as k8s

from clouds.spec import Cloud
from infra.facts import REGISTERED_POOL_KEYS, ClusterFacts, NodeTaint

BlockT = TypeVar("BlockT")


class ComponentError(pulumi.RunError):
    """An input a component cannot build from, raised before the component registers anything.

    The program's guard rejects such inputs before any component exists; this guards direct use. A
    `RunError` ends the run with its message and no traceback (pulumi sdk/python/lib/pulumi/errors.py;
    the Python SDK has no `ResourceError` as the Node.js SDK does), so the message names the resource.
    """

    def __init__(self, kind: str, name: str, problem: str) -> None:
        super().__init__(f"{kind} {name!r}: {problem}")


class CloudProviders:
    """One cloud provider per cloud, account and region for a whole run, shared by its clusters.

    The engine starts one plugin process per provider *instance* (pulumi/pulumi pkg/v3/host/host.go
    at v3.274.1: resource providers are not memoized), and a real cloud provider process takes
    hundreds of MB (pulumi/pulumi-aws#5860: 300-430 MB each for pulumi-aws 7.x), so a provider per
    cluster bounds how many clusters one stack can hold. Clusters that share a cloud, account and
    region share its provider. Moving an existing stack's resources onto the shared provider
    replaces nothing: the engine asks the new provider's `DiffConfig` about the old provider's
    config and replaces only when it says so (pkg/resource/deploy/step_generator.go,
    `providerChanged`), which equal settings never do. The Kubernetes provider stays one per
    cluster: each has its own kubeconfig.
    """

    def __init__(self) -> None:
        self._made: dict[tuple[str, ...], pulumi.ProviderResource] = {}

    def shared(self, key: tuple[str, ...], make: Callable[[str], pulumi.ProviderResource]) -> pulumi.ProviderResource:
        """The provider for `key` (cloud first, then what sets it apart), made once as `make(name)`.

        Its name ends in `-provider` so that it never reads as a cluster's (a Civo cluster may well
        be called `civo-lon1`)."""
        if key not in self._made:
            self._made[key] = make("-".join([*(part.lower() for part in key), "provider"]))
        return self._made[key]


def stack_credentials(cloud: Cloud) -> dict[str, pulumi.Output[str]]:
    """The credentials the stack's config gives a cloud's provider, by the provider's argument name.

    An explicit provider never reads the stack's `<package>:` config (pulumi/pulumi-aws#1307,
    pulumi/pulumi#12176), so `pulumi config set --secret civo:token ...` would reach no provider;
    the program passes each key the cloud documents (`Cloud.credentials`: config key -> argument)
    on itself, always as a secret. The provider process still reads its environment variables
    itself, so a key left unset falls back to them (docs/getting-started.md lists both, per cloud).
    """
    if cloud.provider_package is None:
        return {}
    cfg = pulumi.Config(cloud.provider_package)
    return {arg: value for key, arg in cloud.credentials.items() if (value := cfg.get_secret(key)) is not None}


@dataclass(frozen=True)
class ClusterArgs:
    facts: ClusterFacts
    # Each class as written in config, by name: the config-level policies evaluate these.
    class_specs: Mapping[str, Any]
    protect: bool = False
    # Existing clusters only: the kubeconfig read from the secret config key.
    kubeconfig: pulumi.Input[str] | None = None
    # The run's cloud providers, shared by clusters of one cloud, account and region.
    providers: CloudProviders = field(default_factory=CloudProviders)


def policy_inputs(facts: ClusterFacts, class_specs: Mapping[str, Any]) -> dict[str, Any]:
    """Facts registered on the cluster component as its inputs and its outputs, read by the pack.

    They carry what `infra.checks.devices.check_pool` needs (source, each pool's class as written), so
    the pack reaches the same verdict as the program's guard. The engine gives resource policies
    a component's inputs and stack policies its outputs, which are only what `register_outputs`
    passed (pulumi/pulumi v3.259.0, pkg/resource/deploy/step_generator.go, `AnalyzeResources`);
    both carry these literals, so they are known in a first preview, an update and
    `pulumi policy analyze` alike.
    """
    inputs = {
        "source": facts.source,
        # The region and each pool's zones and size feed the machine rules and the cost policy.
        "region": facts.region,
        "draDrivers": list(facts.dra_drivers),
        "supportedDrivers": list(facts.supported_drivers),
        "pools": [
            # Each pool as the facts spell it, with its class as written in config beside it.
            p.as_json(REGISTERED_POOL_KEYS, {"class": class_specs.get(p.class_name) if p.class_name else None})
            for p in facts.pools
        ],
    }
    if facts.shared_caches:
        # The shared weight caches' claims and sizes, which the cost policy prices with the pools.
        inputs["sharedCaches"] = [
            {"claim": f"{c.namespace}/{c.claim}", "sizeGib": str(c.size_gib)} for c in facts.shared_caches
        ]
    return inputs


class ClusterComponent(pulumi.ComponentResource):
    """Base of the cluster components, one per cloud; subclasses build resources in `__init__`.

    `CLOUD` is the cloud's registry record: its type token (`Cloud.component_token`, chosen once and
    never changed), its pool naming and its credentials.
    """

    CLOUD: ClassVar[Cloud]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    schedulable_pools: pulumi.Output[list[dict[str, Any]]]

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # Validate before registering anything. The device rules already reject a pool whose class
        # has no block for this cloud (class-provider-mismatch); this guards direct use.
        unsized = [p.name for p in args.facts.pools if args.facts.spec.provisioned and p.machine is None]
        if unsized:
            raise ComponentError("cluster", name, f"pools {unsized} have no {args.facts.source} machine")
        self.policy_facts = policy_inputs(args.facts, args.class_specs)
        # `modelplane:protect` protects the cluster and, by inheritance, everything parented to it:
        # its cloud resources, serving stack, deployments and routes. The engine deletes a removed
        # cluster's children before the cluster, so protecting only the cloud resources let a
        # cluster dropped from config lose its serving stack and models before `up` stopped at the
        # protected cluster (pulumi/pulumi pkg/resource/deploy/step.go, `DeleteStep.Apply` checks
        # `Protect` per resource, at execution).
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=args.protect))
        super().__init__(self.CLOUD.component_token, name, self.policy_facts, opts)
        self.facts = args.facts
        self.protect = args.protect

    def child(self, **extra: Any) -> pulumi.ResourceOptions:
        """Options for a child resource: parented here, so protected when the cluster is."""
        return pulumi.ResourceOptions(parent=self, **extra)

    def provider_options(self) -> pulumi.ResourceOptions:
        """Options for the cluster's Kubernetes provider: parented here, never protected. A provider
        holds no cloud object and is deleted only after every resource it manages, so protection
        would guard nothing and only block a change of its configuration that replaces it. (The
        cloud providers are the run's, `CloudProviders`, outside any cluster.)"""
        return pulumi.ResourceOptions(parent=self, protect=False)

    def connect(self, kubeconfig: pulumi.Output[str], context: str | None = None) -> None:
        """Expose the kubeconfig (secret) and a Kubernetes provider for it, for what the cluster installs next."""
        self.kubeconfig = pulumi.Output.secret(kubeconfig)
        self.provider = k8s.Provider(
            f"{self._name}-k8s",
            kubeconfig=self.kubeconfig,
            context=context,
            # One provider per cluster; never the ambient kubeconfig of whoever runs `pulumi up`.
            enable_server_side_apply=True,
            opts=self.provider_options(),
        )

    def finish(self) -> None:
        """Register the outputs, after every child: the last step of every cluster component."""
        self.schedulable_pools = pulumi.Output.from_input(self.facts.schedulable_pools())
        self.register_outputs(
            {**self.policy_facts, "kubeconfig": self.kubeconfig, "schedulablePools": self.schedulable_pools}
        )


def own_block(facts: ClusterFacts, block_type: type[BlockT]) -> BlockT:
    """The cluster's own source block (`gke`, `eks`, ...); config loading guarantees it is set."""
    block = getattr(facts.spec, facts.spec.cloud.key)
    if not isinstance(block, block_type):
        raise ComponentError("cluster", facts.name, f"its source needs the '{facts.spec.cloud.key}' block")
    return block


def taint_strings(taints: Sequence[NodeTaint]) -> list[str]:
    """`key=value:Effect`, as AKS `node_taints` and kubelet flags spell taints."""
    return [f"{t.key}={t.value}:{t.effect}" for t in taints]


def exec_kubeconfig(
    name: str,
    server: str,
    ca_data: str,
    command: str,
    args: Sequence[str],
    install_hint: str,
    provide_cluster_info: bool = False,
) -> str:
    """A kubeconfig whose user runs a cloud's credential plugin (`client.authentication.k8s.io/v1beta1`).

    GKE and EKS mint short-lived tokens through their CLIs; the kubeconfig therefore holds no
    credential of its own, and works for whoever runs `pulumi up` with access to the cluster.
    """
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
            "users": [
                {
                    "name": name,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": command,
                            "args": list(args),
                            "installHint": install_hint,
                            "interactiveMode": "Never",
                            "provideClusterInfo": provide_cluster_info,
                        }
                    },
                }
            ],
        }
    )
