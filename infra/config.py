"""The typed fleet model and its loader.

A stack file (`stacks/Pulumi.<stack>.yaml`) is ordinary Pulumi stack config. Everything under the
`modelplane:` namespace is parsed here, once, into pydantic models; every later step (device rules,
derived facts, components, the offline plan, the policy pack) reads these models and never the raw
config. This module checks shape and references; the device rules live in `infra.devices`.

Errors never raise to the user as tracebacks: `load_stack_file` and `parse_fleet` collect
`ConfigIssue`s that name the file, the path inside it (`clusters[0].nodePools[1].className`), what
is wrong and how to fix it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    StringConstraints,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from infra import vocabulary as vocab
from infra.formats import image_problem, parse_image, parse_quantity
from infra.profiles import PROFILES, profile
from infra.vocabulary import CPU_DRIVER

NAMESPACE = "modelplane"
FLEET_KEYS = ("classes", "clusters", "deployments", "services", "protect", "budget")
# A `secure:` env value makes the engine mark the whole `modelplane:deployments` key secret and hand
# the program its decrypted text (pulumi/pulumi#3342); no other fleet key may be a secret.
SECRET_FLEET_KEYS = ("deployments",)
# Rejected values are echoed up to this many characters, so one long value cannot bury the error.
SHOWN_MAX = 80


def shown(value: Any) -> str:
    """A rejected value as an error message quotes it: its repr, cut to SHOWN_MAX characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"a {value.bit_length()}-bit integer"  # repr of a 4,301-digit int raises
    return cut(repr(value) if isinstance(value, str | int | float | bool) or value is None else type(value).__name__)


def cut(text: str) -> str:
    """`text` up to SHOWN_MAX characters, saying how long it was when cut."""
    return text if len(text) <= SHOWN_MAX else f"{text[: SHOWN_MAX - 1]}… ({len(text)} characters)"


DnsLabel = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)]
PoolName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=40)]
# A DRA driver name is a DNS subdomain (KEP-4381), e.g. `gpu.nvidia.com`, `dra.cpu`.
DriverName = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", max_length=63),
]


# Kubernetes object-name and label rules, from the API machinery's validators
# (k8s.io/apimachinery/pkg/util/validation/validation.go, v0.34) as
# https://kubernetes.io/docs/concepts/overview/working-with-objects/names/ and
# https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set state them.
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*\Z")
DNS1123_SUBDOMAIN_MAX = 253
# A Service's name is an RFC 1035 label: it starts with a letter.
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
LABEL_MAX = 63
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")


def label_value_problem(value: str) -> str | None:
    """Why `value` is no label value: at most 63 characters, alphanumeric at both ends, `-_.` inside."""
    if len(value) > LABEL_MAX:
        return f"{shown(value)} is longer than the {LABEL_MAX} characters a label value holds"
    if not LABEL_VALUE.match(value):
        return f"{shown(value)} is not a label value (letters, digits, '-', '_', '.'; alphanumeric at both ends)"
    return None


def qualified_name_problem(key: str) -> str | None:
    """Why `key` is no label or taint key: `[prefix/]name`, prefix a DNS subdomain, name as a label value."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > DNS1123_SUBDOMAIN_MAX or not DNS1123_SUBDOMAIN.match(prefix)):
        return f"the prefix of {shown(key)} is not a DNS subdomain (lowercase letters, digits, '-' and '.')"
    if not name or len(name) > LABEL_MAX or not _QUALIFIED_NAME.match(name):
        return (
            f"{shown(key)} is not a qualified name ([prefix/]name, the name 1-{LABEL_MAX} letters, digits, "
            "'-', '_', '.', alphanumeric at both ends)"
        )
    return None


# Devices of one kind on a node: a device's count and an accelerator's count share this bound.
MAX_DEVICES_PER_NODE = 64
# Kubernetes supports clusters of up to 5,000 nodes
# (https://kubernetes.io/docs/setup/best-practices/cluster-large/); no pool is larger.
MAX_POOL_NODES = 5000
# `replicas` is an int32 in apps/v1 DeploymentSpec.
MAX_REPLICAS = 2**31 - 1


class Model(BaseModel):
    """Base for every config model: camelCase keys as in YAML manifests, unknown keys rejected.

    Whole numbers are `StrictInt`: pydantic would otherwise read `count: true` as 1 and `2.0` as 2.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_quoted_whole_numbers(cls, v: Any, info: ValidationInfo) -> Any:
        """A whole number is written as a number everywhere: `"3"` is rejected, as the JSON Schema does.

        pydantic alone would accept `"3"` for an integer while the schema editors check against
        rejects it; one answer for every integer key keeps the two in agreement.
        """
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and isinstance(v, str) and _NUMBER_RE.match(v) and _whole_number(field.annotation):
            raise ValueError(f"{v!r} is a quoted string, not a whole number; write it without quotes")
        return v


_NUMBER_RE = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*$")


def _whole_number(annotation: Any) -> bool:
    """True for `int`, `Annotated[int, ...]` and their `| None` forms."""
    if annotation is int:
        return True
    args = [a for a in get_args(annotation) if a is not type(None)]
    return get_origin(annotation) in (Annotated, Union, UnionType) and len(args) >= 1 and _whole_number(args[0])


class ClaimMode(StrEnum):
    DRA = "DRA"
    SYNTHETIC = "Synthetic"


class Provider(StrEnum):
    GKE = vocab.GKE
    EKS = vocab.EKS
    AKS = vocab.AKS
    CIVO = vocab.CIVO
    VULTR = vocab.VULTR


class Source(StrEnum):
    GKE = vocab.GKE
    EKS = vocab.EKS
    AKS = vocab.AKS
    CIVO = vocab.CIVO
    VULTR = vocab.VULTR
    EXISTING = vocab.EXISTING


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


class Accelerator(Model):
    # The type becomes the value of the pool's `modelplane.ai/gpu` label, so it follows the label-value rule.
    type: Annotated[str, StringConstraints(min_length=1)]
    # The same bound as a device's count: on Existing the accelerator is derived from that count.
    count: Annotated[StrictInt, Field(ge=1, le=MAX_DEVICES_PER_NODE)]

    @field_validator("type")
    @classmethod
    def _label_value(cls, v: str) -> str:
        problem = label_value_problem(v)
        if problem:
            raise ValueError(f"{problem}; write the type as the cloud names it, such as nvidia-l4")
        return v

    @property
    def vendor(self) -> str:
        """The vendor prefix of the type (`nvidia-l4` -> `nvidia`)."""
        return self.type.split("-", 1)[0]


class GkeMachine(Model):
    machine_type: str
    disk_size_gb: Annotated[StrictInt, Field(ge=10)] = 100
    accelerator: Accelerator | None = None


class EksMachine(Model):
    instance_type: str
    disk_size_gb: Annotated[StrictInt, Field(ge=10)] = 100
    accelerator: Accelerator | None = None


