"""The bounded YAML reader of a stack file: the file as Pulumi's CLI reads it, or a ConfigError naming line and column.

Bounds far beyond any fleet keep a hostile or broken file from exhausting the machine. What the
values mean is not read here: that is the fleet model's (`infra.config.stackfile.parse_fleet`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from infra.config.issues import ConfigError, ConfigIssue
from infra.config.names import WrittenFloat, cut, shown

# Bounds on a stack file, far beyond any fleet, so a hostile or broken file cannot exhaust the
# machine: YAML aliases can make a few hundred bytes expand to gigabytes once the value is
# encoded (every config value reaches the program JSON-encoded), and deep nesting overflows the
# parser's recursion.
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_EXPANDED_SIZE = 8 * 1024 * 1024  # characters of scalars plus one per node, aliases expanded
MAX_DEPTH = 64
# Python refuses to read integers of more than 4,300 digits; no field takes more than 20.
MAX_INT_CHARS = 100


class StackFileError(yaml.MarkedYAMLError):
    """A stack file the loader refuses: what is wrong, where (a mark), and the fix."""

    def __init__(self, problem: str, mark: Any, fix: str) -> None:
        super().__init__(None, None, problem, mark)
        self.fix = fix


_BOOL_TAG = "tag:yaml.org,2002:bool"
_YAML12_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


class _StackLoader(yaml.SafeLoader):
    """PyYAML's safe loader with duplicate keys, huge integers and deep nesting refused.

    Dates stay strings: Pulumi's config has no date type, and a date value would not JSON-encode.
    Booleans are read as the Pulumi CLI reads the stack file: it decodes it with gopkg.in/yaml.v3
    (pulumi/pulumi sdk/go/common/encoding/marshal.go at v3.274.1), which resolves only `true`,
    `True`, `TRUE` and their `false` forms as booleans (yaml.v3 v3.0.1 resolve.go) and keeps YAML
    1.1's `yes`, `no`, `on`, `off` as text. PyYAML would read `protect: yes` as true; here it stays
    the text "yes", which `Fleet.protect` refuses, as the program refuses what the CLI hands it.
    """

    yaml_implicit_resolvers = {  # noqa: RUF012 - PyYAML reads it as a class attribute
        first: [
            (tag, _YAML12_BOOL if tag == _BOOL_TAG else regexp)
            for tag, regexp in resolvers
            if tag != "tag:yaml.org,2002:timestamp" and not (tag == _BOOL_TAG and first not in "tTfF")
        ]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise StackFileError(
                    f"values nest deeper than {MAX_DEPTH} levels", mark, "flatten the value or remove it"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        # A repeated key would silently override the line above it (a second `protect: false`).
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=False)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # unhashable: the base class reports it
            if duplicate:
                raise StackFileError(
                    f"key {shown(key)} appears twice in one mapping",
                    key_node.start_mark,
                    "keep one of them (the YAML loader would silently use the last)",
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > MAX_INT_CHARS:
            raise StackFileError(
                f"an integer of {len(node.value)} characters is larger than any field takes",
                node.start_mark,
                "write the number the field needs",
            )
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        # Kept with its text: an error that asks to quote it quotes what was written (`1.30`).
        return WrittenFloat(super().construct_yaml_float(node), str(node.value))


_StackLoader.add_constructor("tag:yaml.org,2002:int", _StackLoader.construct_yaml_int)
_StackLoader.add_constructor("tag:yaml.org,2002:float", _StackLoader.construct_yaml_float)


def _check_expanded_size(root: yaml.Node) -> None:
    """Refuse the document when a value, with every alias expanded, passes MAX_EXPANDED_SIZE or MAX_DEPTH.

    The loader bounds nesting as written; an alias puts a whole value where it stands, so a chain
    of aliases nests deeper than the text does (and overflows the JSON encoder every config value
    goes through). Both bounds are measured here with the aliases expanded.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (size, depth), aliases expanded
    active: set[int] = set()

    def measure(node: yaml.Node) -> tuple[int, int]:
        key = id(node)
        if key in measured:
            return measured[key]
        if key in active:  # visited, not yet measured: the node is its own ancestor
            raise StackFileError(
                "an alias refers to a value that contains it", node.start_mark, "write the value out instead"
            )
        active.add(key)
        total, depth = 1, 1
        if isinstance(node, yaml.ScalarNode):
            total += len(node.value)
        else:
            children = node.value if isinstance(node, yaml.SequenceNode) else [n for kv in node.value for n in kv]
            for child_size, child_depth in map(measure, children):
                total += child_size
                depth = max(depth, child_depth + 1)
        # The innermost value past a bound: a child that passed it raised already.
        if total > MAX_EXPANDED_SIZE:
            raise StackFileError(
                f"this value expands to more than {MAX_EXPANDED_SIZE} characters once its YAML aliases are expanded",
                node.start_mark,
                "write the values out instead of repeating aliases",
            )
        if depth > MAX_DEPTH:
            raise StackFileError(
                f"this value nests deeper than {MAX_DEPTH} levels once its YAML aliases are expanded",
                node.start_mark,
                "flatten the value or remove it",
            )
        measured[key] = (total, depth)
        return total, depth

    measure(root)


