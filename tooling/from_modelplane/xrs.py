"""modelplane's objects as the converter reads them, and the notes and keys it writes (`tooling.from_modelplane`)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

API_VERSION = "modelplane.ai/v1alpha1"
KINDS = ("InferenceClass", "InferenceCluster", "ModelCache", "ModelDeployment", "ModelEndpoint", "ModelService")
# The labels modelplane stamps on the ModelEndpoint of each replica (fn.py `_LABEL_DEPLOYMENT`, `_LABEL_CLUSTER`).
DEPLOYMENT_LABEL = "modelplane.ai/deployment"
CLUSTER_LABEL = "modelplane.ai/cluster"


class ConvertError(Exception):
    """Input the converter cannot read: each problem names the file, the path inside it and the fix."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Options:
    """What modelplane keeps outside its XRs (in its ProviderConfigs) and our clusters need written."""

    # `<block>.<key>` of a cluster -> its value, e.g. `gke.project` (the command's --gke-project).
    cluster_values: Mapping[str, str] = field(default_factory=dict)
    # Write `path: /<namespace>/<service>` on each service, so callers keep modelplane's URLs.
    keep_paths: bool = False


@dataclass(frozen=True)
class Note:
    """One comment line of the written stack: `kind` is `not mapped`, `fill in` or `chosen`."""

    kind: str
    where: str
    path: str
    why: str

    def line(self) -> str:
        return f"# {self.kind}: {self.where}: {self.path}: {self.why}"


# --------------------------------------------------------------------------------------------
# Reading


