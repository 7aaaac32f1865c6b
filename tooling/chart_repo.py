"""A Helm chart repository on 127.0.0.1, serving a folder of chart archives.

`serve(folder)` writes the folder's `index.yaml` (the file a Helm HTTP repository serves; its
format is Helm's `repo.IndexFile`: `apiVersion: v1`, `entries` by chart name, each with `name`,
`version`, `appVersion`, `urls`, `digest` and `created`) and serves the index and the archives
over HTTP from a thread until the block ends. `only` serves a subset of the archives, as a mirror
that lacks a chart would. Tests and local runs point `modelplane:chartMirror` at it; it is not a
server for anyone else's network.
"""

from __future__ import annotations

import hashlib
import tarfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

INDEX = "index.yaml"


class ChartArchiveError(Exception):
    """A file in the folder that is not a chart archive Helm could install."""


def chart_metadata(archive: Path) -> Mapping[str, Any]:
    """The Chart.yaml inside an archive: the file `<chart>/Chart.yaml` under its one top folder."""
    with tarfile.open(archive, "r:gz") as tar:
        names = [m.name for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml")]
        if len(names) != 1:
            raise ChartArchiveError(f"{archive.name}: no <chart>/Chart.yaml at the top of the archive")
        member = tar.extractfile(names[0])
        assert member is not None  # a regular file, found by name above
        meta = yaml.safe_load(member.read())
    if not isinstance(meta, dict) or not meta.get("name") or not meta.get("version"):
        raise ChartArchiveError(f"{archive.name}: its Chart.yaml names no chart name and version")
    return meta


def index_for(archives: Iterable[Path]) -> dict[str, Any]:
    """Helm's index of the archives: one entry per chart version, its url relative to the index."""
    entries: dict[str, list[dict[str, Any]]] = {}
    for archive in sorted(archives):
        meta = chart_metadata(archive)
        created = datetime.fromtimestamp(archive.stat().st_mtime, UTC).isoformat().replace("+00:00", "Z")
        entry = {
            **{k: v for k, v in meta.items() if k not in ("name", "version", "appVersion")},
            "name": meta["name"],
            "version": str(meta["version"]),
            "appVersion": str(meta.get("appVersion", "")),
            "urls": [archive.name],
            "digest": hashlib.sha256(archive.read_bytes()).hexdigest(),
            "created": created,
        }
        entries.setdefault(meta["name"], []).append(entry)
    return {"apiVersion": "v1", "entries": entries, "generated": datetime.now(UTC).isoformat().replace("+00:00", "Z")}


def _handler(folder: Path, served: frozenset[str]) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.lstrip("/") not in served:
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            super().do_GET()

        def do_HEAD(self) -> None:
            if self.path.lstrip("/") not in served:
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            super().do_HEAD()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve(folder: Path, port: int = 0, only: Iterable[str] | None = None, files: Iterable[str] = ()) -> Iterator[str]:
    """Serve the folder's archives (or only the named ones) as a Helm repository; yields its URL.
    `files` are other files of the folder served beside them (a CRD bundle a mirror also holds).

    `only` names archives by file name (`lws-v0.8.0.tgz`); the index lists those alone and any
    other archive answers 404, as from a mirror that does not hold it.
    """
    folder = Path(folder)
    archives = sorted(folder.glob("*.tgz"))
    if only is not None:
        wanted = set(only)
        unknown = wanted - {a.name for a in archives}
        if unknown:
            raise ChartArchiveError(f"{folder}: no archive {', '.join(sorted(unknown))} to serve")
        archives = [a for a in archives if a.name in wanted]
    (folder / INDEX).write_text(yaml.safe_dump(index_for(archives), sort_keys=False))
    served = frozenset([INDEX, *(a.name for a in archives), *files])
    handler = partial(_handler(folder, served), directory=str(folder))
    # Loopback only: this repository exists for the stack run on this machine.
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, name="chart-repo", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
