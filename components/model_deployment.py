"""ModelDeployment: one inference engine on one pool of one cluster, claimed through DRA.

It turns a validated `modelplane:deployments[]` entry into its workload, a `resource.k8s.io/v1`
ResourceClaimTemplate (the pool class's devices), a Deployment placed on the pool (with a floor, a
second one on the spot pool for the replicas above it), a Service and a PodDisruptionBudget, and
composes the serving features the deployment uses (`components.features`: the model cache,
multi-node replicas, autoscaling), each decorating or adding to what the workload built.
It is not a scheduler: the config names the cluster and pool, and `infra.checks.references.check_references`
has already rejected unknown clusters, pools and devices, counts above the class's, floating images
and CPU claims without a CPU count. The pods' placement (`infra.serving.pods.pod_placement`) is the
same one the placement audit (`tooling.placement`) checks.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.base import ComponentError
from components.features import DeploymentContext, autoscaling, cache, monitoring, multinode, picker
from infra import tokens
from infra.config.model import ClaimMode, Device, ModelDeploymentSpec, SecureValue
from infra.config.roles import CPU_CLAIM_CAPACITY, CPU_CLAIM_DRIVER, claimed_cpus
from infra.facts import ClusterFacts, PoolFacts
from infra.multinode import pool_fabric
from infra.placement import PodPlacement, Toleration
from infra.serving.pods import SPOT_SUFFIX, pod_placement
from infra.serving.vllm_args import PORT_FLAG, port_args
from infra.shared_cache import ENV_SECRET_SUFFIX
from infra.vocabulary import CAPACITY_LABEL, DEPLOYMENT_LABEL, FLOOR_CAPACITY, SPOT_CAPACITY

# The name under which the pod and its container refer to the claim built from the template.
CLAIM_NAME = "devices"
CONTAINER_NAME = "engine"

# vLLM's OpenAI server answers GET /health once the model is loaded; the port is the deployment's
# `port` (infra.config), passed as `--port`.
ENGINE_PORT_NAME = "http"
HEALTH_PATH = "/health"
# A startup probe holds off the readiness probe (and a restart) while a first start downloads the
# weights; after that the readiness probe alone decides. Kubernetes docs, "Protect slow starting
# containers with startup probes": failureThreshold x periodSeconds covers the worst-case start.
STARTUP_PERIOD_SECONDS = 10


@dataclass(frozen=True)
class ModelDeploymentArgs:
    spec: ModelDeploymentSpec
    cluster: ClusterFacts
    pool: PoolFacts
    # A service routes to it through its endpoint picker (`infra.serving.routes.picker_deployments`).
    picker: bool = False


@dataclass(frozen=True)
class DeviceClaim:
    """One request of the claim template: a class device and how much of it the pod takes."""

    name: str
    device: Device
    count: int
    cpus: int | None  # dra.cpu only: the CPUs the request takes (and the container requests)


def device_claims(spec: ModelDeploymentSpec, pool: PoolFacts) -> list[DeviceClaim]:
    """The DRA requests of a deployment, resolved against its pool's class devices.

    A `dra.cpu` device hands out CPUs through its consumable capacity `dra.cpu/cpu`, so the
    request asks for the class device's capacity rather than a device count. With `count: n` the
    request takes n such devices (n groups, e.g. NUMA nodes), each giving that many CPUs: n x capacity.
    """
    devices = {d.name: d for d in pool.devices}
    claims = []
    for req in spec.devices:
        dev = devices[req.name]
        if dev.claim is not ClaimMode.DRA:
            raise ComponentError("deployment", spec.name, f"device {req.name!r} is Synthetic and cannot be claimed")
        cpus = None
        if dev.driver == CPU_CLAIM_DRIVER:
            per_device = claimed_cpus(dev)
            if per_device is None:
                raise ComponentError("deployment", spec.name, f"device {req.name!r} has no whole {CPU_CLAIM_CAPACITY}")
            cpus = per_device * req.count
        claims.append(DeviceClaim(req.name, dev, req.count, cpus))
    return claims


def claimed_cpu_total(claims: list[DeviceClaim]) -> int | None:
    cpus = [c.cpus for c in claims if c.cpus is not None]
    return sum(cpus) if cpus else None


def claim_requests(claims: list[DeviceClaim]) -> list[k8s.resource.v1.DeviceRequestArgs]:
    out = []
    for c in claims:
        class_name = c.device.device_class_name
        assert class_name is not None, "a DRA device has a deviceClassName (validated)"
        if c.cpus is not None:
            cap = c.device.capacity[CPU_CLAIM_CAPACITY].value
            exactly = k8s.resource.v1.ExactDeviceRequestArgs(
                device_class_name=class_name,
                # count 1 is the API default; more takes that many devices, each with the capacity.
                count=c.count if c.count > 1 else None,
                capacity=k8s.resource.v1.CapacityRequirementsArgs(requests={CPU_CLAIM_CAPACITY: cap}),
            )
        else:
            exactly = k8s.resource.v1.ExactDeviceRequestArgs(device_class_name=class_name, count=c.count)
        out.append(k8s.resource.v1.DeviceRequestArgs(name=c.name, exactly=exactly))
    return out


def claim_template_name(deployment: str, claims: list[DeviceClaim]) -> str:
    """The claim template's name: the deployment's, and a digest of what it claims.

    A ResourceClaimTemplate's spec cannot change in place: the API server answers an update with
    422 `spec: field is immutable` (k8s.io/kubernetes pkg/apis/resource/validation,
    `ValidateResourceClaimTemplateUpdate`), and pulumi-kubernetes updates such a template rather
    than replacing it (no `resource.k8s.io` entry in its `forceNewProperties`). A name that follows
    the claim makes a changed claim a new template: pulumi-kubernetes replaces an object whose name
    changes, creating the new one first.
    """
    claimed = [
        [c.name, c.device.device_class_name, c.count, c.device.capacity[CPU_CLAIM_CAPACITY].value if c.cpus else None]
        for c in claims
    ]
    digest = hashlib.sha256(json.dumps(claimed, separators=(",", ":")).encode()).hexdigest()[:8]
    return f"{deployment}-{digest}"


def container_resources(claims: list[DeviceClaim], memory: str | None = None) -> k8s.core.v1.ResourceRequirementsArgs:
    """The engine container's resources: the claim, for dra.cpu the claimed CPUs, and its memory.

    dra-driver-cpu's contract before KEP-5517 (docs/user/workload-requirements.md): a container
    claiming dra.cpu requests and limits exactly the CPUs it claims, otherwise the scheduler does
    not count them and the pod is BestEffort, first to be evicted. Memory is requested and limited
    alike, so the scheduler places the engine only where its weights fit in RAM.
    """
    cpus = claimed_cpu_total(claims)
    quantities = {"cpu": str(cpus)} if cpus is not None else {}
    if memory is not None:
        quantities["memory"] = memory
    return k8s.core.v1.ResourceRequirementsArgs(
        claims=[k8s.core.v1.ResourceClaimArgs(name=CLAIM_NAME)],
        requests=quantities or None,
        limits=quantities or None,
    )


def engine_args(spec: ModelDeploymentSpec) -> list[str]:
    """The container args: the deployment's own, plus `--port` unless they already set that port."""
    if port_args(spec.args):
        return list(spec.args)  # the same port as `port` (infra.checks.services.check_serving)
    return [*spec.args, PORT_FLAG, str(spec.port)]