class XR:
    """One modelplane object and which of its fields the conversion has used."""

    def __init__(self, file: str, index: int, doc: Mapping[str, Any]):
        self.file, self.index, self.doc = file, index, doc
        self.used: set[str] = {"apiVersion", "kind", "metadata.name", "metadata.namespace"}

    @property
    def kind(self) -> str:
        return str(self.doc["kind"])

    @property
    def name(self) -> str:
        return str(self.doc["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str((self.doc.get("metadata") or {}).get("namespace") or "default")

    @property
    def where(self) -> str:
        return f"{self.kind} {self.name} ({self.file})"

    def get(self, path: str, default: Any = None) -> Any:
        """The value at `path` (`spec.nodePools[0].name`), marked used, or `default`."""
        self.used.add(path)
        value = value_at(self.doc, path)
        return default if value is None else value

    def leaves(self) -> Iterator[str]:
        """Every path of the object that holds a scalar."""
        yield from _leaves(self.doc, "")

    def unused(self) -> list[str]:
        return [
            p
            for p in self.leaves()
            if not any(p == u or p.startswith(u + ".") or p.startswith(u + "[") for u in self.used)
        ]


def _leaves(value: Any, path: str) -> Iterator[str]:
    """The paths of the scalars under `value`; an empty mapping or list holds none (`nebius: {}`)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    elif value is not None:
        yield path


# What each kind's fields become when no key of ours holds them: the reason, written once.
# Paths are written with `[]` for any index; a path covers everything under it.
NOT_MAPPED: dict[str, dict[str, str]] = {
    "InferenceCluster": {
        "spec.cluster.gke.credentials": "our GKE provider takes its credentials from the stack config or the environment (docs/getting-started.md)",
        "spec.cluster.eks.credentials": "our AWS provider takes its credentials from the stack config or the environment (docs/getting-started.md)",
        "spec.cluster.aks.credentials": "our Azure provider takes its credentials from the stack config or the environment (docs/getting-started.md)",
        "spec.cluster.nebius.credentials": "our Nebius provider takes its credentials from the stack config or the environment (docs/getting-started.md)",
        "spec.cluster.vultr.credentials": "our Vultr provider takes its credentials from the stack config or the environment (docs/getting-started.md)",
        "spec.cluster.existing.identitySecretRef": "our Kubernetes provider authenticates with the kubeconfig alone; put the credentials in it (an exec plugin)",
        "spec.cluster.existing.cache": "a shared cache of a deployment takes its storage class from `cache.storageClassName`; no deployment on this cluster uses a ModelCache",
        "spec.nodePools[].fabric": "ours describes the fabric on the class: EFA as a `dra.net` device (stacks/Pulumi.eks-671b.yaml), InfiniBand as `provisioning.nebius.infinibandFabric`; add it there",
        "spec.nodePools[].capacityBlock": "(mapped)",
        "spec.gateway": "ours publishes each service on its cluster's Gateway; set `host` on the services instead",
        "spec.placement": "ours has no control plane placing XRs",
        "spec.stack": "ours installs one serving stack, the catalog's (docs/serving.md)",
        "metadata.annotations": "no key of ours holds annotations",
    },
    "InferenceClass": {
        "metadata.labels": "a class of ours has no labels",
        "metadata.annotations": "no key of ours holds annotations",
    },
    "ModelDeployment": {
        "spec.template.metadata": "ours labels the pods itself (`modelplane.ai/deployment`) and takes no pod labels",
        "spec.template.spec.tolerations": "used to place the replicas; ours then tolerates every taint of the deployment's cluster (`clusters[].taints`)",
        "spec.template.spec.serving": "ours runs one engine a deployment: no prefill/decode split",
        "spec.template.spec.engines[].name": "ours names the engine after the deployment",
        "spec.template.spec.engines[].phase": "ours runs one engine a deployment: no prefill/decode split",
        "spec.template.spec.engines[].members[].template.metadata": "ours sets the pod's labels and annotations itself",
        "spec.template.spec.engines[].members[].template.spec.imagePullSecrets": "no key of ours holds image pull secrets; attach them to the namespace's default ServiceAccount",
        # modelplane requires the one container to be named `engine` (CEL on `containers`); ours is too.
        "spec.template.spec.engines[].members[].template.spec.containers[].name": "(the engine container, as ours)",
        "spec.template.spec.engines[].members[].template.spec.containers[].env[].valueFrom": "ours takes a secret as a `secure:` value: pulumi config set --secret --path 'modelplane:deployments[<i>].env.<NAME>'",
        "metadata.labels": "a deployment of ours has no labels",
        "metadata.annotations": "no key of ours holds annotations",
    },
    "ModelCache": {
        "spec.huggingFace.authSecret": "ours reads a token from the deployment's env as a `secure:` value: pulumi config set --secret --path 'modelplane:deployments[<i>].env.HF_TOKEN'",
        "spec.clusterSelector": "(used to place the deployments that read the cache)",
        "spec": "no ModelDeployment among the files mounts it; ours keeps weights on a deployment (`deployments[].cache`)",
        "metadata.labels": "no key of ours holds a cache's labels",
        "metadata.annotations": "no key of ours holds annotations",
    },
    "ModelService": {
        "metadata.labels": "a service of ours has no labels",
        "metadata.annotations": "no key of ours holds annotations",
    },
    "ModelEndpoint": {
        "metadata.labels": "(used: the services' selectors match them)",
        "spec": "no ModelService among the files selects it; ours reaches an external endpoint as a service's backend",
        "metadata.annotations": "no key of ours holds annotations",
    },
}
NO_KEY = "no key of ours holds it"


def _pattern(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


def unmapped(xr: XR) -> list[tuple[str, str]]:
    """Each field of `xr` the conversion left unused, with why: a leaf, or the whole of a field
    `NOT_MAPPED` names (one line for `spec.template.spec.tolerations`, not one per key in it)."""
    out: dict[str, str] = {}
    for leaf in xr.unused():
        path, why = leaf, NO_KEY
        for prefix, reason in NOT_MAPPED.get(xr.kind, {}).items():
            depth = len(re.findall(r"[^.\[\]]+|\[\]", prefix))
            parts = re.findall(r"[^.\[\]]+|\[\d+\]", leaf)
            head = "".join(p if p.startswith("[") else f".{p}" for p in parts[:depth]).lstrip(".")
            if _pattern(head) == prefix:
                path, why = head, reason
                break
        if not why.startswith("("):  # "(mapped)", "(used ...)": read elsewhere, no line
            out.setdefault(path, why)
    return list(out.items())


def read_files(paths: Iterable[Path]) -> list[XR]:
    """Every modelplane object in the files (YAML, several documents each), checked for what the
    conversion needs; every problem at once."""
    xrs: list[XR] = []
    problems: list[str] = []
    for path in paths:
        file = str(path)
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError) as err:
            problems.append(
                f"{file}: cannot read it as YAML ({err}). Fix: pass the manifest files modelplane's docs write"
            )
            continue
        for i, doc in enumerate(d for d in docs if d is not None):
            at = f"{file}: document {i + 1}"
            if not isinstance(doc, dict):
                problems.append(f"{at}: not a Kubernetes object. Fix: pass modelplane manifests only")
                continue
            kind, api = doc.get("kind"), doc.get("apiVersion")
            if api != API_VERSION or kind not in KINDS:
                problems.append(
                    f"{at}: apiVersion/kind {api}/{kind} is not a modelplane kind the converter reads "
                    f"({API_VERSION}: {', '.join(KINDS)}). Fix: leave the file out, or convert that object by hand"
                )
                continue
            name = (doc.get("metadata") or {}).get("name")
            if not isinstance(name, str) or not name:
                problems.append(f"{at} ({kind}): metadata.name is missing. Fix: give the object its name")
                continue
            xr = XR(file, i, doc)
            problems += [f"{file}: {kind} {name}: {p}" for p in _missing(xr)]
            xrs.append(xr)
    if problems:
        raise ConvertError(problems)
    return xrs


# The fields each kind's XRD requires (and the conversion reads), by path; `[]` stands for every item.
REQUIRED: dict[str, tuple[str, ...]] = {
    "InferenceClass": ("spec.devices", "spec.devices[].name", "spec.devices[].driver"),
    "InferenceCluster": (
        "spec.cluster.source",
        "spec.nodePools",
        "spec.nodePools[].name",
        "spec.nodePools[].className",
    ),
    "ModelDeployment": (
        "spec.replicas",
        "spec.template.spec.engines",
        "spec.template.spec.engines[].members",
        "spec.template.spec.engines[].members[].template.spec.containers",
        "spec.template.spec.engines[].members[].template.spec.containers[].image",
    ),
    "ModelCache": ("spec.source", "spec.huggingFace.repo", "spec.huggingFace.sizeGiB"),
    "ModelService": ("spec.endpoints", "spec.endpoints[].selector.matchLabels"),
    "ModelEndpoint": ("spec.url",),
}


def _missing(xr: XR) -> list[str]:
    out = []
    for path in REQUIRED[xr.kind]:
        for concrete in _expand(xr.doc, path):
            if value_at(xr.doc, concrete) in (None, [], ""):
                out.append(f"{concrete} is missing (modelplane's XRD requires it). Fix: set {concrete}")
    return out


def _expand(doc: Any, path: str) -> list[str]:
    """`a[].b` -> `a[0].b`, `a[1].b`, ... over the lists the document holds."""
    head, sep, rest = path.partition("[]")
    if not sep:
        return [path]
    items = value_at(doc, head)
    if not isinstance(items, list):
        return []
    return [p for i in range(len(items)) for p in _expand(doc, f"{head}[{i}]{rest}")]


def value_at(doc: Any, path: str) -> Any:
    value = doc
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            i = int(part[1:-1])
            value = value[i] if isinstance(value, list) and i < len(value) else None
        else:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            return None
    return value


# --------------------------------------------------------------------------------------------
# Converting


@dataclass
class Conversion:
    """The stack's `modelplane:` keys and the notes beside them."""

    classes: list[dict[str, Any]] = field(default_factory=list)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    deployments: list[dict[str, Any]] = field(default_factory=list)
    services: list[dict[str, Any]] = field(default_factory=list)
    secrets: dict[str, Any] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)

    def note(self, kind: str, xr: XR, path: str, why: str) -> None:
        self.notes.append(Note(kind, xr.where, path, why))

    def config(self) -> dict[str, Any]:
        # modelplane holds a cluster until its serving stack is gone (foreground deletion, Usages);
        # protecting every cluster's resources is the nearest of ours: `pulumi up` never deletes them.
        out: dict[str, Any] = {"modelplane:protect": True}
        for key, value in (
            ("classes", self.classes),
            ("clusters", self.clusters),
            ("deployments", self.deployments),
            ("services", self.services),
        ):
            if value:
                out[f"modelplane:{key}"] = value
        for key, value in self.secrets.items():
            out[f"modelplane:{key}"] = value
        return out


@dataclass(frozen=True)
class Placed:
    """A deployment of ours: one ModelDeployment's replicas on one cluster."""

    xr: XR
    cluster: str
    count: int  # modelplane replicas placed on this cluster
    labels: Mapping[str, str]


# --------------------------------------------------------------------------------------------
# Writing


def stack_text(conv: Conversion, sources: Sequence[str]) -> str:
    """The stack file: a header, one comment line a note, then the config."""
    head = [
        "# yaml-language-server: $schema=../docs/stack.schema.json",
        f"# Converted from modelplane XRs by `modelplane from-modelplane` ({', '.join(sources)}); docs/from-modelplane.md.",
        "# Each `not mapped` line is a field with no key of ours, `fill in` a value to write before `pulumi up`,",
        "# `chosen` a value the converter decided.",
    ]
    body = yaml.safe_dump({"config": conv.config()}, sort_keys=False, default_flow_style=False, width=120)
    return "\n".join([*head, *(n.line() for n in conv.notes), body])


def summary(conv: Conversion) -> str:
    counts: dict[str, int] = defaultdict(int)
    for n in conv.notes:
        counts[n.kind] += 1
    parts = [
        f"{len(conv.classes)} classes, {len(conv.clusters)} clusters, {len(conv.deployments)} deployments, "
        f"{len(conv.services)} services",
        *(f"{counts[k]} {k}" for k in ("not mapped", "fill in", "chosen") if counts[k]),
    ]
    return "; ".join(parts)
