"""`modelplane:chartMirror`: where a cluster's charts come from when not from their public repositories.

The mirror rule is stated here once: a component with a mirror URL (its own under `components`,
else the mirror's) takes its chart from that URL, at its own `version` if one is written, else at
the catalog's pin; a component with neither keeps its row's public repository. An HTTP(S) URL is
a chart repository (the chart by name in it), an `oci://` URL a registry prefix (`<prefix>/<chart>`),
which the ServingStack's release arguments read from the row as for any other (`Chart.oci`).

The checks a field cannot make alone, because they need the catalog's component keys, are the
checks' (`infra.checks.mirror`); the URL and version forms are the model's (`infra.config.model.ChartMirror`).
"""

from __future__ import annotations

from dataclasses import replace

from infra.config.model import ChartMirror
from infra.serving.chart import Chart


def served_from(row: Chart, mirror: ChartMirror | None) -> Chart:
    """The row as a cluster installs it: from the mirror when one serves it, else unchanged."""
    if mirror is None:
        return row
    own = mirror.components.get(row.key)
    url = (own.url if own is not None else None) or mirror.url
    if url is None:
        return row
    version = (own.version if own is not None else None) or row.version
    return replace(row, repo=url, version=version, public_repo=row.repo, pinned_version=row.version)
