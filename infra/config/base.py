"""The base of every config model, and the pieces a cloud's own config blocks are built from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from infra.config.names import MAX_DEVICES_PER_NODE, label_value_problem, shown
from infra.formats import QUANTITY_RE, parse_quantity

# A Kubernetes quantity without a suffix is a count of bytes where it sizes memory or storage
# (kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/): `memory: 24` asks
# for 24 bytes, `size: "50"` for a 50-byte volume. Under 1 GiB such a bare number is almost
# certainly a unit left out (no engine's memory, /dev/shm or model cache is a few thousand bytes),
# so it is refused with the unit spelled out; a bare number of at least 1 GiB is a byte count
# written on purpose (`25769803776`) and stands.
_UNITLESS_FLOOR = 2**30


def unitless_bytes(key: str, v: Any, form: str = "{key}: {value}") -> None:
    """Refuse a byte quantity written as a bare number under 1 GiB, naming the unit it lacks.

    The fix spells the number with `Gi`, or `Mi` when it reads as mebibytes (1024 or more): `24`
    becomes `24Gi`, `2048` becomes `2048Mi`, written in `form` (the key's own YAML shape).
    """
    text = str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
    m = QUANTITY_RE.match(text) if isinstance(text, str) else None
    if m is None or m["suffix"] is not None or m["exp"] is not None:
        return
    size = parse_quantity(text)
    if size is None or size <= 0 or size >= _UNITLESS_FLOOR:
        return
    unit = "Mi" if size >= 1024 else "Gi"
    number = text.lstrip("+")
    bytes_ = "byte" if size == 1 else "bytes"
    raise ValueError(
        f"{shown(v)} has no unit, so Kubernetes reads it as {number} {bytes_}; write the unit: "
        + form.format(key=key, value=f"{number}{unit}")
    )


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


class Accelerator(Model):
    """`{type, count}`; `nvidia-l4` alone is one GPU of that type."""

    # The type becomes the value of the pool's `modelplane.ai/gpu` label, so it follows the label-value rule.
    type: Annotated[str, StringConstraints(min_length=1)]
    # The same bound as a device's count: on Existing the accelerator is derived from that count.
    count: Annotated[StrictInt, Field(ge=1, le=MAX_DEVICES_PER_NODE)] = 1

    @model_validator(mode="before")
    @classmethod
    def _type_alone(cls, v: Any) -> Any:
        return {"type": v} if isinstance(v, str) else v

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


# The most a class may say one node costs an hour, in USD: far above the dearest machine of the
# catalog (about 114), and small enough that every sum of the cost stays exact (infra/cost.py).
MAX_HOURLY_PRICE = Decimal(10000)


def parse_hourly_price(v: Any) -> Any:
    """A positive, finite number of USD an hour (a number, or its text as `pulumi config set --path`
    writes it), for every `hourlyPrice` key."""
    fix = "write what one node costs you an hour in USD, such as hourlyPrice: 12.5"
    if v is None:
        return v
    if isinstance(v, bool) or not isinstance(v, int | float | str | Decimal):
        raise ValueError(f"{shown(v)} is not a price; {fix}")
    try:
        price = Decimal(str(v).strip())
    except InvalidOperation:
        raise ValueError(f"{shown(v)} is not a number; {fix}") from None
    if not price.is_finite() or not 0 < price <= MAX_HOURLY_PRICE:
        raise ValueError(f"{shown(v)} is not a price above 0 and at most {MAX_HOURLY_PRICE}; {fix}")
    return price


class MachineBlock(Model):
    """A class's `provisioning.<cloud>` block: the machine to provision, and its accelerator.

    Each cloud's block names its machine field as the cloud's API does (`machineType`, `vmSize`,
    ...) and says which field that is in `MACHINE_FIELD`; every block also has `accelerator`
    (declared by each block, so the stack file lists it after the machine).
    """

    MACHINE_FIELD: ClassVar[str]
    if TYPE_CHECKING:
        accelerator: Accelerator | None

    # The machine type is not in the machine catalog and the class takes it unchecked and unpriced
    # (`unknown-machine-type` stops a run otherwise: infra/checks/devices.py).
    uncatalogued: bool | None = None
    # What the class's owner pays for one node an hour, in USD: the cost prices the class's pools at
    # it instead of the catalog's public price, and the plan marks it as the class's own (infra/cost.py).
    hourly_price: Annotated[Decimal, Field(gt=0, le=MAX_HOURLY_PRICE)] | None = None  # bounds for the schema

    @property
    def fabric(self) -> str | None:
        """The high-speed fabric the block's nodes join (`InfiniBand fabric-3`), or None; a cloud's
        block that has one says so. A fabric claimed as a DRA device (EFA) is the class's devices'."""
        return None

    @field_validator("hourly_price", mode="before")
    @classmethod
    def _price(cls, v: Any) -> Any:
        return parse_hourly_price(v)

    @property
    def machine_name(self) -> str:
        return str(getattr(self, self.MACHINE_FIELD))

    @property
    def boot_disk_gb(self) -> int | None:
        """The boot disk size, on clouds whose block takes one (they all call it `diskSizeGb`)."""
        size = getattr(self, "disk_size_gb", None)
        return size if isinstance(size, int) else None

    @classmethod
    def for_machine(cls, name: str, accelerator: Accelerator | None) -> MachineBlock:
        """The block for the catalog's machine `name` (the plan chose it: `infra.checks.supply`), defaults elsewhere."""
        return cls.model_validate({cls.MACHINE_FIELD: name, "accelerator": accelerator})

    @classmethod
    def machine_key(cls) -> str:
        """The machine field as the stack file spells it (`machineType`)."""
        return cls.model_fields[cls.MACHINE_FIELD].alias or cls.MACHINE_FIELD


@dataclass(frozen=True)
class KeyDoc:
    """What one config key is for, as the configuration reference prints it."""

    meaning: str
    used_by: str  # the rule or component that reads it
    example: str  # a YAML fragment


class OwnerPrometheus(Model):
    """The owner's own Prometheus, which autoscaling relies on where the cluster runs its own
    kube-prometheus-stack: where KEDA asks it, and the labels its PodMonitor selector wants."""

    url: str
    # kube-prometheus-stack's Prometheus selects only PodMonitors labelled `release: <its release>`
    # unless its values say otherwise (values.yaml `podMonitorSelectorNilUsesHelmValues: true` and
    # templates/prometheus/prometheus.yaml @ kube-prometheus-stack-84.4.0).
    pod_monitor_labels: dict[str, str] = {}


class OwnerClusterBlock(Model):
    """The block of a cluster its owner runs: where its kubeconfig is, and what the owner already installed."""

    kubeconfig_key: str = "kubeconfig"
    context: str | None = None
    # The version the owner runs; required once a pool claims consumable capacity (1.36 and later).
    kubernetes_version: str | None = None
    # The cluster already runs the GPU operator for its GPUs (NVIDIA's or AMD's): the serving stack
    # installs no second one and relies on the owner's (docs/existing-clusters.md).
    owner_gpu_operator: bool = False
    # Catalog components the cluster already runs (`cert-manager`, `kube-prometheus-stack`, ...):
    # left out of the serving stack, whose dependents then rely on the cluster's own copy
    # (`join_charts`; the names are checked by `preinstalled_problems`, both in infra/serving/catalog.py).
    preinstalled: tuple[str, ...] = ()
    # The owner's Prometheus, which autoscaled deployments use instead of the stack's own.
    prometheus: OwnerPrometheus | None = None


class Adoption(Model):
    """`clusters[].<cloud>.adopt`, `nodePools[].adopt`: a running cluster or pool taken into the
    stack with the engine's import instead of being created (docs/adopting.md).

    `id` is the provider's import ID; its shape per cloud is the cloud's `Cloud.adoption`, and
    infra/checks/adoption.py judges it (a missing ID is reported there, with its path and shape).
    """

    id: str | None = None


class ProvisionedClusterBlock(Model):
    """The block of a cluster the program provisions: where it runs and its Kubernetes version.

    Each cloud's block names its place as the cloud's API does (`region`, `location`) and says
    which field that is in `PLACE_FIELD`.
    """

    PLACE_FIELD: ClassVar[str] = "region"
    # A running cluster adopted instead of created (`Adoption`); refused on a cloud whose record
    # declares no import IDs (infra/checks/adoption.py).
    adopt: Adoption | None = None
    if TYPE_CHECKING:
        kubernetes_version: str

    @property
    def place(self) -> str:
        """The region (or location) the cluster runs in."""
        return str(getattr(self, self.PLACE_FIELD))
