"""The model cache: where the engine keeps the weights it downloads, so a restart does not fetch them again.

A deployment with `cache` gets one more volume on its pod, mounted where vLLM downloads weights:
a PersistentVolumeClaim of the cloud's StorageClass (or the one the deployment names), or a
directory on the node (`NodeLocal`). It decorates the pod the workload builds
(`components.model_deployment`); it is not the rules (`infra.checks.services.check_serving` allows a
claim only for a single replica and on a cloud with a StorageClass, or one named).

A `Shared` cache is a ReadWriteMany claim of the cluster's, one per namespace and model
(`infra.shared_cache`), which a `SharedCache` component creates with the Job that downloads the
weights into it once; every pod of every deployment of that model mounts it read-only, reads the
weights offline, and waits in an init container until the Job has written its marker. The way is
modelplane's `ModelCache` (functions/compose-model-cache/function/fn.py at v0.3.1).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from clouds import profile
from components.features import DeploymentContext
from infra import tokens
from infra.config.model import CacheVolume, ModelDeploymentSpec
from infra.facts import ClusterFacts
from infra.placement import PodPlacement
from infra.shared_cache import SharedCache, claim_name, weights_model

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


# A shared cache is mounted where modelplane mounts its ModelCache (`CACHE_MOUNT_PATH`,
# functions/compose-model-replica/function/backends/base.py at v0.3.1), and the Hugging Face hub
# cache lives at its root: the Job downloads into it and the engine reads from it
# (`HF_HUB_CACHE`, https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables).
SHARED_CACHE_PATH = "/mnt/models"
# Written last by the Job, only after a whole download (modelplane's `_HYDRATED_MARKER`): a Job run
# again skips, an interrupted one leaves files but no marker and resumes, and the pods wait for it.
COMPLETE_MARKER = f"{SHARED_CACHE_PATH}/.modelplane-hydrated"
# The download runs modelplane's hydration image with huggingface_hub installed at start
# (`HYDRATION_IMAGE` in fn.py at v0.3.1); the client is pinned to its release on PyPI, 2.4.0
# (read 2026-12-05), whose `hf download` resumes a partial download in the cache.
DOWNLOAD_IMAGE = "python:3.11-slim"
HF_HUB_CLIENT = "huggingface_hub==2.4.0"
# modelplane's hydration Job retries three times, restarting its container in place (fn.py at v0.3.1).
DOWNLOAD_BACKOFF_LIMIT = 3
# A shared cache's claim and Job belong to no one deployment: the labels say whose they are,
# never the deployment label a workload's selector reads.
CACHE_LABELS = {"app.kubernetes.io/managed-by": "modelplane", "app.kubernetes.io/component": "weight-cache"}
# The pods poll for the marker this often while the Job downloads.
WAIT_SECONDS = 10


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
    return [*volumes, volume], [*mounts, cache_mount(deployment.spec)]


def cache_mount(spec: ModelDeploymentSpec) -> k8s.core.v1.VolumeMountArgs:
    """The engine's mount of its cache: read-only at the shared path for a `Shared` cache."""
    assert spec.cache is not None
    if spec.cache.volume is CacheVolume.SHARED:
        return k8s.core.v1.VolumeMountArgs(name=CACHE_VOLUME, mount_path=SHARED_CACHE_PATH, read_only=True)
    return k8s.core.v1.VolumeMountArgs(name=CACHE_VOLUME, mount_path=ENGINE_CACHE_PATH)


def engine_env(spec: ModelDeploymentSpec) -> list[k8s.core.v1.EnvVarArgs]:
    """What the engine needs in its env to read a `Shared` cache: the hub cache's path, and offline
    mode, so huggingface_hub resolves the model from it and never writes to the read-only volume
    (`HF_HUB_OFFLINE`, the environment variables page above)."""
    if spec.cache is None or spec.cache.volume is not CacheVolume.SHARED:
        return []
    return [
        k8s.core.v1.EnvVarArgs(name="HF_HUB_CACHE", value=SHARED_CACHE_PATH),
        k8s.core.v1.EnvVarArgs(name="HF_HUB_OFFLINE", value="1"),
    ]


def init_containers(spec: ModelDeploymentSpec) -> list[k8s.core.v1.ContainerArgs]:
    """A `Shared` cache's wait: a container of the engine's image (already pulled for the engine)
    that ends once the download Job has written its marker, before the engine starts."""
    if spec.cache is None or spec.cache.volume is not CacheVolume.SHARED:
        return []
    wait = f"until [ -f {COMPLETE_MARKER} ]; do echo waiting for the weights; sleep {WAIT_SECONDS}; done"
    return [
        k8s.core.v1.ContainerArgs(
            name="wait-for-weights",
            image=spec.image,
            command=["/bin/sh", "-c", wait],
            volume_mounts=[cache_mount(spec)],
        )
    ]


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
    if cache.volume is CacheVolume.SHARED:
        model = weights_model(spec)
        assert model is not None, "a Shared cache names its model (infra.checks.cache)"
        # The cluster's claim (`SharedCache`), by name, like the claim below.
        return k8s.core.v1.VolumeArgs(
            name=CACHE_VOLUME,
            persistent_volume_claim=k8s.core.v1.PersistentVolumeClaimVolumeSourceArgs(
                claim_name=claim_name(model), read_only=True
            ),
        )
    assert cache.size is not None, "a claim has a size (validated)"
    claim = f"{spec.name}-cache"
    k8s.core.v1.PersistentVolumeClaim(
        f"{deployment.name}-cache",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=claim, namespace=spec.namespace, labels=deployment.meta.labels),
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
        persistent_volume_claim=k8s.core.v1.PersistentVolumeClaimVolumeSourceArgs(claim_name=claim),
    )


