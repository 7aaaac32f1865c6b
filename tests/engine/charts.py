"""The stand-in charts (standins.py) served as a Helm repository on 127.0.0.1 (`tooling.chart_repo`),
and the config that points a stack's `modelplane:chartMirror` at it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from infra.serving.picker import CRDS_COMPONENT
from tests.engine import standins
from tests.engine.kube import inference_crds
from tooling.chart_repo import serve

# The release's CRDs as one file, the shape of its manifests.yaml.
CRDS_FILE = "manifests.yaml"


@contextmanager
def served_charts(folder: Path, without: Iterable[str] = ()) -> Iterator[str]:
    """Every Existing catalog row's stand-in, less the charts named in `without`; yields the URL."""
    archives = standins.build(folder)
    left_out = set(without)
    (folder / CRDS_FILE).write_text(yaml.safe_dump_all(inference_crds(), sort_keys=False))
    only = [a.name for a in archives if a.name.rsplit("-", 1)[0] not in left_out]
    with serve(folder, only=only, files=[CRDS_FILE]) as url:
        yield url


def mirror_config(url: str) -> dict[str, Any]:
    """The stand-ins' repository as the stack's chart mirror, and beside it the InferencePool CRDs'
    file (`infra.serving.picker.crds_url`), as an air-gapped cluster's mirror serves both."""
    return {
        "modelplane:chartMirror": {"url": url, "components": {CRDS_COMPONENT: f"{url}/{CRDS_FILE}"}},
    }
