"""`modelplane:chartMirror`: where a cluster's charts come from when not from their public repositories.

The mirror rule is stated here once: a component with a mirror URL (its own under `components`,
else the mirror's) takes its chart from that URL, at its own `version` if one is written, else at
the catalog's pin; a component with neither keeps its row's public repository. An HTTP(S) URL is
a chart repository (the chart by name in it), an `oci://` URL a registry prefix (`<prefix>/<chart>`),
which the ServingStack's release arguments read from the row as for any other (`Chart.oci`).

The checks a field cannot make alone, because they need the catalog's component keys, are here
too (`mirror_issues`); the URL and version forms are the model's (`infra.config.model.ChartMirror`).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from dataclasses import replace

from infra.config.issues import ConfigIssue
from infra.config.model import ChartMirror
from infra.serving.chart import Chart

KEY = "chartMirror"  # paths as the model's own errors name them (`infra.config.issues`)


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


def mirror_issues(mirror: ChartMirror | None, component_keys: Collection[str], file: str) -> list[ConfigIssue]:
    """Component keys the catalog does not know (with the closest names), and versions with no mirror to serve them."""
    if mirror is None:
        return []
    issues: list[ConfigIssue] = []
    for key, own in mirror.components.items():
        path = f"{KEY}.components.{key}"
        if key not in component_keys:
            close = difflib.get_close_matches(key, sorted(component_keys), n=3)
            hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else "no component is named like it;"
            issues.append(
                ConfigIssue(
                    file,
                    path,
                    f"'{key}' is not a serving-stack component",
                    f"{hint} the components are {', '.join(sorted(component_keys))}",
                )
            )
        elif own.url is None and mirror.url is None:
            issues.append(
                ConfigIssue(
                    file,
                    f"{path}.version",
                    f"a version is given for '{key}' but no mirror serves it, so it would come from its public "
                    "repository at a version nobody pinned",
                    f"set chartMirror.url or chartMirror.components.{key}.url to the mirror that serves it",
                )
            )
    return issues
