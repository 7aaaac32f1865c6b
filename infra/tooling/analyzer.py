"""Run the CrossGuard pack the way the Pulumi engine does, without the Pulumi CLI.

The engine starts a Python pack as `python -m pulumi.policy <engine address> <pack program>` with
`PULUMI_PROJECT`, `PULUMI_STACK`, `PULUMI_DRY_RUN` and `PULUMI_CONFIG` set, reads the port the
pack's Analyzer server prints, and speaks the Analyzer gRPC protocol to it: `GetAnalyzerInfo`,
`Configure` (each policy's enforcement level and properties, schema defaults filled in),
`Analyze` for every registered resource with its inputs, and `AnalyzeStack` over all of them
with parents and dependencies. This module does exactly that with the resources a mock run
recorded, so the offline plan gets the pack's own verdicts, not a re-implementation of them.

What differs from a real deployment: the resources are those of `infra.tooling.mockrun` (inputs as the
program registered them, which the mocks also return as outputs), and no provider `Check` has
normalised the inputs first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent import futures
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
from google.protobuf import empty_pb2, json_format, struct_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc, engine_pb2_grpc

from infra.tooling.mockrun import Registration

POLICY_PACK_DIR = Path(__file__).resolve().parents[2] / "policies"
DEFAULT_TIMEOUT = 120.0

# The engine's spelling of "this value is computed and not yet known" (pulumi/runtime/rpc.py).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
_SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"

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


class PolicyPackError(RuntimeError):
    """The pack could not be started, configured or asked; carries what the pack wrote to stderr."""


class PackSession:
    """A started pack, configured for one stack.

    `analyze` sends one resource to `Analyze` without waiting, as the engine has many resource
    steps in flight; `finish` reads the answers in the order sent, then calls `AnalyzeStack` over
    all resources. Use it as a context manager: the pack process is always stopped.
    """

    def __init__(
        self,
        stack: str,
        project: str = "modelplane",
        config: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        pack_dir: Path = POLICY_PACK_DIR,
    ) -> None:
        self.stack, self.project, self.dry_run = stack, project, dry_run
        self.config = dict(config or {})
        self.timeout = timeout
        self.pack_dir = pack_dir
        self._stack = ExitStack()
        self._calls: list[tuple[str, Any]] = []
        self._lock = threading.Lock()

    def __enter__(self) -> PackSession:
        self.deadline = time.monotonic() + self.timeout
        try:
            engine_address = self._stack.enter_context(_engine())
            port, self.stderr = self._stack.enter_context(
                _pack_process(self.pack_dir, engine_address, self.stack, self.project, self.dry_run, self.deadline)
            )
            channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            self._stack.callback(channel.close)
            with self._answers():
                grpc.channel_ready_future(channel).result(timeout=_left(self.deadline))
                self.stub = analyzer_pb2_grpc.AnalyzerStub(channel)
                info = self.stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=_left(self.deadline))
                self.stub.Configure(_configure_request(info, self.config), timeout=_left(self.deadline))
                self.stub.ConfigureStack(
                    analyzer_pb2.AnalyzerStackConfigureRequest(
                        stack=self.stack, project=self.project, organization="organization", dry_run=self.dry_run
                    ),
                    timeout=_left(self.deadline),
                )
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @contextmanager
    def _answers(self) -> Iterator[None]:
        """Turn gRPC failures into PolicyPackError, with what the pack wrote to stderr."""
        try:
            yield
        except grpc.RpcError as err:
            raise PolicyPackError(f"the policy pack failed: {err}\n{''.join(self.stderr)}") from None
        except grpc.FutureTimeoutError:
            raise PolicyPackError(
                f"the policy pack did not answer within {self.timeout:.0f}s\n{''.join(self.stderr)}"
            ) from None

    def analyze(self, r: Registration) -> None:
        """Send one resource's inputs to `Analyze` without waiting for the answer."""
        request = analyzer_pb2.AnalyzeRequest(
            type=r.type, properties=_struct(r.inputs), urn=r.urn, name=r.name, options=_options(r)
        )
        call = self.stub.Analyze.future(request, timeout=_left(self.deadline))
        with self._lock:
            self._calls.append((r.name, call))

    def finish(self, resources: Sequence[Registration]) -> list[PackViolation]:
        """Every diagnostic: each `Analyze` answer in the order sent, then `AnalyzeStack` over all."""
        found: list[PackViolation] = []
        with self._answers():
            for name, call in self._calls:
                found.extend(_violations(call.result(), {}, name))
            analyzed = [
                analyzer_pb2.AnalyzerResource(
                    type=r.type,
                    properties=_struct(r.inputs),
                    urn=r.urn,
                    name=r.name,
                    options=_options(r),
                    parent=r.parent_urn,
                    dependencies=list(r.dependencies),
                )
                for r in resources
            ]
            response = self.stub.AnalyzeStack(
                analyzer_pb2.AnalyzeStackRequest(resources=analyzed), timeout=_left(self.deadline)
            )
        found.extend(_violations(response, {r.urn: r.name for r in resources}, self.stack))
        return found


