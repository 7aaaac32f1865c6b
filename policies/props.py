"""Reading resource properties the way the engine hands them to a policy.

The engine sends a resource's properties with camelCase keys, every number as a float (`3` arrives
as `3.0`) and, in the Python SDK, wrapped in `pulumi_policy.proxy` objects that are a `Mapping` or
a `Sequence` but not a `dict` or a `list`. Reading an unknown value (computed during preview)
raises `UnknownValueError`, which the pack's server reports as an advisory "can't run policy
... during preview" (pulumi/pulumi-policy v1.21.0, sdk/python/lib/pulumi_policy/policy.py,
`Analyze`); these helpers let that exception through on purpose, and `undecided` says what was
unknown and that the policy decides on `pulumi up`, where every value is known.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from infra.formats import plain


@contextmanager
def undecided(what: str) -> Iterator[None]:
    """Turn a read of an unknown value into the advisory preview diagnostic, naming what was unknown."""
    try:
        yield
    except UnknownValueError as err:
        if not getattr(err, "decided_where", None):
            err.decided_where = what  # type: ignore[attr-defined]
            err.message = cannot_decide(what, err.message)
        raise


def cannot_decide(what: str, why: str) -> str:
    return f"{what} is not known in this preview ({why}); the policy decides on `pulumi up`, which knows it"


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