class AksMachine(Model):
    vm_size: str
    disk_size_gb: Annotated[StrictInt, Field(ge=10)] = 100
    accelerator: Accelerator | None = None


class CivoMachine(Model):
    size: str
    accelerator: Accelerator | None = None


class VultrMachine(Model):
    plan: str
    accelerator: Accelerator | None = None


Machine = GkeMachine | EksMachine | AksMachine | CivoMachine | VultrMachine


class Provisioning(Model):
    provider: Provider
    gke: GkeMachine | None = None
    eks: EksMachine | None = None
    aks: AksMachine | None = None
    civo: CivoMachine | None = None
    vultr: VultrMachine | None = None

    @property
    def machine(self) -> Machine:
        block = getattr(self, self.provider.lower())
        assert block is not None, "validated by check_blocks"
        return block  # type: ignore[no-any-return]

    @property
    def machine_name(self) -> str:
        m = self.machine
        for attr in ("machine_type", "instance_type", "vm_size", "size", "plan"):
            if hasattr(m, attr):
                return str(getattr(m, attr))
        raise AssertionError(type(m))

    @property
    def accelerator(self) -> Accelerator | None:
        return self.machine.accelerator


class InferenceClass(Model):
    name: DnsLabel
    description: str = ""
    devices: Annotated[list[Device], Field(min_length=1, max_length=16)]
    provisioning: Provisioning | None = None


class GkeCluster(Model):
    project: str
    region: str
    kubernetes_version: str


class EksCluster(Model):
    region: str
    kubernetes_version: str


class AksCluster(Model):
    location: str
    kubernetes_version: str


class CivoCluster(Model):
    region: str
    kubernetes_version: str


class VultrCluster(Model):
    region: str
    kubernetes_version: str


class ExistingCluster(Model):
    kubeconfig_key: str = "kubeconfig"
    context: str | None = None
    # The cluster already runs the GPU operator for its GPUs (NVIDIA's or AMD's): the serving stack
    # installs no second one and relies on the owner's (docs/existing-clusters.md).
    owner_gpu_operator: bool = False


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

    @field_validator("zones")
    @classmethod
    def _zone_names(cls, v: list[str]) -> list[str]:
        for zone in v:
            problem = label_value_problem(zone) if zone else "a zone name is empty"
            if problem:
                raise ValueError(f"{problem}; write the zone as the cloud names it, such as us-central1-a")
        return v


class InferenceCluster(Model):
    name: DnsLabel
    labels: dict[str, str] = Field(default_factory=dict)
    source: Source
    gke: GkeCluster | None = None
    eks: EksCluster | None = None
    aks: AksCluster | None = None
    civo: CivoCluster | None = None
    vultr: VultrCluster | None = None
    existing: ExistingCluster | None = None
    node_pools: Annotated[list[NodePool], Field(min_length=1, max_length=8)]
    taints: list[Taint] = Field(default_factory=list)

    @property
    def block(self) -> GkeCluster | EksCluster | AksCluster | CivoCluster | VultrCluster | ExistingCluster:
        block = getattr(self, self.source.lower())
        assert block is not None, "validated by check_blocks"
        return block  # type: ignore[no-any-return]

    @property
    def provisioned(self) -> bool:
        return profile(self.source).provisioned


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


class SecureValue(Model):
    """A `secure:` value inside structured config: ciphertext offline, never shown in plain."""

    secure: str


# An env value is plain text or a `secure:` mapping. The discriminator picks the one member the
# value can be (a mapping: a secret reference), so a mistake gets one error, not one per member.
# The tags appear in pydantic's error locations; `_issues_from_validation` drops them, since they
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


class Fleet(Model):
    classes: list[InferenceClass] = Field(default_factory=list)
    clusters: list[InferenceCluster] = Field(default_factory=list)
    deployments: list[ModelDeploymentSpec] = Field(default_factory=list)
    services: list[ModelServiceSpec] = Field(default_factory=list)
    protect: bool = False
    budget: Budget | None = None

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


# --------------------------------------------------------------------------------------------
# Errors


@dataclass(frozen=True)
class ConfigIssue:
    """A bad input: where it is (file and path inside it), what is wrong, and the fix."""

    file: str
    path: str
    problem: str
    fix: str

    @property
    def message(self) -> str:
        return f"{self.problem}. Fix: {self.fix} (in {self.file})"

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.problem}. Fix: {self.fix}"


class ConfigError(Exception):
    """Raised with every issue found; the CLI and the program print them without a traceback."""

    def __init__(self, issues: Sequence[ConfigIssue]):
        self.issues = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


