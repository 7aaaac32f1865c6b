"""The shared weight caches of a cluster: one ReadWriteMany claim per namespace and model, filled once.

A deployment with `cache.volume: Shared` reads its model's weights from a claim that every
deployment of the same model (`--model`) in the same namespace of the same cluster shares; one Job
downloads them into it (`components.features.cache`). This module says which caches a cluster has,
their claim's name, size and class, and whose token the download uses: the facts the cache's
objects, the plan and the cost read. It is not the rules (`infra.checks.cache` refuses a cloud
without ReadWriteMany storage, a missing class, a size below the class's floor) nor the objects.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from decimal import Decimal

from clouds import profile
from infra.config.model import CacheVolume, Fleet, InferenceCluster, ModelDeploymentSpec, SecureValue
from infra.formats import flag_value, parse_quantity

# The env values the download Job takes from a deployment: Hugging Face's token, under the names
# huggingface_hub reads (https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables,
# `HF_TOKEN`; `HUGGING_FACE_HUB_TOKEN` is its older name, still read by vLLM's images).
TOKEN_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
# The Secret a deployment's `secure:` env values are in, `<deployment>-env` (`components.model_deployment`).
ENV_SECRET_SUFFIX = "-env"
# A claim's name: `weights-`, the model id made a DNS label, a digest of the id. 57 characters at
# most, so the Job of the same name stays under the 63 of its pods' `job-name` label.
_CLAIM_PREFIX = "weights-"
_SLUG_MAX = 40


@dataclass(frozen=True)
class SharedCache:
    """One shared weight cache: its claim in `namespace`, the model it holds and who reads it."""

    namespace: str
    model: str
    claim: str
    # The largest `cache.size` of the deployments sharing it: what the claim requests.
    size: str
    # None only on a cluster whose owner names no class (refused by `infra.checks.cache`).
    storage_class: str | None
    deployments: tuple[str, ...]
    # The download's token: (env name, plain value, or None for the deployment's Secret `secret`).
    token: tuple[tuple[str, str | None], ...] = ()
    secret: str | None = None

    @property
    def size_gib(self) -> Decimal:
        amount = parse_quantity(self.size)
        return Decimal(amount) / 2**30 if amount is not None else Decimal(0)


def weights_model(dep: ModelDeploymentSpec) -> str | None:
    """The Hugging Face model a deployment's engine loads, whose weights its cache holds: its `--model` arg (vLLM's flag; the name it serves under may differ: `infra.serving.vllm_args.served_model`)."""
    found = flag_value(dep.args, "--model")
    return found[1] if found and found[1] else None


def claim_name(model: str) -> str:
    """The claim (and Job) of a model's shared cache: stable for the model id, a DNS label."""
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")[:_SLUG_MAX].strip("-")
    digest = hashlib.sha256(model.encode()).hexdigest()[:8]
    return f"{_CLAIM_PREFIX}{slug}-{digest}" if slug else f"{_CLAIM_PREFIX}{digest}"


def shares_cache(dep: ModelDeploymentSpec) -> bool:
    return dep.cache is not None and dep.cache.volume is CacheVolume.SHARED


def shared_caches(fleet: Fleet, cluster: InferenceCluster) -> tuple[SharedCache, ...]:
    """The shared caches of a cluster, one per (namespace, model), in the order their first deployment is declared.

    A deployment without `--model` has none (the rule says so). The class is the first deployment's
    `storageClassName`, else the cloud's; the token is the first deployment's that sets one.
    """
    groups: dict[tuple[str, str], list[ModelDeploymentSpec]] = {}
    for dep in fleet.deployments:
        model = weights_model(dep)
        if dep.cluster == cluster.name and shares_cache(dep) and model is not None:
            groups.setdefault((dep.namespace, model), []).append(dep)
    storage = profile(cluster.source).shared_cache
    caches = []
    for (namespace, model), deps in groups.items():
        sizes = [d.cache.size for d in deps if d.cache is not None and d.cache.size is not None]
        size = max(sizes, key=lambda s: parse_quantity(s) or 0)
        named = next((d.cache.storage_class_name for d in deps if d.cache and d.cache.storage_class_name), None)
        holder = next((d for d in deps if any(k in d.env for k in TOKEN_ENV)), None)
        token: tuple[tuple[str, str | None], ...] = ()
        if holder is not None:
            token = tuple(
                (k, None if isinstance(v, SecureValue) else v) for k, v in holder.env.items() if k in TOKEN_ENV
            )
        caches.append(
            SharedCache(
                namespace=namespace,
                model=model,
                claim=claim_name(model),
                size=size,
                storage_class=named or (storage.storage_class if storage is not None else None),
                deployments=tuple(d.name for d in deps),
                token=token,
                secret=f"{holder.name}{ENV_SECRET_SUFFIX}" if holder is not None else None,
            )
        )
    return tuple(caches)
