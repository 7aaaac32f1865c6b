"""Loading a stack file: the split of its config keys, the fleet parsed and checked once (`infra.checks`)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
)

from clouds import BY_SOURCE

# The one arrow up from the fleet model: the loader runs the checks (`infra.checks.guard.check`) on what it read.
from infra.checks.guard import Checked, check
from infra.config.issues import ConfigError, ConfigIssue, issues_from_validation, located
from infra.config.model import Fleet
from infra.config.names import FLEET_KEYS, NAMESPACE, SECRET_FLEET_KEYS, cut, shown
from infra.config.reader import read_yaml


@dataclass(frozen=True)
class StackConfig:
    """A parsed stack file: the fleet, plus the other config values it carries."""

    file: str
    stack: str
    fleet: Fleet
    checked: Checked  # every check over the fleet, run once when the file was read
    secrets: Mapping[str, str]  # modelplane keys held as `secure:` values (opaque ciphertext)
    plain: Mapping[str, Any]  # every other config key, as written (non-modelplane namespaces too)
    written: Mapping[str, Any] = field(default_factory=dict)  # the fleet's keys as written, before parsing


# What a first stack needs; docs/configuration.md lists every key.
_FIRST_KEYS = "modelplane:classes and modelplane:clusters (every key: docs/configuration.md)"


def stack_name_of(path: Path) -> str:
    name = path.name
    if not (name.startswith("Pulumi.") and name.endswith((".yaml", ".yml"))):
        raise ConfigError(
            [ConfigIssue("", "a stack file is named Pulumi.<stack>.yaml", "rename the file", file=str(path))]
        )
    return name[len("Pulumi.") :].rsplit(".", 1)[0]


def parse_fleet(raw: Mapping[str, Any], file: str) -> Fleet:
    """Validate `modelplane:` values (keys without the namespace) into a Fleet, or raise ConfigError
    when the fleet's own rules fail (with what the guard found beside them, when it could run)."""
    checked = parse_checked(raw, file)
    if not checked.own_rules_hold:
        raise ConfigError(checked.issues)
    return checked.fleet


def parse_checked(raw: Mapping[str, Any], file: str) -> Checked:
    """`modelplane:` values validated and checked once (`infra.checks.guard.check`); ConfigError when
    the fleet's references fail, so the guard could not run. What the rules on values and the guard
    found is the caller's to report, together."""
    if not raw.get("clusters"):
        # A fleet without clusters registers nothing: `pulumi up` would delete whatever the stack holds.
        raise ConfigError(
            [
                ConfigIssue(
                    f"config.{NAMESPACE}:clusters",
                    "no clusters are declared (modelplane:clusters is missing or empty)",
                    f"add {_FIRST_KEYS}; to remove every cluster on purpose, run `pulumi destroy`",
                    file=file,
                )
            ]
        )
    try:
        fleet = Fleet.model_validate(dict(raw))
    except ValidationError as err:
        raise ConfigError(issues_from_validation(err), file=file) from None
    checked = located_checked(check(fleet), file)
    if not checked.guarded:
        raise ConfigError(checked.issues)
    return checked


