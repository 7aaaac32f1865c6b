"""The stand-in charts (standins.py) served as a Helm repository on 127.0.0.1 (`tooling.chart_repo`),
and the config that points a stack's `modelplane:chartMirror` at it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.engine import standins
from tooling.chart_repo import serve


@contextmanager
def served_charts(folder: Path, without: Iterable[str] = ()) -> Iterator[str]:
    """Every Existing catalog row's stand-in, less the charts named in `without`; yields the URL."""
    archives = standins.build(folder)
    left_out = set(without)
    with serve(folder, only=[a.name for a in archives if a.name.rsplit("-", 1)[0] not in left_out]) as url:
        yield url


def mirror_config(url: str) -> dict[str, Any]:
    return {"modelplane:chartMirror": url}