def format_path(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _fields_of(model: type[BaseModel]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items()]


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model class that owns the mapping at `loc` (used for did-you-mean on unknown keys)."""
    current: Any = Fleet
    user_keyed = False
    for part in loc:
        if isinstance(part, int) or user_keyed:
            # A list index, or a name the user chose in a map of models (`attributes.<name>`).
            user_keyed = False
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = next((f for n, f in current.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return None
        current = _inner_model(field.annotation)
        user_keyed = get_origin(field.annotation) is dict
    # The mapping at `attributes` itself is keyed by the user, not by a model's fields.
    return None if user_keyed or not (isinstance(current, type) and issubclass(current, BaseModel)) else current


def _inner_model(annotation: Any) -> Any:
    from typing import get_args

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


_TYPE_FIX = {
    "int_type": "write a whole number",
    "int_parsing": "write a whole number",
    "bool_type": "write true or false",
    "bool_parsing": "write true or false",
    "string_type": "write a string",
    "list_type": "write a YAML list (items starting with '-')",
    "dict_type": "write a YAML mapping (key: value)",
    "model_type": "write a YAML mapping (key: value)",
    "model_attributes_type": "write a YAML mapping (key: value)",
    "missing": "add the key",
    "enum": "use one of the allowed values",
    "literal_error": "use one of the allowed values",
    "string_pattern_mismatch": "use lowercase letters, digits and '-' (a DNS label)",
    "string_too_long": "shorten it",
    "too_short": "add at least the minimum number of items",
    "too_long": "remove items down to the maximum",
    "greater_than_equal": "raise the value to the minimum",
    "less_than_equal": "lower the value to the maximum",
}


def _issues_from_validation(file: str, err: ValidationError) -> list[ConfigIssue]:
    issues = []
    for e in err.errors():
        loc = [p for p in e["loc"] if isinstance(p, str | int) and p not in UNION_TAGS]
        kind = e["type"]
        owner_of_last = _model_at(loc[:-1]) if loc and isinstance(loc[-1], str) else None
        if owner_of_last is not None and str(loc[-1]) in owner_of_last.model_fields:
            # pydantic reports a validated default under the Python name; users write the alias.
            loc[-1] = owner_of_last.model_fields[str(loc[-1])].alias or loc[-1]
        if kind == "extra_forbidden":
            parent = loc[:-1]
            key = str(loc[-1])
            owner = _model_at(parent)
            known = _fields_of(owner) if owner else []
            close = difflib.get_close_matches(key, known, n=1)
            hint = (
                f"did you mean '{close[0]}'? Remove or rename it"
                if close
                else f"remove or rename it (known keys: {', '.join(known)})"
                if known
                else "remove it"
            )
            issues.append(ConfigIssue(file, format_path(loc), f"unknown key {shown(key)}", hint))
            continue
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
            problem, _, fix = msg.rpartition("; ") if "; " in msg else (msg, "", "")
            issues.append(ConfigIssue(file, format_path(loc), problem, fix or "correct the value"))
            continue
        given = e.get("input")
        got = "" if kind == "missing" else f" (got {shown(given)})" if not isinstance(given, dict | list) else ""
        fix = _TYPE_FIX.get(kind, "correct the value")
        if kind in ("model_type", "model_attributes_type"):
            # Name the keys the mapping takes, not the class behind it (`Accelerator`).
            owner = _model_at(loc)
            if owner is not None:
                required = [f.alias or n for n, f in owner.model_fields.items() if f.is_required()]
                keys = ", ".join(required or _fields_of(owner))
                if isinstance(loc[-1], int):
                    # A list item has no key of its own; name the list it belongs to.
                    msg = f"each item of '{loc[-2]}' is a mapping with keys {{{keys}}}"
                    fix = f"write item {loc[-1]} as - {{{keys}}}"
                else:
                    msg = f"'{loc[-1]}' is a mapping with keys {{{keys}}}"
                    fix = f"write it as {loc[-1]}: {{{keys}}}"
        if kind == "string_type" and isinstance(given, int | float) and not isinstance(given, bool):
            fix = f'quote it: "{given}" (YAML reads an unquoted {given} as a number)'
        if kind in ("enum", "literal_error"):
            expected = (e.get("ctx") or {}).get("expected", "")
            fix = f"use one of {expected}"
        if kind == "missing":
            fix = f"add '{loc[-1]}'"
        issues.append(ConfigIssue(file, format_path(loc), f"{msg[0].lower()}{msg[1:]}{got}", fix))
    return issues


def _duplicates(names: Sequence[str]) -> set[str]:
    seen: set[str] = set()
    dups: set[str] = set()
    for n in names:
        (dups if n in seen else seen).add(n)
    return dups


def _unique_names(file: str, names: Sequence[str], path: str, what: str) -> list[ConfigIssue]:
    """One issue per repeated name, at its second occurrence (`path` has `{i}` for the index)."""
    return [
        ConfigIssue(
            file,
            path.format(i=names.index(name, names.index(name) + 1)),
            f"{what} name '{name}' is declared twice",
            f"give each {what} a unique name",
        )
        for name in sorted(_duplicates(names))
    ]


def check_references(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """Cross-field rules that a single field cannot express: blocks, names, references, bounds."""
    issues: list[ConfigIssue] = []
    class_names = [c.name for c in fleet.classes]
    issues += _unique_names(file, class_names, "classes[{i}].name", "class")

    for ci, cls in enumerate(fleet.classes):
        dev_names = [d.name for d in cls.devices]
        issues += _unique_names(file, dev_names, f"classes[{ci}].devices[{{i}}].name", "device")
        prov = cls.provisioning
        if prov is not None:
            wanted = prov.provider.lower()
            if getattr(prov, wanted) is None:
                issues.append(
                    ConfigIssue(
                        file,
                        f"classes[{ci}].provisioning.{wanted}",
                        f"provider is {prov.provider} but the '{wanted}' block is missing",
                        f"add a '{wanted}' block with the machine for {prov.provider}",
                    )
                )
            for other in ("gke", "eks", "aks", "civo", "vultr"):
                if other != wanted and getattr(prov, other) is not None:
                    issues.append(
                        ConfigIssue(
                            file,
                            f"classes[{ci}].provisioning.{other}",
                            f"a '{other}' block is set but provider is {prov.provider}",
                            f"remove the '{other}' block or set provider to match it",
                        )
                    )

    cluster_names = [c.name for c in fleet.clusters]
    issues += _unique_names(file, cluster_names, "clusters[{i}].name", "cluster")

    for ki, cluster in enumerate(fleet.clusters):
        base = f"clusters[{ki}]"
        wanted = cluster.source.lower()
        if getattr(cluster, wanted) is None:
            if not cluster.provisioned:  # the cluster is the owner's: its block names the kubeconfig
                hint = (
                    f"add '{wanted}: {{kubeconfigKey: kubeconfig}}' and set that key with "
                    f"`pulumi config set --secret {NAMESPACE}:kubeconfig < path/to/kubeconfig`"
                )
            else:
                hint = f"add a '{wanted}' block ({_block_keys(wanted)})"
            issues.append(
                ConfigIssue(
                    file, f"{base}.{wanted}", f"source is {cluster.source} but the '{wanted}' block is missing", hint
                )
            )
        for other in ("gke", "eks", "aks", "civo", "vultr", "existing"):
            if other != wanted and getattr(cluster, other) is not None:
                issues.append(
                    ConfigIssue(
                        file,
                        f"{base}.{other}",
                        f"a '{other}' block is set but source is {cluster.source}",
                        f"remove the '{other}' block or set source to match it",
                    )
                )
        block = getattr(cluster, wanted)
        if cluster.provisioned and block is not None:
            version_path = f"{base}.{wanted}.kubernetesVersion"
            issues.extend(
                _check_version(file, version_path, block.kubernetes_version)
                or _check_capacity_claims(fleet, cluster, file, version_path, block.kubernetes_version)
            )
        issues.extend(_check_cloud_names(file, base, cluster))
        pool_names = [p.name for p in cluster.node_pools]
        for name in _duplicates(pool_names) | ({"system"} & set(pool_names)):
            idx = [i for i, n in enumerate(pool_names) if n == name]
            pi = idx[1] if len(idx) > 1 else idx[0]
            problem = (
                "pool name 'system' is reserved for the system pool every cluster gets"
                if name == "system" and len(idx) == 1
                else f"pool name '{name}' is declared twice in cluster '{cluster.name}'"
            )
            issues.append(
                ConfigIssue(
                    file, f"{base}.nodePools[{pi}].name", problem, "give each pool a unique name other than 'system'"
                )
            )
        for pi, pool in enumerate(cluster.node_pools):
            ppath = f"{base}.nodePools[{pi}]"
            if pool.class_name not in class_names:
                close = difflib.get_close_matches(pool.class_name, class_names, n=1)
                hint = (
                    f"did you mean '{close[0]}'?"
                    if close
                    else f"declare it under modelplane:classes or use one of: {', '.join(class_names) or '(none declared)'}"
                )
                issues.append(ConfigIssue(file, f"{ppath}.className", f"unknown class '{pool.class_name}'", hint))
            lo, hi = pool.min_node_count, pool.max_node_count
            if (lo is None) != (hi is None):
                missing = "maxNodeCount" if hi is None else "minNodeCount"
                issues.append(
                    ConfigIssue(
                        file,
                        f"{ppath}.{missing}",
                        "autoscaling needs both minNodeCount and maxNodeCount",
                        f"set {missing} too, or remove the other bound",
                    )
                )
            elif lo is not None and hi is not None:
                if lo > hi:
                    issues.append(
                        ConfigIssue(
                            file,
                            f"{ppath}.minNodeCount",
                            f"minNodeCount {lo} is greater than maxNodeCount {hi}",
                            "make minNodeCount <= nodeCount <= maxNodeCount",
                        )
                    )
                elif not lo <= pool.node_count <= hi:
                    issues.append(
                        ConfigIssue(
                            file,
                            f"{ppath}.nodeCount",
                            f"nodeCount {pool.node_count} is outside {lo}..{hi}",
                            "make minNodeCount <= nodeCount <= maxNodeCount",
                        )
                    )
            if lo is not None and hi is not None and not profile(cluster.source).autoscaler:
                issues.append(
                    ConfigIssue(
                        file,
                        f"{ppath}.minNodeCount",
                        f"{cluster.source} pools do not autoscale (nothing scales them between "
                        "minNodeCount and maxNodeCount)",
                        "remove minNodeCount and maxNodeCount and set nodeCount to the nodes the pool needs",
                    )
                )

    for di, dep in enumerate(fleet.deployments):
        dpath = f"deployments[{di}]"
        if dep.cluster not in cluster_names:
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.cluster",
                    f"unknown cluster '{dep.cluster}'",
                    # parse_fleet refuses a fleet without clusters before these checks run.
                    f"use one of: {', '.join(cluster_names)}",
                )
            )
            continue
        cluster = fleet.cluster_named(dep.cluster)
        pools = {p.name: p for p in cluster.node_pools}
        if dep.pool not in pools:
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.pool",
                    f"cluster '{dep.cluster}' has no pool '{dep.pool}'",
                    f"use one of: {', '.join(pools)}",
                )
            )
            continue
        target = pools[dep.pool]
        if dep.replicas > 0 and target.node_count == 0 and target.max_node_count is None:
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.pool",
                    f"pool '{dep.pool}' of cluster '{dep.cluster}' has nodeCount 0 and no autoscaling, "
                    f"so the {dep.replicas} replica(s) can never be scheduled",
                    f"give the pool nodeCount >= 1, or minNodeCount and maxNodeCount >= 1 (clusters[{cluster_names.index(dep.cluster)}]"
                    f".nodePools[{list(pools).index(dep.pool)}]), or set replicas: 0",
                )
            )
        if target.class_name not in class_names:
            continue
        cls = fleet.class_named(pools[dep.pool].class_name)
        devices = {d.name: d for d in cls.devices}
        for ri, req in enumerate(dep.devices):
            rpath = f"{dpath}.devices[{ri}]"
            dev = devices.get(req.name)
            if dev is None:
                issues.append(
                    ConfigIssue(
                        file,
                        f"{rpath}.name",
                        f"class '{cls.name}' has no device '{req.name}'",
                        f"use one of: {', '.join(devices)}",
                    )
                )
            elif dev.claim is not ClaimMode.DRA:
                issues.append(
                    ConfigIssue(
                        file,
                        f"{rpath}.name",
                        f"device '{req.name}' of class '{cls.name}' is Synthetic and cannot be claimed",
                        "claim a DRA device of the class",
                    )
                )
            elif req.count > dev.count:
                issues.append(
                    ConfigIssue(
                        file,
                        f"{rpath}.count",
                        f"count {req.count} is more than the {dev.count} '{req.name}' devices class '{cls.name}' has per node",
                        f"request at most {dev.count}",
                    )
                )
            elif dev.driver == CPU_CLAIM_DRIVER and claimed_cpus(dev) is None:
                issues.append(
                    ConfigIssue(
                        file,
                        f"{rpath}.name",
                        f"device '{req.name}' of class '{cls.name}' claims dra.cpu without a whole number of CPUs "
                        f"in capacity '{CPU_CLAIM_CAPACITY}'",
                        f"set classes[{fleet.classes.index(cls)}].devices[{cls.devices.index(dev)}].capacity."
                        f'{CPU_CLAIM_CAPACITY}.value to the CPUs a pod takes, such as "6"',
                    )
                )
    issues.extend(check_images(fleet, file))
    issues.extend(check_serving(fleet, file))
    issues.extend(check_plain_credentials(fleet, file))
    return issues


# Environment variable names that hold a credential, by a word in the name, and value prefixes
# that only credentials have: Hugging Face user access tokens (`hf_`, huggingface.co/docs/hub/
# security-tokens), GitHub tokens (`ghp_`, `github_pat_`, docs.github.com "About authentication"),
# OpenAI-style API keys (`sk-`), AWS access key ids (`AKIA`, AWS IAM "Understanding unique ID
# prefixes").
CREDENTIAL_NAME_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
CREDENTIAL_VALUE_PREFIXES = ("hf_", "ghp_", "github_pat_", "sk-", "AKIA")


def check_plain_credentials(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """Env values that look like credentials but are written in plain text.

    A plain value goes into the pod spec, the state and the plan's JSON as written; only a
    `secure:` value reaches the pod through a Secret. The message names the variable and never
    the value.
    """
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(fleet.deployments):
        for name, value in dep.env.items():
            if not isinstance(value, str) or not value:
                continue
            by_name = any(word in name.upper() for word in CREDENTIAL_NAME_WORDS)
            by_value = value.startswith(CREDENTIAL_VALUE_PREFIXES)
            if not (by_name or by_value):
                continue
            why = "its name says it holds a credential" if by_name else "its value has a credential's prefix"
            issues.append(
                ConfigIssue(
                    file,
                    f"deployments[{di}].env.{name}",
                    f"env {shown(name)} is written in plain text and {why} (the value is not shown)",
                    f"store it as a secret: pulumi config set --secret --path "
                    f"'{NAMESPACE}:deployments[{di}].env.{name}' <value>",
                )
            )
    return issues


# A dra.cpu claim takes CPUs through this consumable capacity (dra-driver-cpu grouped mode); the
# pod must also request and limit exactly that many CPUs (components.model_deployment).
CPU_CLAIM_DRIVER = CPU_DRIVER
CPU_CLAIM_CAPACITY = "dra.cpu/cpu"


def claimed_cpus(device: Device) -> int | None:
    """Whole CPUs one `dra.cpu` device of the class hands a claim, or None when not a whole number."""
    cap = device.capacity.get(CPU_CLAIM_CAPACITY)
    if cap is None:
        return None
    cpus = parse_quantity(cap.value)
    # 500m is half a CPU: a claim takes whole CPUs.
    if cpus is None or cpus <= 0 or cpus != cpus.to_integral_value():
        return None
    return int(cpus)


def check_images(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """Deployment images are pinned: a digest, or a tag that does not float (`infra.formats`).

    An untagged image means `latest`, and a floating tag lets a node pull an engine nobody
    reviewed the next time a pod restarts.
    """
    issues = []
    for di, dep in enumerate(fleet.deployments):
        problem = image_problem(dep.image)
        if problem is not None:
            pin = "" if parse_image(dep.image) is None else "is not pinned: it "
            issues.append(
                ConfigIssue(
                    file,
                    f"deployments[{di}].image",
                    f"image {shown(dep.image)} {pin}{problem}",
                    "pin an exact version tag or a digest, e.g. vllm/vllm-openai:v0.23.0",
                )
            )
    return issues


# The flag vLLM's OpenAI server takes its listening port from (`vllm serve --port`, default 8000).
PORT_FLAG = "--port"


def port_args(args: Sequence[str]) -> list[tuple[int, str | None]]:
    """Each `--port N` / `--port=N` in the args: (index of the flag, its value or None when missing)."""
    found: list[tuple[int, str | None]] = []
    for i, arg in enumerate(args):
        if arg == PORT_FLAG:
            found.append((i, args[i + 1] if i + 1 < len(args) else None))
        elif arg.startswith(PORT_FLAG + "="):
            found.append((i, arg.split("=", 1)[1] or None))
    return found


def check_serving(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """The engine's port, memory and cache, and `services[]` references (docs/serving.md)."""
    from infra.devices import claimed_drivers, role_of  # the role rule lives with the device rules

    issues: list[ConfigIssue] = []
    for di, dep in enumerate(fleet.deployments):
        dpath = f"deployments[{di}]"
        for ai, value in port_args(dep.args):
            if value == str(dep.port):
                continue
            shown = f"'{PORT_FLAG} {value}'" if value else f"'{PORT_FLAG}' without a value"
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.args[{ai}]",
                    f"args set {shown} but the deployment's port is {dep.port}",
                    f"remove it from args and set {dpath}.port"
                    + (f": {value}" if value and value.isdigit() else "")
                    + " (the container, probes, Service and route all follow port)",
                )
            )
        try:
            cluster = fleet.cluster_named(dep.cluster)
            pool = next(p for p in cluster.node_pools if p.name == dep.pool)
            role = role_of(claimed_drivers(fleet.class_named(pool.class_name)))
        except (KeyError, StopIteration):
            continue  # an unknown reference, reported by check_references
        if role == "GPU" and dep.memory is None:
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.memory",
                    f"deployment '{dep.name}' runs on GPU pool '{dep.pool}' without a memory request",
                    "set memory to what the engine holds in host RAM (weights are staged through it, plus "
                    f"shmSize {dep.shm_size}), e.g. memory: 32Gi",
                )
            )
        if dep.memory is not None and (parse_quantity(dep.memory) or 0) <= (parse_quantity(dep.shm_size) or 0):
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.memory",
                    f"memory {dep.memory} does not exceed shmSize {dep.shm_size}, which counts against it",
                    "raise memory above shmSize plus what the engine needs",
                )
            )
        cache = dep.cache
        if cache is not None and cache.volume is CacheVolume.PERSISTENT_VOLUME_CLAIM and dep.replicas > 1:
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.cache.volume",
                    f"a PersistentVolumeClaim cache is ReadWriteOnce: one node mounts it, not {dep.replicas} replicas",
                    "use volume: NodeLocal for several replicas, or replicas: 1",
                )
            )
        if (
            cache is not None
            and cache.volume is CacheVolume.PERSISTENT_VOLUME_CLAIM
            and cache.storage_class_name is None
            and profile(cluster.source).cache_storage_class is None
        ):
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.cache.storageClassName",
                    f"{cluster.source} cluster '{cluster.name}' has no StorageClass this program provides",
                    "set storageClassName to a class the cluster has (install its CSI driver first), "
                    "or use volume: NodeLocal",
                )
            )
    issues.extend(_check_services(fleet, file))
    return issues


