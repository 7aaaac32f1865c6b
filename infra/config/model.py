"""The typed fleet model: classes, clusters, pools, deployments, services and the budget.

Shape only: one field's rules are validators here; rules across keys are `infra.config.references`
and `infra.config.rules`; reading a stack file is `infra.config.stackfile`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    PrivateAttr,
    StrictInt,
    StringConstraints,
    Tag,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from clouds import CLOUDS, PROVISIONED, cloud
from clouds.spec import Cloud
from infra.config.base import Accelerator, MachineBlock, Model, OwnerClusterBlock
from infra.config.names import (
    DNS1035_LABEL,
    DNS1123_SUBDOMAIN,
    DNS1123_SUBDOMAIN_MAX,
    MAX_DEVICES_PER_NODE,
    MAX_POOL_NODES,
    MAX_REPLICAS,
    DnsLabel,
    DriverName,
    PoolName,
    label_value_problem,
    qualified_name_problem,
    shown,
)
from infra.formats import EXACT_CHART_VERSION, parse_quantity
from infra.machines import MachineType


class ClaimMode(StrEnum):
    DRA = "DRA"
    SYNTHETIC = "Synthetic"


# The `source` and `provider` values are the registry's clouds, in its order (`clouds.CLOUDS`).
if TYPE_CHECKING:
    Source = str
    Provider = str
else:
    Source = StrEnum("Source", {c.source.upper(): c.source for c in CLOUDS})
    Provider = StrEnum("Provider", {c.source.upper(): c.source for c in PROVISIONED})


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class AttributeValue(Model):
    string: str | None = None
    version: str | None = None
    bool_: bool | None = Field(default=None, alias="bool")
    int_: StrictInt | None = Field(default=None, alias="int")

    @model_validator(mode="after")
    def _exactly_one(self) -> AttributeValue:
        set_ = [v for v in (self.string, self.version, self.bool_, self.int_) if v is not None]
        if len(set_) != 1:
            raise ValueError("an attribute holds exactly one of string, version, bool or int")
        return self


class CapacityValue(Model):
    value: str

    @field_validator("value", mode="before")
    @classmethod
    def _quantity(cls, v: Any) -> str:
        text = str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
        if not isinstance(text, str) or parse_quantity(text) is None:
            raise ValueError(f"{shown(v)} is not a Kubernetes quantity; write one such as 6, 500m or 262128Mi")
        return text


class Device(Model):
    name: DnsLabel
    claim: ClaimMode = ClaimMode.DRA
    driver: DriverName
    # A DeviceClass is a cluster object, so its name is a DNS subdomain.
    device_class_name: str | None = Field(default=None, validate_default=True)
    count: Annotated[StrictInt, Field(ge=1, le=MAX_DEVICES_PER_NODE)] = 1
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)
    capacity: dict[str, CapacityValue] = Field(default_factory=dict)

    @field_validator("device_class_name", mode="after")
    @classmethod
    def _dra_needs_class(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and (len(v) > DNS1123_SUBDOMAIN_MAX or not DNS1123_SUBDOMAIN.match(v)):
            raise ValueError(
                f"{shown(v)} is not a DeviceClass name; write a DNS subdomain (lowercase letters, digits, '-' "
                f"and '.', at most {DNS1123_SUBDOMAIN_MAX} characters), such as gpu.nvidia.com"
            )
        if info.data.get("claim", ClaimMode.DRA) is ClaimMode.DRA and not v:
            raise ValueError(
                "a DRA device needs deviceClassName; set it to the DeviceClass the driver "
                "publishes (for example gpu.nvidia.com), or set claim: Synthetic"
            )
        return v


class ProvisioningBase(Model):
    """`classes[].provisioning`: the provider, and its machine block (one optional block per cloud)."""

    provider: Provider

    @property
    def machine(self) -> MachineBlock:
        block = getattr(self, cloud(self.provider).key)
        assert block is not None, "check_references reports a missing block before anything reads it"
        return block  # type: ignore[no-any-return]

    @property
    def machine_name(self) -> str:
        return self.machine.machine_name

    @property
    def accelerator(self) -> Accelerator | None:
        return self.machine.accelerator


if TYPE_CHECKING:
    Provisioning = ProvisioningBase
else:
    Provisioning = create_model(
        "Provisioning",
        __base__=ProvisioningBase,
        __module__=__name__,
        **{c.key: (c.machine_block | None, None) for c in PROVISIONED},
    )


@dataclass(frozen=True)
class Supplied:
    """What a class left out and what supplied it (`infra.supply`); the plan shows it per pool.

    `keys` are the paths under the class that were filled in (`devices`,
    `provisioning.gke.accelerator`); they came from the catalog row `row`, or (a class without a
    machine) from the accelerator the class declares. `chosen_from` lists the machines that fitted,
    cheapest first, when the class named none and the first was chosen.
    """

    keys: tuple[str, ...]
    row: MachineType | None = None
    accelerator: str | None = None
    chosen_from: tuple[MachineType, ...] = ()


class InferenceClass(Model):
    name: DnsLabel
    description: str = ""
    # Left out, they are taken from the machine's catalog row or from `accelerator` (`infra.supply`);
    # pydantic never validates a default, so an empty list written out is still refused.
    devices: Annotated[list[Device], Field(min_length=1, max_length=16)] = Field(default_factory=list)
    provisioning: Provisioning | None = None
    # The GPUs of an owner's nodes, for a class that backs pools of Existing clusters; a provisioned
    # class names its accelerator in its provisioning block (`check_references` says so), unless it
    # names no machine: then it is what the class needs, and the plan chooses the machine.
    accelerator: Accelerator | None = None
    # The owner's nodes carry a GPU the accelerator vocabulary does not list yet, and the class takes
    # its type as written (`accelerator-type-unknown` stops a run otherwise: infra/devices.py).
    uncatalogued_accelerator: bool | None = None
    # The least memory per GPU a class that names no machine needs (the plan chooses the machine).
    min_gpu_memory_gib: Annotated[StrictInt, Field(ge=1)] | None = None
    _supplied: Supplied | None = PrivateAttr(default=None)

    @property
    def supplied(self) -> Supplied | None:
        """What `infra.supply` filled in, or None for a class written out in full."""
        return self._supplied

    def with_supplied(self, supplied: Supplied, **update: Any) -> InferenceClass:
        """A copy of the class with `update` applied and `supplied` recorded."""
        copy = self.model_copy(update=update)
        copy._supplied = supplied
        return copy


class Taint(Model):
    # Kubernetes validates a taint's key as a qualified name and its value as a label value
    # (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/).
    key: str
    value: str = ""
    effect: TaintEffect

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        problem = qualified_name_problem(v)
        if problem:
            raise ValueError(f"{problem}; write a key such as example.com/dedicated")
        return v

    @field_validator("value")
    @classmethod
    def _value(cls, v: str) -> str:
        problem = label_value_problem(v)
        if problem:
            raise ValueError(f"{problem}; shorten or correct the value")
        return v


class NodePool(Model):
    name: PoolName
    class_name: str
    node_count: Annotated[StrictInt, Field(ge=0, le=MAX_POOL_NODES)] = 1
    min_node_count: Annotated[StrictInt, Field(ge=0, le=MAX_POOL_NODES)] | None = None
    max_node_count: Annotated[StrictInt, Field(ge=1, le=MAX_POOL_NODES)] | None = None
    # Nodes carry their zone as the value of the `topology.kubernetes.io/zone` label
    # (https://kubernetes.io/docs/reference/labels-annotations-taints/#topologykubernetesiozone),
    # so a zone's name is a non-empty label value.
    zones: list[str] = Field(default_factory=list)
    # The zones exist though the zone catalog does not list them for the region yet
    # (`zone-outside-region` stops a run otherwise: infra/devices.py).
    uncatalogued_zones: bool = False

    @field_validator("zones")
    @classmethod
    def _zone_names(cls, v: list[str]) -> list[str]:
        for zone in v:
            problem = label_value_problem(zone) if zone else "a zone name is empty"
            if problem:
                raise ValueError(f"{problem}; write the zone as the cloud names it, such as us-central1-a")
        return v


class InferenceClusterBase(Model):
    """`clusters[]`: a name, labels and the source, then the source's block (one optional block per
    cloud), the pools and the taints."""

    name: DnsLabel
    labels: dict[str, str] = Field(default_factory=dict)
    source: Source

    @property
    def cloud(self) -> Cloud:
        return cloud(self.source)

    @property
    def block(self) -> Model:
        block = getattr(self, self.cloud.key)
        assert block is not None, "check_references reports a missing block before anything reads it"
        return block  # type: ignore[no-any-return]

    @property
    def provisioned(self) -> bool:
        return self.cloud.provisioned

    @property
    def owner_block(self) -> OwnerClusterBlock | None:
        """The block of a cluster its owner runs (kubeconfig key, context), or None for a provisioned one."""
        block = self.block
        return block if isinstance(block, OwnerClusterBlock) else None

    if TYPE_CHECKING:
        node_pools: list[NodePool]
        taints: list[Taint]


if TYPE_CHECKING:
    InferenceCluster = InferenceClusterBase
else:
    InferenceCluster = create_model(
        "InferenceCluster",
        __base__=InferenceClusterBase,
        __module__=__name__,
        **{c.key: (c.cluster_block | None, None) for c in CLOUDS},
        node_pools=(Annotated[list[NodePool], Field(min_length=1, max_length=8)], ...),
        taints=(list[Taint], Field(default_factory=list)),
    )


class DeploymentDevice(Model):
    name: str
    count: Annotated[StrictInt, Field(ge=1, le=64)] = 1


class CacheVolume(StrEnum):
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    NODE_LOCAL = "NodeLocal"


class ModelCache(Model):
    """Where the engine keeps downloaded weights across restarts.

    `PersistentVolumeClaim`: a volume of `size` from `storageClassName` (default: the cloud's class,
    listed in docs/serving.md); `NodeLocal`: a directory on the node (kept while the pod returns to the
    same node, nothing to provision).
    """

    volume: CacheVolume = CacheVolume.PERSISTENT_VOLUME_CLAIM
    size: str | None = None
    storage_class_name: DnsLabel | None = None

    @field_validator("size", mode="before")
    @classmethod
    def _size_quantity(cls, v: Any) -> str | None:
        return None if v is None else CapacityValue(value=v).value

    @model_validator(mode="after")
    def _size_for_claims(self) -> ModelCache:
        if self.volume is CacheVolume.PERSISTENT_VOLUME_CLAIM and self.size is None:
            raise ValueError(
                "a PersistentVolumeClaim cache needs a size; set size to more than the model's weights, "
                "e.g. 50Gi, or use volume: NodeLocal"
            )
        if self.volume is CacheVolume.NODE_LOCAL and (self.size or self.storage_class_name):
            raise ValueError(
                "a NodeLocal cache takes no size or storageClassName; remove them, or use volume: PersistentVolumeClaim"
            )
        return self


class ScalingMetric(StrEnum):
    """The load signals a deployment scales on, each one of vLLM's own metrics
    (`infra.serving.autoscaling.VLLM_METRICS` names them and their source)."""

    REQUESTS_WAITING = "RequestsWaiting"
    REQUESTS_RUNNING = "RequestsRunning"
    KV_CACHE_USAGE = "KVCacheUsage"


class Autoscaling(Model):
    """`deployments[].autoscaling`: replicas follow `metric`, kept between the bounds.

    `target` is the metric's value one replica is meant to carry: a request count for the request
    metrics, a fraction of the KV cache (0 to 1) for `KVCacheUsage`. Rules across keys (`minReplicas: 0`,
    `replicas` beside it): `infra.config.rules.check_autoscaling`.
    """

    min_replicas: Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)] = 1
    max_replicas: Annotated[StrictInt, Field(ge=1, le=MAX_REPLICAS)]
    metric: ScalingMetric
    target: Annotated[float, Field(gt=0)]

    @model_validator(mode="after")
    def _bounds(self) -> Autoscaling:
        if self.min_replicas > self.max_replicas:
            raise ValueError(
                f"minReplicas {self.min_replicas} is above maxReplicas {self.max_replicas}; "
                "set minReplicas at most maxReplicas"
            )
        if self.metric is ScalingMetric.KV_CACHE_USAGE and self.target > 1:
            raise ValueError(
                f"KVCacheUsage is a fraction of the KV cache from 0 to 1, not {self.target:g}; "
                "write the target as a fraction, e.g. 0.8"
            )
        return self


class SecureValue(Model):
    """A `secure:` value inside structured config: ciphertext offline, never shown in plain."""

    secure: str


# An env value is plain text or a `secure:` mapping. The discriminator picks the one member the
# value can be (a mapping: a secret reference), so a mistake gets one error, not one per member.
# The tags appear in pydantic's error locations; `issues_from_validation` drops them, since they
# name no place in the stack file (the parentheses keep them apart from the keys users write).
UNION_TAGS = frozenset({"(text)", "(secure)"})


def _env_value_kind(value: Any) -> str:
    return "(secure)" if isinstance(value, dict | SecureValue) else "(text)"


EnvValue = Annotated[
    Annotated[str, Tag("(text)")] | Annotated[SecureValue, Tag("(secure)")], Discriminator(_env_value_kind)
]


class ModelDeploymentSpec(Model):
    # The name is also the Service's name, and a Service's name is an RFC 1035 label
    # (https://kubernetes.io/docs/concepts/services-networking/service/): it starts with a letter.
    name: DnsLabel
    namespace: DnsLabel = "default"
    cluster: str
    pool: str
    image: str
    args: list[str] = Field(default_factory=list)
    replicas: Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)] = 1
    devices: Annotated[list[DeploymentDevice], Field(min_length=1)]
    # Environment variable names: any printable ASCII but '=' (KEP-4369, on by default since
    # Kubernetes 1.32, the floor here is 1.34), and not empty. A `secure:` value (a gated model's
    # token) reaches the pod through a Secret, never in plain.
    env: dict[str, EnvValue] = Field(default_factory=dict)
    # Size of the memory-backed /dev/shm; it counts against the node's RAM (and the pod's memory).
    shm_size: str = "2Gi"

    # The one port of the engine: the program passes it as `--port`, and the container port, the
    # probes, the Service and the route all use it (check_serving rejects args that set another).
    port: Annotated[int, Field(ge=1, le=65535)] = 8000
    # Memory request and limit of the engine container (the same value: an engine is not burstable);
    # when it is required: check_serving.
    memory: str | None = None
    cache: ModelCache | None = None
    # How long a first start may take (download and load) before the startup probe gives up.
    startup_seconds: Annotated[int, Field(ge=60, le=86400)] = 1800
    # Replicas that follow the load (a KEDA ScaledObject); exclusive with `replicas`.
    autoscaling: Autoscaling | None = None

    @property
    def peak_replicas(self) -> int:
        """The most replicas the deployment runs: `replicas`, or `autoscaling.maxReplicas`. What the
        pool must hold at its largest (`infra.schedulable`)."""
        return self.autoscaling.max_replicas if self.autoscaling is not None else self.replicas

    @property
    def peak_replicas_key(self) -> str:
        """The key under the deployment that sets `peak_replicas`."""
        return "autoscaling.maxReplicas" if self.autoscaling is not None else "replicas"

    @property
    def least_replicas(self) -> int:
        """The fewest replicas the deployment runs: `replicas`, or `autoscaling.minReplicas`."""
        return self.autoscaling.min_replicas if self.autoscaling is not None else self.replicas

    # Multi-node replicas: how many nodes one replica spans, one pod on each. Above 1 the
    # deployment is a LeaderWorkerSet of groups of this size (`components.features.multinode`); the rules
    # across keys are `infra.config.rules.check_multinode`.
    nodes: Annotated[StrictInt, Field(ge=1, le=MAX_POOL_NODES)] = 1

    @field_validator("name")
    @classmethod
    def _service_name(cls, v: str) -> str:
        if not DNS1035_LABEL.match(v):
            raise ValueError(
                f"{shown(v)} also names the deployment's Service, which must start with a letter; "
                "start the name with a lowercase letter"
            )
        return v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str | SecureValue]) -> dict[str, str | SecureValue]:
        for name in v:
            if not name or "=" in name or not all(" " <= ch <= "~" for ch in name):
                raise ValueError(
                    f"{shown(name)} is not an environment variable name; use printable ASCII characters "
                    "other than '=', such as VLLM_LOGGING_LEVEL"
                )
        return v

    @field_validator("shm_size", "memory", mode="before")
    @classmethod
    def _positive_size(cls, v: Any) -> str | None:
        if v is None:
            return None
        text = str(v) if isinstance(v, int) and not isinstance(v, bool) else v
        size = parse_quantity(text) if isinstance(text, str) else None
        if size is None or size <= 0:
            raise ValueError(f"{shown(v)} is not a positive size; write a quantity of memory such as 2Gi or 512Mi")
        return str(text)


# Path prefixes a route matches: `/`, `/qwen`, `/team/qwen` (no trailing slash, no query).
RoutePath = Annotated[str, StringConstraints(pattern=r"^/([A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*)?$", max_length=200)]
# A listener/route hostname as Gateway API accepts it, without wildcards (a certificate names it).
Hostname = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$", max_length=253),
]


class IssuerKind(StrEnum):
    CLUSTER_ISSUER = "ClusterIssuer"
    ISSUER = "Issuer"


class IssuerRef(Model):
    name: DnsLabel
    kind: IssuerKind = IssuerKind.CLUSTER_ISSUER


class ServiceTls(Model):
    """TLS on the Gateway for the service's host, with a certificate from a cert-manager issuer."""

    issuer_ref: IssuerRef


