"""Turn modelplane's XRs (`modelplane.ai/v1alpha1`) into a stack file of ours (docs/from-modelplane.md).

modelplane describes a fleet as Crossplane composite resources: `InferenceClass`, `InferenceCluster`,
`ModelDeployment`, `ModelCache`, `ModelService` and `ModelEndpoint`, as its XRDs define them
(github.com/modelplaneai/modelplane `apis/*/definition.yaml` at v0.3.1). This module reads them and
writes the `modelplane:` keys our loader takes (`infra/config/`), with one comment line for every
field it could not carry over and why. It is not a loader: the stack it writes is read, checked and
planned like any other.

Where modelplane decides at run time, the converter decides once, the way modelplane would:
- A ModelDeployment names no cluster; modelplane's scheduler places each replica on a cluster whose
  labels match `clusterSelector` and whose pool has the devices its members ask for, spreading the
  replicas over such clusters, fewest first, ties broken by cluster name
  (`functions/compose-model-deployment/function/scheduling.py`, "Fill"). The converter does the same
  over the clusters it reads, and writes one deployment per cluster that gets replicas.
- A ModelService selects ModelEndpoints by label; modelplane labels the endpoint of each replica
  `modelplane.ai/deployment` and `modelplane.ai/cluster` (`functions/compose-model-deployment/function/fn.py`,
  `_child_labels`), and a user-written ModelEndpoint carries the labels it is given. An entry's weight
  is spread evenly over the endpoints it matches (`apis/modelservices/definition.yaml`, `weight`).
"""

from __future__ import annotations

import math
import re
import shlex
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from clouds import BY_SOURCE, machine, profile
from infra.checks.schedulable import suggested_memory
from infra.formats import parse_quantity

API_VERSION = "modelplane.ai/v1alpha1"
KINDS = ("InferenceClass", "InferenceCluster", "ModelCache", "ModelDeployment", "ModelEndpoint", "ModelService")
# Where modelplane mounts a ModelCache in every serving pod (`apis/modelcaches/definition.yaml`,
# docs/manifests/concepts/model-cache.yaml): an engine pointed at it reads the cache's repository.
CACHE_MOUNT = "/mnt/models"
# The labels modelplane stamps on the ModelEndpoint of each replica (fn.py `_LABEL_DEPLOYMENT`, `_LABEL_CLUSTER`).
DEPLOYMENT_LABEL = "modelplane.ai/deployment"
CLUSTER_LABEL = "modelplane.ai/cluster"
# The Kubernetes version modelplane's XRD gives a cluster that names none
# (`apis/inferenceclusters/definition.yaml`, each block's `kubernetesVersion` default, v0.3.1).
DEFAULT_VERSIONS = {"GKE": "1.35", "EKS": "1.36", "AKS": "1.34", "Nebius": "1.34", "Vultr": "v1.36.1+3"}
# The config key our Existing clusters read the kubeconfig from (`clusters[].existing.kubeconfigKey` default).
KUBECONFIG_KEY = "kubeconfig"
# vLLM's multi-node flags our LeaderWorkerSet adds itself (`components.features.multinode.launch_args`);
# modelplane's engines write them with its own variables ($(MODELPLANE_RANK), ...).
GROUP_FLAGS = ("--nnodes", "--node-rank", "--master-addr")
# modelplane fills these in its pods; our pods have no such variables.
MODELPLANE_VARIABLE = re.compile(r"\$\(MODELPLANE_[A-Z_]+\)")
# The shapes of device selector the converter evaluates, as modelplane's published ModelDeployments
# write them (docs/manifests/**/model-deployment*.yaml): the device's driver, and a capacity compared
# with a quantity, joined by `&&`.
DRIVER_CEL = re.compile(r"""^device\.driver\s*==\s*"(?P<driver>[^"]+)"$""")
CAPACITY_CEL = re.compile(
    r"""^device\.capacity\["(?P<driver>[^"]+)"\]\.(?P<name>[A-Za-z0-9_.-]+)\.compareTo\(quantity\("(?P<qty>[^"]+)"\)\)\s*(?P<op>>=|>|==|<=|<)\s*0$"""
)


