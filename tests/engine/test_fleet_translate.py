"""A fleet service as Envoy Gateway's own translator turns it into Envoy configuration.

`egctl x translate` (Envoy Gateway v1.8.3, built by engine/build.sh) runs the gateway controller's
translation offline: Gateway API and Envoy Gateway objects in, the statuses it would write and the
xDS it would send out. Given the serving cluster's objects of the example fleet stack, it must
accept every one, put the three backends into one Envoy cluster with their weights (3 and 1 at
priority 0, the external endpoint at priority 1), and carry the health checks, the retries, the
callers' key check and the external endpoint's key. Envoy itself does not run here.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from infra.config.stackfile import load_stack_file
from program.main import run
from tests.test_k8s_schema import ROOT, manifest
from tests.tools import require
from tooling.mockrun import run_under_mocks
from tooling.stackconfig import config_of

# Every object of the serving cluster the translator reads: the class, the Gateway, the fleet
# service's route, Backends, filter, policies and Secrets.
SERVING_KINDS = (
    ":GatewayClass",
    ":Gateway",
    ":HTTPRoute",
    ":Backend",
    ":HTTPRouteFilter",
    ":BackendTrafficPolicy",
    ":SecurityPolicy",
    ":Secret",
)


def serving_objects() -> list[dict[str, Any]]:
    """The serving cluster `east`'s objects of the example fleet stack, as the provider would send them
    (a Secret's `stringData` as `data`, which the API server would store)."""
    loaded = load_stack_file(ROOT / "stacks" / "Pulumi.byo-fleet.yaml")
    config, secret_keys = config_of(loaded)
    result = run_under_mocks(run, loaded.stack, config, secret_keys)
    assert result.error is None, result.error
    objects = []
    for r in result.resources:
        if not (r.custom and r.type.endswith(SERVING_KINDS) and r.name.startswith("east-")):
            continue
        obj = manifest(r)
        if obj["kind"] == "Secret":
            data = obj.pop("stringData")
            obj["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        objects.append(obj)
    return objects


def fleet_ca(folder: Path) -> dict[str, Any]:
    """The Secret cert-manager would write for the serving side's trust certificate: a CA in `ca.crt`."""
    key, cert = folder / "ca.key", folder / "ca.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-days", "1", "-subj", "/CN=fleet-ca", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    pem = base64.b64encode(cert.read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "qwen-fleet-ca", "namespace": "default"},
        "data": {"ca.crt": pem, "tls.crt": pem, "tls.key": base64.b64encode(key.read_bytes()).decode()},
        "type": "kubernetes.io/tls",
    }


def translate(tmp_path: Path) -> dict[str, Any]:
    egctl = require("egctl", "the fleet service's translation by egctl")
    objects = [*serving_objects(), fleet_ca(tmp_path)]
    # The translator's file loader keeps only a Namespace's name, not its labels (egctl v1.8.3,
    # internal/gatewayapi/resource/load.go, KindNamespace), so a listener that selects routes by
    # namespace label (`kubernetes.io/metadata.name`, which the API server puts on every namespace)
    # admits none. The selector is checked here against the routes' namespaces, then the translator
    # is given listeners that admit every namespace.
    routes = {o["metadata"]["namespace"] for o in objects if o["kind"] == "HTTPRoute"}
    for gateway in (o for o in objects if o["kind"] == "Gateway"):
        for listener in gateway["spec"]["listeners"]:
            namespaces = listener["allowedRoutes"]["namespaces"]
            [term] = namespaces["selector"]["matchExpressions"]
            assert term["key"] == "kubernetes.io/metadata.name" and term["operator"] == "In"
            assert routes <= set(term["values"]), (routes, term)
            listener["allowedRoutes"]["namespaces"] = {"from": "All"}
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump_all(objects))
    done = subprocess.run(
        [str(egctl), "x", "translate", "--from", "gateway-api", "--to", "gateway-api,xds", "-o", "json",
         "--file", str(source), "--add-missing-resources"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    status = obj.get("status") or {}
    found = list(status.get("conditions") or [])
    for parent in status.get("parents") or status.get("ancestors") or []:
        found += parent.get("conditions") or []
    return {c["type"]: c["status"] for c in found}


def configs(out: dict[str, Any], kind: str) -> dict[str, Any]:
    [gateway] = out["xds"].values()
    return next(c for c in gateway["configs"] if c["@type"].endswith(kind))


def test_egctl_accepts_the_fleet_service_and_keeps_its_weights_health_checks_and_failover(tmp_path: Path) -> None:
    out = translate(tmp_path)
    for key in ("httpRoutes", "backends", "backendTrafficPolicies", "securityPolicies"):
        for obj in out[key]:
            assert conditions(obj).get("Accepted") == "True", (key, obj["metadata"]["name"], obj.get("status"))
    clusters = [c["cluster"] for c in configs(out, "ClustersConfigDump")["dynamicActiveClusters"]]
    [fleet] = [c for c in clusters if c["name"].startswith("httproute/default/qwen/")]
    localities = {
        (e["locality"].get("region", ""), e.get("priority", 0)): e["loadBalancingWeight"]
        for e in fleet["loadAssignment"]["endpoints"]
    }
    # One Envoy cluster for all three backends, the only place priorities apply: weights 3 and 1 at
    # priority 0, the external endpoint at priority 1.
    assert sorted((p, w) for (_, p), w in localities.items()) == [(0, 1), (0, 3), (1, 1)], localities
    [check] = fleet["healthChecks"]
    assert "tcpHealthCheck" in check
    assert fleet["outlierDetection"]["maxEjectionPercent"] == 100
    routes = configs(out, "RoutesConfigDump")["dynamicRouteConfigs"]
    actions = [
        r["route"]
        for rc in routes
        for vh in rc["routeConfig"].get("virtualHosts", [])
        for r in vh.get("routes", [])
        if r.get("name", "").startswith("httproute/default/qwen/")
    ]
    assert actions and all(a["cluster"] == fleet["name"] for a in actions), actions
    assert actions[0]["retryPolicy"]["numRetries"] == 2
    listeners = json.dumps(configs(out, "ListenersConfigDump"))
    assert "envoy.filters.http.api_key_auth" in listeners
    assert "envoy.filters.http.credential_injector" in listeners
