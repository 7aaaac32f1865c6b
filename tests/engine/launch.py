"""The test providers' launcher: asks the fork server (`forkserver.py`) for a provider process.

Run as `python -S -E launch.py SOCKET PACKAGE VERSION ARGS...` by the `pulumi-resource-<name>`
script `harness.install_plugins` writes. It imports nothing but the standard library, so it starts
in milliseconds; the fork server hands its standard streams, arguments, environment and folder to
a child forked from a process that has imported the provider already, and this process stands for
that child to the engine: it exits with the child's code, and when the engine kills it (the engine
ends a plugin by killing its process and children: sdk/go/common/resource/plugin/plugin.go,
`Kill`), the fork server sees the connection close and kills the child.

Where no fork server answers, it runs the provider itself, as the launcher did before.
"""

import json
import os
import socket
import sys


def main() -> None:
    path, package, version, *args = sys.argv[1:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(path)
    except OSError:
        os.execv(sys.executable, [sys.executable, "-m", "tests.engine.provider", package, version, *args])
    request = {"package": package, "version": version, "args": args, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    answer = conn.recv(64)
    sys.exit(int(answer) if answer else 1)


if __name__ == "__main__":
    main()
