"""The pack's gRPC servicer: pulumi-policy's own, stating the manifest's version and parsing each
resource once per call rather than once per policy.

pulumi-policy 1.21.0's servicer (sdk/python/lib/pulumi_policy/policy.py, `_PolicyAnalyzerServicer`)
converts a resource's properties from protobuf and deserializes them inside its loop over the
policies: `Analyze` does it for each of this pack's 13 resource policies, `AnalyzeStack` for every
resource once per stack policy, and each resource's provider likewise. That parsing was most of
the pack's time (docs/benchmarks.md, "Why the pack was above 1.5 times the floor"). `Analyze` and
`AnalyzeStack` below are the library's, step for step, except that the conversion and
deserialization run once per resource and each policy still gets its own unknown-checking proxy
built from that one result. The proxy copies every list and dict (`pulumi_policy.proxy`,
`_proxy_helper`), so a policy that writes to what it was given changes only its own copy, as
before. The leaves it shares are strings, numbers, booleans and None; an Asset or Archive would be
shared too, and the program registers none.

The two methods are written against pulumi-policy `ONE_PARSE_VERSION`; with any other version
installed they are the library's own (`one_parse`), so an upgrade can make the pack slower, never
different. `tests/test_pack_server.py` holds the verdicts to the library's on every committed stack.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import cache
from importlib.metadata import version
from inspect import isawaitable
from typing import Any

from google.protobuf import json_format  # type: ignore[import-untyped]
from pulumi.runtime import proto
from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    PolicyProviderResource,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import policy as library
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from policies.pack import ALL_POLICIES, PACK_NAME, PACK_VERSION

# The pulumi-policy release whose `Analyze` and `AnalyzeStack` the methods below follow.
ONE_PARSE_VERSION = "1.21.0"


@cache
def one_parse() -> bool:
    """Whether the installed pulumi-policy is the one the methods below were written against."""
    return version("pulumi-policy") == ONE_PARSE_VERSION


def _parsed(properties: Any) -> dict[str, Any]:
    """A resource's properties as the library deserializes them for a policy, before the proxy."""
    parsed: dict[str, Any] = deserialize_properties(json_format.MessageToDict(properties))
    return parsed


# The library's servicer, untyped: the methods below use its private helpers and state.
_LibraryServicer: Any = library._PolicyAnalyzerServicer


