"""What `pulumi up` would do, resource by resource, from an earlier plan of the same stack (`--against`).

`compare(old, new)` matches the two plans' `resources[]` by URN and gives each one an op:
`create` (only in the new plan), `delete` (only in the old), `same` (equal inputs), `update` or
`replace` (changed inputs; a replace when a changed path is one its type's provider documents as
forcing a new resource, `tooling.replacements`). Inputs are compared as the plan shows them: a
secret is `[secret]` and a value computed at create `[unknown]` on both sides, so a change inside a
secret, or in an output a replaced resource would give its dependents, is not seen here; the real
preview sees both.

Two things `up` would refuse are errors of the new plan (`change_errors`), each naming the
resources: deleting or replacing a protected resource (the engine deletes nothing protected and
replaces a resource only when the program stops protecting it in the same update: pulumi/pulumi
pkg/resource/deploy/step_generator.go, "unable to replace resource ... marked for protection"),
and a change its provider accepts in the diff and then it, or the cloud's API, cannot make
(`Forcing.refused`, `Forcing.refused_smaller`), with the route that works (`Forcing.refused_fix`).

An earlier plan is accepted only when it is this stack's, of this format and mode, and lists what
was registered (`check_against`); otherwise the comparison is refused with the reason.

A new plan whose config is rejected has no changes (`rejected_before_registering`): the program
stops before it registers anything, and the engine then bails before it generates a single delete.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from infra.formats import parse_quantity
from tooling.replacements import NEW_POOL_OR_REVERT, Forcing, forcing

# The plan document's format; `--against` reads only its own. 2: resources carry `urn` and
# `protect`, and the document its `format` and `mode` (format 1 had none of these).
PLAN_FORMAT = 2

# `import`: a resource new to the stack that `up` reads by its `import` ID instead of creating
# (an adopted cluster or pool, docs/adopting.md).
OPS = ("create", "import", "update", "replace", "delete", "same")

# The README's route for removing or replacing what `modelplane:protect` guards.
UNPROTECT = (
    "set `modelplane:protect: false` and run `pulumi up` first (it only lifts the protection; README, "
    "Configuration, `modelplane:protect`), then make this change"
)


class AgainstError(ValueError):
    """An earlier plan `--against` cannot compare with, and why."""


def read_plans(path: Path) -> list[dict[str, Any]]:
    """The plans in an earlier `--json` document: the one of `--stack`, or each of `--all`."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as problem:
        raise AgainstError(f"cannot read it as a JSON plan ({problem})") from None
    plans = doc["stacks"] if isinstance(doc, dict) and isinstance(doc.get("stacks"), list) else [doc]
    if not all(isinstance(p, dict) and isinstance(p.get("stack"), str) for p in plans):
        raise AgainstError(
            "it is not a `modelplane plan --json` document (no `stack`); pass the file that command wrote"
        )
    return plans


def plan_of(plans: Sequence[Mapping[str, Any]], stack: str) -> Mapping[str, Any] | None:
    return next((p for p in plans if p["stack"] == stack), None)


def rejected_before_registering(plan: Mapping[str, Any]) -> bool:
    """Whether `plan`'s config is rejected, so its program stops before registering anything.

    The stack file is refused, or the guard stops the program (`program.main.deploy` raises before
    its first registration). `up` then changes nothing: the engine's deployment executor bails on
    the program's error before `performPostSteps`, where the deletes of what the program did not
    register are generated (pulumi/pulumi v3.259.0 pkg/resource/deploy/deployment_executor.go,
    `Execute`). A plan that ran always registers something: an empty fleet is a stop.
    """
    return not plan["ok"] and not plan["resources"]