class ModelServiceSpec(Model):
    """`modelplane:services[]`: publish one deployment through its cluster's Envoy Gateway."""

    name: DnsLabel
    deployment: str
    # Needed only when deployments of that name run on more than one cluster.
    cluster: str | None = None
    host: Hostname | None = None
    # Default: `/<name>` without a host, `/` with one.
    path: RoutePath | None = None
    tls: ServiceTls | None = None

    @property
    def route_path(self) -> str:
        if self.path is not None:
            return self.path
        return "/" if self.host else f"/{self.name}"


class Budget(Model):
    """`modelplane:budget`: what the stack may cost a month, in USD (`infra.cost` checks it)."""

    monthly_usd: Annotated[Decimal, Field(gt=0)]


def _mirror_url(v: Any) -> Any:
    """A chart mirror's URL: an HTTP(S) Helm repository or an `oci://` registry prefix, with its host."""
    if not isinstance(v, str):
        return v  # the type check says what the key takes
    if not v.strip():
        raise ValueError(
            "the URL is empty; write the mirror's URL, such as https://charts.example.internal or "
            "oci://registry.example.internal/charts"
        )
    scheme, sep, _ = v.partition("://")
    if not sep or scheme not in MIRROR_SCHEMES:
        raise ValueError(
            f"{shown(v)} is not an http://, https:// or oci:// URL; Helm reads charts from an HTTP(S) chart "
            "repository or an OCI registry, so write one of those"
        )
    if not MIRROR_URL_RE.match(v):
        raise ValueError(
            f"{shown(v)} names no host, or has spaces, a query or a fragment; write {scheme}://<host>[/<path>]"
        )
    # Charts are addressed below the URL (`<url>/index.yaml`, `<prefix>/<chart>`): one form, no trailing slash.
    return v.rstrip("/")