def _line_and_column(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line}, column {column}"


# A fix more telling than "fix the YAML syntax", by PyYAML's context (yaml/pyyaml lib/yaml/composer.py).
_YAML_FIXES = {
    "expected a single document in the stream": "keep one document: remove the '---' line shown and what follows it",
}


def read_yaml(path: Path, file: str) -> Any:
    """The YAML document in `path`, or ConfigError naming the line and column of what is wrong."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ConfigError(
            [ConfigIssue("", f"cannot read the file ({err.strerror})", "check the path", file=file)]
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(
            [
                ConfigIssue(
                    "", f"the file has {len(data)} bytes, more than {MAX_FILE_BYTES}", "shorten the file", file=file
                )
            ]
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ConfigError(
            [
                ConfigIssue(
                    f"line {line}, column {column}",
                    f"byte 0x{data[err.start]:02x} is not UTF-8",
                    "save the file as UTF-8",
                    file=file,
                )
            ]
        ) from None
    loader: _StackLoader | None = None
    try:
        loader = _StackLoader(text)
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node)
        return loader.construct_document(node)
    except yaml.reader.ReaderError as err:
        # Read from a str, the only ReaderError is a non-printable character, given as its code point
        # (yaml/pyyaml lib/yaml/reader.py at 6.0.4, Reader.check_printable).
        where = _line_and_column(text, err.position)
        problem = f"character #x{err.character:04x} is not allowed in YAML"
        raise ConfigError([ConfigIssue(where, problem, "remove the character", file=file)]) from None
    except StackFileError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError([ConfigIssue(where, str(err.problem), err.fix, file=file)]) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = cut(str(getattr(err, "problem", None) or err))
        # PyYAML's context says what it was reading and where that began (yaml/pyyaml
        # lib/yaml/error.py, MarkedYAMLError): "while parsing a flow sequence", "found duplicate
        # anchor 'x'; first occurrence"; without it "but found another document" says nothing.
        context = getattr(err, "context", None)
        if context:
            began = getattr(err, "context_mark", None)
            at = f" at line {began.line + 1}, column {began.column + 1}" if began else ""
            problem = f"{cut(str(context))}{at}, {problem}"
        fix = _YAML_FIXES.get(str(context), "fix the YAML syntax")
        raise ConfigError([ConfigIssue(where, f"not valid YAML: {problem}", fix, file=file)]) from None
    except RecursionError:
        # A safety net behind MAX_DEPTH: no input may end in a traceback.
        raise ConfigError(
            [ConfigIssue("", "values nest too deeply to read", "flatten the nested values", file=file)]
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
