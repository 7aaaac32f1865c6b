"""Multi-node replicas: a deployment with `nodes > 1` as a LeaderWorkerSet of one group per replica.

It turns a deployment's facts (the engine container and pod template `components.model_deployment`
builds for one node) into the workload in place of a Deployment: the `leaderworkerset.x-k8s.io/v1`
object the `lws` chart (v0.8.0, in
every serving stack) runs: `replicas` groups of `nodes` pods, a leader and `nodes - 1` workers,
each pod on its own node with a claim of its own from the deployment's ResourceClaimTemplate. It
is not a rule: what a group needs of its pool (parallelism over every node, whole nodes, one
zone) is refused earlier (`infra.checks.parallelism.check_multinode`, `infra.checks.schedulable`).

Names and labels are LWS's at v0.8.0 (kubernetes-sigs/lws `api/leaderworkerset/v1/
leaderworkerset_types.go`); the engine's launch is vLLM's multiprocessing multi-node launcher as
v0.23.0, the image's version, documents it (vllm-project/vllm `docs/serving/parallelism_scaling.md`,
"Running vLLM with MultiProcessing": `--nnodes N --node-rank R --master-addr HEAD` on every node,
`--headless` on all but the head).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import pulumi
import pulumi_kubernetes as k8s

from clouds import profile
from components.features import DeploymentContext
from infra.config.model import ModelDeploymentSpec

API_VERSION = "leaderworkerset.x-k8s.io/v1"
KIND = "LeaderWorkerSet"
T = TypeVar("T")
# The label LWS puts on every pod with its index in the group; the leader's is always "0"
# (`WorkerIndexLabelKey`; the controller selects leaders with it, pkg/controllers/
# leaderworkerset_controller.go at v0.8.0). The Service selects leaders only: only the leader
# runs the API server, the workers are headless.
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LEADER_INDEX = "0"
# The label LWS gives every pod of one group, the same hash on the leader and its workers
# (`GroupUniqueHashLabelKey`; set on the leader by its pod webhook, pkg/webhooks/pod_webhook.go, and
# copied onto the workers' StatefulSet, pkg/controllers/pod_controller.go, at v0.8.0).
GROUP_KEY_LABEL = "leaderworkerset.sigs.k8s.io/group-key"
# The environment LWS's pod webhook adds to every container (`AddLWSVariables`, pkg/utils/pod/
# pod_utils.go at v0.8.0; the names are `LwsLeaderAddress`, `LwsGroupSize` and `LwsWorkerIndex` in
# leaderworkerset_types.go): the leader pod's DNS name (`<lws>-<group>.<subdomain>.<namespace>`, which
# the group's headless Service resolves before the pod is ready: `PublishNotReadyAddresses`,
# pkg/utils/controller/controller_utils.go), the group's size and the pod's index in it.
LEADER_ADDRESS_ENV = "LWS_LEADER_ADDRESS"
GROUP_SIZE_ENV = "LWS_GROUP_SIZE"
WORKER_INDEX_ENV = "LWS_WORKER_INDEX"
# A group fails and restarts as one: one lost rank stops the engine's collectives, so LWS
# recreates every pod of the group when one restarts (`RecreateGroupOnPodRestart`, also LWS's default).
RESTART_POLICY = "RecreateGroupOnPodRestart"
# The groups' DNS names: a headless Service per group, named after its leader pod (`UniquePerReplica`,
# leaderworkerset_types.go at v0.8.0). LWS's default, `Shared`, names one headless Service after the
# LeaderWorkerSet, which is the name of the deployment's own Service (`components.model_deployment`):
# the controller creates its Service only if none of that name exists (`CreateHeadlessServiceIfNotExists`,
# pkg/utils/controller/controller_utils.go), so the leaders' names would never resolve
# (LWS_LEADER_ADDRESS), or, created first, it would take the deployment's Service name.
SUBDOMAIN_POLICY = "UniquePerReplica"
# The provider waits for a Deployment's pods but not for a custom resource, unless told which
# condition to wait for (pulumi-kubernetes provider/pkg/metadata/overrides.go, `ReadyCondition`;
# `pulumi.com/waitFor`). LWS sets `Available` once every group's pods are ready
# (`LeaderWorkerSetAvailable`, leaderworkerset_types.go), so `up` waits for the groups as it waits for
# a Deployment's replicas.
WAIT_FOR = {"pulumi.com/waitFor": "condition=Available"}
# The node label whose value is a node's zone (kubernetes.io/docs/reference/labels-annotations-taints,
# topology.kubernetes.io/zone).
ZONE_LABEL = "topology.kubernetes.io/zone"

# vLLM's multi-node launcher flags at v0.23.0: `--nnodes`, `--node-rank` and `--master-addr` are
# ParallelConfig's (`vllm/engine/arg_utils.py`, the parallel group; `vllm/config/parallel.py`: for
# the `mp` backend, which a CUDA engine takes whenever nnodes > 1), `--headless` the server's
# (`vllm/entrypoints/openai/cli_args.py`), which `vllm serve`, the image's ENTRYPOINT
# (`docker/Dockerfile`), runs as a headless multiproc executor joining the head at
# `--master-addr` (`vllm/entrypoints/cli/serve.py`, `run_headless`). `--master-port` is left at its
# default, 29501, on every pod alike. Kubernetes expands `$(VAR)` in args from the container's env,
# which LWS's webhook has filled in by the time the pod is created.
NNODES_FLAG = "--nnodes"
NODE_RANK_FLAG = "--node-rank"
MASTER_ADDR_FLAG = "--master-addr"
HEADLESS_FLAG = "--headless"


def launch_args(args: Sequence[str], leader: bool) -> list[str]:
    """The engine's args on a pod of a group: its own, then where it sits in the group.

    Every pod names the group's size, its rank and the leader's address; a worker runs
    `--headless` (no API server: the leader serves every request of the group).
    """
    group = [
        NNODES_FLAG,
        f"$({GROUP_SIZE_ENV})",
        NODE_RANK_FLAG,
        f"$({WORKER_INDEX_ENV})",
        MASTER_ADDR_FLAG,
        f"$({LEADER_ADDRESS_ENV})",
    ]
    return [*args, *group] if leader else [*args, *group, HEADLESS_FLAG]


def leader_selector(labels: dict[str, str]) -> dict[str, str]:
    """The labels that select the leader of every group of a deployment, and no worker."""
    return {**labels, WORKER_INDEX_LABEL: LEADER_INDEX}


def service_selector(spec: ModelDeploymentSpec, labels: dict[str, str]) -> dict[str, str]:
    """The pods the deployment's Service sends requests to: every pod, or of a group its leader
    alone, which serves the group's requests."""
    return leader_selector(labels) if spec.nodes > 1 else labels