def _check_services(fleet: Fleet, file: str) -> list[ConfigIssue]:
    issues = _unique_names(file, [s.name for s in fleet.services], "services[{i}].name", "service")
    routes: dict[tuple[str, str, str], int] = {}
    for si, svc in enumerate(fleet.services):
        spath = f"services[{si}]"
        matches = [d for d in fleet.deployments if d.name == svc.deployment and svc.cluster in (None, d.cluster)]
        if not matches:
            names = sorted({d.name for d in fleet.deployments})
            issues.append(
                ConfigIssue(
                    file,
                    f"{spath}.deployment",
                    f"no deployment '{svc.deployment}'" + (f" on cluster '{svc.cluster}'" if svc.cluster else ""),
                    f"use one of: {', '.join(names) or '(none declared)'}",
                )
            )
            continue
        if len(matches) > 1:
            issues.append(
                ConfigIssue(
                    file,
                    f"{spath}.cluster",
                    f"deployment '{svc.deployment}' runs on clusters {', '.join(d.cluster for d in matches)}",
                    "set cluster to the one whose gateway publishes this service",
                )
            )
            continue
        if svc.tls is not None and svc.host is None:
            issues.append(
                ConfigIssue(
                    file,
                    f"{spath}.tls",
                    "TLS needs a host to issue the certificate for",
                    f"set {spath}.host to the DNS name clients use, or remove tls",
                )
            )
        key = (matches[0].cluster, svc.host or "", svc.route_path)
        if key in routes:
            issues.append(
                ConfigIssue(
                    file,
                    f"{spath}.path",
                    f"services[{routes[key]}] already routes {svc.host or '(any host)'}{svc.route_path} "
                    f"on cluster '{key[0]}'",
                    "give each service on a cluster its own host or path",
                )
            )
        else:
            routes[key] = si
    return issues


