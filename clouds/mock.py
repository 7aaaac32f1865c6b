"""What the clouds' mock answers share: a certificate and a kubeconfig that reach nothing.

The offline plan's mock runtime (`tooling.mockrun`) and the engine tier's test provider
answer a cloud's resources with the outputs its provider would compute (`Cloud.mock_outputs`);
the kubeconfigs point at `.invalid` hosts (RFC 2606), so nothing can ever connect with them.
"""

from __future__ import annotations

import base64
import json

FAKE_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMOCK\n-----END CERTIFICATE-----\n").decode()


def fake_kubeconfig(name: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": name, "cluster": {"server": f"https://{name}.invalid", "certificate-authority-data": FAKE_CA}}
            ],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
            "users": [{"name": name, "user": {"token": "mock"}}],
        }
    )
