"""Run the CrossGuard pack the way the Pulumi engine does, without the Pulumi CLI.

The engine (pulumi/pulumi v3.259.0) starts a Python pack as `python -m pulumi.policy <engine
address> <pack program>` with `PULUMI_CONFIG` (the stack's config), `PULUMI_PROJECT`,
`PULUMI_STACK`, `PULUMI_ORGANIZATION` and `PULUMI_DRY_RUN` set (`constructEnv` in
pkg/resource/plugin/analyzer_plugin.go), reads the port the pack prints, and then calls, in order:
- `ConfigureStack` with the stack, project, organization, dry-run flag, the stack's config and
  its secret keys (`NewPolicyAnalyzer`, same file);
- `GetAnalyzerInfo`, then `Configure` with each policy's level and properties, schema defaults
  filled in (`LoadLocalPolicyPackAnalyzers`, pkg/engine/update.go);
- for each registered resource, as its registration arrives: `Remediate`, whose returned
  properties replace the inputs, then `Analyze` on the (remediated) inputs
  (`stepGenerator.continueStepsFromImport`, pkg/resource/deploy/step_generator.go);
- once every step has succeeded, `AnalyzeStack` over every resource with its **outputs**, parent
  and dependencies, the root `pulumi:pulumi:Stack` included (`stepGenerator.AnalyzeResources`,
  same file; called from `deploymentExecutor.Execute`, deployment_executor.go).
A reported `REMEDIATE` level counts as mandatory. (The engine also labels each diagnostic with the
version `PulumiPolicy.yaml` states, `analyzer.convertDiagnostics`; a `PackViolation` carries no
version.)

This module does the same with the resources a mock run recorded (`tooling.mockrun`), so
the offline plan gets the pack's own verdicts, not a re-implementation of them. The pack's server
answers on four worker threads (pulumi/pulumi-policy v1.21.0, sdk/python/lib/pulumi_policy/
policy.py, `PolicyPack.__init__`) in one Python process, so it uses one core; a large stack's
resources are dealt over several pack processes (`pack_processes`), each configured as the engine
configures its one, and `AnalyzeStack` goes to the first. At most `MAX_IN_FLIGHT` resources are
being analyzed at once per process, and a failed call fails the run: nothing is retried. What
still differs from the engine is listed in docs/policies.md. Starting and stopping a pack process
is `tooling.pack_process`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent import futures
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
from google.protobuf import empty_pb2, json_format, struct_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from tooling.mockrun import Registration
from tooling.pack_process import ORGANIZATION, PolicyPackError, engine_service, start_pack

POLICY_PACK_DIR = Path(__file__).resolve().parents[1] / "policies"
# How long the pack may take to start, and to answer any one call. The engine sets no deadline;
# these only turn a hung pack into an error.
DEFAULT_TIMEOUT = 120.0
# Resources analyzed at once: the pack's server has four worker threads. More calls in flight
# only queue inside the server, where a large stack's calls were cancelled.
MAX_IN_FLIGHT = 4
# Resources per pack process: below this, another process costs more to start (about a second of
# CPU to import the pack) than it saves (docs/benchmarks.md, "Plan cost as the fleet grows").
RESOURCES_PER_PROCESS = 400
# The engine's spelling of "this value is computed and not yet known" (pulumi/runtime/rpc.py).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

_LEVELS = {
    "advisory": analyzer_pb2.ADVISORY,
    "mandatory": analyzer_pb2.MANDATORY,
    "remediate": analyzer_pb2.REMEDIATE,
    "disabled": analyzer_pb2.DISABLED,
}
# A remediate-level violation that is still reported was not fixed: the engine counts it as mandatory.
_REPORTED = {
    analyzer_pb2.ADVISORY: "advisory",
    analyzer_pb2.MANDATORY: "mandatory",
    analyzer_pb2.REMEDIATE: "mandatory",
}


@dataclass(frozen=True)
class PackViolation:
    policy: str
    enforcement: str  # "mandatory" | "advisory"
    message: str
    resource: str  # the resource's name; the stack's name for a stack-wide violation


def pack_processes(resources: int) -> int:
    """How many pack processes a stack of `resources` is analyzed by: one per core, while each has
    at least `RESOURCES_PER_PROCESS` resources to analyze. A resource policy sees one resource per
    call, so where it runs does not change its verdict."""
    return max(1, min(os.cpu_count() or 1, resources // RESOURCES_PER_PROCESS))


class PackSession:
    """A started pack, configured for one stack, asked in the engine's order.

    `analyze` queues one resource (`Remediate` when a policy remediates, then `Analyze`) on the
    next of `processes` pack processes in turn; at most `in_flight` are being asked at once per
    process. `finish` collects the answers in the order queued, then calls `AnalyzeStack` over the
    root stack and every resource. Use it as a context manager: the pack processes are always
    stopped.
    """

    def __init__(
        self,
        stack: str,
        project: str = "modelplane",
        config: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        *,
        stack_config: Mapping[str, str] | None = None,
        secret_keys: Sequence[str] = (),
        timeout: float = DEFAULT_TIMEOUT,
        pack_dir: Path = POLICY_PACK_DIR,
        in_flight: int = MAX_IN_FLIGHT,
        processes: int = 1,
    ) -> None:
        self.stack, self.project, self.dry_run = stack, project, dry_run
        self.processes = max(1, processes)
        self.config = dict(config or {})
        self.stack_config = dict(stack_config or {})
        self.secret_keys = list(secret_keys)
        self.timeout = timeout
        self.pack_dir = pack_dir
        self._stack = ExitStack()
        self._pool = futures.ThreadPoolExecutor(max_workers=max(1, in_flight) * self.processes)
        self.stderr: list[str] = []
        self.stubs: list[analyzer_pb2_grpc.AnalyzerStub] = []
        self._calls: list[tuple[str, futures.Future[list[PackViolation]]]] = []
        # Each provider as its resources carry it, by URN (a provider registers before its resources).
        self.providers: dict[str, analyzer_pb2.AnalyzerProviderResource] = {}

    def __enter__(self) -> PackSession:
        try:
            engine_address = self._stack.enter_context(engine_service())
            deadline = time.monotonic() + self.timeout
            started = [
                self._stack.enter_context(
                    start_pack(self.pack_dir, engine_address, self.stack, self.project, self.dry_run, self.stack_config)
                )
                for _ in range(self.processes)
            ]
            self._stack.callback(self._pool.shutdown, wait=True, cancel_futures=True)
            for process in started:
                port = process.port(deadline)
                channel = grpc.insecure_channel(f"127.0.0.1:{port}")
                self._stack.callback(channel.close)
                self.stderr = process.stderr
                with self._answers("start"):
                    grpc.channel_ready_future(channel).result(timeout=self.timeout)
                    self.stubs.append(self._configured(analyzer_pb2_grpc.AnalyzerStub(channel)))
            self.stub = self.stubs[0]
            self.stderr = [line for process in started for line in process.stderr]
        except BaseException:
            self._stack.close()
            raise
        return self

    def _configured(self, stub: analyzer_pb2_grpc.AnalyzerStub) -> analyzer_pb2_grpc.AnalyzerStub:
        """`ConfigureStack`, `GetAnalyzerInfo` and `Configure`, as the engine calls them on its pack."""
        stub.ConfigureStack(
            analyzer_pb2.AnalyzerStackConfigureRequest(
                stack=self.stack,
                project=self.project,
                organization=ORGANIZATION,
                dry_run=self.dry_run,
                config=self.stack_config,
                config_secret_keys=self.secret_keys,
            ),
            timeout=self.timeout,
        )
        info = stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=self.timeout)
        configured = _configure_request(info, self.config)
        stub.Configure(configured, timeout=self.timeout)
        # The engine asks `Remediate` of every resource, but the pack's server answers it only from
        # policies configured at the `remediate` level and skips every other (pulumi-policy
        # v1.21.0, sdk/python/lib/pulumi_policy/policy.py, `Remediate`), after parsing the
        # resource's properties. With no such policy the answer is empty, so it is not asked: the
        # verdicts are the same, at half the calls.
        self.remediates = any(c.enforcementLevel == analyzer_pb2.REMEDIATE for c in configured.policyConfig.values())
        return stub

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @contextmanager
    def _answers(self, call: str) -> Iterator[None]:
        """Turn gRPC failures into PolicyPackError, naming the call, with what the pack wrote to stderr."""
        try:
            yield
        except grpc.RpcError as err:
            raise PolicyPackError(f"the policy pack failed on {call}: {err}\n{''.join(self.stderr)}") from None
        except grpc.FutureTimeoutError:
            raise PolicyPackError(
                f"the policy pack did not answer {call} within {self.timeout:.0f}s\n{''.join(self.stderr)}"
            ) from None

    def analyze(self, r: Registration) -> None:
        """Queue one resource: `Remediate`, then `Analyze` on what remediation left."""
        if r.type.startswith("pulumi:providers:"):
            self.providers[r.urn] = provider_message(r)
        stub = self.stubs[len(self._calls) % len(self.stubs)]
        self._calls.append((r.name, self._pool.submit(self._analyze_one, stub, r)))

    def _analyze_one(self, stub: analyzer_pb2_grpc.AnalyzerStub, r: Registration) -> list[PackViolation]:
        found: list[PackViolation] = []
        props = wire_struct(r.inputs)
        remediations = []
        if self.remediates:
            with self._answers(f"Remediate({r.name})"):
                remediations = stub.Remediate(
                    analyze_request(r, props, self.providers), timeout=self.timeout
                ).remediations
        for remedy in remediations:
            if remedy.diagnostic:
                found.append(PackViolation(remedy.policyName, "advisory", remedy.diagnostic, r.name))
            elif remedy.HasField("properties"):
                props = remedy.properties
        with self._answers(f"Analyze({r.name})"):
            response = stub.Analyze(analyze_request(r, props, self.providers), timeout=self.timeout)
        return found + _violations(response, {}, r.name)

    def finish(self, resources: Sequence[Registration], root: Registration | None = None) -> list[PackViolation]:
        """Every diagnostic: each resource's in the order queued, then `AnalyzeStack` over all."""
        found: list[PackViolation] = []
        for _, call in self._calls:
            found.extend(call.result())
        everything = [root, *resources] if root is not None else list(resources)
        with self._answers("AnalyzeStack"):
            response = self.stub.AnalyzeStack(stack_request(everything, self.providers), timeout=self.timeout)
        found.extend(_violations(response, {r.urn: r.name for r in everything}, self.stack))
        return found


