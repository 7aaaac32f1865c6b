"""How an OKE node pool's nodes get their taints: the kubelet registers them, started by the node's cloud-init.

OKE node pools take labels (`initial_node_labels`) but no taints (pulumi-oci 5.5.0 `NodePool` has no
taint argument). A node runs the cloud-init script in its `user_data` metadata, and OKE's default
script fetches and runs OKE's node setup, which takes kubelet flags (docs.oracle.com, ContEng
"Using Custom Cloud-init Initialization Scripts to Set Up Managed Nodes": `bash /var/run/oke-init.sh
--kubelet-extra-args "..."`). The taints are written as the kubelet's `--register-with-taints` flag
(`key=value:Effect`, kubernetes.io kubelet reference). This module writes that script and reads the
taints back from it for the policies (`clouds.spec.PoolSpelling.decode_taints`); it imports no SDK.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from typing import Any

# The metadata key OKE runs as the node's cloud-init (pulumi-oci 5.5.0 `NodePool.node_metadata`,
# "A list of key/value pairs to add to each underlying OCI instance in the node pool on launch";
# the OKE page above names `user_data`).
USER_DATA = "user_data"

# OKE's default cloud-init script (the OKE page above), with the kubelet's extra flags added.
_SCRIPT = """#!/bin/bash
curl --fail -H "Authorization: Bearer Oracle" -L0 http://169.254.169.254/opc/v2/instance/metadata/oke_init_script | base64 --decode >/var/run/oke-init.sh
bash /var/run/oke-init.sh{flags}
"""
_TAINTS_FLAG = re.compile(r"--register-with-taints=([^\s\"']+)")


def user_data(taints: Sequence[str]) -> str:
    """The base64 cloud-init that starts OKE's node setup, registering `taints` (`key=value:Effect`)."""
    flags = f' --kubelet-extra-args "--register-with-taints={",".join(taints)}"' if taints else ""
    return base64.b64encode(_SCRIPT.format(flags=flags).encode()).decode()


def registered_taints(value: Any) -> list[str]:
    """The taints a pool's `user_data` registers (`key=value:Effect`); none when it is not such a script."""
    if not isinstance(value, str):
        return []
    try:
        script = base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return []
    match = _TAINTS_FLAG.search(script)
    return match.group(1).split(",") if match else []
