"""Config-level policies: the device rules of `infra.devices`, evaluated on what the program registered.

Each cluster component registers, as its inputs, the cluster's `source` and every pool with its
class as written in config (`components.base.policy_inputs`). These policies rebuild each class
with the same pydantic model and ask `infra.devices.check_pool`, the one module that states the
rules, for its verdict; the program's guard (`infra.program.guard`) asks the same function before
it registers anything. Nothing here restates a rule: a policy only keeps the violations of its own
name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from infra.config import InferenceClass
from infra.devices import (
    ACCELERATOR_DRIVER_MISMATCH,
    CLASS_PROVIDER_MISMATCH,
    UNSUPPORTED_DEVICES,
    Violation,
    check_pool,
)
from policies.props import mappings, plain

# `modelplane:<cloud module>:<Cloud>Cluster`, the token every cluster component registers under
# (`components.base.ClusterComponent.TYPE_TOKEN`).
CLUSTER_COMPONENT = re.compile(r"^modelplane:[a-z]+:[A-Za-z]+Cluster$")


def is_cluster_component(resource_type: str) -> bool:
    return CLUSTER_COMPONENT.match(resource_type) is not None


class MissingFactsError(Exception):
    """A cluster component registered without the facts the pack reads (a regression in the program)."""


def cluster_violations(cluster: str, props: Any) -> list[Violation]:
    """Every device-rule violation of one registered cluster component, in pool order."""
    if props.get("source") is None or props.get("pools") is None:
        raise MissingFactsError(
            f"cluster component {cluster} registers no 'source' or 'pools', which the pack reads "
            "(components.base.policy_inputs); the pack cannot check its pools"
        )
    source = str(props["source"])
    found: list[Violation] = []
    for pool in mappings(props.get("pools")):
        spec = pool.get("class")
        if spec is None:  # the system pool has no class
            continue
        cls = InferenceClass.model_validate(plain(spec))
        found.extend(check_pool(cluster, source, str(pool["name"]), cls))
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

CONFIG_POLICIES = [accelerator_driver_mismatch, unsupported_devices, class_provider_mismatch]