# DRA (resource.k8s.io/v1) is GA and on by default from Kubernetes 1.34; every driver we install
# (NVIDIA DRA 0.4, dra-driver-cpu, AMD's DRA mode) claims devices through it.
MIN_KUBERNETES = (1, 34)
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)")


def _check_version(file: str, path: str, version: str) -> list[ConfigIssue]:
    m = _VERSION_RE.match(version)
    if m is None:
        return [
            ConfigIssue(
                file,
                path,
                f"'{version}' is not a Kubernetes version",
                "write it as the cloud does, e.g. 1.34 or 1.34.1-k3s1",
            )
        ]
    if (int(m[1]), int(m[2])) < MIN_KUBERNETES:
        floor = ".".join(map(str, MIN_KUBERNETES))
        return [
            ConfigIssue(
                file, path, f"Kubernetes {version} predates DRA's v1 API (GA in {floor})", f"use {floor} or newer"
            )
        ]
    return []


# A claim on the consumable capacity `dra.cpu/cpu` (dra-driver-cpu's grouped mode) is allocated
# only with the DRAConsumableCapacity feature gate: alpha (off) in 1.34 and 1.35, beta and on by
# default from 1.36 (KEP-5075; kubernetes-sigs/dra-driver-cpu docs/user/installation.md on main).
# Managed clouds do not turn on alpha gates, so on an older cluster such a claim never schedules.
MIN_KUBERNETES_CONSUMABLE_CAPACITY = (1, 36)