def group_zone_affinity() -> k8s.core.v1.AffinityArgs:
    """Every pod of a group in the zone of the others: pod affinity on the zone, within the group.

    `matchLabelKeys` takes the pod's own group-key value into the selector when the pod is
    created (KEP-3633, GA in Kubernetes 1.33), so each group is kept together without one group
    excluding another, which LWS's `exclusive-topology` annotation would do (its anti-affinity
    allows one group per zone).
    """
    return k8s.core.v1.AffinityArgs(
        pod_affinity=k8s.core.v1.PodAffinityArgs(
            required_during_scheduling_ignored_during_execution=[
                k8s.core.v1.PodAffinityTermArgs(
                    topology_key=ZONE_LABEL,
                    label_selector=k8s.meta.v1.LabelSelectorArgs(
                        match_expressions=[
                            k8s.meta.v1.LabelSelectorRequirementArgs(key=GROUP_KEY_LABEL, operator="Exists")
                        ]
                    ),
                    match_label_keys=[GROUP_KEY_LABEL],
                )
            ]
        )
    )


def worker_container(leader: k8s.core.v1.ContainerArgs, args: Sequence[str]) -> k8s.core.v1.ContainerArgs:
    """A worker's engine: the leader's container, headless, so without the API server's probes.

    A headless rank answers no HTTP; its health is the group's, which the leader's probes judge
    (the leader's /health fails when a rank is lost) and `RecreateGroupOnPodRestart` acts on.
    """
    return k8s.core.v1.ContainerArgs(
        name=leader.name,
        image=leader.image,
        args=launch_args(args, leader=False),
        env=leader.env,
        resources=leader.resources,
        volume_mounts=leader.volume_mounts,
    )


