"""Every policy of the `modelplane` pack, in the order the pack runs them.

`policies/__main__.py` builds the PolicyPack from this list; tests import the policies from here
and never import `__main__` (building a PolicyPack starts a server and blocks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pulumi_policy import Policy

from policies.config_rules import CONFIG_POLICIES
from policies.resource_rules import RESOURCE_POLICIES
from policies.stack_rules import STACK_POLICIES

PACK_NAME = "modelplane"
# The pack's version is stated once, in PulumiPolicy.yaml; the engine shows it with every diagnostic.
PACK_VERSION = str(yaml.safe_load((Path(__file__).parent / "PulumiPolicy.yaml").read_text())["version"])

ALL_POLICIES: list[Policy] = [*CONFIG_POLICIES, *RESOURCE_POLICIES, *STACK_POLICIES]

POLICIES_BY_NAME: dict[str, Policy] = {p.name: p for p in ALL_POLICIES}


def state_manifest_version() -> None:
    """Make the pack's server speak of the version in PulumiPolicy.yaml.

    The Python SDK gives its server the version "0.0.1" whatever the manifest says, and writes it
    into the text of every "can't run policy ... during preview" diagnostic; the engine replaces
    only the diagnostic's version field with the manifest's (pulumi/pulumi-policy v1.21.0,
    sdk/python/lib/pulumi_policy/policy.py, `PolicyPack.__init__`; pulumi/pulumi v3.259.0,
    pkg/resource/plugin/analyzer_plugin.go, `convertDiagnostics`). Call before building the pack.
    """
    from pulumi_policy import policy

    servicer = policy._PolicyAnalyzerServicer
    if getattr(servicer, "_modelplane_version", None) == PACK_VERSION:
        return
    original = servicer.__init__

    def with_manifest_version(self: Any, name: str, version: str, *args: Any, **kwargs: Any) -> None:
        original(self, name, PACK_VERSION, *args, **kwargs)

    servicer.__init__ = with_manifest_version  # type: ignore[method-assign]
    servicer._modelplane_version = PACK_VERSION  # type: ignore[attr-defined]