def _check_capacity_claims(
    fleet: Fleet, cluster: InferenceCluster, file: str, path: str, version: str
) -> list[ConfigIssue]:
    m = _VERSION_RE.match(version)
    if m is None or (int(m[1]), int(m[2])) >= MIN_KUBERNETES_CONSUMABLE_CAPACITY:
        return []
    classes = {c.name: c for c in fleet.classes}
    claiming = [
        f"'{pool.name}' (class '{pool.class_name}')"
        for pool in cluster.node_pools
        if pool.class_name in classes
        and any(
            d.claim is ClaimMode.DRA and d.driver == CPU_CLAIM_DRIVER and CPU_CLAIM_CAPACITY in d.capacity
            for d in classes[pool.class_name].devices
        )
    ]
    if not claiming:
        return []
    floor = ".".join(map(str, MIN_KUBERNETES_CONSUMABLE_CAPACITY))
    return [
        ConfigIssue(
            file,
            path,
            f"pool {', '.join(claiming)} claims capacity {CPU_CLAIM_CAPACITY}, which needs the DRAConsumableCapacity "
            f"feature gate: off before Kubernetes {floor}, so on {version} the claim never schedules",
            f"use Kubernetes {floor} or newer on this cluster, where the gate is on by default",
        )
    ]


def _check_cloud_names(file: str, base: str, cluster: InferenceCluster) -> list[ConfigIssue]:
    """The names and values a cluster's cloud API refuses (its `CloudProfile`), checked where the fleet declares them."""
    issues: list[ConfigIssue] = []
    cloud = profile(cluster.source)
    if cloud.name_rule is not None:
        rule = cloud.name_rule
        if not rule.pattern.match(cluster.name):
            issues.append(
                ConfigIssue(
                    file, f"{base}.name", f"{cloud.name} cluster names {rule.says}, not {shown(cluster.name)}", rule.fix
                )
            )
        for pi, pool in enumerate(cluster.node_pools):
            if not rule.pattern.match(pool.name):
                issues.append(
                    ConfigIssue(
                        file,
                        f"{base}.nodePools[{pi}].name",
                        f"{cloud.name} node pool names {rule.says}, not {shown(pool.name)}",
                        rule.fix,
                    )
                )
    if cloud.name_max_length is not None and len(cluster.name) > cloud.name_max_length:
        issues.append(
            ConfigIssue(
                file,
                f"{base}.name",
                f"the name is the {cloud.name} {cloud.name_used_as}, which holds at most {cloud.name_max_length} "
                f"characters, not {len(cluster.name)}",
                f"shorten the name to {cloud.name_max_length} characters",
            )
        )
    block = getattr(cluster, cluster.source.lower())
    version = getattr(block, "kubernetes_version", None)
    if cloud.version_pattern is not None and version is not None and not cloud.version_pattern.match(version):
        issues.append(
            ConfigIssue(
                file,
                f"{base}.{cluster.source.lower()}.kubernetesVersion",
                f"{cloud.name} takes {cloud.version_form}, not {shown(version)}",
                f"write it as {cloud.name} lists it, e.g. {cloud.version_example}",
            )
        )
    tags = cloud.label_tags
    if tags is not None:
        for key, value in cluster.labels.items():
            where = f"{base}.labels.{cut(key)}"
            if key.lower().startswith(tags.reserved_prefix):
                issues.append(
                    ConfigIssue(
                        file,
                        where,
                        f"the tag key {shown(key)} uses the prefix '{tags.reserved_prefix}' that {tags.owner} reserves",
                        "rename the label",
                    )
                )
            elif not 1 <= len(key) <= tags.key_max:
                issues.append(
                    ConfigIssue(
                        file,
                        where,
                        f"an {tags.owner} tag key holds 1-{tags.key_max} characters, not {len(key)}",
                        "shorten the key",
                    )
                )
            if len(value) > tags.value_max:
                issues.append(
                    ConfigIssue(
                        file,
                        where,
                        f"an {tags.owner} tag value holds at most {tags.value_max} characters, not {len(value)}",
                        "shorten the value",
                    )
                )
    return issues


def _block_keys(block: str) -> str:
    blocks: dict[str, type[BaseModel]] = {
        "gke": GkeCluster,
        "eks": EksCluster,
        "aks": AksCluster,
        "civo": CivoCluster,
        "vultr": VultrCluster,
    }
    model = blocks[block]
    return ", ".join(_fields_of(model))


# --------------------------------------------------------------------------------------------
# Loading


@dataclass(frozen=True)
class StackConfig:
    """A parsed stack file: the fleet, plus the other config values it carries."""

    file: str
    stack: str
    fleet: Fleet
    secrets: Mapping[str, str]  # modelplane keys held as `secure:` values (opaque ciphertext)
    plain: Mapping[str, Any]  # every other config key, as written (non-modelplane namespaces too)
    written: Mapping[str, Any] = field(default_factory=dict)  # the fleet's keys as written, before parsing


# What a first stack needs; docs/configuration.md lists every key.
_FIRST_KEYS = "modelplane:classes and modelplane:clusters (every key: docs/configuration.md)"


def stack_name_of(path: Path) -> str:
    name = path.name
    if not (name.startswith("Pulumi.") and name.endswith((".yaml", ".yml"))):
        raise ConfigError([ConfigIssue(str(path), "", "a stack file is named Pulumi.<stack>.yaml", "rename the file")])
    return name[len("Pulumi.") :].rsplit(".", 1)[0]


def parse_fleet(raw: Mapping[str, Any], file: str) -> Fleet:
    """Validate `modelplane:` values (keys without the namespace) into a Fleet, or raise ConfigError."""
    if not raw.get("clusters"):
        # A fleet without clusters registers nothing: `pulumi up` would delete whatever the stack holds.
        raise ConfigError(
            [
                ConfigIssue(
                    file,
                    f"config.{NAMESPACE}:clusters",
                    "no clusters are declared (modelplane:clusters is missing or empty)",
                    f"add {_FIRST_KEYS}; to remove every cluster on purpose, run `pulumi destroy`",
                )
            ]
        )
    try:
        fleet = Fleet.model_validate(dict(raw))
    except ValidationError as err:
        raise ConfigError(_issues_from_validation(file, err)) from None
    issues = check_references(fleet, file)
    from infra.devices import pools_without_role  # the role rule lives with the device rules

    for ki, pi, cls in pools_without_role(fleet):
        issues.append(
            ConfigIssue(
                file,
                f"clusters[{ki}].nodePools[{pi}].className",
                f"class '{cls}' claims no CPU or GPU DRA device, so it cannot back a pool",
                "add a DRA device with a GPU driver or dra.cpu to the class, or use another class",
            )
        )
    if issues:
        raise ConfigError(issues)
    return fleet