def group_pod(
    template: k8s.core.v1.PodTemplateSpecArgs, container: k8s.core.v1.ContainerArgs, zone_labels: bool
) -> Any:
    """A pod template of a group: the one-node pod, with `container` and, where the cloud labels
    its nodes' zones, the zone affinity.

    A required pod affinity term admits no node without its topology label (the scheduler's
    InterPodAffinity filter, pkg/scheduler/framework/plugins/interpodaffinity/filtering.go,
    `satisfyPodAffinity`), so on nodes nothing labels with a zone it would keep every group
    pending; there the pool is one zone by the rules (`infra.multinode.pool_zones`).
    """
    spec = template.spec
    assert isinstance(spec, k8s.core.v1.PodSpecArgs), "the one-node pod is built here, never an Output"
    placement = {"affinity": group_zone_affinity()} if zone_labels else {}
    return k8s.core.v1.PodTemplateSpecArgs(
        metadata=template.metadata,
        spec=replaced(spec, containers=[container], **placement),
    )


def replaced(value: T, /, **changes: Any) -> T:
    """A copy of an SDK args object (a pod spec, a container) with `changes`, keeping every field it set.

    The SDK's `@pulumi.input_type` classes keep the fields set on them, by their snake_case names, in
    the instance's `__dict__`, which is what their constructor takes.
    """
    return type(value)(**{**vars(value), **changes})


def leader_worker_set(
    name: str,
    metadata: k8s.meta.v1.ObjectMetaArgs,
    replicas: int | None,
    nodes: int,
    template: k8s.core.v1.PodTemplateSpecArgs,
    leader: k8s.core.v1.ContainerArgs,
    args: Sequence[str],
    zone_labels: bool,
    opts: pulumi.ResourceOptions,
) -> k8s.apiextensions.CustomResource:
    """The LeaderWorkerSet: `replicas` groups of `nodes` pods, a leader template and a worker template.

    With `replicas` None the count is left to an autoscaler, which drives the LeaderWorkerSet's
    scale subresource (`spec.replicas`, leaderworkerset_types.go at v0.8.0)."""
    leader_engine = replaced(leader, args=launch_args(args, leader=True))
    annotations = metadata.annotations or {}
    assert isinstance(annotations, dict), "the deployment's metadata is built here, never an Output"
    return k8s.apiextensions.CustomResource(
        name,
        api_version=API_VERSION,
        kind=KIND,
        metadata=replaced(metadata, annotations={**annotations, **WAIT_FOR}),
        spec={
            **({"replicas": replicas} if replicas is not None else {}),
            "networkConfig": {"subdomainPolicy": SUBDOMAIN_POLICY},
            # A new group needs `nodes` whole nodes of its own; with none spare on the pool a
            # surge group would wait forever, so replace one group at a time instead (written out,
            # though they are LWS's defaults: `RollingUpdateConfiguration` in leaderworkerset_types.go).
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 1},
            },
            "leaderWorkerTemplate": {
                "size": nodes,
                "restartPolicy": RESTART_POLICY,
                "leaderTemplate": group_pod(template, leader_engine, zone_labels),
                "workerTemplate": group_pod(template, worker_container(leader, args), zone_labels),
            },
        },
        opts=opts,
    )


def apply(
    deployment: DeploymentContext,
    replicas: int | None,
    pod: k8s.core.v1.PodTemplateSpecArgs,
    container: k8s.core.v1.ContainerArgs,
    args: Sequence[str],
    opts: pulumi.ResourceOptions,
) -> k8s.apiextensions.CustomResource:
    """The workload of a replica of several nodes: one LeaderWorkerSet group of `nodes` pods per
    replica, each pod with the one-node pod's claim, volumes and placement."""
    return leader_worker_set(
        f"{deployment.name}-group",
        deployment.meta,
        replicas,
        deployment.spec.nodes,
        pod,
        container,
        args,
        profile(deployment.cluster.source).zones.labelled,
        opts,
    )