def _chart_version(v: Any) -> Any:
    if isinstance(v, str) and not EXACT_CHART_VERSION.match(v):
        raise ValueError(
            f"{shown(v)} is not an exact chart version (semver such as 1.2.3 or v1.2.3, no range or wildcard); "
            "write the version the mirror serves"
        )
    return v


# The schemes Helm fetches charts over: an HTTP(S) chart repository, or an OCI registry.
MIRROR_SCHEMES = ("http", "https", "oci")
# A host, then an optional path; no spaces, query or fragment (Helm appends `/index.yaml` or `/<chart>`).
MIRROR_URL_RE = re.compile(r"^(?:https?|oci)://[^/\s?#]+(?:/[^\s?#]*)?$")

MirrorUrl = Annotated[str, BeforeValidator(_mirror_url)]
ChartVersion = Annotated[str, BeforeValidator(_chart_version)]


class MirroredChart(Model):
    """`modelplane:chartMirror.components.<key>`: where one component's chart comes from instead.

    A URL alone may be written as the value. `version` names the version the mirror serves when
    it is not the catalog's pin (the plan then warns that the values were checked against the pin).
    """

    url: MirrorUrl | None = None
    version: ChartVersion | None = None

    @model_validator(mode="before")
    @classmethod
    def _url_alone(cls, v: Any) -> Any:
        return {"url": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _says_something(self) -> MirroredChart:
        if self.url is None and self.version is None:
            raise ValueError("names neither url nor version; write {url: ...}, {version: ...} or remove the entry")
        return self


class ChartMirror(Model):
    """`modelplane:chartMirror`: a Helm repository serving every component's chart in place of its own.

    A URL alone may be written as the value. Which component keys exist, and where each row's
    chart then comes from, is the serving stack's (`infra.serving.mirror`).
    """

    url: MirrorUrl | None = None
    components: dict[str, MirroredChart] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _url_alone(cls, v: Any) -> Any:
        return {"url": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _says_something(self) -> ChartMirror:
        if self.url is None and not self.components:
            raise ValueError(
                "names no mirror; write the mirror's URL (chartMirror: https://charts.example.internal) "
                "or per-component entries under components"
            )
        return self


class Fleet(Model):
    classes: list[InferenceClass] = Field(default_factory=list)
    clusters: list[InferenceCluster] = Field(default_factory=list)
    deployments: list[ModelDeploymentSpec] = Field(default_factory=list)
    services: list[ModelServiceSpec] = Field(default_factory=list)
    protect: bool = False
    budget: Budget | None = None
    chart_mirror: ChartMirror | None = None

    @field_validator("protect", mode="before")
    @classmethod
    def _pulumi_bool(cls, v: Any) -> Any:
        # The spellings Pulumi's own `Config.get_bool` takes (pulumi/config.py, `_get_bool`); the
        # CLI hands `protect: true` over as the text "true". Anything else ("yes", "1", "on") is
        # refused rather than read as pydantic would, so a typo never decides whether clusters
        # may be deleted.
        if isinstance(v, bool) or v in ("true", "True", "false", "False"):
            return v
        raise ValueError(f"{shown(v)} is not true or false; write protect: true or protect: false")

    def class_named(self, name: str) -> InferenceClass:
        for c in self.classes:
            if c.name == name:
                return c
        raise KeyError(name)

    def cluster_named(self, name: str) -> InferenceCluster:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(name)