def run_policy_pack(
    resources: Sequence[Registration],
    stack: str,
    project: str = "modelplane",
    config: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    pack_dir: Path = POLICY_PACK_DIR,
) -> list[PackViolation]:
    """Every diagnostic the pack reports on `resources`, in the order the engine would show them.

    `config` is pack config as `--policy-pack-config` takes it: a policy name (or `all`) mapped to
    an enforcement level, or to `{"enforcementLevel": ..., <property>: ...}`.
    """
    with PackSession(stack, project, config, dry_run, timeout=timeout, pack_dir=pack_dir) as session:
        for r in resources:
            session.analyze(r)
        return session.finish(resources)


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.1)


def _configure_request(info: Any, config: Mapping[str, Any]) -> analyzer_pb2.ConfigureAnalyzerRequest:
    """Each policy's resolved config, as the engine sends it: level, then schema defaults under the user's values."""
    known = {p.name for p in info.policies}
    unknown = sorted(set(config) - known - {"all"})
    if unknown:
        raise ValueError(
            f"policy pack config names unknown policies: {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
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


def _level(name: str) -> Any:
    if name not in _LEVELS:
        raise ValueError(f"unknown enforcement level '{name}' (use one of {', '.join(_LEVELS)})")
    return _LEVELS[name]


def _options(r: Registration) -> analyzer_pb2.AnalyzerResourceOptions:
    return analyzer_pb2.AnalyzerResourceOptions(protect=r.protect, parent=r.parent_urn)


def _struct(inputs: Mapping[str, Any]) -> struct_pb2.Struct:
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


class _Engine(engine_pb2_grpc.EngineServicer):
    """The part of the engine service a pack may call: it logs. Logs are kept for error reports."""

    def __init__(self) -> None:
        self.logs: list[str] = []

    def Log(self, request: Any, context: Any) -> empty_pb2.Empty:  # noqa: N802 - gRPC method name
        self.logs.append(request.message)
        return empty_pb2.Empty()


@contextmanager
def _engine() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    engine_pb2_grpc.add_EngineServicer_to_server(_Engine(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0)


@contextmanager
def _pack_process(
    pack_dir: Path, engine_address: str, stack: str, project: str, dry_run: bool, deadline: float
) -> Iterator[tuple[int, list[str]]]:
    """Start the pack as the engine does; yield the port it serves on and its stderr so far; always stop it."""
    env = {
        **os.environ,
        "PULUMI_PROJECT": project,
        "PULUMI_STACK": stack,
        "PULUMI_DRY_RUN": "true" if dry_run else "false",
        "PULUMI_CONFIG": json.dumps({}),
        # The pack prints its port and then blocks; unbuffered, as the language host runs Python,
        # or the port would sit in a pipe buffer that is never flushed.
        "PYTHONUNBUFFERED": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "pulumi.policy", engine_address, str(pack_dir / "__main__.py")],
        cwd=pack_dir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr: list[str] = []
    drain = threading.Thread(target=lambda: stderr.extend(process.stderr or []), daemon=True)
    drain.start()
    try:
        stdout = process.stdout
        assert stdout is not None, "started with stdout=PIPE"
        port_line: list[str] = []
        reader = threading.Thread(target=lambda: port_line.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(_left(deadline))
        line = port_line[0].strip() if port_line else ""
        if not line.isdigit():
            process.kill()
            drain.join(5)
            why = "exited" if process.poll() is not None else "printed no port in time"
            raise PolicyPackError(f"the policy pack {why}:\n{''.join(stderr)}")
        yield int(line), stderr
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
