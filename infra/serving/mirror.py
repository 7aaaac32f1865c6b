"""`modelplane:chartMirror`: where a cluster's charts come from when not from their public repositories.

The mirror rule is stated here once: a component with a mirror URL (its own under `components`,
else the mirror's) takes its chart from that URL, at its own `version` if one is written, else at
the catalog's pin; a component with neither keeps its row's public repository. An HTTP(S) URL is
a chart repository (the chart by name in it), an `oci://` URL a registry prefix (`<prefix>/<chart>`),
which the ServingStack's release arguments read from the row as for any other (`Component.oci`).

The checks a field cannot make alone, because they need the catalog's component keys, are the
checks' (`infra.checks.mirror`); the URL and version forms are the model's (`infra.config.model.ChartMirror`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Protocol, TypeVar

from infra.config.model import ChartMirror


class ChartRow(Protocol):
    """What the rule reads of a catalog row (`infra.serving.catalog.Component`, a dataclass)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def key(self) -> str: ...
    @property
    def repo(self) -> str: ...
    @property
    def version(self) -> str: ...


Row = TypeVar("Row", bound=ChartRow)


def served_from(component: Row, mirror: ChartMirror | None) -> Row:
    """The row as a cluster installs it: from the mirror when one serves it, else unchanged."""
    if mirror is None:
        return component
    own = mirror.components.get(component.key)
    url = (own.url if own is not None else None) or mirror.url
    if url is None:
        return component
    version = (own.version if own is not None else None) or component.version
    return replace(component, repo=url, version=version, public_repo=component.repo, pinned_version=component.version)
