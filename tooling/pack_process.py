"""Start the CrossGuard pack as the Pulumi engine starts a Python pack, and stop it.

The engine (pulumi/pulumi v3.259.0) runs `python -m pulumi.policy <engine address> <pack program>`
with `PULUMI_CONFIG`, `PULUMI_PROJECT`, `PULUMI_STACK`, `PULUMI_ORGANIZATION` and `PULUMI_DRY_RUN`
set (`constructEnv` in pkg/resource/plugin/analyzer_plugin.go) and reads the port the pack prints.
This module starts such a process and serves the engine's log service it calls; what is asked of
the pack, and in which order, is `tooling.analyzer`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
from google.protobuf import empty_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import engine_pb2_grpc

from tooling.stackconfig import MAX_ENV_STRING

# Each `ConfigureStack` needs an organization; a file backend has none and the engine sends this.
ORGANIZATION = "organization"


class PolicyPackError(RuntimeError):
    """The pack could not be started, configured or asked; carries what the pack wrote to stderr."""


class _Engine(engine_pb2_grpc.EngineServicer):
    """The part of the engine service a pack may call: it logs. Logs are kept for error reports."""

    def __init__(self) -> None:
        self.logs: list[str] = []

    def Log(self, request: Any, context: Any) -> empty_pb2.Empty:  # noqa: N802 - gRPC method name
        self.logs.append(request.message)
        return empty_pb2.Empty()


@contextmanager
def engine_service() -> Iterator[str]:
    """The engine's service for the pack's logs, on a free local port; stopped on exit."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    engine_pb2_grpc.add_EngineServicer_to_server(_Engine(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0)


@dataclass
class PackProcess:
    """A started pack: its process, and what it has written to stderr so far."""

    process: subprocess.Popen[str]
    stderr: list[str]
    drain: threading.Thread

    def port(self, deadline: float) -> int:
        """The port the pack prints once it serves; PolicyPackError when it exits or is late."""
        stdout = self.process.stdout
        assert stdout is not None, "started with stdout=PIPE"
        port_line: list[str] = []
        reader = threading.Thread(target=lambda: port_line.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(max(deadline - time.monotonic(), 0.1))
        line = port_line[0].strip() if port_line else ""
        if not line.isdigit():
            exited = self.process.poll() is not None
            self.process.kill()
            self.drain.join(5)
            why = "exited" if exited else "printed no port in time"
            raise PolicyPackError(f"the policy pack {why}:\n{''.join(self.stderr)}")
        return int(line)


@contextmanager
def start_pack(
    pack_dir: Path,
    engine_address: str,
    stack: str,
    project: str,
    dry_run: bool,
    stack_config: Mapping[str, str],
) -> Iterator[PackProcess]:
    """Start the pack as the engine does, without waiting for its port; always stop it."""
    env = {
        **os.environ,
        "PULUMI_PROJECT": project,
        "PULUMI_STACK": stack,
        "PULUMI_ORGANIZATION": ORGANIZATION,
        "PULUMI_DRY_RUN": "true" if dry_run else "false",
        "PULUMI_CONFIG": json.dumps(dict(stack_config)),
        # The pack prints its port and then blocks; unbuffered, as the language host runs Python,
        # or the port would sit in a pipe buffer that is never flushed.
        "PYTHONUNBUFFERED": "1",
    }
    if len(f"PULUMI_CONFIG={env['PULUMI_CONFIG']}".encode()) >= MAX_ENV_STRING:
        # The language host would fail to start the pack here (E2BIG); the pack still gets the
        # config through `ConfigureStack`, and this pack reads none of it. docs/policies.md
        # lists this difference.
        del env["PULUMI_CONFIG"]
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
        yield PackProcess(process, stderr, drain)
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
