"""The mirror rule across keys: `modelplane:chartMirror` names only the catalog's components, and a
version only where a mirror serves it. Where charts come from is the serving stack's (`infra.serving.mirror`)."""

from __future__ import annotations

import difflib
from collections.abc import Collection

from infra.config.issues import ConfigIssue
from infra.config.model import ChartMirror

KEY = "chartMirror"  # paths as the model's own errors name them (`infra.config.issues`)


def mirror_issues(
    mirror: ChartMirror | None, component_keys: Collection[str], file_keys: Collection[str] = ()
) -> list[ConfigIssue]:
    """Component keys the catalog does not know (with the closest names), and versions with no mirror
    to serve them. A `file_keys` entry is a file the stack applies, not a chart (the InferencePool
    CRDs, `infra.serving.picker.crds_url`): its URL names the file, and it has no version of its own."""
    if mirror is None:
        return []
    issues: list[ConfigIssue] = []
    for key, own in mirror.components.items():
        path = f"{KEY}.components.{key}"
        if key in file_keys:
            if own.version is not None or own.url is None or not own.url.startswith(("http://", "https://")):
                issues.append(
                    ConfigIssue(
                        path,
                        f"'{key}' is a file the stack applies, which a chart version or an OCI registry cannot name",
                        f"write the file's own HTTP(S) URL alone, e.g. {key}: https://mirror.example.internal/manifests.yaml",
                    )
                )
        elif key not in component_keys:
            close = difflib.get_close_matches(key, sorted(component_keys), n=3)
            hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else "no component is named like it;"
            issues.append(
                ConfigIssue(
                    path,
                    f"'{key}' is not a serving-stack component",
                    f"{hint} the components are {', '.join(sorted({*component_keys, *file_keys}))}",
                )
            )
        elif own.url is None and mirror.url is None:
            issues.append(
                ConfigIssue(
                    f"{path}.version",
                    f"a version is given for '{key}' but no mirror serves it, so it would come from its public "
                    "repository at a version nobody pinned",
                    f"set chartMirror.url or chartMirror.components.{key}.url to the mirror that serves it",
                )
            )
    return issues
