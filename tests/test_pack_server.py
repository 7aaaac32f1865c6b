"""The pack's servicer (`policies/server.py`) answers exactly as pulumi-policy's own, parsing once.

Both servicers are given the same requests, built by the plan's own client code from the real
program's resources: every committed stack in a first preview (unknown values) and in an update,
then the same stacks with values written over at random, which is where policies report, fail to
run during preview, or raise. The answers must be the same bytes. This pack's policies read little
of what they are given, so a witness pack that reports everything it sees (options, providers,
links between resources, config, stack tags, every level and every way out of a policy) is held
to the library on the same requests too.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import re
from collections.abc import Iterator, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import empty_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    Severity,
    StackValidationPolicy,
)
from pulumi_policy import policy as library

import policies.server
from infra.config.stackfile import load_stack_file
from infra.formats import plain
from policies.pack import ALL_POLICIES, PACK_NAME, PACK_VERSION
from policies.server import ONE_PARSE_VERSION, PackServicer
from program.main import run
from tooling.analyzer import UNKNOWN, _configure_request, analyze_request, provider_message, stack_request, wire_struct
from tooling.mockrun import Registration, run_under_mocks
from tooling.stackconfig import config_of

STACKS = sorted((Path(__file__).resolve().parents[1] / "stacks").glob("Pulumi.*.yaml"))
# What a write over a registered value puts there: wrong types, a floating tag, an unknown.
ODD: list[Any] = [None, False, 0, -1, 2.5, "", "latest", "x" * 70, UNKNOWN, [], {}, ["a"], {"a": 1}]


def configured(
    cls: Any, policies: list[Policy], config: dict[str, Any] | None = None, tags: dict[str, str] | None = None
) -> Any:
    """A servicer built as `PolicyPack.__init__` builds it, configured as the engine configures it."""
    servicer = cls(PACK_NAME, PACK_VERSION, policies, EnforcementLevel.MANDATORY, None)
    servicer.ConfigureStack(
        analyzer_pb2.AnalyzerStackConfigureRequest(
            stack="s", project="modelplane", organization="organization", tags=tags or {}
        ),
        None,
    )
    servicer.Configure(_configure_request(servicer.GetAnalyzerInfo(empty_pb2.Empty(), None), config or {}), None)
    return servicer


def requests(resources: Sequence[Registration]) -> tuple[list[Any], Any]:
    """Each resource's `Analyze` request and the `AnalyzeStack` request, as the plan's client sends them."""
    providers: dict[str, Any] = {}
    analyze = []
    for r in resources:
        if r.type.startswith("pulumi:providers:"):
            providers[r.urn] = provider_message(r)
        analyze.append(analyze_request(r, wire_struct(r.inputs), providers))
    return analyze, stack_request(resources, providers)


def answer(servicer: Any, call: str, request: Any) -> bytes | str:
    """The serialized answer, or the exception the call raised (the engine sees it as a failed call)."""
    try:
        return bytes(getattr(servicer, call)(request, None).SerializeToString(deterministic=True))
    except Exception as e:
        # An object's repr in the message carries its address, which differs between the two servicers.
        return re.sub(r" at 0x[0-9a-f]+", " at 0x", f"{type(e).__name__}: {e}")


def answers(servicer: Any, resources: Sequence[Registration]) -> Iterator[bytes | str]:
    analyze, stack = requests(resources)
    for request in analyze:
        yield answer(servicer, "Analyze", request)
    yield answer(servicer, "AnalyzeStack", stack)


def overwritten(resources: list[Registration], seed: str, places: int) -> list[Registration]:
    """`resources` with `places` values in each one's inputs and outputs written over: by an odd
    value, by another value the stack holds (a driver, a machine, an image of another resource),
    or deleted. Each resource's choices follow from `seed` and its URN alone, so they do not depend
    on the order the mock runtime registered the resources in."""
    held = sorted({repr(v): v for r in resources for doc in (r.inputs, r.outputs) for v in _leaves(doc)}.items())
    out = []
    for r in resources:
        rnd = random.Random(f"{seed}:{r.urn}")
        inputs, outputs = copy.deepcopy(dict(r.inputs)), copy.deepcopy(r.outputs)
        for doc in (inputs, outputs):
            spots = list(_places(doc))
            for parent, key in rnd.sample(spots, min(places, len(spots))):
                if key not in (parent if isinstance(parent, dict) else range(len(parent))):
                    continue  # removed with an ancestor or a sibling already
                if isinstance(parent, dict) and rnd.random() < 0.2:
                    del parent[key]
                else:
                    parent[key] = copy.deepcopy(rnd.choice(ODD) if rnd.random() < 0.5 else rnd.choice(held)[1])
        out.append(dataclasses.replace(r, inputs=inputs, outputs=outputs))
    return out


def _leaves(node: Any) -> Iterator[Any]:
    for _, value in _places(node):
        if not isinstance(value, dict | list):
            yield value


def _places(node: Any) -> Iterator[tuple[Any, Any]]:
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in items:
        yield node, key
        yield from _places(value)


@pytest.fixture(scope="module")
def servicers() -> tuple[Any, Any]:
    return configured(library._PolicyAnalyzerServicer, ALL_POLICIES), configured(PackServicer, ALL_POLICIES)


@pytest.fixture(scope="module")
def runs() -> list[tuple[str, bool, list[Registration]]]:
    """(stack, preview, the root stack and every resource) for every committed stack in both modes."""
    out = []
    for stack_file in STACKS:
        stack = load_stack_file(stack_file)
        config, secret_keys = config_of(stack)
        for preview in (True, False):
            result = run_under_mocks(run, stack.stack, config, secret_keys, preview=preview)
            assert result.error is None and result.stack is not None
            out.append((stack.stack, preview, [result.stack, *result.resources]))
    return out


def test_every_stack_gets_the_librarys_answers_in_both_modes_and_when_values_are_overwritten(
    servicers: tuple[Any, Any], runs: list[tuple[str, bool, list[Registration]]]
) -> None:
    spoke: set[tuple[str, int]] = set()
    raised = 0
    for stack, preview, clean in runs:
        for resources in (clean, overwritten(clean, f"{stack}:{preview}", 3)):
            theirs, ours = (list(answers(s, resources)) for s in servicers)
            assert ours == theirs, stack
            for raw in ours:
                if isinstance(raw, str):
                    raised += 1
                    continue
                response = analyzer_pb2.AnalyzeResponse.FromString(raw)
                spoke |= {(d.policyName, d.enforcementLevel) for d in response.diagnostics}
    # The comparison has teeth: the overwritten values made most policies speak, at both levels
    # (advisory includes "can't run during preview"), and made some calls raise.
    assert len({policy for policy, _ in spoke}) >= 10, spoke
    assert {level for _, level in spoke} == {analyzer_pb2.ADVISORY, analyzer_pb2.MANDATORY}
    assert raised > 0


def _seen(resource: Any) -> dict[str, Any]:
    """Everything a policy is given about one resource, its provider and its options."""
    opts, provider = resource.opts, resource.provider
    return {
        "type": resource.resource_type,
        "urn": resource.urn,
        "name": resource.name,
        "props": plain(resource.props),
        "options": [
            opts.protect,
            list(opts.ignore_changes),
            opts.delete_before_replace,
            list(opts.aliases),
            [
                opts.custom_timeouts.create_seconds,
                opts.custom_timeouts.update_seconds,
                opts.custom_timeouts.delete_seconds,
            ],
            list(opts.additional_secret_outputs),
            opts.parent,
        ],
        "provider": None
        if provider is None
        else [provider.resource_type, provider.urn, provider.name, plain(provider.props)],
    }


def witness_pack() -> list[Policy]:
    """A pack that reports everything it is given, at every level, and takes each way out of a policy."""

    def see_resource(args: Any, report: Any) -> None:
        report(json.dumps({**_seen(args), "config": args.get_config(), "tags": dict(args.stack_tags)}, default=str))

    def see_stack(args: Any, report: Any) -> None:
        for r in args.resources:
            linked = {
                "parent": r.parent.urn if r.parent is not None else None,
                "dependencies": [d.urn for d in r.dependencies],
                "propertyDependencies": {k: [d.urn for d in v] for k, v in r.property_dependencies.items()},
            }
            report(json.dumps({**_seen(r), **linked}, default=str), r.urn)
        report(json.dumps({"config": args.get_config(), "tags": dict(args.stack_tags)}, default=str))

    def not_applicable(args: Any, report: Any) -> None:
        # Without a reason on a resource whose name is even, with one otherwise.
        if hasattr(args, "name") and len(args.name) % 2 == 0:
            args.not_applicable()
        args.not_applicable(f"nothing to judge on {args.name}" if hasattr(args, "name") else "no stack")

    async def later(args: Any, report: Any) -> None:
        report("reported from a coroutine")

    schema = PolicyConfigSchema(properties={"limit": {"type": "number", "default": 3}})
    return [
        ResourceValidationPolicy("see-resource", "sees", see_resource, config_schema=schema, severity=Severity.HIGH),
        ResourceValidationPolicy(
            "remediated", "still wrong", see_resource, enforcement_level=EnforcementLevel.REMEDIATE
        ),
        ResourceValidationPolicy("switched-off", "off", see_resource, enforcement_level=EnforcementLevel.DISABLED),
        ResourceValidationPolicy("fixes-only", "fixes", remediate=lambda args: None),
        ResourceValidationPolicy("not-mine", "skips", not_applicable),
        ResourceValidationPolicy("later", "async", later, enforcement_level=EnforcementLevel.ADVISORY),
        StackValidationPolicy("see-stack", "sees all", see_stack, config_schema=schema, severity=Severity.LOW),
        StackValidationPolicy(
            "stack-remediated", "still wrong", see_stack, enforcement_level=EnforcementLevel.REMEDIATE
        ),
        StackValidationPolicy("stack-switched-off", "off", see_stack, enforcement_level=EnforcementLevel.DISABLED),
        StackValidationPolicy("stack-not-mine", "skips", not_applicable),
    ]


def test_a_pack_that_reports_everything_it_sees_sees_what_the_library_shows_it(
    runs: list[tuple[str, bool, list[Registration]]],
) -> None:
    pack = witness_pack()
    tags = {"team": "ml"}
    theirs, ours = (
        configured(cls, pack, config={"see-resource": {"limit": 5}}, tags=tags)
        for cls in (library._PolicyAnalyzerServicer, PackServicer)
    )
    kinds: set[str] = set()
    for stack, _, resources in runs:
        analyze, stack_request = requests(resources)
        # The engine also sends which resources each property came from (the plan's client does not):
        # each resource's dependencies under one property, with a URN that is not in the stack.
        for r in stack_request.resources:
            r.propertyDependencies["spec"].urns.extend([*r.dependencies, "urn:pulumi:s::modelplane::x:y:Z::gone"])
        calls = [("Analyze", request) for request in analyze] + [("AnalyzeStack", stack_request)]
        for call, request in calls:
            them, us = answer(theirs, call, request), answer(ours, call, request)
            assert us == them, stack
            assert isinstance(us, bytes), us
            response = analyzer_pb2.AnalyzeResponse.FromString(us)
            kinds |= {d.policyName for d in response.diagnostics} | {n.policy_name for n in response.not_applicable}
    # Every way a policy answers was compared, the resources' providers and links among them.
    assert kinds == {
        "see-resource",
        "remediated",
        "fixes-only",
        "not-mine",
        "later",
        "see-stack",
        "stack-remediated",
        "stack-not-mine",
    }


def writer_and_reader(kind: str) -> tuple[list[Policy], list[Any]]:
    """Two policies: the first writes over what it was given, the second reports what it then sees."""
    seen: list[Any] = []

    def write(args: Any, report: Any) -> None:
        for props in [args.props] if kind == "resource" else [r.props for r in args.resources]:
            props["top"] = "written"
            props["nested"]["key"] = "written"

    def read(args: Any, report: Any) -> None:
        seen.extend(plain(p) for p in ([args.props] if kind == "resource" else [r.props for r in args.resources]))

    cls = ResourceValidationPolicy if kind == "resource" else StackValidationPolicy
    return [
        cls(name="writer", description="writes", validate=write),
        cls(name="reader", description="reads", validate=read),
    ], seen


@pytest.mark.parametrize("kind", ["resource", "stack"])
def test_a_policy_that_writes_to_its_arguments_changes_only_its_own_copy(kind: str) -> None:
    r = Registration(
        type="test:index:Thing",
        name="thing",
        parent=None,
        urn="urn:pulumi:s::modelplane::test:index:Thing::thing",
        inputs={"top": "kept", "nested": {"key": "kept"}},
        custom=True,
        outputs={"top": "kept", "nested": {"key": "kept"}},
    )
    analyze, stack = requests([r])
    for cls in (library._PolicyAnalyzerServicer, PackServicer):
        pack, seen = writer_and_reader(kind)
        servicer = configured(cls, pack)
        if kind == "resource":
            servicer.Analyze(analyze[0], None)
        else:
            servicer.AnalyzeStack(stack, None)
        assert seen == [{"top": "kept", "nested": {"key": "kept"}}], cls.__name__


def test_the_servicer_states_the_manifest_version() -> None:
    # Built as `PolicyPack.__init__` builds it: the SDK passes "0.0.1" whatever PulumiPolicy.yaml says.
    server = PackServicer(
        "modelplane", "0.0.1", ALL_POLICIES, EnforcementLevel.MANDATORY, None, description="GPU rules"
    )
    info = server.GetAnalyzerInfo(None, None)
    assert (info.name, info.version, info.description) == ("modelplane", PACK_VERSION, "GPU rules")
    assert [p.name for p in info.policies][:2] == ["accelerator-driver-mismatch", "unsupported-devices"]


def test_the_one_parse_methods_are_written_against_the_locked_pulumi_policy() -> None:
    assert version("pulumi-policy") == ONE_PARSE_VERSION, (
        "pulumi-policy changed: compare its _PolicyAnalyzerServicer.Analyze and AnalyzeStack with "
        "policies/server.py, carry over what changed, then set ONE_PARSE_VERSION"
    )


def test_under_another_pulumi_policy_the_librarys_own_methods_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[str] = []
    for call in ("Analyze", "AnalyzeStack"):
        original = getattr(library._PolicyAnalyzerServicer, call)

        def spy(self: Any, request: Any, context: Any, original: Any = original, call: str = call) -> Any:
            called.append(call)
            return original(self, request, context)

        monkeypatch.setattr(library._PolicyAnalyzerServicer, call, spy)
    monkeypatch.setattr(policies.server, "one_parse", lambda: False)
    servicer = configured(PackServicer, ALL_POLICIES)
    servicer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(), None)
    servicer.Analyze(analyzer_pb2.AnalyzeRequest(type="test:index:Thing", urn="urn", name="thing"), None)
    assert called == ["AnalyzeStack", "Analyze"]