class ConvertError(Exception):
    """Input the converter cannot read: each problem names the file, the path inside it and the fix."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Options:
    """What modelplane keeps outside its XRs (in its ProviderConfigs) and our clusters need written."""

    gke_project: str | None = None
    nebius_project_id: str | None = None
    nebius_region: str | None = None
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
        value: Any = self.doc
        for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
            if part.startswith("["):
                i = int(part[1:-1])
                value = value[i] if isinstance(value, list) and i < len(value) else None
            else:
                value = value.get(part) if isinstance(value, dict) else None
            if value is None:
                return default
        return value

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
            if _at(xr.doc, concrete) in (None, [], ""):
                out.append(f"{concrete} is missing (modelplane's XRD requires it). Fix: set {concrete}")
    return out


def _expand(doc: Any, path: str) -> list[str]:
    """`a[].b` -> `a[0].b`, `a[1].b`, ... over the lists the document holds."""
    head, sep, rest = path.partition("[]")
    if not sep:
        return [path]
    items = _at(doc, head)
    if not isinstance(items, list):
        return []
    return [p for i in range(len(items)) for p in _expand(doc, f"{head}[{i}]{rest}")]


def _at(doc: Any, path: str) -> Any:
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


def convert(xrs: Sequence[XR], options: Options = Options()) -> Conversion:
    conv = Conversion()
    by_kind: dict[str, list[XR]] = defaultdict(list)
    for xr in xrs:
        by_kind[xr.kind].append(xr)
    problems = _duplicates(xrs)
    if problems:
        raise ConvertError(problems)
    classes = {xr.name: xr for xr in by_kind["InferenceClass"]}
    for xr in by_kind["InferenceClass"]:
        conv.classes.append(_class(conv, xr))
    for xr in by_kind["InferenceCluster"]:
        conv.clusters.append(_cluster(conv, xr, classes, options))
    caches = {(xr.namespace, xr.name): xr for xr in by_kind["ModelCache"]}
    ledger = {k: n for c in by_kind["InferenceCluster"] for k, n in pool_nodes(c).items()}
    placed = [
        p
        for xr in by_kind["ModelDeployment"]
        for p in _deployment(conv, xr, by_kind["InferenceCluster"], classes, caches, ledger)
    ]
    for xr in by_kind["ModelService"]:
        service = _service(conv, xr, placed, by_kind["ModelEndpoint"], options)
        if service is not None:
            conv.services.append(service)
    for xr in xrs:
        for path, why in unmapped(xr):
            conv.note("not mapped", xr, path, why)
    return conv


def _duplicates(xrs: Sequence[XR]) -> list[str]:
    seen: dict[tuple[str, str, str], XR] = {}
    out = []
    for xr in xrs:
        scoped = xr.kind not in ("InferenceClass", "InferenceCluster")
        key = (xr.kind, xr.namespace if scoped else "", xr.name)
        if key in seen:
            out.append(f"{xr.file}: {xr.kind} {xr.name}: also defined in {seen[key].file}. Fix: pass each object once")
        seen[key] = xr
    return out


def _class(conv: Conversion, xr: XR) -> dict[str, Any]:
    out: dict[str, Any] = {"name": xr.name}
    if xr.get("spec.description"):
        out["description"] = xr.get("spec.description")
    devices = []
    for i, dev in enumerate(_at(xr.doc, "spec.devices")):
        devices.append({k: xr.get(f"spec.devices[{i}].{k}") for k in dev})
    out["devices"] = devices
    prov = xr.doc["spec"].get("provisioning")
    if prov:
        provider = xr.get("spec.provisioning.provider")
        if provider not in BY_SOURCE or provider == "Existing":
            raise ConvertError(
                [
                    f"{xr.file}: InferenceClass {xr.name}: spec.provisioning.provider: {provider} is not a cloud of ours "
                    f"({', '.join(s for s in BY_SOURCE if s != 'Existing')}). Fix: leave out provisioning for hardware "
                    "you run (an Existing cluster's class), or the class"
                ]
            )
        key = str(provider).lower()
        block = dict(xr.get(f"spec.provisioning.{key}") or {})
        name = machine_name(str(provider), block)
        row = machine(provider, name)
        accelerator = block.get("accelerator")
        if row is None:
            block["uncatalogued"] = True
            conv.note(
                "chosen",
                xr,
                f"spec.provisioning.{key}",
                f"the machine catalog does not know {name}: the class takes it unchecked and unpriced (uncatalogued: true)",
            )
        elif accelerator and accelerator.get("type") not in row.accelerator_types:
            del block["accelerator"]
            conv.note(
                "chosen",
                xr,
                f"spec.provisioning.{key}.accelerator.type",
                f"{accelerator.get('type')} is not a name of {name}'s GPU in our machine catalog; the catalog supplies it "
                f"({', '.join(row.accelerator_types) or 'none'})",
            )
        out["provisioning"] = {"provider": provider, key: block}
    return out


# The field of each provisioning block of modelplane's InferenceClass that names the machine
# (`apis/inferenceclasses/definition.yaml`); Nebius names it by platform and preset, which our
# catalog joins as `<platform>/<preset>`.
MACHINE_FIELDS = {"GKE": "machineType", "EKS": "instanceType", "AKS": "vmSize", "Vultr": "plan", "Civo": "size"}


def machine_name(provider: str, block: Mapping[str, Any]) -> str:
    """The machine a provisioning block names, as our machine catalog names it."""
    if provider == "Nebius":
        return f"{block.get('platform')}/{block.get('preset')}"
    return str(block.get(MACHINE_FIELDS.get(provider, ""), ""))


def _cluster(conv: Conversion, xr: XR, classes: Mapping[str, XR], options: Options) -> dict[str, Any]:
    source = xr.get("spec.cluster.source")
    if source not in BY_SOURCE:
        raise ConvertError(
            [
                f"{xr.file}: InferenceCluster {xr.name}: spec.cluster.source: {source} is not a cluster source of ours "
                f"({', '.join(BY_SOURCE)}). Fix: leave the cluster out, or run its nodes as an Existing cluster"
            ]
        )
    out: dict[str, Any] = {"name": xr.name}
    labels = xr.get("metadata.labels")
    if labels:
        out["labels"] = dict(labels)
    out["source"] = source
    key = str(source).lower()
    if source == "Existing":
        xr.get("spec.cluster.existing.secretRef")
        out["existing"] = {"kubeconfigKey": KUBECONFIG_KEY}
        conv.secrets[KUBECONFIG_KEY] = {"secure": "v1:placeholder"}
        conv.note(
            "fill in",
            xr,
            "spec.cluster.existing.secretRef",
            f"ours reads the kubeconfig from the stack's secret config: pulumi config set --secret modelplane:{KUBECONFIG_KEY} < kubeconfig",
        )
    else:
        block: dict[str, Any] = {}
        written = _at(xr.doc, f"spec.cluster.{key}") or {}
        for field_ in ("region", "location"):
            if field_ in written:
                block[field_] = xr.get(f"spec.cluster.{key}.{field_}")
        if source == "GKE":
            block = {"project": options.gke_project or _fill(conv, xr, "GCP project", "--gke-project"), **block}
        if source == "Nebius":
            block["projectId"] = options.nebius_project_id or _fill(conv, xr, "Nebius project", "--nebius-project-id")
            block["region"] = options.nebius_region or _fill(conv, xr, "Nebius region", "--nebius-region")
        version = xr.get(f"spec.cluster.{key}.kubernetesVersion")
        if version is None and source not in DEFAULT_VERSIONS:
            raise ConvertError(
                [
                    f"{xr.file}: InferenceCluster {xr.name}: spec.cluster.{key}.kubernetesVersion is missing, and modelplane "
                    f"v0.3.1 has no default for {source} to take. Fix: set it, as the cloud spells it"
                ]
            )
        if version is None:
            version = DEFAULT_VERSIONS[str(source)]
            conv.note(
                "chosen",
                xr,
                f"spec.cluster.{key}.kubernetesVersion",
                f"unset; modelplane's default for {source}, {version}, written out (ours has no default)",
            )
        block["kubernetesVersion"] = str(version)
        out[key] = block
    pools = []
    for i, _ in enumerate(_at(xr.doc, "spec.nodePools") or []):
        at = f"spec.nodePools[{i}]"
        pool: dict[str, Any] = {"name": xr.get(f"{at}.name"), "className": xr.get(f"{at}.className")}
        for k in ("nodeCount", "minNodeCount", "maxNodeCount", "zones"):
            value = xr.get(f"{at}.{k}")
            if value is not None:
                pool[k] = value
        reservation = xr.get(f"{at}.capacityBlock.capacityReservationId")
        if reservation:
            pool["capacity"] = {"type": "CapacityBlock", "reservation": reservation}
            conv.note(
                "fill in",
                xr,
                f"{at}.capacityBlock",
                "ours also takes the block's instance count and zone (capacity.blockNodes, capacity.blockZone; docs/machines.md)",
            )
        if pool["className"] not in classes:
            raise ConvertError(
                [
                    f"{xr.file}: InferenceCluster {xr.name}: {at}.className: no InferenceClass "
                    f"'{pool['className']}' among the files. Fix: pass the file that defines it"
                ]
            )
        pools.append(pool)
    out["nodePools"] = pools
    taints = xr.get("spec.taints")
    if taints:
        out["taints"] = [dict(t) for t in taints]
    return out


def _fill(conv: Conversion, xr: XR, what: str, flag: str) -> str:
    conv.note(
        "fill in",
        xr,
        "spec.cluster",
        f"modelplane takes the {what} from its ProviderConfig; pass {flag} or edit the value",
    )
    # Not a valid value on purpose: the plan refuses the stack until it is filled in.
    return "FILL-IN"


def _deployment(
    conv: Conversion,
    xr: XR,
    clusters: Sequence[XR],
    classes: Mapping[str, XR],
    caches: Mapping[tuple[str, str], XR],
    ledger: dict[tuple[str, str], int],
) -> list[Placed]:
    """The deployments of ours for one ModelDeployment, its replicas placed as modelplane's scheduler
    fills them, charged to `ledger` (the nodes each pool has left, shared by every deployment)."""
    tspec = "spec.template.spec"
    engines = _at(xr.doc, f"{tspec}.engines")
    if len(engines) > 1:
        conv.note(
            "not mapped",
            xr,
            f"{tspec}.engines[1:]",
            "ours runs one engine a deployment; only the first engine is converted (a prefill/decode split has no key of ours)",
        )
        xr.used.add(f"{tspec}.engines[1]")
        for j in range(2, len(engines)):
            xr.used.add(f"{tspec}.engines[{j}]")
    eng = f"{tspec}.engines[0]"
    members = _at(xr.doc, f"{eng}.members")
    lead_i = next((j for j, m in enumerate(members) if m.get("role", "Standalone") in ("Standalone", "Leader")), 0)
    lead = f"{eng}.members[{lead_i}]"
    for j in range(len(members)):
        xr.get(f"{eng}.members[{j}].role")
    worker_nodes = sum(
        int(xr.get(f"{eng}.members[{j}].worker.nodes") or 0) for j, m in enumerate(members) if m.get("role") == "Worker"
    )
    requests = []
    for k, _ in enumerate(_at(xr.doc, f"{lead}.nodeSelector.devices") or []):
        at = f"{lead}.nodeSelector.devices[{k}]"
        requests.append(
            (
                str(xr.get(f"{at}.name")),
                int(xr.get(f"{at}.count") or 1),
                [s.get("cel", "") for s in xr.get(f"{at}.selectors") or []],
            )
        )
    for j, m in enumerate(members):
        if j != lead_i and m.get("nodeSelector") is not None:
            # A group's pods share one pool: the leader's request speaks for it.
            xr.used.add(f"{eng}.members[{j}].nodeSelector")
    cache_name = xr.get(f"{tspec}.modelCacheRef.name")
    cache = caches.get((xr.namespace, cache_name)) if cache_name else None
    if cache_name and cache is None:
        raise ConvertError(
            [
                f"{xr.file}: ModelDeployment {xr.name}: {tspec}.modelCacheRef.name: no ModelCache '{cache_name}' "
                f"in namespace {xr.namespace} among the files. Fix: pass the file that defines it"
            ]
        )
    selector = dict(xr.get(f"{tspec}.clusterSelector.matchLabels") or {})
    if cache is not None:
        selector.update(cache.get("spec.clusterSelector.matchLabels") or {})
    tolerations = _at(xr.doc, f"{tspec}.tolerations") or []
    eligible = []
    for c in sorted(clusters, key=lambda c: c.name):
        labels = (c.doc.get("metadata") or {}).get("labels") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        taints = (c.doc.get("spec") or {}).get("taints") or []
        if any(not any(_tolerates(t, taint) for t in tolerations) for taint in taints):
            continue  # an untolerated NoSchedule or NoExecute taint keeps new replicas off (`_repels_new`)
        pools = _pools_for(c, classes, requests)
        if pools:
            eligible.append((c, pools))
    if not eligible:
        raise ConvertError(
            [
                f"{xr.file}: ModelDeployment {xr.name}: {lead}.nodeSelector: no InferenceCluster among the files has a pool "
                f"whose class offers {', '.join(f'{n} x{c}' for n, c, _ in requests) or 'its devices'}"
                + (f" and labels {selector}" if selector else "")
                + (
                    ", and no taint its tolerations do not match"
                    if any((c.doc.get("spec") or {}).get("taints") for c in clusters)
                    else ""
                )
                + ". Fix: pass the InferenceCluster and InferenceClass files it runs on"
            ]
        )
    replicas = int(xr.get("spec.replicas"))
    copies = int(xr.get(f"{eng}.copies") or 1)
    # What one replica takes of its pool: a node per pod of each copy (scheduling.py `_member_pods`).
    cost = (1 + worker_nodes) * copies
    counts: dict[str, int] = defaultdict(int)
    chosen: dict[str, dict[str, Any]] = {}
    over = 0
    for _ in range(replicas):
        # Spread first: the cluster with the fewest of them, ties by name, among those with a pool
        # that still has the nodes (one pool a cluster: ours runs a deployment on one pool).
        fits = [
            (c, p)
            for c, pools in eligible
            for p in ([chosen[c.name]] if c.name in chosen else pools)
            if ledger[(c.name, p["name"])] >= cost
        ]
        if not fits:
            over += 1
            fits = [(c, chosen.get(c.name, pools[0])) for c, pools in eligible]
        c, pool = min(fits, key=lambda e: (counts[e[0].name], e[0].name))
        chosen[c.name] = pool
        counts[c.name] += 1
        ledger[(c.name, pool["name"])] -= cost
    if over:
        conv.note(
            "chosen",
            xr,
            "spec.replicas",
            f"{over} replica(s) found no pool with free nodes among the files (modelplane would leave them unscheduled); "
            "placed anyway, where the plan's schedulability rules report them",
        )
    container = f"{lead}.template.spec.containers[0]"
    image = xr.get(f"{container}.image")
    args = _engine_args(conv, xr, container, cache)
    port = _take_port(args)
    env = {}
    for k, e in enumerate(_at(xr.doc, f"{container}.env") or []):
        if "value" in e:
            env[str(xr.get(f"{container}.env[{k}].name"))] = str(xr.get(f"{container}.env[{k}].value"))
        else:
            xr.get(f"{container}.env[{k}].name")
    for j in range(len(members)):
        if j != lead_i:
            # The workers run the leader's image and args; ours builds their pods from the deployment.
            xr.used.add(f"{eng}.members[{j}].template.spec.containers")
    out = []
    for c, _pools in eligible:
        if not counts[c.name]:
            continue
        pool = chosen[c.name]
        dep: dict[str, Any] = {
            "name": xr.name,
            "namespace": xr.namespace,
            "cluster": c.name,
            "pool": pool["name"],
            "image": image,
            "args": args,
            "replicas": counts[c.name] * copies,
            "devices": [{"name": n, "count": k} for n, k, _ in requests],
        }
        if worker_nodes:
            dep["nodes"] = 1 + worker_nodes
        if port is not None:
            dep["port"] = port
        if env:
            dep["env"] = env
        memory = _memory(c, classes[pool["className"]])
        if memory is not None:
            dep["memory"] = memory
            conv.note(
                "chosen",
                xr,
                container,
                f"on {c.name}: memory {memory} (modelplane sets no memory request; ours needs one on a GPU pool, and this is what a node of the pool's machine can give)",
            )
        if cache is not None:
            dep["cache"] = _shared_cache(conv, xr, c, cache)
        conv.deployments.append(dep)
        # Read, not marked used: the labels select the deployment's endpoints, and ours has no key for them.
        template_labels = dict(_at(xr.doc, "spec.template.metadata.labels") or {})
        out.append(
            Placed(xr, c.name, counts[c.name], {**template_labels, DEPLOYMENT_LABEL: xr.name, CLUSTER_LABEL: c.name})
        )
    placed_on = [p.cluster for p in out]
    if len(placed_on) > 1 or replicas > 1:
        conv.note(
            "chosen",
            xr,
            "spec.replicas",
            f"{replicas} replica(s) placed as modelplane's scheduler spreads them: "
            + ", ".join(f"{p.cluster} x{p.count}" for p in out),
        )
    return out


def _shared_cache(conv: Conversion, xr: XR, cluster: XR, cache: XR) -> dict[str, Any]:
    """The deployment's `cache` for a ModelCache: a Shared volume where the cloud has ReadWriteMany
    storage of ours (infra/profiles.py `SharedStorage`), else a node's own directory."""
    source = str(cluster.doc["spec"]["cluster"]["source"])
    storage = profile(source).shared_cache
    size = int(cache.get("spec.huggingFace.sizeGiB"))
    if storage is None:
        conv.note(
            "chosen",
            xr,
            "spec.template.spec.modelCacheRef",
            f"on {cluster.name}: ours has no ReadWriteMany storage on {source} (docs/serving.md, Shared weight cache); "
            "each node keeps its own copy (cache.volume: NodeLocal)",
        )
        return {"volume": "NodeLocal"}
    out: dict[str, Any] = {"volume": "Shared", "size": f"{size}Gi"}
    if storage.storage_class is None:
        named = cluster.get("spec.cluster.existing.cache.storageClassName")
        if named:
            out["storageClassName"] = named
        else:
            conv.note(
                "fill in",
                xr,
                "spec.template.spec.modelCacheRef",
                f"on {cluster.name}: a shared cache on an Existing cluster names its ReadWriteMany StorageClass; set cache.storageClassName",
            )
    elif size < storage.min_gib:
        out["size"] = f"{storage.min_gib}Gi"
        conv.note(
            "chosen",
            xr,
            "spec.template.spec.modelCacheRef",
            f"on {cluster.name}: size {storage.min_gib}Gi, the least {storage.storage_class} provisions (the ModelCache asks {size}Gi)",
        )
    return out


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' matching, as modelplane's scheduler applies it (scheduling.py `_tolerates`): an empty
    effect matches any; `Exists` matches the key (an empty key every taint); `Equal` key and value."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return bool(
        toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")
    )