def run_policy_pack(
    resources: Sequence[Registration],
    stack: str,
    project: str = "modelplane",
    config: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    *,
    root: Registration | None = None,
    stack_config: Mapping[str, str] | None = None,
    secret_keys: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    pack_dir: Path = POLICY_PACK_DIR,
    in_flight: int = MAX_IN_FLIGHT,
    processes: int | None = None,
) -> list[PackViolation]:
    """Every diagnostic the pack reports on `resources`, in the order the engine would show them.

    `config` is pack config as `--policy-pack-config` takes it: a policy name (or `all`) mapped to
    an enforcement level, or to `{"enforcementLevel": ..., <property>: ...}`. `root` is the root
    Stack resource, analyzed first as the engine registers it first; `stack_config` and
    `secret_keys` are the stack's config as the engine sends it (full keys, string values).
    `processes` defaults to `pack_processes(len(resources))`.
    """
    with PackSession(
        stack,
        project,
        config,
        dry_run,
        stack_config=stack_config,
        secret_keys=secret_keys,
        timeout=timeout,
        pack_dir=pack_dir,
        in_flight=in_flight,
        processes=pack_processes(len(resources)) if processes is None else processes,
    ) as session:
        for r in [root] if root is not None else []:
            session.analyze(r)
        for r in resources:
            session.analyze(r)
        return session.finish(resources, root)


