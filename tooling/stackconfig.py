"""Turn a parsed stack file into the config map the Pulumi runtime gives the program.

Under the CLI, Pulumi reads `Pulumi.<stack>.yaml` itself; offline, `modelplane plan` and the tests
hand the same keys to the mock runtime through this function. Secure values stay opaque.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from infra.checks.guard import Checked
from infra.config.issues import ConfigIssue
from infra.config.model import ModelServiceSpec, SecureValue
from infra.config.names import NAMESPACE
from infra.config.stackfile import StackConfig
from tooling.mockrun import OPAQUE_SECRET

# The Python language host hands the program its whole config as one environment string,
# `PULUMI_CONFIG=<JSON>` (pulumi/pulumi sdk/python/cmd/pulumi-language-python/main.go,
# `pulumiConfigVar`), and Linux refuses to start a process with one environment string of more than
# MAX_ARG_STRLEN, 32 pages: 131072 bytes with its NUL (execve(2), "Limits on size of arguments and
# environment"). Past it `pulumi preview` fails before the program, and so its guard, can run.
MAX_ENV_STRING = 131072
# What Go's encoding/json writes in place of these (it escapes them for HTML by default).
_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def runtime_config(
    raw_fleet: Mapping[str, Any],
    secrets: Mapping[str, str] = {},
    plain: Mapping[str, Any] = {},
    *,
    encode: Callable[[Any], str] = json.dumps,
    secret_value: str = OPAQUE_SECRET,
) -> tuple[dict[str, str], list[str]]:
    """(config, secret keys) as `pulumi.runtime.set_all_config` takes them: full keys, string values.

    A structured value becomes its JSON by `encode`; each secret's value is `secret_value`.
    """
    config: dict[str, str] = {}
    secret_keys = []
    for key, value in raw_fleet.items():
        config[f"{NAMESPACE}:{key}"] = value if isinstance(value, str) else encode(value)
    for full, value in plain.items():
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            # Another package's secret, such as a provider's credential (`civo:token`).
            config[full] = secret_value
            secret_keys.append(full)
            continue
        config[full] = value if isinstance(value, str) else encode(value)
    for key in secrets:
        config[f"{NAMESPACE}:{key}"] = secret_value
        secret_keys.append(f"{NAMESPACE}:{key}")
    return config, secret_keys


def config_of(stack: StackConfig) -> tuple[dict[str, str], list[str]]:
    # The keys as written, as the engine hands them over: a dump of the parsed fleet would add the
    # defaults, and a default is not always harmless (`replicas` beside `autoscaling` is refused).
    fleet = copy.deepcopy(dict(stack.written))
    config, secret_keys = runtime_config(fleet, stack.secrets, stack.plain)
    if any(isinstance(v, SecureValue) for d in stack.fleet.deployments for v in d.env.values()):
        # The engine hands a key holding a nested `secure:` value to the program as a secret key,
        # its leaves decrypted (pulumi/pulumi#3342); offline the leaves stay opaque.
        for dep in fleet["deployments"]:
            for name, value in dep.get("env", {}).items():
                if isinstance(value, dict):
                    dep["env"][name] = {"secure": OPAQUE_SECRET}
        config[f"{NAMESPACE}:deployments"] = json.dumps(fleet["deployments"])
        secret_keys.append(f"{NAMESPACE}:deployments")
    if any(_api_keys(s) for s in stack.fleet.services):
        # The same for a service's API keys (`program.main.secure_keys`).
        for svc in fleet["services"]:
            if isinstance(svc.get("apiKeys"), list):
                svc["apiKeys"] = [{"secure": OPAQUE_SECRET} for _ in svc["apiKeys"]]
            for backend in svc.get("backends") or []:
                external = backend.get("external") if isinstance(backend, dict) else None
                if isinstance(external, dict) and "apiKey" in external:
                    external["apiKey"] = {"secure": OPAQUE_SECRET}
        config[f"{NAMESPACE}:services"] = json.dumps(fleet["services"])
        secret_keys.append(f"{NAMESPACE}:services")
    return config, secret_keys


def _api_keys(svc: ModelServiceSpec) -> list[SecureValue]:
    """A service's secure values: its callers' keys and its external endpoints' keys."""
    keys = list(svc.api_keys)
    keys += [
        b.external.api_key for b in svc.backends or [] if b.external is not None and b.external.api_key is not None
    ]
    return keys


def _opaque_keys(svc: ModelServiceSpec) -> ModelServiceSpec:
    """A service as the program reads it offline: its API keys opaque."""
    opaque = SecureValue(secure=OPAQUE_SECRET)
    backends = None
    if svc.backends is not None:
        backends = [
            b.model_copy(update={"external": b.external.model_copy(update={"api_key": opaque})})
            if b.external is not None and b.external.api_key is not None
            else b
            for b in svc.backends
        ]
    return svc.model_copy(update={"api_keys": [opaque for _ in svc.api_keys], "backends": backends})


def _go_json(value: Any) -> str:
    """`value` as Go's `json.Marshal` writes it: keys sorted, no spaces, `<`, `>` and `&` escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _GO_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def config_env_bytes(stack: StackConfig) -> int:
    """Bytes of `PULUMI_CONFIG=<JSON>` and its NUL as the language host writes them for `stack`.

    The CLI hands each key's value as text (a structured value as its JSON) and the host marshals
    the map with Go's `json.Marshal`. Secret values reach it decrypted, and offline only their
    ciphertext is known, so they count as empty: the size is a lower bound, and a config over the
    limit by this count is over it for certain.
    """
    config, _ = runtime_config(stack.written, stack.secrets, stack.plain, encode=_go_json, secret_value="")
    return len(f"PULUMI_CONFIG={_go_json(config)}".encode()) + 1


def config_size_issue(stack: StackConfig) -> ConfigIssue | None:
    """The error for a stack whose config the language host cannot hand to the program, or None."""
    size = config_env_bytes(stack)
    if size <= MAX_ENV_STRING:
        return None
    return ConfigIssue(
        "",
        f"the stack's config is {size} bytes as the Pulumi language host hands it to the program "
        f"(one environment string, PULUMI_CONFIG), over the {MAX_ENV_STRING} bytes Linux allows one "
        "environment string, so `pulumi preview` and `pulumi up` would fail before the program starts",
        f"split the fleet into several stacks (for example one per region or team), each under {MAX_ENV_STRING} bytes",
        file=stack.file,
    )


def program_view(stack: StackConfig) -> Checked:
    """The checked stack as the program reads it from the engine, for the plan to hand to `program.main.deploy`.

    The fleet is what `config_of` hands over: when a deployment has a `secure:` env value, the
    engine hands `modelplane:deployments` over as a secret and the program takes every env value
    of it as secure (`program.main.secure_env`); offline a secure value stays opaque.
    """
    checked = stack.checked
    fleet = checked.fleet
    if any(_api_keys(s) for s in fleet.services):
        fleet = fleet.model_copy(update={"services": [_opaque_keys(s) for s in fleet.services]})
        checked = replace(checked, fleet=fleet)
    if not any(isinstance(v, SecureValue) for d in fleet.deployments for v in d.env.values()):
        return checked
    deployments = [
        d.model_copy(
            update={
                "env": {
                    k: SecureValue(secure=OPAQUE_SECRET if isinstance(v, SecureValue) else v) for k, v in d.env.items()
                }
            }
        )
        for d in fleet.deployments
    ]
    return replace(checked, fleet=fleet.model_copy(update={"deployments": deployments}))
