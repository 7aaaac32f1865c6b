"""Config-level policies: the device rules of `infra.checks.devices`, evaluated on what the program registered.

Each cluster component registers, as its inputs, the cluster's `source` and every pool with its
class as written in config (`components.base.policy_inputs`). These policies rebuild each class
with the same pydantic model and ask `infra.checks.devices.check_pool`, the one module that states the
rules, for its verdict (and `check_machine` for the machine rules); the program's guard
(`infra.checks.guard.check`) asks the same functions before it registers anything. Nothing here restates
a rule: a policy only keeps the violations of its own name, and takes its text from the rule's row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from clouds import COMPONENT_TOKENS
from infra.checks.devices import DEVICE_RULES, Violation, check_pool
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


# One policy per device rule, named and described by the rule's row (`DEVICE_RULES`), in its order.
CONFIG_POLICIES = [
    ResourceValidationPolicy(name=rule, description=text, validate=_validator(rule))
    for rule, text in DEVICE_RULES.items()
]