def analyze_request(
    r: Registration, props: struct_pb2.Struct, providers: Mapping[str, analyzer_pb2.AnalyzerProviderResource]
) -> analyzer_pb2.AnalyzeRequest:
    """`Analyze` (and `Remediate`) of one resource on `props`, its inputs as the engine sends them."""
    return analyzer_pb2.AnalyzeRequest(
        type=r.type, properties=props, urn=r.urn, name=r.name, options=_options(r), provider=_provider(r, providers)
    )


def stack_request(
    everything: Sequence[Registration], providers: Mapping[str, analyzer_pb2.AnalyzerProviderResource]
) -> analyzer_pb2.AnalyzeStackRequest:
    """`AnalyzeStack` over `everything`, each resource with its outputs, parent and dependencies."""
    return analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(
                type=r.type,
                properties=wire_struct(r.outputs),
                urn=r.urn,
                name=r.name,
                options=_options(r),
                provider=_provider(r, providers),
                parent=r.parent_urn,
                dependencies=list(r.dependencies),
            )
            for r in everything
        ]
    )


def _provider(
    r: Registration, providers: Mapping[str, analyzer_pb2.AnalyzerProviderResource]
) -> analyzer_pb2.AnalyzerProviderResource | None:
    """The resource's explicit provider with its inputs, as the engine attaches it (`getProviderResource`)."""
    return providers.get(r.provider.rsplit("::", 1)[0]) if r.provider else None


