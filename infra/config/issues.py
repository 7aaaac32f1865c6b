"""A bad input as the user sees it: file, path inside it, problem and fix; and pydantic's errors in that form."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol, TypeVar, get_args, get_origin

from pydantic import (
    BaseModel,
    ValidationError,
)

from infra.config.model import UNION_TAGS, Fleet
from infra.config.names import WrittenFloat, shown


@dataclass(frozen=True)
class ConfigIssue:
    """A bad input: where it is (path inside the file), what is wrong, and the fix.

    A check knows the path, never the file: the file's name is attached once, where the issues are
    reported (`ConfigError(issues, file=...)`, `located`), as pulumi-eks collects each
    `{propertyPath, reason}` and throws once.
    """

    path: str
    problem: str
    fix: str
    file: str = ""

    @property
    def message(self) -> str:
        return f"{self.problem}. Fix: {self.fix} (in {self.file})"

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.problem}. Fix: {self.fix}"


class ConfigError(Exception):
    """Raised with every issue found; the CLI and the program print them without a traceback."""

    def __init__(self, issues: Sequence[ConfigIssue], file: str | None = None):
        self.issues = list(issues) if file is None else located(issues, file)
        super().__init__("\n".join(str(i) for i in self.issues))


class InFile(Protocol):
    """What `located` places in a file: a dataclass with a `file` (a `ConfigIssue`, a device rule's `Violation`)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def file(self) -> str: ...


Found = TypeVar("Found", bound=InFile)


def located(found: Iterable[Found], file: str) -> list[Found]:
    """What a check found, in the stack file `file`: the context every issue is reported with."""
    return [replace(f, file=file) for f in found]


def format_path(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def fields_of(model: type[BaseModel]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items()]


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model class that owns the mapping at `loc` (used for did-you-mean on unknown keys)."""
    current: Any = Fleet
    user_keyed = False
    for part in loc:
        if isinstance(part, int) or user_keyed:
            # A list index, or a name the user chose in a map of models (`attributes.<name>`).
            user_keyed = False
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = next((f for n, f in current.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return None
        current = _inner_model(field.annotation)
        user_keyed = get_origin(field.annotation) is dict
    # The mapping at `attributes` itself is keyed by the user, not by a model's fields.
    return None if user_keyed or not (isinstance(current, type) and issubclass(current, BaseModel)) else current


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


_TYPE_FIX = {
    "int_type": "write a whole number",
    "int_parsing": "write a whole number",
    "float_parsing": "write a plain number, without a unit, currency sign or thousands separator",
    "decimal_parsing": "write a plain number, without a unit, currency sign or thousands separator",
    "bool_type": "write true or false",
    "bool_parsing": "write true or false",
    "string_type": "write a string",
    "list_type": "write a YAML list (items starting with '-')",
    "dict_type": "write a YAML mapping (key: value)",
    "model_type": "write a YAML mapping (key: value)",
    "model_attributes_type": "write a YAML mapping (key: value)",
    "missing": "add the key",
    "enum": "use one of the allowed values",
    "literal_error": "use one of the allowed values",
    "string_pattern_mismatch": "use lowercase letters, digits and '-' (a DNS label)",
    "string_too_long": "shorten it",
    "too_short": "add at least the minimum number of items",
    "too_long": "remove items down to the maximum",
    "greater_than_equal": "raise the value to the minimum",
    "less_than_equal": "lower the value to the maximum",
}


def issues_from_validation(err: ValidationError) -> list[ConfigIssue]:
    issues = []
    for e in err.errors():
        loc = [p for p in e["loc"] if isinstance(p, str | int) and p not in UNION_TAGS]
        kind = e["type"]
        owner_of_last = _model_at(loc[:-1]) if loc and isinstance(loc[-1], str) else None
        if owner_of_last is not None and str(loc[-1]) in owner_of_last.model_fields:
            # pydantic reports a validated default under the Python name; users write the alias.
            loc[-1] = owner_of_last.model_fields[str(loc[-1])].alias or loc[-1]
        if kind == "extra_forbidden":
            parent = loc[:-1]
            key = str(loc[-1])
            owner = _model_at(parent)
            known = fields_of(owner) if owner else []
            close = difflib.get_close_matches(key, known, n=1)
            hint = (
                f"did you mean '{close[0]}'? Remove or rename it"
                if close
                else f"remove or rename it (known keys: {', '.join(known)})"
                if known
                else "remove it"
            )
            issues.append(ConfigIssue(format_path(loc), f"unknown key {shown(key)}", hint))
            continue
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
            problem, _, fix = msg.rpartition("; ") if "; " in msg else (msg, "", "")
            issues.append(ConfigIssue(format_path(loc), problem, fix or "correct the value"))
            continue
        given = e.get("input")
        if loc[-1:] == ["[key]"] and _model_at(loc[:-2]) is None:
            # A key of a user-keyed mapping that is not a string (`labels: {5: x}`): pydantic
            # locates it as the key followed by "[key]", which would read as a list index and a
            # key of that name. Name the mapping and quote the key.
            fix = (
                quote_fix(given) if isinstance(given, int | float) and not isinstance(given, bool) else "quote the key"
            )
            issues.append(ConfigIssue(format_path(loc[:-2]), f"the key {shown(given)} is not a string", fix))
            continue
        got = "" if kind == "missing" else f" (got {shown(given)})" if not isinstance(given, dict | list) else ""
        fix = _TYPE_FIX.get(kind, "correct the value")
        if kind in ("model_type", "model_attributes_type"):
            # Name the keys the mapping takes, not the class behind it (`Accelerator`).
            owner = _model_at(loc)
            if owner is not None:
                required = [f.alias or n for n, f in owner.model_fields.items() if f.is_required()]
                keys = ", ".join(required or fields_of(owner))
                if isinstance(loc[-1], int):
                    # A list item has no key of its own; name the list it belongs to.
                    msg = f"each item of '{loc[-2]}' is a mapping with keys {{{keys}}}"
                    fix = f"write item {loc[-1]} as - {{{keys}}}"
                else:
                    msg = f"'{loc[-1]}' is a mapping with keys {{{keys}}}"
                    fix = f"write it as {loc[-1]}: {{{keys}}}"
        if kind == "string_type" and isinstance(given, int | float) and not isinstance(given, bool):
            fix = quote_fix(given)
        if kind in ("enum", "literal_error"):
            expected = (e.get("ctx") or {}).get("expected", "")
            fix = f"use one of {expected}"
        if kind == "missing":
            fix = f"add '{loc[-1]}'"
        issues.append(ConfigIssue(format_path(loc), f"{msg[0].lower()}{msg[1:]}{got}", fix))
    return issues


def duplicates(names: Sequence[str]) -> set[str]:
    seen: set[str] = set()
    dups: set[str] = set()
    for n in names:
        (dups if n in seen else seen).add(n)
    return dups


def unique_names(names: Sequence[str], path: str, what: str) -> list[ConfigIssue]:
    """One issue per repeated name, at its second occurrence (`path` has `{i}` for the index)."""
    return [
        ConfigIssue(
            path.format(i=names.index(name, names.index(name) + 1)),
            f"{what} name '{name}' is declared twice",
            f"give each {what} a unique name",
        )
        for name in sorted(duplicates(names))
    ]


def quote_fix(given: int | float) -> str:
    """The fix for a number where a string belongs: quote the text as written, which YAML may have changed."""
    if isinstance(given, WrittenFloat) and given.written != str(given):
        return f'quote it: "{given.written}" (YAML reads an unquoted {given.written} as the number {given})'
    if isinstance(given, float) and not isinstance(given, WrittenFloat):
        # Read from config the engine handed over as JSON: the text as written is gone.
        return (
            f'quote it as you wrote it, such as "{given}" (YAML reads an unquoted number as a number and drops '
            "trailing zeros: 1.30 becomes 1.3)"
        )
    return f'quote it: "{given}" (YAML reads an unquoted {given} as a number)'
