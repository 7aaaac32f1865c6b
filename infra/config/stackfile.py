"""Reading a stack file: the YAML loader with its bounds, the split of config keys, and the fleet parsed once."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    ValidationError,
)

from clouds import BY_SOURCE
from infra.config.issues import ConfigError, ConfigIssue, issues_from_validation
from infra.config.model import Fleet
from infra.config.names import FLEET_KEYS, NAMESPACE, SECRET_FLEET_KEYS, WrittenFloat, cut, shown
from infra.config.references import check_references
from infra.config.roles import pools_without_role
from infra.config.rules import check_rules
from infra.serving.catalog import chart_keys
from infra.serving.mirror import mirror_issues
from infra.supply import supply_fleet


@dataclass(frozen=True)
class StackConfig:
    """A parsed stack file: the fleet, plus the other config values it carries."""

    file: str
    stack: str
    fleet: Fleet
    secrets: Mapping[str, str]  # modelplane keys held as `secure:` values (opaque ciphertext)
    plain: Mapping[str, Any]  # every other config key, as written (non-modelplane namespaces too)
    written: Mapping[str, Any] = field(default_factory=dict)  # the fleet's keys as written, before parsing


# What a first stack needs; docs/configuration.md lists every key.
_FIRST_KEYS = "modelplane:classes and modelplane:clusters (every key: docs/configuration.md)"


def stack_name_of(path: Path) -> str:
    name = path.name
    if not (name.startswith("Pulumi.") and name.endswith((".yaml", ".yml"))):
        raise ConfigError([ConfigIssue(str(path), "", "a stack file is named Pulumi.<stack>.yaml", "rename the file")])
    return name[len("Pulumi.") :].rsplit(".", 1)[0]


def parse_fleet(raw: Mapping[str, Any], file: str) -> Fleet:
    """Validate `modelplane:` values (keys without the namespace) into a Fleet, or raise ConfigError."""
    if not raw.get("clusters"):
        # A fleet without clusters registers nothing: `pulumi up` would delete whatever the stack holds.
        raise ConfigError(
            [
                ConfigIssue(
                    file,
                    f"config.{NAMESPACE}:clusters",
                    "no clusters are declared (modelplane:clusters is missing or empty)",
                    f"add {_FIRST_KEYS}; to remove every cluster on purpose, run `pulumi destroy`",
                )
            ]
        )
    try:
        fleet = Fleet.model_validate(dict(raw))
    except ValidationError as err:
        raise ConfigError(issues_from_validation(file, err)) from None
    # What classes leave out is supplied before any rule reads them (`infra.supply`).
    fleet, issues = supply_fleet(fleet, file)
    issues += check_references(fleet, file) + check_rules(fleet, file)
    issues += mirror_issues(fleet.chart_mirror, chart_keys(), file)
    unsupplied = {c.name for c in fleet.classes if not c.devices}  # said above: no devices to take
    for ki, pi, cls in pools_without_role(fleet):
        if cls in unsupplied:
            continue
        issues.append(
            ConfigIssue(
                file,
                f"clusters[{ki}].nodePools[{pi}].className",
                f"class '{cls}' claims no CPU or GPU DRA device, so it cannot back a pool",
                "add a DRA device with a GPU driver or dra.cpu to the class, or use another class",
            )
        )
    if issues:
        raise ConfigError(issues)
    return fleet


def split_config(config: Mapping[str, Any], file: str) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """Split stack config into fleet values, modelplane secrets and the rest; reject unknown keys."""
    fleet_raw: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    plain: dict[str, Any] = {}
    issues: list[ConfigIssue] = []
    seen: set[str] = set()
    for full_key, value in config.items():
        ns, sep, key = str(full_key).partition(":")
        if not sep:
            # Pulumi reads a key without a namespace as the project's (`modelplane`).
            ns, key = NAMESPACE, str(full_key)
        if ns == NAMESPACE and ":" in key:
            # Pulumi parses a key as `<namespace>:<name>`, reads `<namespace>:config:<name>` as
            # `<namespace>:<name>` and refuses any other second ':' (pulumi/pulumi
            # sdk/go/common/resource/config/key.go, `ParseKey`); a secret under such a key would
            # otherwise pass unread.
            old, _, name = key.partition(":")
            issues.append(
                ConfigIssue(
                    file,
                    f"config.{cut(str(full_key))}",
                    f"{shown(str(full_key))} holds a second ':'; a config key is <namespace>:<name>",
                    f"write it as '{NAMESPACE}:{cut(name)}'"
                    if old == "config" and ":" not in name
                    else "rename the key without the second ':'",
                )
            )
            continue
        if f"{ns}:{key}" in seen:
            issues.append(
                ConfigIssue(
                    file,
                    f"config.{cut(str(full_key))}",
                    f"'{cut(f'{ns}:{key}')}' is set twice (with and without the '{ns}:' namespace)",
                    "keep one of them",
                )
            )
            continue
        seen.add(f"{ns}:{key}")
        if ns != NAMESPACE:
            plain[str(full_key)] = value
            continue
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            secrets[key] = str(value["secure"])
        elif key in FLEET_KEYS:
            if value is not None:  # `key:` with no value is the key left out
                fleet_raw[key] = value
        else:
            plain[f"{NAMESPACE}:{key}"] = value
    plain_keys = [full.partition(":")[2] for full in plain if full.partition(":")[0] == NAMESPACE]
    issues += namespace_key_issues(file, plain_keys, list(secrets), kubeconfig_keys(fleet_raw))
    if issues:
        raise ConfigError(issues)
    return fleet_raw, secrets, plain


def namespace_key_issues(
    file: str, plain_keys: Sequence[str], secret_keys: Sequence[str], kube_keys: set[str]
) -> list[ConfigIssue]:
    """`modelplane:` keys (without the namespace) that are unknown, or plain or secret where they must not be.

    Existing clusters name the secret key that holds their kubeconfig; any other key that is not a
    fleet key is unknown (a typo such as `modelplane:protcet` would otherwise leave the fleet unprotected).
    """
    path_keys = [key for key in [*plain_keys, *secret_keys] if fleet_key_path(key) and key not in kube_keys]
    issues = [path_key_issue(file, key, secret=key in secret_keys) for key in path_keys]
    for key in plain_keys:
        full = f"{NAMESPACE}:{key}"
        if key in FLEET_KEYS or key in path_keys:
            continue
        if key in kube_keys:
            issues.append(
                ConfigIssue(
                    file,
                    f"config.{full}",
                    f"the kubeconfig key '{key}' holds a plain value",
                    f"store it as a secret: {set_kubeconfig_command(key)}",
                )
            )
            continue
        close = difflib.get_close_matches(key, list(FLEET_KEYS) + sorted(kube_keys), n=1)
        hint = (
            f"did you mean 'modelplane:{close[0]}'? Remove or rename it"
            if close
            else f"remove or rename it (known keys: {', '.join('modelplane:' + k for k in FLEET_KEYS)})"
        )
        issues.append(ConfigIssue(file, f"config.{cut(full)}", f"unknown config key {shown(full)}", hint))
    for key in secret_keys:
        if key in FLEET_KEYS and key not in SECRET_FLEET_KEYS:
            issues.append(
                ConfigIssue(
                    file,
                    f"config.{NAMESPACE}:{key}",
                    f"'{NAMESPACE}:{key}' is a secret but holds fleet config",
                    "store it as plain config (set it without --secret)",
                )
            )
    return issues


# A key that starts with a fleet key and goes on into it (`deployments[2].env.HF_TOKEN`, `budget.monthlyUsd`).
_FLEET_KEY_PATH = re.compile(rf"^(?P<head>{'|'.join(map(re.escape, FLEET_KEYS))})[\[.]")


def fleet_key_path(key: str) -> str | None:
    """The fleet key a config key names a value inside of, written as a path, or None."""
    match = _FLEET_KEY_PATH.match(key)
    return match.group("head") if match else None


def path_key_issue(file: str, key: str, *, secret: bool) -> ConfigIssue:
    """A config key spelled as a path into a fleet key, which `pulumi config set` without `--path` creates.

    Without `--path` the CLI stores the whole text as one key of its own
    (`modelplane:deployments[2].env.HF_TOKEN`) beside `modelplane:deployments`; nothing reads it,
    so the value it was meant to set (a gated model's token) never reaches the deployment. With
    `--path` the CLI sets the value inside the fleet key (pulumi/pulumi
    sdk/go/common/resource/config/map.go at v3.274.1, `parseKeyPath`).
    """
    head = fleet_key_path(key)
    assert head is not None, "called for the keys fleet_key_path names"
    full = f"{NAMESPACE}:{key}"
    flag = "--secret --path" if secret else "--path"
    return ConfigIssue(
        file,
        f"config.{cut(full)}",
        f"{shown(full)} is a config key of its own, not a value inside '{NAMESPACE}:{head}' (it was set "
        "without --path), so nothing reads it",
        f"remove it and set the value again with --path: pulumi config rm '{cut(full)}' && "
        f"pulumi config set {flag} '{cut(full)}' <value>",
    )


def owner_kubeconfigs(fleet_raw: Mapping[str, Any]) -> list[tuple[int, str, str, str]]:
    """(cluster index, name, block key, kubeconfig key) of every owner-run cluster, read from the raw
    config, so the keys are known even when another part of the fleet does not parse."""
    found: list[tuple[int, str, str, str]] = []
    clusters = fleet_raw.get("clusters")
    for ki, c in enumerate(clusters if isinstance(clusters, list) else []):
        owner = BY_SOURCE.get(str(c.get("source"))) if isinstance(c, Mapping) else None
        # A cluster the program does not provision names its kubeconfig key in its block.
        if isinstance(c, Mapping) and owner is not None and not owner.provisioned:
            block = c.get(owner.key)
            key = block.get("kubeconfigKey", "kubeconfig") if isinstance(block, Mapping) else "kubeconfig"
            found.append((ki, str(c.get("name")), owner.key, str(key)))
    return found


def kubeconfig_keys(fleet_raw: Mapping[str, Any]) -> set[str]:
    """The config keys that hold the owner-run clusters' kubeconfigs."""
    return {key for _, _, _, key in owner_kubeconfigs(fleet_raw)}


def set_kubeconfig_command(key: str) -> str:
    """The command that stores a kubeconfig where the program reads it, in any project.

    The program reads `modelplane:<key>` whatever the project is called; an unqualified key would
    be stored under the project's own name (`my-fleet:kubeconfig`) and never read.
    """
    return f"pulumi config set --secret {NAMESPACE}:{key} < path/to/kubeconfig"


def check_existing_secrets(fleet_raw: Mapping[str, Any], secrets: Mapping[str, str], file: str) -> list[ConfigIssue]:
    """Every owner-run cluster's kubeconfig key holds a secret; checked on the raw config, so a missing
    kubeconfig is reported in the same run as any other mistake of the fleet."""
    return [
        ConfigIssue(
            file,
            f"clusters[{ki}].{block}.kubeconfigKey",
            f"no secret config key 'modelplane:{key}' holds the kubeconfig of cluster '{name}'",
            f"run: {set_kubeconfig_command(key)}",
        )
        for ki, name, block, key in owner_kubeconfigs(fleet_raw)
        if key not in secrets
    ]


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
        raise ConfigError([ConfigIssue(file, "", f"cannot read the file ({err.strerror})", "check the path")]) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(
            [ConfigIssue(file, "", f"the file has {len(data)} bytes, more than {MAX_FILE_BYTES}", "shorten the file")]
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ConfigError(
            [
                ConfigIssue(
                    file,
                    f"line {line}, column {column}",
                    f"byte 0x{data[err.start]:02x} is not UTF-8",
                    "save the file as UTF-8",
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
        raise ConfigError([ConfigIssue(file, where, problem, "remove the character")]) from None
    except StackFileError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError([ConfigIssue(file, where, str(err.problem), err.fix)]) from None
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
        raise ConfigError([ConfigIssue(file, where, f"not valid YAML: {problem}", fix)]) from None
    except RecursionError:
        # A safety net behind MAX_DEPTH: no input may end in a traceback.
        raise ConfigError(
            [ConfigIssue(file, "", "values nest too deeply to read", "flatten the nested values")]
        ) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_stack_file(path: Path, display: str | None = None) -> StackConfig:
    """Read and validate one Pulumi.<stack>.yaml; raise ConfigError naming every problem."""
    file = display or str(path)
    stack = stack_name_of(path)
    doc = read_yaml(path, file)
    if doc is None:
        raise ConfigError(
            [
                ConfigIssue(
                    file, "line 1, column 1", "the stack file is empty", f"start it with 'config:' and {_FIRST_KEYS}"
                )
            ]
        )
    if not isinstance(doc, Mapping):
        raise ConfigError(
            [ConfigIssue(file, "line 1, column 1", "a stack file is a YAML mapping", "start the file with 'config:'")]
        )
    if doc.get("config") is None:
        raise ConfigError(
            [
                ConfigIssue(
                    file, "config", "the stack file has no 'config:' section", f"add 'config:' with {_FIRST_KEYS}"
                )
            ]
        )
    config = doc["config"]
    if not isinstance(config, Mapping):
        raise ConfigError(
            [
                ConfigIssue(
                    file,
                    "config",
                    "'config' is a mapping of keys to values",
                    "write 'config:' followed by indented keys",
                )
            ]
        )
    fleet_raw, secrets, plain = split_config(config, file)
    if not fleet_raw:
        raise ConfigError(
            [
                ConfigIssue(
                    file,
                    "config",
                    f"'config:' has no {NAMESPACE}: keys ({', '.join(f'{NAMESPACE}:{k}' for k in FLEET_KEYS)})",
                    f"add {_FIRST_KEYS}",
                )
            ]
        )
    # Independent checks report together: a missing kubeconfig beside any mistake of the fleet.
    missing = check_existing_secrets(fleet_raw, secrets, file)
    try:
        fleet = parse_fleet(fleet_raw, file)  # reads fleet_raw, never changes it
    except ConfigError as err:
        raise ConfigError([*err.issues, *missing]) from None
    if missing:
        raise ConfigError(missing)
    return StackConfig(file=file, stack=stack, fleet=fleet, secrets=secrets, plain=plain, written=fleet_raw)
