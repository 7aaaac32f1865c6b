"""ModelDeployment: one inference engine on one pool of one cluster, claimed through DRA.

It turns a validated `modelplane:deployments[]` entry into a `resource.k8s.io/v1`
ResourceClaimTemplate (the pool class's devices), a Deployment placed on the pool and a Service.
It is not a scheduler: the config names the cluster and pool, and `infra.config.check_references`
has already rejected unknown clusters, pools and devices, counts above the class's, floating images
and CPU claims without a CPU count. The pod placement built here (`pod_placement`) is the same one
the placement audit (`infra.tooling.placement`) checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from infra.config import CPU_CLAIM_CAPACITY, CPU_CLAIM_DRIVER, ClaimMode, Device, ModelDeploymentSpec, claimed_cpus
from infra.facts import CPU_TAINT_KEY, POOL_LABEL, VENDOR_TAINT_KEY, ClusterFacts, PoolFacts
from infra.placement import PodPlacement, Toleration

TYPE_TOKEN = "modelplane:deploy:ModelDeployment"

# The telemetry collector's engine job scrapes pods by this label (port `http`).
DEPLOYMENT_LABEL = "modelplane.ai/deployment"
# The name under which the pod and its container refer to the claim built from the template.
CLAIM_NAME = "devices"
CONTAINER_NAME = "engine"

# vLLM's OpenAI server: `vllm serve` listens on 8000 and answers GET /health once the model loaded.
ENGINE_PORT = 8000
ENGINE_PORT_NAME = "http"
HEALTH_PATH = "/health"

# Every driver's node taint, tolerated by every engine (harmless where a taint is absent): the pool
# nodeSelector, not the tolerations, is what places the pod.
DRIVER_TAINT_KEYS: tuple[str, ...] = (*sorted(VENDOR_TAINT_KEY.values()), CPU_TAINT_KEY)


@dataclass(frozen=True)
class ModelDeploymentArgs:
    spec: ModelDeploymentSpec
    cluster: ClusterFacts
    pool: PoolFacts


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
            raise ValueError(f"deployment {spec.name!r}: device {req.name!r} is Synthetic and cannot be claimed")
        cpus = None
        if dev.driver == CPU_CLAIM_DRIVER:
            per_device = claimed_cpus(dev)
            if per_device is None:
                raise ValueError(f"deployment {spec.name!r}: device {req.name!r} has no whole {CPU_CLAIM_CAPACITY}")
            cpus = per_device * req.count
        claims.append(DeviceClaim(req.name, dev, req.count, cpus))
    return claims


def claimed_cpu_total(claims: list[DeviceClaim]) -> int | None:
    cpus = [c.cpus for c in claims if c.cpus is not None]
    return sum(cpus) if cpus else None


def engine_tolerations(cluster: ClusterFacts) -> list[Toleration]:
    """The per-driver toleration list, then one exact toleration per cluster taint."""
    out = [Toleration(key=k, operator="Exists", effect="NoSchedule") for k in DRIVER_TAINT_KEYS]
    out += [Toleration(key=t.key, operator="Equal", value=t.value, effect=t.effect) for t in cluster.taints]
    return out


def pod_placement(spec: ModelDeploymentSpec, cluster: ClusterFacts) -> PodPlacement:
    """Where the engine's pods may run: the pool's nodes, whatever they are tainted with."""
    return PodPlacement(
        name=spec.name,
        pool=spec.pool,
        node_selector={POOL_LABEL: spec.pool},
        tolerations=tuple(engine_tolerations(cluster)),
    )


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


def container_resources(claims: list[DeviceClaim]) -> k8s.core.v1.ResourceRequirementsArgs:
    """The engine container's resources: the claim, and for dra.cpu the claimed CPUs.

    dra-driver-cpu's contract before KEP-5517 (docs/user/workload-requirements.md): a container
    claiming dra.cpu requests and limits exactly the CPUs it claims, otherwise the scheduler does
    not count them and the pod is BestEffort, first to be evicted.
    """
    cpus = claimed_cpu_total(claims)
    quantities = {"cpu": str(cpus)} if cpus is not None else None
    return k8s.core.v1.ResourceRequirementsArgs(
        claims=[k8s.core.v1.ResourceClaimArgs(name=CLAIM_NAME)],
        requests=quantities,
        limits=quantities,
    )


class ModelDeployment(pulumi.ComponentResource):
    """The claim template, Deployment and Service of one model deployment on one pool."""

    service_name: pulumi.Output[str]

    def __init__(self, name: str, args: ModelDeploymentArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        spec, cluster, pool = args.spec, args.cluster, args.pool
        # Validate before creating anything: the facts must be the deployment's own.
        if spec.cluster != cluster.name or spec.pool != pool.name:
            raise ValueError(
                f"deployment {spec.name!r} targets {spec.cluster}/{spec.pool}, not {cluster.name}/{pool.name}"
            )
        claims = device_claims(spec, pool)
        placement = pod_placement(spec, cluster)
        super().__init__(
            TYPE_TOKEN,
            name,
            {
                "name": spec.name,
                "namespace": spec.namespace,
                "cluster": cluster.name,
                "pool": pool.name,
                "poolRole": pool.role,
                "image": spec.image,
                "claimedCpus": claimed_cpu_total(claims),
            },
            opts,
        )
        labels = {DEPLOYMENT_LABEL: spec.name}
        meta = k8s.meta.v1.ObjectMetaArgs(name=spec.name, namespace=spec.namespace, labels=labels)

        template = k8s.resource.v1.ResourceClaimTemplate(
            f"{name}-claims",
            metadata=meta,
            spec=k8s.resource.v1.ResourceClaimTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                spec=k8s.resource.v1.ResourceClaimSpecArgs(
                    devices=k8s.resource.v1.DeviceClaimArgs(requests=claim_requests(claims))
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

        container = k8s.core.v1.ContainerArgs(
            name=CONTAINER_NAME,
            image=spec.image,
            args=list(spec.args) or None,
            env=[k8s.core.v1.EnvVarArgs(name=k, value=v) for k, v in spec.env.items()] or None,
            ports=[k8s.core.v1.ContainerPortArgs(name=ENGINE_PORT_NAME, container_port=ENGINE_PORT)],
            readiness_probe=k8s.core.v1.ProbeArgs(
                http_get=k8s.core.v1.HTTPGetActionArgs(path=HEALTH_PATH, port=ENGINE_PORT_NAME),
                period_seconds=10,
                failure_threshold=3,
            ),
            resources=container_resources(claims),
            volume_mounts=[k8s.core.v1.VolumeMountArgs(name="shm", mount_path="/dev/shm")],
        )
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=meta,
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=spec.replicas,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                # A new pod needs devices of its own; with no spare device on the pool a surge pod
                # would wait forever, so replace one pod at a time instead.
                strategy=k8s.apps.v1.DeploymentStrategyArgs(
                    type="RollingUpdate",
                    rolling_update=k8s.apps.v1.RollingUpdateDeploymentArgs(max_surge=0, max_unavailable=1),
                ),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        node_selector=dict(placement.node_selector),
                        tolerations=[_toleration_args(t) for t in placement.tolerations],
                        resource_claims=[
                            k8s.core.v1.PodResourceClaimArgs(
                                name=CLAIM_NAME, resource_claim_template_name=template.metadata.name
                            )
                        ],
                        containers=[container],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name="shm",
                                # Engines exchange tensors through shared memory; the container
                                # runtime's 64Mi default is too small. It is RAM, so it is capped.
                                empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(
                                    medium="Memory", size_limit=spec.shm_size
                                ),
                            )
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[template]),
        )
        self.service = k8s.core.v1.Service(
            f"{name}-service",
            metadata=meta,
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=labels,
                ports=[
                    k8s.core.v1.ServicePortArgs(
                        name=ENGINE_PORT_NAME, port=ENGINE_PORT, target_port=ENGINE_PORT_NAME, protocol="TCP"
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.service_name = self.service.metadata.name
        self.register_outputs({"serviceName": self.service_name})


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
