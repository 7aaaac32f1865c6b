"""Run the real program under Pulumi's mock runtime and collect what it registered.

This is how `modelplane plan` and the tests see the program without a Pulumi CLI or cloud
credentials. The mocks stand in for the engine and providers: a resource's state is its inputs
plus the few outputs a provider would compute (ids, endpoints, kubeconfigs); invokes return the
minimal answer the program reads. The program itself does not know it runs here.

Two modes, as the engine runs a program (pulumi/pulumi v3.259.0):
- `preview=True`, a first preview of a stack where nothing exists yet. A resource to be created
  gets no id and every value its provider computes is unknown; a resource whose provider's
  configuration holds an unknown (the `kubernetes.Provider` of a cluster created in the same
  run) is previewed with no provider call at all: `Check` hands its inputs back unchanged and
  `Create` returns an empty property map (`pkg/resource/plugin/provider_plugin.go`, `Check` and
  `Create` when `!pcfg.known`), so its outputs are empty.
- `preview=False`, an update of a stack whose resources exist: every value is known.

Each `Registration` keeps what the engine hands a policy pack: its inputs (`Analyze`), its
outputs (`AnalyzeStack`: a custom resource's provider state, a component's `register_outputs`),
and, apart (`MockRun.stack`), the root `pulumi:pulumi:Stack` resource with the stack's exports.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi.runtime
from google.protobuf import struct_pb2  # type: ignore[import-untyped]
from pulumi.output import Unknown
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from clouds import CLOUDS
from clouds.spec import MockInvoke, MockOutputs

PROJECT = "modelplane"
# Placeholder for `secure:` values: the offline plan has no passphrase, so secrets stay opaque.
OPAQUE_SECRET = "<secret: not decrypted offline>"

# What each cloud's provider computes and each invoke answers, from the clouds' records.
_OUTPUTS: Mapping[str, MockOutputs] = {token: answer for c in CLOUDS for token, answer in c.mock_outputs.items()}
_INVOKES: Mapping[str, MockInvoke] = {token: answer for c in CLOUDS for token, answer in c.mock_invokes.items()}


def computed_outputs(typ: str, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Outputs a provider computes that the program reads back (camelCase, as the engine sends them)."""
    answer = _OUTPUTS.get(typ)
    return answer(name, inputs) if answer is not None else {}


def invoke_result(token: str, args: Mapping[str, Any], provider: Mapping[str, Any]) -> dict[str, Any]:
    """The result of an invoke the program makes (availability zones, a cluster's credentials) on a
    provider configured with `provider` (its inputs: the region an answer depends on)."""
    answer = _INVOKES.get(token)
    return answer(args, provider) if answer is not None else {}