def _pools_for(
    cluster: XR, classes: Mapping[str, XR], requests: Sequence[tuple[str, int, list[str]]]
) -> list[dict[str, Any]]:
    """The pools of `cluster` whose class has every requested device, in number, and meets its selectors."""
    out = []
    for pool in (cluster.doc.get("spec") or {}).get("nodePools") or []:
        cls = classes.get(pool.get("className"))
        if cls is None:
            continue
        devices = {d.get("name"): d for d in (cls.doc.get("spec") or {}).get("devices") or []}
        if all(
            name in devices
            and int(devices[name].get("count") or 1) >= count
            and all(_meets(devices[name], cel) for cel in cels)
            for name, count, cels in requests
        ):
            out.append(dict(pool))
    return out


def pool_nodes(cluster: XR) -> dict[tuple[str, str], int]:
    """The nodes each pool of `cluster` offers replicas: `maxNodeCount`, else `nodeCount` (default 1), as
    modelplane publishes them in the cluster's status (`gpuPools[].nodes`)."""
    return {
        (cluster.name, str(p.get("name"))): int(p.get("maxNodeCount") or p.get("nodeCount") or 1)
        for p in (cluster.doc.get("spec") or {}).get("nodePools") or []
    }


def _meets(device: Mapping[str, Any], cel: str) -> bool:
    """Whether the class's device meets a selector, judged conjunct by conjunct: `device.driver == "..."`
    and a capacity compared with a quantity (`CAPACITY_CEL`); a conjunct of another shape is not judged."""
    if "||" in cel or "!" in cel:
        return True  # not a plain conjunction: not judged
    for term in cel.strip().split("&&"):
        term = term.strip()
        driver = DRIVER_CEL.match(term)
        if driver is not None and driver["driver"] != device.get("driver"):
            return False
        m = CAPACITY_CEL.match(term)
        if m is None:
            continue
        if m["driver"] != device.get("driver"):
            return False
        have = parse_quantity(((device.get("capacity") or {}).get(m["name"]) or {}).get("value"))
        want = parse_quantity(m["qty"])
        if have is None or want is None:
            return False
        diff = (have > want) - (have < want)
        if not {">=": diff >= 0, ">": diff > 0, "==": diff == 0, "<=": diff <= 0, "<": diff < 0}[m["op"]]:
            return False
    return True


