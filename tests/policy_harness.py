"""Engine-shaped arguments for calling policies directly, the way the pack's server builds them.

The server (`pulumi_policy.policy._PolicyAnalyzerServicer`) receives properties as a protobuf
Struct, so keys stay as the engine spells them (camelCase) and every number becomes a float; it
deserializes them and wraps them with `unknown_checking_proxy`. `engine_props` does the same
round trip, so a policy that would break on the real shape breaks here too. Unknown values
(computed during preview) are written with the sentinels of `pulumi_policy.proxy`; reading one
raises `UnknownValueError`, which the server turns into an advisory "can't run during preview".
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi_policy import (
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import (
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    unknown_checking_proxy,
)

from tooling.analyzer import wire_struct
from tooling.mockrun import Registration

__all__ = [
    "MODES",
    "UNKNOWN_ARRAY_VALUE",
    "UNKNOWN_OBJECT_VALUE",
    "UNKNOWN_STRING_VALUE",
    "engine_props",
    "located",
    "policy_config",
    "resource_args",
    "run",
    "stack_args",
    "stack_resource",
    "urn_of",
    "verdict",
    "views",
]


def engine_props(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """Props as a policy sees them: through a protobuf Struct (ints -> floats), then proxied."""
    struct = struct_pb2.Struct()
    struct.update(dict(props))
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))  # type: ignore[no-any-return]


def urn_of(type_token: str, name: str, stack: str = "test", project: str = "modelplane") -> str:
    return f"urn:pulumi:{stack}::{project}::{type_token}::{name}"


def options(protect: bool = False, parent: str | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(protect, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent)


def policy_config(policy: Policy, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The config the engine resolves for a policy: its schema's defaults, overlaid by `config`."""
    resolved: dict[str, Any] = {}
    if policy.config_schema is not None:
        for key, schema in policy.config_schema.properties.items():
            if "default" in schema:
                resolved[key] = schema["default"]
    resolved.update(config or {})
    return resolved


def resource_args(
    type_token: str,
    props: Mapping[str, Any],
    *,
    name: str = "resource",
    policy: Policy | None = None,
    config: Mapping[str, Any] | None = None,
    protect: bool = False,
    parent: str | None = None,
    urn: str | None = None,
) -> ResourceValidationArgs:
    """Arguments for a resource policy: one resource's inputs and options (`urn`: a parent's type chain)."""
    resolved = policy_config(policy, config) if policy is not None else dict(config or {})
    return ResourceValidationArgs(
        type_token,
        engine_props(props),
        urn or urn_of(type_token, name),
        name,
        options(protect, parent),
        None,
        resolved,
    )


def stack_resource(
    type_token: str,
    props: Mapping[str, Any],
    *,
    name: str,
    parent: PolicyResource | None = None,
    protect: bool = False,
    dependencies: Sequence[PolicyResource] = (),
) -> PolicyResource:
    """One resource of a stack, with its parent object set as AnalyzeStack sets it."""
    return PolicyResource(
        type_token,
        engine_props(props),
        urn_of(type_token, name),
        name,
        options(protect, parent.urn if parent is not None else None),
        None,
        parent,
        list(dependencies),
        {},
    )


def stack_args(
    resources: Sequence[PolicyResource], *, policy: Policy | None = None, config: Mapping[str, Any] | None = None
) -> StackValidationArgs:
    resolved = policy_config(policy, config) if policy is not None else dict(config or {})
    return StackValidationArgs(list(resources), resolved)


def run(policy: Policy, args: ResourceValidationArgs | StackValidationArgs) -> list[str]:
    """The messages a policy reports for `args`; awaits async validators on a fresh loop, as the server does.

    `UnknownValueError` propagates: the server reports it as an advisory preview diagnostic.
    """
    return [message for message, _ in located(policy, args)]


def located(policy: Policy, args: ResourceValidationArgs | StackValidationArgs) -> list[tuple[str, str | None]]:
    """Each message a policy reports with the URN it names (None: the resource under validation)."""
    messages: list[tuple[str, str | None]] = []

    def report_violation(message: str, urn: str | None = None) -> None:
        messages.append((message, urn))

    if isinstance(policy, ResourceValidationPolicy) and isinstance(args, ResourceValidationArgs):  # noqa: SIM114
        result = policy.validate(args, report_violation)
    elif isinstance(policy, StackValidationPolicy) and isinstance(args, StackValidationArgs):
        result = policy.validate(args, report_violation)
    else:
        raise TypeError(f"{policy.name} cannot validate {type(args).__name__}")
    if inspect.isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(result)
        finally:
            loop.close()
    return messages


def verdict(policy: Policy, args: ResourceValidationArgs | StackValidationArgs) -> list[str] | str:
    """What the pack's server answers for one policy: its messages, or `undecided: <why>` where
    the policy read an unknown value (the server reports that as an advisory preview diagnostic)."""
    try:
        return run(policy, args)
    except UnknownValueError as err:
        return f"undecided: {err.message}"


# The three ways the engine hands a stack to the pack: a first preview (nothing exists), an
# update of an existing stack, and `pulumi policy analyze --file` on a stack's exported state.
MODES = ("preview", "update", "analyze")


def _wired(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """Props as the pack's server reads them off the wire (unknown and secret markers included)."""
    struct = wire_struct(props)
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))  # type: ignore[no-any-return]


def views(
    resources: Sequence[Registration], root: Registration | None = None
) -> tuple[dict[str, Callable[[Policy], ResourceValidationArgs]], list[PolicyResource]]:
    """What the pack sees of registered resources: per resource, `Analyze` args on its inputs;
    and the `AnalyzeStack` resources on their outputs, parents linked by URN."""
    everything = [root, *resources] if root is not None else list(resources)

    def analyze(r: Registration) -> Callable[[Policy], ResourceValidationArgs]:
        def args(policy: Policy) -> ResourceValidationArgs:
            return ResourceValidationArgs(
                r.type,
                _wired(r.inputs),
                r.urn,
                r.name,
                options(r.protect, r.parent_urn or None),
                None,
                policy_config(policy),
            )

        return args

    by_urn: dict[str, PolicyResource] = {}
    stack: list[PolicyResource] = []
    for r in everything:
        resource = PolicyResource(
            r.type, _wired(r.outputs), r.urn, r.name, options(r.protect, r.parent_urn or None), None, None, [], {}
        )
        by_urn[r.urn] = resource
        stack.append(resource)
    for r, resource in zip(everything, stack, strict=True):
        resource.parent = by_urn.get(r.parent_urn)
    return {r.name: analyze(r) for r in everything}, stack
