"""A fork server for the test providers: each provider process is forked from one that imported it.

The engine starts one plugin process per provider resource, so a fleet of 50 clusters starts 50
kubernetes providers. A test provider is Python: started cold, each one paid about a second of
CPU importing the Pulumi SDK, the rules it answers with and the SDK modules of the types it checks,
which at 50 clusters was the largest cost of the engine tier that is ours (docs/benchmarks.md).
This server pays it once: it imports the provider and the argument classes of every type the
committed stacks register (`schema.args_class`), then forks a child per launch, which serves the
launcher's request with the launcher's streams, arguments, environment and folder (`launch.py`).

`python -m tests.engine.forkserver SOCKET` serves until its parent exits; `socket_path()` starts
one per process that runs the engine (a pytest worker, a benchmark), on first use.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A request is one datagram of a SOCK_SEQPACKET socket: the launcher's arguments and environment.
MAX_REQUEST = 1 << 20


def warm() -> None:
    """Import what every provider process needs before it answers: the provider, and the argument
    class of each resource type the committed stacks register (their golden plans list them)."""
    from tests.engine import provider, schema  # noqa: F401

    tokens = {
        r["type"]
        for golden in (ROOT / "tests" / "golden").glob("*.json")
        for r in json.loads(golden.read_text())["resources"]
    }
    for token in sorted(tokens):
        with contextlib.suppress(Exception):
            schema.args_class(token)


def child(request: dict[str, object], fds: list[int]) -> None:
    """In the forked process: become the launcher's provider, then exit with its code."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])  # type: ignore[arg-type]
    os.chdir(str(request["cwd"]))
    code = 0
    try:
        from tests.engine.provider import serve

        serve(str(request["package"]), str(request["version"]), list(request["args"]))  # type: ignore[call-overload]
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve(path: str) -> None:
    warm()
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(128)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listen")
    selector.register(wake_r, selectors.EVENT_READ, "reap")
    # Each live child and the connection of its launcher, None once the launcher has gone.
    children: dict[int, socket.socket | None] = {}

    def stop(*_: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        loop(parent, listener, selector, children, wake_r, wake_w)
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def loop(
    parent: int,
    listener: socket.socket,
    selector: selectors.BaseSelector,
    children: dict[int, socket.socket | None],
    wake_r: int,
    wake_w: int,
) -> None:
    while os.getppid() == parent:
        for key, _ in selector.select(timeout=1.0):
            if key.data == "listen":
                conn, _ = listener.accept()
                try:
                    message, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
                    request = json.loads(message)
                except (OSError, ValueError):
                    conn.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    listener.close()
                    for other in [conn, *children.values()]:
                        if other is not None:
                            other.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    child(request, fds)
                for fd in fds:
                    os.close(fd)
                children[pid] = conn
                selector.register(conn, selectors.EVENT_READ, pid)
            elif key.data == "reap":
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
                while children:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                    if pid == 0:
                        break
                    if (conn := children.pop(pid, None)) is not None:
                        selector.unregister(conn)
                        with contextlib.suppress(OSError):
                            conn.send(str(os.waitstatus_to_exitcode(status)).encode())
                        conn.close()
            else:
                # The launcher's end closed: the engine killed it, so its provider goes too.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(key.data, signal.SIGKILL)
                selector.unregister(key.fileobj)
                key.fileobj.close()  # type: ignore[union-attr]
                children[key.data] = None


@functools.cache
def socket_path() -> str:
    """The socket of this process's fork server, started now; it stops when this process exits."""
    folder = tempfile.mkdtemp(prefix="providers-")
    path = os.path.join(folder, "fork.sock")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.forkserver", path],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
    )

    def stop() -> None:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=5)

    atexit.register(stop)
    return path


if __name__ == "__main__":
    serve(sys.argv[1])