class PackServicer(_LibraryServicer):  # type: ignore[misc]
    """pulumi-policy's servicer, with the manifest's version and one parse per resource."""

    def __init__(self, name: str, _sdk_version: str, *args: Any, **kwargs: Any) -> None:
        # The SDK passes "0.0.1" whatever PulumiPolicy.yaml says and writes it into the text of every
        # "can't run policy ... during preview" diagnostic; the engine replaces only the diagnostic's
        # version field with the manifest's (pulumi/pulumi-policy v1.21.0, `PolicyPack.__init__`;
        # pulumi/pulumi v3.259.0, pkg/resource/plugin/analyzer_plugin.go, `convertDiagnostics`).
        super().__init__(name, PACK_VERSION, *args, **kwargs)

    def Analyze(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method name
        if not one_parse():
            return super().Analyze(request, context)
        self._configure_runtime_settings()
        response = proto.AnalyzeResponse()
        props = _Once(lambda: _parsed(request.properties))
        provider = _Once(lambda: _parsed(request.provider.properties))
        for policy in self._private("policies"):
            level = self._get_enforcement_level(policy)
            if level == EnforcementLevel.DISABLED or not isinstance(policy, ResourceValidationPolicy):
                continue
            if not policy.has_validation():
                response.not_applicable.append(
                    proto.PolicyNotApplicable(policy_name=policy.name, reason="Policy does not implement validate")
                )
                continue
            if level == EnforcementLevel.REMEDIATE:
                # Still violated after remediation: reported as mandatory, as the library does.
                level = EnforcementLevel.MANDATORY
            report = self._create_report_violation(response, policy.name, policy.description, level, policy.severity)
            args = ResourceValidationArgs(
                request.type,
                unknown_checking_proxy(props()),
                request.urn,
                request.name,
                self._get_resource_options(request),
                self._provider(request, provider),
                self._get_policy_config(policy.name),
                self._private("stack_tags"),
            )
            self._validate(response, policy, args, report)
        return response

    def AnalyzeStack(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method name
        if not one_parse():
            return super().AnalyzeStack(request, context)
        self._configure_runtime_settings()
        response = proto.AnalyzeResponse()
        parsed = _Once(
            lambda: [
                (_parsed(r.properties), _parsed(r.provider.properties) if r.HasField("provider") else None)
                for r in request.resources
            ]
        )
        for policy in self._private("policies"):
            level = self._get_enforcement_level(policy)
            if level == EnforcementLevel.DISABLED or not isinstance(policy, StackValidationPolicy):
                continue
            if level == EnforcementLevel.REMEDIATE:
                # Stack policies cannot be remediated: mandatory, as the library does.
                level = EnforcementLevel.MANDATORY
            report = self._create_report_violation(response, policy.name, policy.description, level, policy.severity)
            resources = _linked(request.resources, parsed(), self._get_resource_options)
            args = StackValidationArgs(resources, self._get_policy_config(policy.name), self._private("stack_tags"))
            self._validate(response, policy, args, report)
        return response

    def _private(self, name: str) -> Any:
        """The library servicer's own state (`self.__policies` and the like, name-mangled there)."""
        return getattr(self, f"_PolicyAnalyzerServicer__{name}")

    @staticmethod
    def _provider(request: Any, provider: Callable[[], dict[str, Any]]) -> PolicyProviderResource | None:
        """The library's `_get_provider_resource`, on the provider's one parse."""
        return _provider_resource(request.provider, provider()) if request.HasField("provider") else None

    def _validate(self, response: Any, policy: Any, args: Any, report: Any) -> None:
        """Run one policy as the library does: an unknown value read during preview becomes an
        advisory "can't run policy" diagnostic, and a policy may declare itself not applicable."""
        try:
            result = policy.validate(args, report)
            if isawaitable(result):
                loop = asyncio.new_event_loop()
                loop.run_until_complete(result)
                loop.close()
        except UnknownValueError as e:
            name, pack_version = self._private("policy_pack_name"), self._private("policy_pack_version")
            response.diagnostics.append(
                proto.AnalyzeDiagnostic(
                    policyName=policy.name,
                    policyPackName=name,
                    policyPackVersion=pack_version,
                    message=f"can't run policy '{policy.name}' from policy pack '{name}@v{pack_version}' during preview: {e.message}",
                    urn="",
                    description=policy.description,
                    enforcementLevel=self._map_enforcement_level(EnforcementLevel.ADVISORY),
                )
            )
        except library._NotApplicableError as e:
            response.not_applicable.append(proto.PolicyNotApplicable(policy_name=policy.name, reason=e.reason or ""))


class _Once:
    """A value computed on first use: the library parses only once a policy runs."""

    def __init__(self, compute: Callable[[], Any]) -> None:
        self._compute, self._done, self._value = compute, False, None

    def __call__(self) -> Any:
        if not self._done:
            self._value, self._done = self._compute(), True
        return self._value


def _provider_resource(provider: Any, parsed: dict[str, Any]) -> PolicyProviderResource:
    """A resource's provider as a policy sees it: a fresh proxy over the provider's one parse."""
    return PolicyProviderResource(provider.type, unknown_checking_proxy(parsed), provider.urn, provider.name)


def _linked(requested: Any, parsed: list[tuple[dict[str, Any], dict[str, Any] | None]], options: Any) -> list[Any]:
    """The library's `AnalyzeStack` resources for one policy: fresh proxies over the one parse, each
    resource's parent, dependencies and property dependencies linked to the resource objects."""
    resources = []
    for r, (props, provider_props) in zip(requested, parsed, strict=True):
        provider = _provider_resource(r.provider, provider_props) if provider_props is not None else None
        resources.append(
            PolicyResource(r.type, unknown_checking_proxy(props), r.urn, r.name, options(r), provider, None, [], {})
        )
    by_urn = {resource.urn: resource for resource in resources}
    for r, resource in zip(requested, resources, strict=True):
        if r.parent in by_urn:
            resource.parent = by_urn[r.parent]
        resource.dependencies.extend(by_urn[d] for d in r.dependencies if d in by_urn)
        for key, deps in r.propertyDependencies.items():
            resource.property_dependencies[key] = [by_urn[d] for d in deps.urns if d in by_urn]
    return resources


def serve() -> None:
    """Serve the pack as `PolicyPack` does, with this servicer; blocks."""
    # `PolicyPack.__init__` builds its servicer from this module global (pulumi-policy 1.21.0).
    library._PolicyAnalyzerServicer = PackServicer  # type: ignore[misc,assignment]
    PolicyPack(name=PACK_NAME, policies=ALL_POLICIES, enforcement_level=EnforcementLevel.MANDATORY)