class PlanMocks(pulumi.runtime.Mocks):
    def __init__(self, preview: bool = False) -> None:
        self.preview = preview
        # A provider's inputs by its reference (`<urn>::<id>`), from the monitor that registered it.
        self.provider_inputs: Callable[[str], Mapping[str, Any]] = lambda reference: {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        state = dict(args.inputs)
        computed = computed_outputs(args.typ, args.name, args.inputs)
        if args.resource_id:
            # An import reads the running resource, in a preview too, so what it computed is known
            # (pulumi/pulumi v3.274.1 pkg/resource/deploy/step.go, `ImportStep.Apply` calls the
            # provider's Read whatever the run).
            state.update(computed)
            return args.resource_id, state
        if self.preview:
            # A resource to be created has no id yet (the SDK reads an empty id as unknown) and
            # its provider computes nothing until `up`. Inputs it was given stay as given.
            state.update({k: rpc.UNKNOWN for k in computed if k not in args.inputs})
            # An input the provider reads back in another shape that is not known yet (an AKS
            # cluster's identity map, keyed by an identity's ID still to be created) is as the cloud's
            # mock answers it: the SDK's output type would not take the input's shape.
            state.update({k: v for k, v in computed.items() if k in args.inputs and _holds_unknown(v)})
            return "", state
        state.update(computed)
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        # An empty failure list, not None: the mock monitor iterates it.
        return invoke_result(args.token, args.args, self.provider_inputs(args.provider or "")), []


@dataclass(frozen=True)
class Registration:
    type: str
    name: str
    parent: str | None  # the parent's name, None for the stack's direct children
    urn: str
    inputs: Mapping[str, Any]
    custom: bool
    # URNs of the resources this one was registered to depend on (`depends_on` and input outputs).
    dependencies: tuple[str, ...] = ()
    protect: bool = False
    provider: str = ""  # the explicit provider reference (`<provider urn>::<id>`), "" when ambient
    parent_urn: str = ""  # the parent's URN as the engine records it (the stack's for top-level resources)
    # The `import_` option: the running resource's ID, read instead of created; "" when created.
    import_id: str = ""
    # What `AnalyzeStack` receives: a custom resource's state, a component's `register_outputs`
    # (filled in when the component registers them, after its children).
    outputs: dict[str, Any] = field(default_factory=dict)


@dataclass
class MockRun:
    resources: list[Registration] = field(default_factory=list)
    # The root `pulumi:pulumi:Stack` resource, its outputs the stack's exports.
    stack: Registration | None = None
    error: BaseException | None = None


def _reset_runtime() -> None:
    runtime_settings.reset_options()
    with contextlib.suppress(RuntimeError):
        asyncio.get_event_loop().close()
    asyncio.set_event_loop(asyncio.new_event_loop())


STACK_TYPE = "pulumi:pulumi:Stack"


def has_unknowns(value: Any) -> bool:
    if isinstance(value, Unknown):
        return True
    if isinstance(value, Mapping):
        return any(has_unknowns(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(has_unknowns(v) for v in value)
    return False


def _holds_unknown(value: Any) -> bool:
    """A mock answer that leaves some of its value unknown (`rpc.UNKNOWN`), as in a preview."""
    if isinstance(value, Mapping):
        return any(_holds_unknown(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_unknown(v) for v in value)
    return bool(value == rpc.UNKNOWN)


class _RecordingMonitor(MockMonitor):
    """A MockMonitor that also keeps each registration's parent, type, inputs, outputs and options."""

    def __init__(self, mocks: pulumi.runtime.Mocks, preview: bool = False) -> None:
        super().__init__(mocks)
        self.preview = preview
        self._records: list[Registration] = []
        self._by_urn: dict[str, Registration] = {}
        # Providers whose configuration holds an unknown value (only in a preview).
        self._unconfigured: set[str] = set()
        self.stack: Registration | None = None

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        if request.type == STACK_TYPE:
            response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
            self.stack = Registration(STACK_TYPE, request.name, None, response.urn, {}, False)
            self._by_urn[response.urn] = self.stack
            return response
        inputs = _sync_await(_deserialize(rpc, request.object))
        provider_urn = request.provider.rsplit("::", 1)[0] if request.provider else ""
        if self.preview and provider_urn in self._unconfigured:
            # No provider call: the engine passes the inputs through `Check` and previews the
            # create as an empty property map (provider_plugin.go, `Check`/`Create`, `!pcfg.known`).
            urn = self.make_urn(request.parent, request.type, request.name)
            response = resource_pb2.RegisterResourceResponse(urn=urn, id="", object=struct_pb2.Struct())
            outputs: dict[str, Any] = {}
        else:
            response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
            outputs = _sync_await(_deserialize(rpc, response.object)) if request.custom else {}
            if self.preview:
                # Inputs that are unknown stay unknown in the previewed state.
                outputs.update({k: v for k, v in inputs.items() if has_unknowns(v)})
        if self.preview and request.type.startswith("pulumi:providers:") and has_unknowns(inputs):
            self._unconfigured.add(response.urn)
        parent = request.parent or ""
        parent_name = None
        if parent and "pulumi:pulumi:Stack" not in parent.split("::")[2].split("$")[-1]:
            parent_name = parent.split("::")[-1]
        record = Registration(
            request.type,
            request.name,
            parent_name,
            response.urn,
            inputs,
            request.custom,
            dependencies=tuple(request.dependencies),
            protect=bool(request.protect),
            provider=request.provider,
            parent_urn=parent,
            outputs=outputs,
            import_id=request.importId,
        )
        self._record(record)
        return response

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The URN the engine gives a resource: its parent's whole type chain, not just the parent's
        own type as the SDK's mock monitor writes it, and no `pulumi:pulumi:Stack` prefix for the
        stack's direct children (pulumi/pulumi sdk/go/common/resource/urn.go, `NewURN`, called with
        the parent's `QualifiedType()` unless the parent is the root stack)."""
        qualified = type_
        if parent:
            parent_chain = parent.split("::")[2]
            if parent_chain != STACK_TYPE:
                qualified = f"{parent_chain}${type_}"
        return "urn:pulumi:" + "::".join([pulumi.get_stack(), pulumi.get_project(), qualified, name])

    def RegisterResourceOutputs(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        record = self._by_urn.get(request.urn)
        if record is not None:
            record.outputs.update(_sync_await(_deserialize(rpc, request.outputs)))
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]

    def _record(self, record: Registration) -> None:
        self._records.append(record)
        self._by_urn[record.urn] = record

    def registrations(self) -> list[Registration]:
        return list(self._records)

    def provider_inputs(self, reference: str) -> Mapping[str, Any]:
        """The inputs of the provider `reference` (`<urn>::<id>`) names; none for the default provider."""
        record = self._by_urn.get(reference.rsplit("::", 1)[0]) if reference else None
        return record.inputs if record is not None else {}


def run_under_mocks(
    program: Callable[[], None],
    stack: str,
    config: Mapping[str, str],
    secret_keys: list[str] | None = None,
    preview: bool = False,
) -> MockRun:
    """Run `program` once under fresh mocks with `config` (full keys, string values).

    `preview=True` runs it as a first preview (see the module docstring), `False` as an update.
    The root Stack resource is `stack`, apart from the program's own `resources`.
    """
    _reset_runtime()
    mocks = PlanMocks(preview=preview)
    monitor = _RecordingMonitor(mocks, preview=preview)
    mocks.provider_inputs = monitor.provider_inputs
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=preview, monitor=monitor)
    pulumi.runtime.set_all_config(dict(config), secret_keys or [])
    result = MockRun()
    try:
        _sync_await(run_pulumi_func(program))
    except BaseException as err:
        result.error = err
    result.resources = monitor.registrations()
    result.stack = monitor.stack
    if result.stack is not None and result.error is None:
        # The mock runtime registers the root stack's outputs before the program runs; the
        # engine records the exports at the end of the run (pulumi/runtime/stack.py, `Stack._finish`).
        root = runtime_settings.get_root_resource()
        exports = getattr(root, "outputs", None) or {}
        result.stack.outputs.update(_sync_await(_resolved(exports)))
    _reset_runtime()
    return result


async def _resolved(values: Mapping[str, Any]) -> dict[str, Any]:
    return await _deserialize(rpc, await rpc.serialize_properties(dict(values), {}))


async def _deserialize(rpc: Any, struct: Any) -> dict[str, Any]:
    return dict(rpc.deserialize_properties(struct, keep_unknowns=True))
