"""Config-level policies: the device rules of `infra.checks.devices`, evaluated on what the program registered.

Each cluster component registers, as its inputs, the cluster's `source` and every pool with its
class as written in config (`components.base.policy_inputs`). These policies rebuild each class
with the same pydantic model and ask `infra.checks.devices.check_pool`, the one module that states the
rules, for its verdict (and `check_machine` for the machine rules); the program's guard
(`program.main.guard`) asks the same functions before it registers anything. Nothing here restates a rule: a policy only keeps the violations of its own
name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from clouds import COMPONENT_TOKENS
from infra.checks.devices import (
    ACCELERATOR_DRIVER_MISMATCH,
    ACCELERATOR_TYPE_UNKNOWN,
    CLASS_PROVIDER_MISMATCH,
    CPU_CLAIM_EXCEEDS_MACHINE,
    MACHINE_ACCELERATOR_MISMATCH,
    MACHINE_OUTSIDE_REGION,
    UNKNOWN_MACHINE_TYPE,
    UNSUPPORTED_DEVICES,
    ZONE_OUTSIDE_REGION,
    Violation,
    check_pool,
)
from infra.checks.machines import check_machine
from infra.config.model import InferenceClass
from policies.props import mappings, plain


def is_cluster_component(resource_type: str) -> bool:
    """A cluster component of any cloud in the registry (`Cloud.component_token`)."""
    return resource_type in COMPONENT_TOKENS


class MissingFactsError(Exception):
    """A cluster component registered without the facts the pack reads (a regression in the program)."""


def cluster_violations(cluster: str, props: Any) -> list[Violation]:
    """Every device-rule violation of one registered cluster component, in pool order."""
    if props.get("source") is None or props.get("pools") is None:
        raise MissingFactsError(
            f"cluster component {cluster} registers no 'source' or 'pools', which the pack reads "
            "(components.base.policy_inputs); the pack cannot check its pools"
        )
    source = props["source"]
    if not isinstance(source, str):
        # A list or map here is a program regression; its text would be the proxy's repr.
        raise MissingFactsError(
            f"cluster component {cluster} registers a 'source' that is a {type(plain(source)).__name__}, "
            "not a cloud name (components.base.policy_inputs); the pack cannot check its pools"
        )
    region = props.get("region")
    found: list[Violation] = []
    for pool in mappings(props.get("pools")):
        spec = pool.get("class")
        if spec is None:  # the system pool has no class
            continue
        cls = InferenceClass.model_validate(plain(spec))
        name = str(pool["name"])
        found.extend(check_pool(cluster, source, name, cls))
        zones = [str(z) for z in plain(pool.get("zones")) or []]
        uncatalogued = bool(pool.get("uncataloguedZones"))
        found.extend(
            check_machine(
                cluster, source, name, cls, str(region) if region else None, zones, uncatalogued_zones=uncatalogued
            )
        )
    return found


def _validator(policy: str) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if not is_cluster_component(args.resource_type):
            return
        try:
            violations = cluster_violations(args.name, args.props)
        except MissingFactsError as err:
            report_violation(str(err), None)
            return
        for violation in violations:
            if violation.policy == policy:
                report_violation(violation.message, None)

    return validate


accelerator_driver_mismatch = ResourceValidationPolicy(
    name=ACCELERATOR_DRIVER_MISMATCH,
    description=(
        "A pool's class claims GPUs its machine carries: accelerator set for GPU drivers, of the claimed "
        "vendor and count, none for dra.cpu, one GPU vendor, no dra.cpu next to a GPU driver."
    ),
    validate=_validator(ACCELERATOR_DRIVER_MISMATCH),
)

unsupported_devices = ResourceValidationPolicy(
    name=UNSUPPORTED_DEVICES,
    description="A provisioned cluster's pools claim only DRA drivers its cloud's serving stack supports.",
    validate=_validator(UNSUPPORTED_DEVICES),
)

class_provider_mismatch = ResourceValidationPolicy(
    name=CLASS_PROVIDER_MISMATCH,
    description="A provisioned cluster's pools use classes provisioned on the cluster's own cloud.",
    validate=_validator(CLASS_PROVIDER_MISMATCH),
)

machine_accelerator_mismatch = ResourceValidationPolicy(
    name=MACHINE_ACCELERATOR_MISMATCH,
    description=(
        "A pool's machine type carries the GPUs its class claims (vendor and count, per the machine "
        "catalog), and a CPU class's machine carries none."
    ),
    validate=_validator(MACHINE_ACCELERATOR_MISMATCH),
)

accelerator_type_unknown = ResourceValidationPolicy(
    name=ACCELERATOR_TYPE_UNKNOWN,
    description=(
        "A class's accelerator type is one its cloud accepts for the pool's machine type; on an Existing "
        "cluster, one of the accelerator vocabulary unless the class takes it uncataloguedAccelerator."
    ),
    validate=_validator(ACCELERATOR_TYPE_UNKNOWN),
)

cpu_claim_exceeds_machine = ResourceValidationPolicy(
    name=CPU_CLAIM_EXCEEDS_MACHINE,
    description="A CPU class claims no more CPUs than its machine has, less those dra-driver-cpu reserves.",
    validate=_validator(CPU_CLAIM_EXCEEDS_MACHINE),
)

zone_outside_region = ResourceValidationPolicy(
    name=ZONE_OUTSIDE_REGION,
    description="A pool's zones are zones of its cluster's region.",
    validate=_validator(ZONE_OUTSIDE_REGION),
)

machine_outside_region = ResourceValidationPolicy(
    name=MACHINE_OUTSIDE_REGION,
    description="A pool's machine type is offered in its cluster's region, where the catalog records the regions.",
    validate=_validator(MACHINE_OUTSIDE_REGION),
)

unknown_machine_type = ResourceValidationPolicy(
    name=UNKNOWN_MACHINE_TYPE,
    description="A pool's machine type is in the machine catalog, so its GPUs, CPUs and price can be checked.",
    validate=_validator(UNKNOWN_MACHINE_TYPE),
)

CONFIG_POLICIES = [
    accelerator_driver_mismatch,
    unsupported_devices,
    class_provider_mismatch,
    machine_accelerator_mismatch,
    accelerator_type_unknown,
    cpu_claim_exceeds_machine,
    zone_outside_region,
    machine_outside_region,
    unknown_machine_type,
]