def split_config(config: Mapping[str, Any], file: str) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """Split stack config into fleet values, modelplane secrets and the rest; reject unknown keys."""
    fleet_raw: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    plain: dict[str, Any] = {}
    issues: list[ConfigIssue] = []
    seen: set[str] = set()
    for full_key, value in config.items():
        ns, sep, key = str(full_key).partition(":")
        if not sep:
            # Pulumi reads a key without a namespace as the project's (`modelplane`).
            ns, key = NAMESPACE, str(full_key)
        if ns == NAMESPACE and ":" in key:
            # Pulumi parses a key as `<namespace>:<name>`, reads `<namespace>:config:<name>` as
            # `<namespace>:<name>` and refuses any other second ':' (pulumi/pulumi
            # sdk/go/common/resource/config/key.go, `ParseKey`); a secret under such a key would
            # otherwise pass unread.
            old, _, name = key.partition(":")
            issues.append(
                ConfigIssue(
                    file,
                    f"config.{cut(str(full_key))}",
                    f"{shown(str(full_key))} holds a second ':'; a config key is <namespace>:<name>",
                    f"write it as '{NAMESPACE}:{cut(name)}'"
                    if old == "config" and ":" not in name
                    else "rename the key without the second ':'",
                )
            )
            continue
        if f"{ns}:{key}" in seen:
            issues.append(
                ConfigIssue(
                    file,
                    f"config.{cut(str(full_key))}",
                    f"'{cut(f'{ns}:{key}')}' is set twice (with and without the '{ns}:' namespace)",
                    "keep one of them",
                )
            )
            continue
        seen.add(f"{ns}:{key}")
        if ns != NAMESPACE:
            plain[str(full_key)] = value
            continue
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            secrets[key] = str(value["secure"])
        elif key in FLEET_KEYS:
            if value is not None:  # `key:` with no value is the key left out
                fleet_raw[key] = value
        else:
            plain[f"{NAMESPACE}:{key}"] = value
    plain_keys = [full.partition(":")[2] for full in plain if full.partition(":")[0] == NAMESPACE]
    issues += namespace_key_issues(file, plain_keys, list(secrets), _kubeconfig_keys(fleet_raw))
    if issues:
        raise ConfigError(issues)
    return fleet_raw, secrets, plain


def namespace_key_issues(
    file: str, plain_keys: Sequence[str], secret_keys: Sequence[str], kube_keys: set[str]
) -> list[ConfigIssue]:
    """`modelplane:` keys (without the namespace) that are unknown, or plain or secret where they must not be.

    Existing clusters name the secret key that holds their kubeconfig; any other key that is not a
    fleet key is unknown (a typo such as `modelplane:protcet` would otherwise leave the fleet unprotected).
    """
    issues: list[ConfigIssue] = []
    for key in plain_keys:
        full = f"{NAMESPACE}:{key}"
        if key in FLEET_KEYS:
            continue
        if key in kube_keys:
            issues.append(
                ConfigIssue(
                    file,
                    f"config.{full}",
                    f"the kubeconfig key '{key}' holds a plain value",
                    f"store it as a secret: {set_kubeconfig_command(key)}",
                )
            )
            continue
        close = difflib.get_close_matches(key, list(FLEET_KEYS) + sorted(kube_keys), n=1)
        hint = (
            f"did you mean 'modelplane:{close[0]}'? Remove or rename it"
            if close
            else f"remove or rename it (known keys: {', '.join('modelplane:' + k for k in FLEET_KEYS)})"
        )
        issues.append(ConfigIssue(file, f"config.{cut(full)}", f"unknown config key {shown(full)}", hint))
    for key in secret_keys:
        if key in FLEET_KEYS and key not in SECRET_FLEET_KEYS:
            issues.append(
                ConfigIssue(
                    file,
                    f"config.{NAMESPACE}:{key}",
                    f"'{NAMESPACE}:{key}' is a secret but holds fleet config",
                    "store it as plain config (set it without --secret)",
                )
            )
    return issues


def _kubeconfig_keys(fleet_raw: Mapping[str, Any]) -> set[str]:
    keys: set[str] = set()
    clusters = fleet_raw.get("clusters")
    if isinstance(clusters, list):
        for c in clusters:
            source = str(c.get("source")) if isinstance(c, Mapping) else ""
            # A cluster the program does not provision names its kubeconfig key in its block.
            if isinstance(c, Mapping) and source in PROFILES and not PROFILES[source].provisioned:
                block = c.get(source.lower())
                key = block.get("kubeconfigKey", "kubeconfig") if isinstance(block, Mapping) else "kubeconfig"
                keys.add(str(key))
    return keys


def set_kubeconfig_command(key: str) -> str:
    """The command that stores a kubeconfig where the program reads it, in any project.

    The program reads `modelplane:<key>` whatever the project is called; an unqualified key would
    be stored under the project's own name (`my-fleet:kubeconfig`) and never read.
    """
    return f"pulumi config set --secret {NAMESPACE}:{key} < path/to/kubeconfig"


def check_existing_secrets(fleet: Fleet, secrets: Mapping[str, str], file: str) -> list[ConfigIssue]:
    issues = []
    for ki, cluster in enumerate(fleet.clusters):
        if cluster.existing is not None and cluster.existing.kubeconfig_key not in secrets:
            key = cluster.existing.kubeconfig_key
            issues.append(
                ConfigIssue(
                    file,
                    f"clusters[{ki}].existing.kubeconfigKey",
                    f"no secret config key 'modelplane:{key}' holds the kubeconfig of cluster '{cluster.name}'",
                    f"run: {set_kubeconfig_command(key)}",
                )
            )
    return issues


# Bounds on a stack file, far beyond any fleet, so a hostile or broken file cannot exhaust the
# machine: YAML aliases can make a few hundred bytes expand to gigabytes once the value is
# encoded (every config value reaches the program JSON-encoded), and deep nesting overflows the
# parser's recursion.
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_EXPANDED_SIZE = 8 * 1024 * 1024  # characters of scalars plus one per node, aliases expanded
MAX_DEPTH = 64
# Python refuses to read integers of more than 4,300 digits; no field takes more than 20.
MAX_INT_CHARS = 100


class StackFileError(yaml.MarkedYAMLError):
    """A stack file the loader refuses: what is wrong, where (a mark), and the fix."""

    def __init__(self, problem: str, mark: Any, fix: str) -> None:
        super().__init__(None, None, problem, mark)
        self.fix = fix