def located_checked(checked: Checked, file: str) -> Checked:
    """What the checks found, in the stack file `file`: the context every issue and violation is reported with."""
    return replace(
        checked,
        issues=located(checked.issues, file),
        violations=located(checked.violations, file),
    )


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
                    f"config.{cut(str(full_key))}",
                    f"{shown(str(full_key))} holds a second ':'; a config key is <namespace>:<name>",
                    f"write it as '{NAMESPACE}:{cut(name)}'"
                    if old == "config" and ":" not in name
                    else "rename the key without the second ':'",
                    file=file,
                )
            )
            continue
        if f"{ns}:{key}" in seen:
            issues.append(
                ConfigIssue(
                    f"config.{cut(str(full_key))}",
                    f"'{cut(f'{ns}:{key}')}' is set twice (with and without the '{ns}:' namespace)",
                    "keep one of them",
                    file=file,
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
    issues += located(namespace_key_issues(plain_keys, list(secrets), kubeconfig_keys(fleet_raw)), file)
    if issues:
        raise ConfigError(issues)
    return fleet_raw, secrets, plain


def namespace_key_issues(
    plain_keys: Sequence[str], secret_keys: Sequence[str], kube_keys: set[str]
) -> list[ConfigIssue]:
    """`modelplane:` keys (without the namespace) that are unknown, or plain or secret where they must not be.

    Existing clusters name the secret key that holds their kubeconfig; any other key that is not a
    fleet key is unknown (a typo such as `modelplane:protcet` would otherwise leave the fleet unprotected).
    """
    path_keys = [key for key in [*plain_keys, *secret_keys] if fleet_key_path(key) and key not in kube_keys]
    issues = [path_key_issue(key, secret=key in secret_keys) for key in path_keys]
    for key in plain_keys:
        full = f"{NAMESPACE}:{key}"
        if key in FLEET_KEYS or key in path_keys:
            continue
        if key in kube_keys:
            issues.append(
                ConfigIssue(
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
        issues.append(ConfigIssue(f"config.{cut(full)}", f"unknown config key {shown(full)}", hint))
    for key in secret_keys:
        if key in FLEET_KEYS and key not in SECRET_FLEET_KEYS:
            issues.append(
                ConfigIssue(
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


def path_key_issue(key: str, *, secret: bool) -> ConfigIssue:
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


def check_existing_secrets(fleet_raw: Mapping[str, Any], secrets: Mapping[str, str]) -> list[ConfigIssue]:
    """Every owner-run cluster's kubeconfig key holds a secret; checked on the raw config, so a missing
    kubeconfig is reported in the same run as any other mistake of the fleet."""
    return [
        ConfigIssue(
            f"clusters[{ki}].{block}.kubeconfigKey",
            f"no secret config key 'modelplane:{key}' holds the kubeconfig of cluster '{name}'",
            f"run: {set_kubeconfig_command(key)}",
        )
        for ki, name, block, key in owner_kubeconfigs(fleet_raw)
        if key not in secrets
    ]


def load_stack_file(path: Path, display: str | None = None) -> StackConfig:
    """Read and validate one Pulumi.<stack>.yaml; raise ConfigError naming every problem."""
    file = display or str(path)
    stack = stack_name_of(path)
    doc = read_yaml(path, file)
    if doc is None:
        raise ConfigError(
            [
                ConfigIssue(
                    "line 1, column 1",
                    "the stack file is empty",
                    f"start it with 'config:' and {_FIRST_KEYS}",
                    file=file,
                )
            ]
        )
    if not isinstance(doc, Mapping):
        raise ConfigError(
            [
                ConfigIssue(
                    "line 1, column 1", "a stack file is a YAML mapping", "start the file with 'config:'", file=file
                )
            ]
        )
    if doc.get("config") is None:
        raise ConfigError(
            [
                ConfigIssue(
                    "config", "the stack file has no 'config:' section", f"add 'config:' with {_FIRST_KEYS}", file=file
                )
            ]
        )
    config = doc["config"]
    if not isinstance(config, Mapping):
        raise ConfigError(
            [
                ConfigIssue(
                    "config",
                    "'config' is a mapping of keys to values",
                    "write 'config:' followed by indented keys",
                    file=file,
                )
            ]
        )
    fleet_raw, secrets, plain = split_config(config, file)
    if not fleet_raw:
        raise ConfigError(
            [
                ConfigIssue(
                    "config",
                    f"'config:' has no {NAMESPACE}: keys ({', '.join(f'{NAMESPACE}:{k}' for k in FLEET_KEYS)})",
                    f"add {_FIRST_KEYS}",
                    file=file,
                )
            ]
        )
    # Independent checks report together: a missing kubeconfig beside any mistake of the fleet.
    missing = located(check_existing_secrets(fleet_raw, secrets), file)
    try:
        checked = parse_checked(fleet_raw, file)  # reads fleet_raw, never changes it
    except ConfigError as err:
        raise ConfigError([*err.issues, *missing]) from None
    if missing or not checked.own_rules_hold:
        # The fleet's own rules and the guard's issues report together; the device rules' violations
        # are reported with the guard's issues once the fleet's own rules hold (`tooling.plan`).
        raise ConfigError([*checked.issues, *missing])
    return StackConfig(
        file=file, stack=stack, fleet=checked.fleet, checked=checked, secrets=secrets, plain=plain, written=fleet_raw
    )