def component_inputs(
    spec: ModelDeploymentSpec, cluster: ClusterFacts, pool: PoolFacts, claims: list[DeviceClaim]
) -> dict[str, Any]:
    """The inputs the component registers: the deployment's facts as the plan and the state show them."""
    return {
        "name": spec.name,
        "namespace": spec.namespace,
        "cluster": cluster.name,
        "pool": pool.name,
        "poolRole": pool.role,
        "image": spec.image,
        "claimedCpus": claimed_cpu_total(claims),
        "port": spec.port,
        "memory": spec.memory,
        "cache": spec.cache.model_dump(by_alias=True, mode="json", exclude_none=True) if spec.cache else None,
        # Multi-node replicas: the group's size and the pool's fabric, for `multinode-fabric` and the plan.
        "source": cluster.source,
        "nodes": spec.nodes,
        "fabric": pool_fabric(pool, [d.name for d in spec.devices]),
        # Capacity: whether the pool's nodes can be reclaimed, the floor kept on it and the spot pool
        # the rest run on, for `reclaim-all-replicas` (`infra.checks.reclaim.reclaim_advisory`) and the plan.
        "reclaimable": pool.reclaimable,
        "floor": spec.floor_replicas or None,
        "spotPool": spec.spot_pool,
        "peakReplicas": spec.peak_replicas,
        "startupSeconds": spec.startup_seconds,
    }


