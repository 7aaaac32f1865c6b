"""The vendored chart archives served as a Helm repository on 127.0.0.1, and the config that
points a stack's `modelplane:chartMirror` at it."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.engine.harness import ROOT

FOLDER = Path(os.environ.get("MODELPLANE_DEV_CHARTS", ROOT / "charts"))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def served_charts(folder: Path = FOLDER) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def mirror_config(url: str) -> dict[str, Any]:
    return {"modelplane:chartMirror": url}