def provider_message(provider: Registration) -> analyzer_pb2.AnalyzerProviderResource:
    """What a provider's resources carry of it, built once: they share a few providers."""
    return analyzer_pb2.AnalyzerProviderResource(
        type=provider.type, properties=wire_struct(provider.inputs), urn=provider.urn, name=provider.name
    )


def _configure_request(info: Any, config: Mapping[str, Any]) -> analyzer_pb2.ConfigureAnalyzerRequest:
    """Each policy's resolved config, as the engine sends it: level, then schema defaults under the user's values."""
    check_pack_config(config, {p.name for p in info.policies})
    request = analyzer_pb2.ConfigureAnalyzerRequest()
    for policy in info.policies:
        level = policy.enforcementLevel
        properties: dict[str, Any] = {
            k: v["default"]
            for k, v in json_format.MessageToDict(policy.configSchema.properties).items()
            if "default" in v
        }
        for key in ("all", policy.name):
            given = config.get(key)
            if isinstance(given, str):
                level = _level(given)
            elif isinstance(given, Mapping):
                if "enforcementLevel" in given:
                    level = _level(str(given["enforcementLevel"]))
                if key == policy.name:
                    properties.update({k: v for k, v in given.items() if k != "enforcementLevel"})
        entry = analyzer_pb2.PolicyConfig(enforcementLevel=level)
        entry.properties.update(properties)
        request.policyConfig[policy.name].CopyFrom(entry)
    return request


def check_pack_config(config: Mapping[str, Any], known: set[str]) -> None:
    """Raise ValueError for what the CLI refuses in a pack config: an unknown policy or level."""
    unknown = sorted(set(config) - known - {"all"})
    if unknown:
        raise ValueError(
            f"policy pack config names unknown policies: {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    for given in config.values():
        level = given.get("enforcementLevel") if isinstance(given, Mapping) else given
        if level is not None:
            _level(str(level))


def _level(name: str) -> Any:
    if name not in _LEVELS:
        raise ValueError(f"unknown enforcement level '{name}' (use one of {', '.join(_LEVELS)})")
    return _LEVELS[name]


def _options(r: Registration) -> analyzer_pb2.AnalyzerResourceOptions:
    return analyzer_pb2.AnalyzerResourceOptions(protect=r.protect, parent=r.parent_urn)


def wire_struct(inputs: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update({k: _wire(v) for k, v in inputs.items()})
    return struct


def _wire(value: Any) -> Any:
    """A registered input as the engine marshals it to an analyzer (unknowns and secrets in their wire form)."""
    from pulumi.output import Unknown

    if isinstance(value, Unknown):
        return UNKNOWN
    if isinstance(value, Mapping):
        return {str(k): _wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_wire(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _violations(response: Any, names: Mapping[str, str], default: str) -> list[PackViolation]:
    found = []
    for d in response.diagnostics:
        message = d.message
        # The server prefixes every message with the policy's description; keep what the rule said.
        if d.description and message.startswith(d.description + "\n"):
            message = message[len(d.description) + 1 :]
        found.append(
            PackViolation(
                policy=d.policyName,
                enforcement=_REPORTED.get(d.enforcementLevel, "advisory"),
                message=message,
                resource=names.get(d.urn, default) if d.urn else default,
            )
        )
    return found