class _StackLoader(yaml.SafeLoader):
    """PyYAML's safe loader with duplicate keys, huge integers and deep nesting refused.

    Dates stay strings: Pulumi's config has no date type, and a date value would not JSON-encode.
    """

    yaml_implicit_resolvers = {  # noqa: RUF012 - PyYAML reads it as a class attribute
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise StackFileError(
                    f"values nest deeper than {MAX_DEPTH} levels", mark, "flatten the value or remove it"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        # A repeated key would silently override the line above it (a second `protect: false`).
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=False)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # unhashable: the base class reports it
            if duplicate:
                raise StackFileError(
                    f"key {shown(key)} appears twice in one mapping",
                    key_node.start_mark,
                    "keep one of them (the YAML loader would silently use the last)",
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > MAX_INT_CHARS:
            raise StackFileError(
                f"an integer of {len(node.value)} characters is larger than any field takes",
                node.start_mark,
                "write the number the field needs",
            )
        return super().construct_yaml_int(node)


_StackLoader.add_constructor("tag:yaml.org,2002:int", _StackLoader.construct_yaml_int)


def _check_expanded_size(root: yaml.Node) -> None:
    """Refuse the document when a value, with every alias expanded, passes MAX_EXPANDED_SIZE or MAX_DEPTH.

    The loader bounds nesting as written; an alias puts a whole value where it stands, so a chain
    of aliases nests deeper than the text does (and overflows the JSON encoder every config value
    goes through). Both bounds are measured here with the aliases expanded.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (size, depth), aliases expanded
    active: set[int] = set()

    def measure(node: yaml.Node) -> tuple[int, int]:
        key = id(node)
        if key in measured:
            return measured[key]
        if key in active:  # visited, not yet measured: the node is its own ancestor
            raise StackFileError(
                "an alias refers to a value that contains it", node.start_mark, "write the value out instead"
            )
        active.add(key)
        total, depth = 1, 1
        if isinstance(node, yaml.ScalarNode):
            total += len(node.value)
        else:
            children = node.value if isinstance(node, yaml.SequenceNode) else [n for kv in node.value for n in kv]
            for child_size, child_depth in map(measure, children):
                total += child_size
                depth = max(depth, child_depth + 1)
        # The innermost value past a bound: a child that passed it raised already.
        if total > MAX_EXPANDED_SIZE:
            raise StackFileError(
                f"this value expands to more than {MAX_EXPANDED_SIZE} characters once its YAML aliases are expanded",
                node.start_mark,
                "write the values out instead of repeating aliases",
            )
        if depth > MAX_DEPTH:
            raise StackFileError(
                f"this value nests deeper than {MAX_DEPTH} levels once its YAML aliases are expanded",
                node.start_mark,
                "flatten the value or remove it",
            )
        measured[key] = (total, depth)
        return total, depth

    measure(root)


def _line_and_column(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line}, column {column}"


# A fix more telling than "fix the YAML syntax", by PyYAML's context (yaml/pyyaml lib/yaml/composer.py).
_YAML_FIXES = {
    "expected a single document in the stream": "keep one document: remove the '---' line shown and what follows it",
}


def read_yaml(path: Path, file: str) -> Any:
    """The YAML document in `path`, or ConfigError naming the line and column of what is wrong."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ConfigError([ConfigIssue(file, "", f"cannot read the file ({err.strerror})", "check the path")]) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(
            [ConfigIssue(file, "", f"the file has {len(data)} bytes, more than {MAX_FILE_BYTES}", "shorten the file")]
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ConfigError(
            [
                ConfigIssue(
                    file,
                    f"line {line}, column {column}",
                    f"byte 0x{data[err.start]:02x} is not UTF-8",
                    "save the file as UTF-8",
                )
            ]
        ) from None
    loader: _StackLoader | None = None
    try:
        loader = _StackLoader(text)
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node)
        return loader.construct_document(node)
    except yaml.reader.ReaderError as err:
        # Read from a str, the only ReaderError is a non-printable character, given as its code point
        # (yaml/pyyaml lib/yaml/reader.py at 6.0.4, Reader.check_printable).
        where = _line_and_column(text, err.position)
        problem = f"character #x{err.character:04x} is not allowed in YAML"
        raise ConfigError([ConfigIssue(file, where, problem, "remove the character")]) from None
    except StackFileError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError([ConfigIssue(file, where, str(err.problem), err.fix)]) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = cut(str(getattr(err, "problem", None) or err))
        # PyYAML's context says what it was reading and where that began (yaml/pyyaml
        # lib/yaml/error.py, MarkedYAMLError): "while parsing a flow sequence", "found duplicate
        # anchor 'x'; first occurrence"; without it "but found another document" says nothing.
        context = getattr(err, "context", None)
        if context:
            began = getattr(err, "context_mark", None)
            at = f" at line {began.line + 1}, column {began.column + 1}" if began else ""
            problem = f"{cut(str(context))}{at}, {problem}"
        fix = _YAML_FIXES.get(str(context), "fix the YAML syntax")
        raise ConfigError([ConfigIssue(file, where, f"not valid YAML: {problem}", fix)]) from None
    except RecursionError:
        # A safety net behind MAX_DEPTH: no input may end in a traceback.
        raise ConfigError(
            [ConfigIssue(file, "", "values nest too deeply to read", "flatten the nested values")]
        ) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_stack_file(path: Path, display: str | None = None) -> StackConfig:
    """Read and validate one Pulumi.<stack>.yaml; raise ConfigError naming every problem."""
    file = display or str(path)
    stack = stack_name_of(path)
    doc = read_yaml(path, file)
    if doc is None:
        raise ConfigError(
            [
                ConfigIssue(
                    file, "line 1, column 1", "the stack file is empty", f"start it with 'config:' and {_FIRST_KEYS}"
                )
            ]
        )
    if not isinstance(doc, Mapping):
        raise ConfigError(
            [ConfigIssue(file, "line 1, column 1", "a stack file is a YAML mapping", "start the file with 'config:'")]
        )
    if doc.get("config") is None:
        raise ConfigError(
            [
                ConfigIssue(
                    file, "config", "the stack file has no 'config:' section", f"add 'config:' with {_FIRST_KEYS}"
                )
            ]
        )
    config = doc["config"]
    if not isinstance(config, Mapping):
        raise ConfigError(
            [
                ConfigIssue(
                    file,
                    "config",
                    "'config' is a mapping of keys to values",
                    "write 'config:' followed by indented keys",
                )
            ]
        )
    fleet_raw, secrets, plain = split_config(config, file)
    if not fleet_raw:
        raise ConfigError(
            [
                ConfigIssue(
                    file,
                    "config",
                    f"'config:' has no {NAMESPACE}: keys ({', '.join(f'{NAMESPACE}:{k}' for k in FLEET_KEYS)})",
                    f"add {_FIRST_KEYS}",
                )
            ]
        )
    fleet = parse_fleet(fleet_raw, file)  # reads fleet_raw, never changes it
    issues = check_existing_secrets(fleet, secrets, file)
    if issues:
        raise ConfigError(issues)
    return StackConfig(file=file, stack=stack, fleet=fleet, secrets=secrets, plain=plain, written=fleet_raw)


Role = Literal["GPU", "CPU", "System"]