# --------------------------------------------------------------------------------------------
# The shared cache of a cluster's namespace and model: its claim and the Job that fills it


@dataclass(frozen=True)
class SharedCacheArgs:
    cache: SharedCache
    # Where the Job's pod runs: the first sharing deployment's pods' placement (its pool's nodes,
    # which reach the model's hub as its engine does), without its device claims.
    placement: PodPlacement
    labels: dict[str, str]


def download_command(model: str) -> str:
    """The Job's shell command: skip when complete, else download (resuming) and mark complete.

    `set -e` stops the chain at a failed download, so the marker is never written over partial
    weights (modelplane's `_hf_hydration`, fn.py at v0.3.1).
    """
    return (
        "set -e; "
        f"if [ -f {COMPLETE_MARKER} ]; then echo 'weights already downloaded'; exit 0; fi; "
        f"pip install --quiet {shlex.quote(HF_HUB_CLIENT)}; "
        f"hf download {shlex.quote(model)}; "
        f"touch {COMPLETE_MARKER}"
    )


class SharedWeightCache(pulumi.ComponentResource):
    """A shared weight cache: a ReadWriteMany claim of the model's weights and the Job that downloads them once."""

    def __init__(self, name: str, args: SharedCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        cache = args.cache
        # Who reads it: not an annotated output, and not `deployments`, which the registered inputs
        # set as an Output attribute.
        self.readers = cache.deployments
        super().__init__(
            tokens.SHARED_CACHE,
            name,
            {
                "namespace": cache.namespace,
                "model": cache.model,
                "claim": cache.claim,
                "size": cache.size,
                "storageClassName": cache.storage_class,
                "deployments": list(cache.deployments),
            },
            opts,
        )
        meta = k8s.meta.v1.ObjectMetaArgs(name=cache.claim, namespace=cache.namespace, labels=args.labels)
        child = pulumi.ResourceOptions(parent=self)
        self.claim = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-claim",
            metadata=meta,
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                # Every pod of every replica mounts it, on as many nodes.
                access_modes=["ReadWriteMany"],
                storage_class_name=cache.storage_class,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": cache.size}),
            ),
            opts=child,
        )
        self.job = self._job(name, cache, args, meta)
        self.register_outputs({"claim": cache.claim})

    def _job(
        self, name: str, cache: SharedCache, args: SharedCacheArgs, meta: k8s.meta.v1.ObjectMetaArgs
    ) -> k8s.batch.v1.Job:
        """The download Job. It names the claim rather than waiting for it (a WaitForFirstConsumer
        claim binds only once this pod uses it, pulumi/pulumi-kubernetes#895), and `pulumi up` does not
        wait for it to finish (`pulumi.com/skipAwait`, pulumi-kubernetes's await annotations): the
        engine's pods wait for its marker instead, however long the download takes."""
        env = [k8s.core.v1.EnvVarArgs(name="HF_HUB_CACHE", value=SHARED_CACHE_PATH)]
        for key, value in cache.token:
            # A `secure:` token is the deployment's Secret's, which the kubelet waits for
            # (https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-environment-variables).
            ref = k8s.core.v1.SecretKeySelectorArgs(name=cache.secret, key=key)
            env.append(
                k8s.core.v1.EnvVarArgs(name=key, value=value)
                if value is not None
                else k8s.core.v1.EnvVarArgs(name=key, value_from=k8s.core.v1.EnvVarSourceArgs(secret_key_ref=ref))
            )
        placement = args.placement
        return k8s.batch.v1.Job(
            f"{name}-download",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=cache.claim,
                namespace=cache.namespace,
                labels=args.labels,
                annotations={"pulumi.com/skipAwait": "true"},
            ),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=DOWNLOAD_BACKOFF_LIMIT,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=args.labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        restart_policy="OnFailure",
                        node_selector=dict(placement.node_selector),
                        tolerations=[
                            k8s.core.v1.TolerationArgs(
                                key=t.key or None,
                                operator=t.operator or None,
                                value=t.value or None,
                                effect=t.effect or None,
                            )
                            for t in placement.tolerations
                        ],
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="download",
                                image=DOWNLOAD_IMAGE,
                                command=["/bin/sh", "-c", download_command(cache.model)],
                                env=env,
                                volume_mounts=[
                                    k8s.core.v1.VolumeMountArgs(name=CACHE_VOLUME, mount_path=SHARED_CACHE_PATH)
                                ],
                            )
                        ],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name=CACHE_VOLUME,
                                persistent_volume_claim=k8s.core.v1.PersistentVolumeClaimVolumeSourceArgs(
                                    claim_name=cache.claim
                                ),
                            )
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
