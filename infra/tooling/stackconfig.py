"""Turn a parsed stack file into the config map the Pulumi runtime gives the program.

Under the CLI, Pulumi reads `Pulumi.<stack>.yaml` itself; offline, `modelplane plan` and the tests
hand the same keys to the mock runtime through this function. Secure values stay opaque.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from infra.config import NAMESPACE, SecureValue, StackConfig
from infra.tooling.mockrun import OPAQUE_SECRET


def runtime_config(
    raw_fleet: Mapping[str, Any], secrets: Mapping[str, str] = {}, plain: Mapping[str, Any] = {}
) -> tuple[dict[str, str], list[str]]:
    """(config, secret keys) as `pulumi.runtime.set_all_config` takes them: full keys, string values."""
    config: dict[str, str] = {}
    for key, value in raw_fleet.items():
        config[f"{NAMESPACE}:{key}"] = value if isinstance(value, str) else json.dumps(value)
    for full, value in plain.items():
        config[full] = value if isinstance(value, str) else json.dumps(value)
    secret_keys = []
    for key in secrets:
        config[f"{NAMESPACE}:{key}"] = OPAQUE_SECRET
        secret_keys.append(f"{NAMESPACE}:{key}")
    return config, secret_keys


def config_of(stack: StackConfig) -> tuple[dict[str, str], list[str]]:
    fleet = stack.fleet.model_dump(by_alias=True, mode="json", exclude_none=True)
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
    return config, secret_keys