def check_against(old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Refuse an earlier plan that cannot be compared with `new`, saying why and what to pass instead."""
    if old["stack"] != new["stack"]:
        raise AgainstError(
            f"it is a plan of stack '{old['stack']}', not '{new['stack']}'; pass an earlier plan of '{new['stack']}'"
        )
    fmt = old.get("format")
    if fmt != PLAN_FORMAT:
        age = (
            "an older plan format (before URNs were recorded)"
            if fmt is None or fmt < PLAN_FORMAT
            else "a newer plan format"
        )
        raise AgainstError(
            f"it is {age}: format {fmt or 1}, and this modelplane reads format {PLAN_FORMAT}; plan the earlier "
            "commit again with this modelplane (`modelplane plan --json` there, with this checkout's tooling)"
        )
    if old.get("mode") != new.get("mode"):
        raise AgainstError(
            f"it was planned with `--mode {old.get('mode')}` and this plan with `--mode {new.get('mode')}`; "
            "values known in one mode are unknown in the other, so plan both in the same mode"
        )
    if rejected_before_registering(old) and not rejected_before_registering(new):
        raise AgainstError(
            "it was rejected before the program ran, so it lists no resources to compare with; fix that commit's "
            "plan first, or compare with an earlier one that planned"
        )


# --------------------------------------------------------------------------------------------
# Paths

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def path_text(parts: Sequence[str | int]) -> str:
    """`nodeConfig.labels["modelplane.ai/pool"]`, `taints[0].key`: keys with dots or slashes quoted."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _parts(pattern: str) -> list[str]:
    """A forcing path as parts: `a.b[*].c` -> [a, b, *, c]."""
    return [p for p in re.split(r"\.|\[|\]", pattern) if p]


def changed_leaves(old: Any, new: Any, at: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The paths where `old` and `new` differ, down to their leaves (a key on one side only gives its leaves)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[tuple[str | int, ...]] = []
        for key in sorted(set(old) | set(new)):
            out += changed_leaves(old.get(key, _ABSENT), new.get(key, _ABSENT), (*at, key))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for i in range(max(len(old), len(new))):
            out += changed_leaves(old[i] if i < len(old) else _ABSENT, new[i] if i < len(new) else _ABSENT, (*at, i))
        return out
    if old == new:
        return []
    one_side = new if old is _ABSENT else old if new is _ABSENT else None
    if isinstance(one_side, Mapping) and one_side:
        return [(*at, *leaf) for leaf in changed_leaves(_empty(one_side, old), _empty(one_side, new))]
    if isinstance(one_side, list) and one_side:
        return [(*at, *leaf) for leaf in changed_leaves(_empty(one_side, old), _empty(one_side, new))]
    return [at]


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Any = _Absent()


def _empty(like: Any, value: Any) -> Any:
    """`value`, or an empty container of `like`'s kind where `value` is absent."""
    if value is not _ABSENT:
        return value
    return {} if isinstance(like, Mapping) else []


def _matches(path: Sequence[str | int], pattern: Sequence[str]) -> bool:
    """Whether a changed path is the pattern's field, under it, or holds it (the field appears or goes)."""
    for part, want in zip(path, pattern, strict=False):
        if want == "*":
            if not isinstance(part, int):
                return False
        elif isinstance(part, int) or part != want:
            return False
    return True


def forced_by(type_token: str, changed: Sequence[tuple[str | int, ...]]) -> list[tuple[str | int, ...]]:
    """The changed input paths (`changed_leaves`) that make `type_token`'s provider replace it.

    The one reading of `tooling.replacements`: the plan's `--against` and the engine tier's test
    providers both decide a replace here, and a refusal with `refused_by`."""
    rule = forcing(type_token) or Forcing((), "")
    return _within(changed, rule.paths)


def refused_by(
    type_token: str,
    changed: Sequence[tuple[str | int, ...]],
    old: Mapping[str, Any] | None = None,
    new: Mapping[str, Any] | None = None,
) -> list[tuple[str | int, ...]]:
    """The changed input paths that `type_token`'s provider accepts in its diff and cannot carry out:
    its `refused` paths, its `refused_smaller` quantities where `new` holds less than `old`, and the
    paths under a `refused_removed` list or map that lost an entry `old` held."""
    rule = forcing(type_token) or Forcing((), "")
    smaller = [p for p in _within(changed, rule.refused_smaller) if _shrinks(_at(old, p), _at(new, p))]
    removed = [
        p
        for pattern in rule.refused_removed
        if _drops(_at(old, _parts(pattern)), _at(new, _parts(pattern)))
        for p in _within(changed, (pattern,))
    ]
    return [p for p in changed if p in smaller or p in removed or p in _within(changed, rule.refused)]


def _drops(old: Any, new: Any) -> bool:
    """Whether `new` lacks an entry of `old`: a list's item, or a map's key."""
    if isinstance(old, Mapping):
        return bool(set(old) - set(new if isinstance(new, Mapping) else {}))
    if isinstance(old, list):
        kept = new if isinstance(new, list) else []
        return any(item not in kept for item in old)
    return False


def _at(inputs: Any, path: Sequence[str | int]) -> Any:
    """The value at `path` in `inputs`, or None where it is absent."""
    for part in path:
        if isinstance(part, int):
            inputs = inputs[part] if isinstance(inputs, list) and part < len(inputs) else None
        else:
            inputs = inputs.get(part) if isinstance(inputs, Mapping) else None
    return inputs


def _shrinks(old: Any, new: Any) -> bool:
    before, after = parse_quantity(old), parse_quantity(new)
    return before is not None and after is not None and after < before


def _within(changed: Sequence[tuple[str | int, ...]], patterns: Sequence[str]) -> list[tuple[str | int, ...]]:
    parsed = [_parts(p) for p in patterns]
    return [p for p in changed if any(_matches(p, pattern) for pattern in parsed)]


# --------------------------------------------------------------------------------------------
# Changes


def _change(op: str, row: Mapping[str, Any], paths: Sequence[str], protected: bool, **extra: Any) -> dict[str, Any]:
    return {
        "op": op,
        "urn": row["urn"],
        "type": row["type"],
        "name": row["name"],
        "paths": list(paths),
        "protected": protected,
        **extra,
    }


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One change per URN of either plan, in the new plan's order, then the deleted ones in the old's;
    none when the new plan's config is rejected (`up` stops before it changes anything)."""
    if rejected_before_registering(new):
        return []
    olds = {r["urn"]: r for r in old["resources"]}
    news = {r["urn"]: r for r in new["resources"]}
    changes = []
    for urn, row in news.items():
        before = olds.get(urn)
        if before is None:
            changes.append(_change("import" if row.get("import") else "create", row, [], bool(row.get("protect"))))
            continue
        leaves = changed_leaves(before["inputs"], row["inputs"])
        protected = bool(before.get("protect")) and bool(row.get("protect"))
        if not leaves:
            changes.append(_change("same", row, [], protected))
            continue
        forced = [path_text(p) for p in forced_by(row["type"], leaves)]
        refused = [path_text(p) for p in refused_by(row["type"], leaves, before["inputs"], row["inputs"])]
        extra: dict[str, Any] = {"replacedBy": forced} if forced else {}
        if refused:
            extra["refused"] = refused
        changes.append(
            _change("replace" if forced else "update", row, [path_text(p) for p in leaves], protected, **extra)
        )
    for urn, row in olds.items():
        if urn not in news:
            changes.append(_change("delete", row, [], bool(row.get("protect"))))
    return changes


# The summary line of a plan whose config is rejected (`rejected_before_registering`).
REJECTED_SUMMARY = (
    "the config is rejected, so `pulumi up` would stop before registering anything and create, change and "
    "delete nothing; fix the errors below and plan again to see the changes"
)


def summary(changes: Sequence[Mapping[str, Any]]) -> str:
    """`2 to create, 1 to update, 1 to replace, 0 to delete` (and how many stay the same)."""
    count = {op: sum(1 for c in changes if c["op"] == op) for op in OPS}
    # Imports are named only where there are some, so every other plan's line keeps its words.
    imports = f"{count['import']} to import, " if count["import"] else ""
    return (
        f"{count['create']} to create, {imports}{count['update']} to update, {count['replace']} to replace, "
        f"{count['delete']} to delete ({count['same']} unchanged)"
    )


def change_errors(changes: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """What `up` would refuse: protected deletes and replaces, and changes a provider cannot make."""
    errors = []
    for op, verb in (("delete", "delete"), ("replace", "replace")):
        stuck = [c for c in changes if c["op"] == op and c["protected"]]
        if stuck:
            listed = "; ".join(f"{c['name']} ({c['type']})" for c in stuck)
            errors.append(
                {
                    "path": "--against",
                    "message": f"`pulumi up` would fail: it cannot {verb} {len(stuck)} protected resource(s): "
                    f"{listed}. Fix: {UNPROTECT}",
                }
            )
    for c in changes:
        if c.get("refused"):
            rule = forcing(c["type"])
            why = rule.refused_why if rule else ""
            fix = (rule.refused_fix if rule else "") or NEW_POOL_OR_REVERT
            errors.append(
                {
                    "path": "--against",
                    "message": f"`pulumi up` cannot change {', '.join(c['refused'])} of {c['name']} ({c['type']}): "
                    f"{why}. Fix: {fix}",
                }
            )
    return errors


def change_lines(changes: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per change that is not `same`: `~ update <name> (<type>): paths`."""
    marks = {"create": "+", "import": "=", "update": "~", "replace": "+-", "delete": "-"}
    lines = []
    for c in changes:
        if c["op"] == "same":
            continue
        text = f"{marks[c['op']]} {c['op']} {c['name']} ({c['type']})"
        if c["op"] == "replace":
            text += f": replaced by {', '.join(c['replacedBy'])}"
        elif c["paths"]:
            text += f": {', '.join(c['paths'])}"
        if c["protected"] and c["op"] in ("delete", "replace"):
            text += " [protected]"
        lines.append(text)
    return lines