def _engine_args(conv: Conversion, xr: XR, container: str, cache: XR | None) -> list[str]:
    """The engine's args as our image takes them (its ENTRYPOINT is `vllm serve`)."""
    command = [str(a) for a in xr.get(f"{container}.command") or []]
    args = [str(a) for a in xr.get(f"{container}.args") or []]
    if command:
        words = command
        if len(command) >= 3 and command[0] in ("/bin/sh", "sh", "/bin/bash", "bash") and command[1] == "-c":
            words = shlex.split(command[2])
        if words[:1] == ["exec"]:
            words = words[1:]
        if words[:2] != ["vllm", "serve"]:
            raise ConvertError(
                [
                    f"{xr.file}: ModelDeployment {xr.name}: {container}.command: runs {' '.join(command)[:80]!r}, not `vllm serve`; "
                    "ours runs the image's `vllm serve` with args. Fix: write the engine's flags as args"
                ]
            )
        rest = words[2:]
        if rest and not rest[0].startswith("-"):
            rest = ["--model", rest[0], *rest[1:]]
        args = [*rest, *args]
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        flag, sep, value = arg.partition("=")
        if flag in (*GROUP_FLAGS, "--headless"):
            skip = not sep and flag != "--headless"
            continue
        nxt = args[i + 1] if not sep and i + 1 < len(args) else ""
        variable = MODELPLANE_VARIABLE.search(arg) or MODELPLANE_VARIABLE.search(nxt)
        if variable is not None:
            conv.note(
                "not mapped", xr, f"{container}.args", f"{flag}: ours has no {variable.group()} in its pods; left out"
            )
            skip = bool(nxt)
            continue
        if flag == "--model" and cache is not None:
            given = value if sep else (args[i + 1] if i + 1 < len(args) else "")
            if given.rstrip("/") == CACHE_MOUNT:
                repo = cache.get("spec.huggingFace.repo")
                out += ["--model", str(repo)]
                revision = cache.get("spec.huggingFace.revision")
                if revision:
                    out += ["--revision", str(revision)]
                skip = not sep
                continue
        out.append(arg)
    if cache is not None:
        cache.get("spec.source")
        cache.get("spec.huggingFace.sizeGiB")
    return out


