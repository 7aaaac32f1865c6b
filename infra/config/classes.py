"""The fleet model's classes: what a pool's nodes are (devices, provisioning per cloud) and what a class left out."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    Field,
    PrivateAttr,
    StrictInt,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from clouds import CLOUDS, PROVISIONED, cloud
from infra.config.base import Accelerator, MachineBlock, Model, unitless_bytes
from infra.config.names import (
    DNS1123_SUBDOMAIN,
    DNS1123_SUBDOMAIN_MAX,
    MAX_DEVICES_PER_NODE,
    DnsLabel,
    DriverName,
    shown,
)
from infra.formats import parse_quantity
from infra.machines import MachineType
from infra.vocabulary import GPU_VENDORS


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

    @field_validator("capacity", mode="after")
    @classmethod
    def _memory_has_a_unit(cls, v: dict[str, CapacityValue], info: ValidationInfo) -> dict[str, CapacityValue]:
        # A GPU's `memory` capacity is a byte quantity as the GPU DRA drivers publish it (NVIDIA's
        # and AMD's ResourceSlices say `memory: 80Gi`, `192Gi`), so a bare number is bytes too.
        if "memory" in v and info.data.get("driver") in GPU_VENDORS:
            unitless_bytes("memory", v["memory"].value, form="{key}: {{value: {value}}}")
        return v

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
    def written_machine(self) -> MachineBlock | None:
        """The provider's block, or None where the class leaves it out (which check_references reports)."""
        return getattr(self, cloud(self.provider).key)  # type: ignore[no-any-return]

    @property
    def machine(self) -> MachineBlock:
        block = self.written_machine
        assert block is not None, "check_references reports a missing block before anything reads it"
        return block

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
    """What a class left out and what supplied it (`infra.checks.supply`); the plan shows it per pool.

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
    # Left out, they are taken from the machine's catalog row or from `accelerator` (`infra.checks.supply`);
    # pydantic never validates a default, so an empty list written out is still refused.
    devices: Annotated[list[Device], Field(min_length=1, max_length=16)] = Field(default_factory=list)
    provisioning: Provisioning | None = None
    # The GPUs of an owner's nodes, for a class that backs pools of Existing clusters; a provisioned
    # class names its accelerator in its provisioning block (`check_references` says so), unless it
    # names no machine: then it is what the class needs, and the plan chooses the machine.
    accelerator: Accelerator | None = None
    # The owner's nodes carry a GPU the accelerator vocabulary does not list yet, and the class takes
    # its type as written (`accelerator-type-unknown` stops a run otherwise: infra/checks/devices.py).
    uncatalogued_accelerator: bool | None = None
    # The least memory per GPU a class that names no machine needs (the plan chooses the machine).
    min_gpu_memory_gib: Annotated[StrictInt, Field(ge=1)] | None = None
    _supplied: Supplied | None = PrivateAttr(default=None)

    @property
    def supplied(self) -> Supplied | None:
        """What `infra.checks.supply` filled in, or None for a class written out in full."""
        return self._supplied

    def with_supplied(self, supplied: Supplied, **update: Any) -> InferenceClass:
        """A copy of the class with `update` applied and `supplied` recorded."""
        copy = self.model_copy(update=update)
        copy._supplied = supplied
        return copy
