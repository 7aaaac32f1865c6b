"""A program that binds its ports on every address, run as one pod's container: each of the pod's
ports forwarded from the pod's IP to the loopback port the program was told to bind instead.

Every pod of a local cluster shares this machine's network (`cluster.PodNetwork`), so a program
that listens on `:9002` would hold 9002 for every pod, and a second pod's program (or another
pod's server on that port, Prometheus on 9090) could not start. Given free loopback ports in its
arguments, the program binds those; this wrapper listens on `<pod IP>:<port>` for each of the
pod's own ports and relays every connection to the program's, byte for byte (a TCP relay: gRPC,
HTTP/2 and HTTP/1 pass unchanged), and runs the program as its child, ending with it.

    python tests/engine/portmap.py --forward 10.16.0.5:9002=12345 ... -- PROGRAM ARGS...

Standard library only: it runs by its file path in a pod's world (podproc.py), outside the
repository's import path.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

CHUNK = 65536


async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then half-close, so the other side sees the end as it was sent."""
    with contextlib.suppress(OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target: int) -> None:
    try:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        writer.close()  # the program not listening yet: refused, as its own port would refuse
        return
    try:
        await asyncio.gather(relay(reader, up_writer), relay(up_reader, writer))
    finally:
        for w in (writer, up_writer):
            w.close()


async def main(forwards: list[tuple[str, int, int]], argv: list[str]) -> int:
    servers = []
    for host, port, target in forwards:

        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, target: int = target) -> None:
            await connection(r, w, target)

        servers.append(await asyncio.start_server(handle, host, port, reuse_address=True))
    proc = await asyncio.create_subprocess_exec(*argv)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, proc.send_signal, sig)
    code = await proc.wait()
    for server in servers:
        server.close()
    return code


def parse(spec: str) -> tuple[str, int, int]:
    """`IP:PORT=TARGET`: listen on IP:PORT, relay to 127.0.0.1:TARGET."""
    listen, target = spec.split("=", 1)
    host, port = listen.rsplit(":", 1)
    return host, int(port), int(target)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forward", action="append", type=parse, default=[])
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    sys.exit(asyncio.run(main(args.forward, argv)))
