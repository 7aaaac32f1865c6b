"""The model cache: where the engine keeps the weights it downloads, so a restart does not fetch them again.

A deployment with `cache` gets one more volume on its pod, mounted where vLLM downloads weights:
a PersistentVolumeClaim of the cloud's StorageClass (or the one the deployment names), or a
directory on the node (`NodeLocal`). It decorates the pod the workload builds
(`components.model_deployment`); it is not the rules (`infra.checks.services.check_serving` allows a
claim only for a single replica and on a cloud with a StorageClass, or one named).
"""

from __future__ import annotations

import pulumi_kubernetes as k8s

from clouds import profile
from components.features import DeploymentContext
from infra.config.model import CacheVolume, ModelDeploymentSpec
from infra.facts import ClusterFacts

# vLLM downloads weights into the Hugging Face cache, ~/.cache/huggingface of the image's root user
# (https://docs.vllm.ai/en/latest/deployment/docker.html mounts the host cache at this path).
ENGINE_CACHE_PATH = "/root/.cache/huggingface"
CACHE_VOLUME = "model-cache"
# NodeLocal caches live under this host directory, one subdirectory per namespace and deployment.
NODE_CACHE_ROOT = "/var/lib/modelplane/model-cache"


def cache_storage_class(spec: ModelDeploymentSpec, cluster: ClusterFacts) -> str | None:
    """The StorageClass of a PersistentVolumeClaim cache; None leaves the cluster's default."""
    assert spec.cache is not None
    chosen = spec.cache.storage_class_name or profile(cluster.source).cache_storage_class
    assert chosen is not None, "a cloud without a StorageClass needs storageClassName (validated)"
    return chosen or None


def node_cache_path(spec: ModelDeploymentSpec) -> str:
    return f"{NODE_CACHE_ROOT}/{spec.namespace}/{spec.name}"


def apply(
    deployment: DeploymentContext,
    volumes: list[k8s.core.v1.VolumeArgs],
    mounts: list[k8s.core.v1.VolumeMountArgs],
) -> tuple[list[k8s.core.v1.VolumeArgs], list[k8s.core.v1.VolumeMountArgs]]:
    """The pod's volumes and the engine's mounts, with the model cache's when the deployment has one."""
    if deployment.spec.cache is None:
        return volumes, mounts
    volume = cache_volume(deployment)
    return [*volumes, volume], [*mounts, k8s.core.v1.VolumeMountArgs(name=CACHE_VOLUME, mount_path=ENGINE_CACHE_PATH)]


def cache_volume(deployment: DeploymentContext) -> k8s.core.v1.VolumeArgs:
    """The model cache: a claim of the cloud's StorageClass, or a directory on the node."""
    spec = deployment.spec
    cache = spec.cache
    assert cache is not None
    if cache.volume is CacheVolume.NODE_LOCAL:
        return k8s.core.v1.VolumeArgs(
            name=CACHE_VOLUME,
            host_path=k8s.core.v1.HostPathVolumeSourceArgs(path=node_cache_path(spec), type="DirectoryOrCreate"),
        )
    assert cache.size is not None, "a claim has a size (validated)"
    claim_name = f"{spec.name}-cache"
    k8s.core.v1.PersistentVolumeClaim(
        f"{deployment.name}-cache",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=claim_name, namespace=spec.namespace, labels=deployment.meta.labels),
        spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
            # One node mounts it at a time: a single replica (infra.checks.services.check_serving).
            access_modes=["ReadWriteOnce"],
            storage_class_name=cache_storage_class(spec, deployment.cluster),
            resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": cache.size}),
        ),
        opts=deployment.child(),
    )
    # The pod names the claim, not its output: a WaitForFirstConsumer claim binds only once a
    # pod uses it, so a Deployment that waited for the claim would wait forever
    # (pulumi/pulumi-kubernetes#895).
    return k8s.core.v1.VolumeArgs(
        name=CACHE_VOLUME,
        persistent_volume_claim=k8s.core.v1.PersistentVolumeClaimVolumeSourceArgs(claim_name=claim_name),
    )
