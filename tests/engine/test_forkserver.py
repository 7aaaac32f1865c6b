"""The test providers' fork server: a launch serves the engine as a provider process would, and a
provider never outlives the launcher the engine started and killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.engine.harness import LAUNCH, ROOT


def launch(server: Path, folder: Path) -> subprocess.Popen[bytes]:
    """The launcher as the engine starts it: arguments, an engine address, stdout read for the port."""
    return subprocess.Popen(
        [sys.executable, "-S", "-E", str(LAUNCH), str(server), "kubernetes", "4.34.2", "127.0.0.1:1"],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MODELPLANE_TEST_PROVIDER_DIR": str(folder)},
    )


def started(folder: Path) -> list[int]:
    ops = folder / "ops.jsonl"
    lines = ops.read_text().splitlines() if ops.exists() else []
    return [json.loads(line)["pid"] for line in lines if json.loads(line)["op"] == "start"]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(check: object, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_a_forked_provider_announces_its_port_and_dies_with_its_killed_launcher(tmp_path: Path) -> None:
    server_socket = tmp_path / "fork.sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.forkserver", str(server_socket)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert wait_until(server_socket.exists, timeout=120), "the fork server never listened"
        launcher = launch(server_socket, tmp_path)
        assert launcher.stdout is not None
        port = launcher.stdout.readline().strip()
        assert port.isdigit(), port
        [pid] = started(tmp_path)
        # The provider is the server's child, not the launcher itself.
        assert pid != launcher.pid
        assert alive(pid)
        launcher.kill()
        launcher.wait()
        assert wait_until(lambda: not alive(pid)), "the provider outlived its launcher"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_without_a_fork_server_the_launcher_runs_the_provider_itself(tmp_path: Path) -> None:
    launcher = launch(tmp_path / "no-server.sock", tmp_path)
    try:
        assert launcher.stdout is not None
        assert launcher.stdout.readline().strip().isdigit()
        assert started(tmp_path) == [launcher.pid]
    finally:
        launcher.kill()
        launcher.wait()