def engine_container(
    spec: ModelDeploymentSpec,
    claims: list[DeviceClaim],
    env: list[k8s.core.v1.EnvVarArgs],
    mounts: list[k8s.core.v1.VolumeMountArgs],
) -> k8s.core.v1.ContainerArgs:
    """The engine container: its image and args, env, port, health probes, resources and mounts."""
    return k8s.core.v1.ContainerArgs(
        name=CONTAINER_NAME,
        image=spec.image,
        args=engine_args(spec),
        env=env or None,
        ports=[k8s.core.v1.ContainerPortArgs(name=ENGINE_PORT_NAME, container_port=spec.port)],
        startup_probe=k8s.core.v1.ProbeArgs(
            http_get=k8s.core.v1.HTTPGetActionArgs(path=HEALTH_PATH, port=ENGINE_PORT_NAME),
            period_seconds=STARTUP_PERIOD_SECONDS,
            failure_threshold=-(-spec.startup_seconds // STARTUP_PERIOD_SECONDS),
        ),
        readiness_probe=k8s.core.v1.ProbeArgs(
            http_get=k8s.core.v1.HTTPGetActionArgs(path=HEALTH_PATH, port=ENGINE_PORT_NAME),
            period_seconds=10,
            failure_threshold=3,
        ),
        resources=container_resources(claims, spec.memory),
        volume_mounts=mounts,
    )


def pod_template(
    labels: dict[str, str],
    placement: PodPlacement,
    template: k8s.resource.v1.ResourceClaimTemplate,
    container: k8s.core.v1.ContainerArgs,
    volumes: list[k8s.core.v1.VolumeArgs],
    init_containers: list[k8s.core.v1.ContainerArgs] | None = None,
) -> k8s.core.v1.PodTemplateSpecArgs:
    """The engine's pod: on the pool's nodes, with a claim from the template, one container and its
    volumes, after its init containers (a shared cache's wait)."""
    return k8s.core.v1.PodTemplateSpecArgs(
        metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
        spec=k8s.core.v1.PodSpecArgs(
            node_selector=dict(placement.node_selector),
            tolerations=[_toleration_args(t) for t in placement.tolerations],
            resource_claims=[
                k8s.core.v1.PodResourceClaimArgs(name=CLAIM_NAME, resource_claim_template_name=template.metadata.name)
            ],
            init_containers=init_containers or None,
            containers=[container],
            volumes=volumes,
        ),
    )


def shared_memory(spec: ModelDeploymentSpec) -> tuple[list[k8s.core.v1.VolumeArgs], list[k8s.core.v1.VolumeMountArgs]]:
    """The pod's shared memory volume and the engine's mount of it."""
    volume = k8s.core.v1.VolumeArgs(
        name="shm",
        # Engines exchange tensors through shared memory; the container runtime's 64Mi
        # default is too small. It is RAM, so it is capped (and counts against `memory`).
        empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(medium="Memory", size_limit=spec.shm_size),
    )
    return [volume], [k8s.core.v1.VolumeMountArgs(name="shm", mount_path="/dev/shm")]


class ModelDeployment(pulumi.ComponentResource):
    """The workload of one model deployment on one pool, and the serving features it uses."""

    service_name: pulumi.Output[str]

    def __init__(self, name: str, args: ModelDeploymentArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        spec, cluster, pool = args.spec, args.cluster, args.pool
        # Validate before creating anything: the facts must be the deployment's own.
        if spec.cluster != cluster.name or spec.pool != pool.name:
            raise ComponentError(
                "deployment", spec.name, f"targets {spec.cluster}/{spec.pool}, not {cluster.name}/{pool.name}"
            )
        claims = device_claims(spec, pool)
        super().__init__(tokens.MODEL_DEPLOYMENT, name, component_inputs(spec, cluster, pool, claims), opts)
        labels = {DEPLOYMENT_LABEL: spec.name}
        meta = k8s.meta.v1.ObjectMetaArgs(name=spec.name, namespace=spec.namespace, labels=labels)
        deployment = DeploymentContext(self, name, spec, cluster, meta, labels)
        self.env_secret: k8s.core.v1.Secret | None = None  # set by `_env` when a value is `secure:`
        # The steps run in the order the children register in, which the plans and the state show:
        # claim template, cache claim, env Secret, workload(s), Service, PodDisruptionBudget,
        # PodMonitor, then the autoscaler's.
        # The engine's pod: its claim template, its volumes (with the model cache's), its env.
        template = self._claim_template(name, spec, labels, claims)
        volumes, mounts = cache.apply(deployment, *shared_memory(spec))
        container = engine_container(spec, claims, self._env(name, spec, labels) + cache.engine_env(spec), mounts)
        inits = cache.init_containers(spec)
        # What runs the pods (a Deployment, or for multi-node replicas a LeaderWorkerSet); with a
        # floor, a second Deployment on the spot pool runs the replicas above it. Then the Service in
        # front of the pods that serve, and the budget that keeps the floor through evictions.
        floor_labels = {**labels, CAPACITY_LABEL: FLOOR_CAPACITY} if spec.spot_pool is not None else labels
        pod = pod_template(floor_labels, pod_placement(spec, cluster), template, container, volumes, inits)
        self.deployment = self._workload(deployment, pod, container, template, floor_labels)
        self.spot_deployment = None
        if spec.spot_pool is not None:
            spot_labels = {**labels, CAPACITY_LABEL: SPOT_CAPACITY}
            spot_pod = pod_template(
                spot_labels, pod_placement(spec, cluster, spec.spot_pool), template, container, volumes, inits
            )
            self.spot_deployment = self._spot_workload(deployment, spot_pod, template, spot_labels)
        serving = multinode.service_selector(spec, labels)
        self.service = self._service(name, spec, meta, serving)
        self.disruption_budget = self._disruption_budget(deployment)
        # The features added to what the workload built.
        self.monitor = monitoring.apply(deployment, ENGINE_PORT_NAME)
        self.picker = picker.apply(deployment, serving) if args.picker else None
        self.scaling = autoscaling.apply(deployment, self.deployment, self.monitor, self.picker)
        self.service_name = self.service.metadata.name
        self.register_outputs({"serviceName": self.service_name})

    def _claim_template(
        self, name: str, spec: ModelDeploymentSpec, labels: dict[str, str], claims: list[DeviceClaim]
    ) -> k8s.resource.v1.ResourceClaimTemplate:
        """The ResourceClaimTemplate from which each pod gets a claim on the pool class's devices.

        Named after what it claims (`claim_template_name`): its spec is immutable, so a change of the
        deployment's devices makes a template of another name, which Pulumi creates before the
        Deployment moves to it and deletes the old one after.
        """
        return k8s.resource.v1.ResourceClaimTemplate(
            f"{name}-claims",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=claim_template_name(spec.name, claims), namespace=spec.namespace, labels=labels
            ),
            spec=k8s.resource.v1.ResourceClaimTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                spec=k8s.resource.v1.ResourceClaimSpecArgs(
                    devices=k8s.resource.v1.DeviceClaimArgs(requests=claim_requests(claims))
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _workload(
        self,
        deployment: DeploymentContext,
        pod: k8s.core.v1.PodTemplateSpecArgs,
        container: k8s.core.v1.ContainerArgs,
        template: k8s.resource.v1.ResourceClaimTemplate,
        selector: dict[str, str],
    ) -> pulumi.CustomResource:
        """What runs the replicas on the deployment's pool: a Deployment, or for replicas of several
        nodes a LeaderWorkerSet (`components.features.multinode`); an autoscaled one leaves its count
        to the autoscaler; with a floor, the floor's replicas only."""
        spec = deployment.spec
        replicas = spec.floor_replicas or autoscaling.fixed_replicas(spec)
        opts = self._engine_opts(template)
        if spec.nodes > 1:
            return multinode.apply(deployment, replicas, pod, container, engine_args(spec), opts)
        return _engine_deployment(f"{deployment.name}-deployment", deployment.meta, replicas, selector, pod, opts)

    def _spot_workload(
        self,
        deployment: DeploymentContext,
        pod: k8s.core.v1.PodTemplateSpecArgs,
        template: k8s.resource.v1.ResourceClaimTemplate,
        selector: dict[str, str],
    ) -> k8s.apps.v1.Deployment:
        """The replicas above the floor, on the spot pool: a Deployment of its own, named
        `<name>-spot`, whose selector (`capacity: spot`) never overlaps the floor's; an autoscaled
        one leaves its count to the autoscaler (`components.features.autoscaling`)."""
        spec = deployment.spec
        meta = k8s.meta.v1.ObjectMetaArgs(
            name=f"{spec.name}{SPOT_SUFFIX}", namespace=spec.namespace, labels=deployment.labels
        )
        fixed = autoscaling.fixed_replicas(spec)
        replicas = fixed - spec.floor_replicas if fixed is not None else None
        opts = self._engine_opts(template)
        return _engine_deployment(f"{deployment.name}-spot-deployment", meta, replicas, selector, pod, opts)

    def _engine_opts(self, template: k8s.resource.v1.ResourceClaimTemplate) -> pulumi.ResourceOptions:
        """The engine's pods wait for their claim template and the env Secret."""
        secret = [self.env_secret] if self.env_secret is not None else []
        return pulumi.ResourceOptions(parent=self, depends_on=[template, *secret])

    def _disruption_budget(self, deployment: DeploymentContext) -> k8s.policy.v1.PodDisruptionBudget:
        """The PodDisruptionBudget over every pod of the deployment (floor and spot alike): a drain
        or another eviction through the API leaves `floor` pods, and without a floor takes one pod
        at a time (`disruption_budget`). It governs evictions only, never a cloud's reclaim."""
        budget = disruption_budget(deployment.spec)
        return k8s.policy.v1.PodDisruptionBudget(
            f"{deployment.name}-disruption-budget",
            metadata=deployment.meta,
            spec=k8s.policy.v1.PodDisruptionBudgetSpecArgs(
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=deployment.labels),
                min_available=budget.get("minAvailable"),
                max_unavailable=budget.get("maxUnavailable"),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _service(
        self, name: str, spec: ModelDeploymentSpec, meta: k8s.meta.v1.ObjectMetaArgs, selector: dict[str, str]
    ) -> k8s.core.v1.Service:
        """The Service in front of the engine's pods that `selector` picks, on the deployment's port."""
        return k8s.core.v1.Service(
            f"{name}-service",
            metadata=meta,
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=selector,
                ports=[
                    k8s.core.v1.ServicePortArgs(
                        name=ENGINE_PORT_NAME, port=spec.port, target_port=ENGINE_PORT_NAME, protocol="TCP"
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _env(self, name: str, spec: ModelDeploymentSpec, labels: dict[str, str]) -> list[k8s.core.v1.EnvVarArgs]:
        """Plain values inline; `secure:` values in one Secret the container reads by `secretKeyRef`.

        The Secret's data is a secret Output, so the state and the plan hold it encrypted or
        masked, and the pod spec names only the Secret and its key.
        """
        secured = {k: v.secure for k, v in spec.env.items() if isinstance(v, SecureValue)}
        # The Secret's name is ours, so the pod names it as a literal, known in a first preview too;
        # the Deployment waits for the Secret through `depends_on` instead of its output.
        secret_name = f"{spec.name}{ENV_SECRET_SUFFIX}"
        if secured:
            self.env_secret = k8s.core.v1.Secret(
                f"{name}-env",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=secret_name, namespace=spec.namespace, labels=labels),
                type="Opaque",
                string_data=pulumi.Output.secret(secured),
                opts=pulumi.ResourceOptions(parent=self),
            )
        env = []
        for key, value in spec.env.items():
            if isinstance(value, SecureValue):
                ref = k8s.core.v1.SecretKeySelectorArgs(name=secret_name, key=key)
                env.append(
                    k8s.core.v1.EnvVarArgs(name=key, value_from=k8s.core.v1.EnvVarSourceArgs(secret_key_ref=ref))
                )
            else:
                env.append(k8s.core.v1.EnvVarArgs(name=key, value=value))
        return env


def _engine_deployment(
    name: str,
    meta: k8s.meta.v1.ObjectMetaArgs,
    replicas: int | None,
    selector: dict[str, str],
    pod: k8s.core.v1.PodTemplateSpecArgs,
    opts: pulumi.ResourceOptions,
) -> k8s.apps.v1.Deployment:
    return k8s.apps.v1.Deployment(
        name,
        metadata=meta,
        spec=k8s.apps.v1.DeploymentSpecArgs(
            replicas=replicas,
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
            # A new pod needs devices of its own; with no spare device on the pool a surge pod
            # would wait forever, so replace one pod at a time instead.
            strategy=k8s.apps.v1.DeploymentStrategyArgs(
                type="RollingUpdate",
                rolling_update=k8s.apps.v1.RollingUpdateDeploymentArgs(max_surge=0, max_unavailable=1),
            ),
            template=pod,
        ),
        opts=opts,
    )


def disruption_budget(spec: ModelDeploymentSpec) -> dict[str, int]:
    """The budget's one bound: `minAvailable: floor` with a floor, else `maxUnavailable: 1`.

    With a floor, evictions (a drain, a scale-down of the cluster's autoscaler) stop while taking
    one more pod would leave fewer than `floor` of the deployment's pods. Without one, a
    `minAvailable` of every replica would block each drain for good ("If you set maxUnavailable to
    0% or 0, or you set minAvailable to 100% or the number of replicas, you are requiring zero
    voluntary evictions", kubernetes.io/docs/tasks/run-application/configure-pdb/, "Think about how
    your application reacts to disruptions"), so one pod goes at a time, as the rolling update
    replaces them (`maxUnavailable: 1`); an integer bound stays right while an autoscaler changes
    the count. A pod of a multi-node group counts alone, so at most one group is down at a time.
    """
    if spec.floor_replicas:
        return {"minAvailable": spec.floor_replicas}
    return {"maxUnavailable": 1}


def _toleration_args(t: Toleration) -> k8s.core.v1.TolerationArgs:
    return k8s.core.v1.TolerationArgs(
        key=t.key or None,
        operator=t.operator or None,
        value=t.value or None,
        effect=t.effect or None,
    )


def namespaces_of(deployments: list[ModelDeploymentSpec]) -> list[str]:
    """Namespaces the deployments of one cluster need created (`default` always exists)."""
    return sorted({d.namespace for d in deployments} - {"default"})


def namespace_resource(cluster: str, namespace: str, opts: pulumi.ResourceOptions) -> k8s.core.v1.Namespace:
    """A deployment namespace, one per cluster and name.

    It belongs to the cluster, not to one deployment: two deployments may share it, and removing
    one of them must not delete the namespace (and everything in it) under the other.
    """
    return k8s.core.v1.Namespace(
        f"{cluster}-ns-{namespace}",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace, labels={"app.kubernetes.io/managed-by": "modelplane"}),
        opts=opts,
    )
