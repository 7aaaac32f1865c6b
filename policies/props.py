"""Reading resource properties the way the engine hands them to a policy.

The engine sends a resource's properties with camelCase keys, every number as a float (`3` arrives
as `3.0`) and, in the Python SDK, wrapped in `pulumi_policy.proxy` objects that are a `Mapping` or
a `Sequence` but not a `dict` or a `list`. Reading an unknown value (computed during preview)
raises `UnknownValueError`, which the pack's server reports as an advisory "can't run during
preview"; these helpers let that exception through on purpose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from infra.formats import plain

__all__ = ["get", "mappings", "plain", "strings"]


def get(props: Any, *path: str) -> Any:
    """The value at `path` in nested mappings, or None where any step is missing."""
    current = props
    for key in path:
        if not isinstance(current, Mapping) or key not in current:
            return None
        current = current[key]
    return current


def mappings(value: Any) -> list[Mapping[str, Any]]:
    """The mappings in a list-valued property (a single mapping counts as one; anything else as none)."""
    if isinstance(value, Mapping):
        return [value]
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [value[i] for i in range(len(value)) if isinstance(value[i], Mapping)]
    return []


def strings(value: Any) -> dict[str, str]:
    """A string-to-string mapping property (labels), empty when absent."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(plain(value[k])) for k in value}