def _take_port(args: list[str]) -> int | None:
    """Remove `--port` from the args and return it: ours passes the deployment's `port` itself."""
    for i, arg in enumerate(args):
        flag, sep, value = arg.partition("=")
        if flag == "--port":
            given = value if sep else (args[i + 1] if i + 1 < len(args) else "")
            del args[i : i + (1 if sep else 2)]
            return int(given) if given.isdigit() and int(given) != 8000 else None
    return None


def _memory(cluster: XR, cls: XR) -> str | None:
    """A memory request for an engine on a GPU pool (ours requires one there; modelplane has none)."""
    if not any(d.get("driver", "").startswith("gpu.") for d in cls.doc["spec"].get("devices") or []):
        return None
    source = str(cluster.doc["spec"]["cluster"]["source"])
    prov = cls.doc["spec"].get("provisioning") or {}
    row = None
    if prov.get("provider") == source:
        row = machine(source, machine_name(source, prov.get(source.lower()) or {}))
    return suggested_memory(source, row, "GPU", "2Gi")


def _service(
    conv: Conversion, xr: XR, placed: Sequence[Placed], endpoints: Sequence[XR], options: Options
) -> dict[str, Any] | None:
    """One service of ours from a ModelService: its entries' endpoints, each with its share of the weight."""
    shares: dict[tuple[str, str, str], Fraction] = defaultdict(Fraction)
    externals: dict[tuple[str, str, str], XR] = {}
    for i, _ in enumerate(_at(xr.doc, "spec.endpoints")):
        want = dict(xr.get(f"spec.endpoints[{i}].selector.matchLabels"))
        weight = int(xr.get(f"spec.endpoints[{i}].weight") or 1)
        matched: list[tuple[str, str, str]] = []
        for p in placed:
            if p.xr.namespace == xr.namespace and all(p.labels.get(k) == v for k, v in want.items()):
                matched += [("deployment", p.xr.name, p.cluster)] * p.count  # one endpoint per replica
        for ep in endpoints:
            labels = (ep.doc.get("metadata") or {}).get("labels") or {}
            if ep.namespace == xr.namespace and all(labels.get(k) == v for k, v in want.items()):
                key = ("external", ep.name, "")
                externals[key] = ep
                matched.append(key)
        if not matched:
            conv.note(
                "not mapped",
                xr,
                f"spec.endpoints[{i}]",
                f"selects no endpoint among the files ({want}); it gets no share",
            )
            continue
        for key in matched:
            shares[key] += Fraction(weight, len(matched))
    if not shares:
        conv.note(
            "not mapped", xr, "spec.endpoints", "no entry selects an endpoint among the files; no service written"
        )
        return None
    scale = math.lcm(*(s.denominator for s in shares.values()))
    weights = {k: int(s * scale) for k, s in shares.items()}
    common = math.gcd(*weights.values())
    weights = {k: w // common for k, w in weights.items()}
    out: dict[str, Any] = {"name": xr.name}
    deployments = [k for k in weights if k[0] == "deployment"]
    clusters = sorted({k[2] for k in deployments})
    if len(weights) == 1 and deployments:
        [(_, dep, cluster)] = deployments
        out["deployment"] = dep
        if sum(1 for p in placed if p.xr.name == dep) > 1:
            out["cluster"] = cluster
    elif len(clusters) <= 1 and not externals and len({k[1] for k in deployments}) == len(deployments):
        out["backends"] = [{"deployment": k[1], "weight": w} for k, w in weights.items()]
        if any(sum(1 for p in placed if p.xr.name == k[1]) > 1 for k in deployments):
            out["cluster"] = clusters[0]
    else:
        # A fleet service: served by the gateway of one cluster, the others' deployments and the
        # external endpoints reached from it (docs/serving.md).
        out["cluster"] = clusters[0] if clusters else None
        backends: list[dict[str, Any]] = []
        for key, w in weights.items():
            if key[0] == "deployment":
                backends.append({"deployment": key[1], "cluster": key[2], "weight": w})
            else:
                ep = externals[key]
                url = str(ep.get("spec.url")).rstrip("/")
                rewrite = str(ep.get("spec.rewritePath") or "/").strip("/")
                backends.append({"external": {"url": f"{url}/{rewrite}" if rewrite else url}, "weight": w})
                conv.note(
                    "fill in",
                    ep,
                    "spec",
                    "a ModelEndpoint names no model or API key; set the backend's external.model and, as a secret, external.apiKey "
                    f"(pulumi config set --secret --path 'modelplane:services[{len(conv.services)}].backends[{len(backends) - 1}].external.apiKey')",
                )
        if out["cluster"] is None:
            conv.note(
                "fill in",
                xr,
                "spec.endpoints",
                "every endpoint is external; set services[].cluster to the cluster whose gateway serves it",
            )
            out["cluster"] = "FILL-IN"
        out["backends"] = backends
        conv.note(
            "chosen",
            xr,
            "spec.endpoints",
            f"served by the gateway of {out['cluster']} (modelplane serves it from its control plane's gateway)",
        )
    if options.keep_paths:
        out["path"] = f"/{xr.namespace}/{xr.name}"
    return out


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
