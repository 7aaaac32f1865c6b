"""Every policy of the `modelplane` pack, in the order the pack runs them.

`policies/__main__.py` builds the PolicyPack from this list; tests import the policies from here
and never import `__main__` (building a PolicyPack starts a server and blocks).
"""

from __future__ import annotations

from pathlib import Path

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
