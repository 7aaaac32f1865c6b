"""Fleet services: one service over deployments of several clusters and external endpoints, with
weights, a failover order and callers' keys; the rules that refuse bad input, the objects each
cluster gets, and what the plan and the `endpoints` output show."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra.config.issues import ConfigError
from infra.config.stackfile import parse_fleet
from program.main import secure_keys
from tests.conftest import cpu_cluster_fleet, of_type, run_fleet
from tooling.mockrun import MockRun, Registration
from tooling.plan import fleet_services_json, resources_json

BACKEND = "kubernetes:gateway.envoyproxy.io/v1alpha1:Backend"
ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
TRAFFIC_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy"
SECURITY_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"
ROUTE_FILTER = "kubernetes:gateway.envoyproxy.io/v1alpha1:HTTPRouteFilter"
SECRET = "kubernetes:core/v1:Secret"
CERTIFICATE = "kubernetes:cert-manager.io/v1:Certificate"
EXTERNAL = {"url": "https://llm.example.com/v1", "model": "qwen", "apiKey": {"secure": "endpoint-key"}}


def deployment(cluster: str) -> dict[str, Any]:
    return {
        "name": "qwen",
        "namespace": "ml-team",
        "cluster": cluster,
        "pool": "cpu",
        "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
        "args": ["--model", "Qwen/Qwen2.5-0.5B-Instruct", "--served-model-name", "qwen"],
        "memory": "16Gi",
        "devices": [{"name": "cpu"}],
    }


def fleet_raw(**service: Any) -> dict[str, Any]:
    """Clusters east and west with a gateway each, `qwen` on both, and one fleet service served by east:
    east 3, west 1, the external endpoint only while both fail, one caller's key."""
    raw = cpu_cluster_fleet("Existing", "east", "west")
    for cluster in raw["clusters"]:
        cluster["gateway"] = {"host": f"{cluster['name']}.gw.example.com", "issuerRef": {"name": "fleet-ca"}}
    raw["deployments"] = [deployment("east"), deployment("west")]
    raw["services"] = [
        {
            "name": "qwen",
            "cluster": "east",
            "backends": [
                {"deployment": "qwen", "cluster": "east", "weight": 3},
                {"deployment": "qwen", "cluster": "west", "weight": 1},
                {"external": dict(EXTERNAL), "weight": 1},
            ],
            "failover": [[0, 1], [2]],
            "apiKeys": [{"secure": "caller-key"}],
            **service,
        }
    ]
    return raw


def issues(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        parse_fleet(copy.deepcopy(raw), "Pulumi.test.yaml")
    return {i.path: f"{i.problem}. Fix: {i.fix}" for i in err.value.issues}


def named(result: MockRun, type_token: str, name: str) -> Registration:
    assert result.error is None, result.error
    [found] = [r for r in of_type(result, type_token) if r.inputs["metadata"]["name"] == name]
    return found


# --------------------------------------------------------------------------------------------
# Rules


def test_fleet_service_over_two_clusters_and_an_external_endpoint_is_accepted() -> None:
    parse_fleet(fleet_raw(), "Pulumi.test.yaml")


def test_backend_on_a_cluster_without_a_gateway_is_rejected_with_the_block_to_add() -> None:
    raw = fleet_raw()
    del raw["clusters"][1]["gateway"]
    found = issues(raw)
    assert "cluster 'west' has no gateway other clusters can reach" in found["services[0].backends[1].cluster"]
    assert "set clusters[1].gateway: {host:" in found["services[0].backends[1].cluster"]


def test_serving_cluster_without_a_gateway_cannot_check_the_other_clusters_certificates() -> None:
    raw = fleet_raw()
    del raw["clusters"][0]["gateway"]
    assert "set clusters[0].gateway" in issues(raw)["services[0].cluster"]


def test_fleet_service_without_a_serving_cluster_is_rejected() -> None:
    raw = fleet_raw()
    del raw["services"][0]["cluster"]
    assert "names no cluster to serve it" in issues(raw)["services[0].cluster"]


@pytest.mark.parametrize(
    ("failover", "path", "says"),
    [
        ([[0, 1], [0, 2]], "services[0].failover[1][0]", "a loop in the failover order"),
        ([[0], [2]], "services[0].failover", "backends [1] are in no tier: a gap"),
        ([[0, 1], [], [2]], "services[0].failover[1]", "tier 1 is empty: a gap"),
        ([[0], [1], [2]], "services[0].failover[2]", "one fallback level"),
        ([[0, 1], [3]], "services[0].failover[1][0]", "no backends[3]"),
    ],
)
def test_failover_order_with_a_loop_a_gap_or_a_third_tier_is_rejected(
    failover: list[list[int]], path: str, says: str
) -> None:
    assert says in issues(fleet_raw(failover=failover))[path]


def test_weights_summing_to_zero_in_a_tier_are_rejected() -> None:
    raw = fleet_raw()
    for backend in raw["services"][0]["backends"][:2]:
        backend["weight"] = 0
    found = issues(raw)["services[0].failover[0]"]
    assert "tier 0's weights sum to 0" in found and "weight above 0" in found


def test_weights_summing_to_zero_without_a_failover_order_are_rejected() -> None:
    raw = fleet_raw()
    del raw["services"][0]["failover"]
    for backend in raw["services"][0]["backends"]:
        backend["weight"] = 0
    assert "the weights sum to 0" in issues(raw)["services[0].backends"]


@pytest.mark.parametrize(
    "url",
    ["http://llm.example.com/v1", "llm.example.com/v1", "https://10.0.0.1/v1", "https://llm.example.com/openai/v1"],
)
def test_external_endpoint_without_an_https_base_url_is_rejected(url: str) -> None:
    raw = fleet_raw()
    raw["services"][0]["backends"][2]["external"]["url"] = url
    found = issues(raw)["services[0].backends[2].external.url"]
    assert "https://<host>/v1" in found or "host name" in found


def test_external_endpoint_answering_to_another_model_is_rejected() -> None:
    raw = fleet_raw()
    raw["services"][0]["backends"][2]["external"]["model"] = "gpt-4o"
    found = issues(raw)["services[0].backends[2]"]
    assert "'gpt-4o'" in found and "--served-model-name" in found


def test_second_keyed_external_endpoint_is_rejected_since_the_route_injects_one_key() -> None:
    raw = fleet_raw(failover=None)
    del raw["services"][0]["failover"]
    raw["services"][0]["backends"].append({"external": {**EXTERNAL, "url": "https://other.example.com/v1"}})
    assert "injects one key" in issues(raw)["services[0].backends[3].external.apiKey"]


def test_two_deployments_of_one_other_cluster_are_rejected() -> None:
    raw = fleet_raw()
    raw["deployments"].append({**deployment("west"), "name": "qwen-b"})
    raw["services"][0]["backends"].append({"deployment": "qwen-b", "cluster": "west"})
    raw["services"][0]["failover"] = [[0, 1, 3], [2]]
    assert "already reaches cluster 'west'" in issues(raw)["services[0].backends[3].cluster"]


def test_unknown_deployment_on_the_named_cluster_is_rejected() -> None:
    raw = fleet_raw()
    raw["services"][0]["backends"][1]["deployment"] = "llama"
    assert "no deployment 'llama' on cluster 'west'" in issues(raw)["services[0].backends[1].deployment"]


# --------------------------------------------------------------------------------------------
# Objects


@pytest.fixture(scope="module")
def run() -> MockRun:
    result = run_fleet(fleet_raw())
    assert result.error is None, result.error
    return result


def test_every_backend_is_a_backend_of_a_dns_name_and_the_last_tier_is_the_fallback(run: MockRun) -> None:
    specs = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in of_type(run, BACKEND)}
    local = "qwen.ml-team.svc.cluster.local"
    assert specs["qwen-0"] == {"endpoints": [{"hostname": local, "fqdn": {"hostname": local, "port": 8000}}]}
    remote = "west.gw.example.com"
    assert specs["qwen-1"]["endpoints"] == [{"hostname": remote, "fqdn": {"hostname": remote, "port": 443}}]
    assert specs["qwen-1"]["tls"] == {
        "caCertificateRefs": [{"group": "", "kind": "Secret", "name": "qwen-fleet-ca"}],
        "sni": "west.gw.example.com",
    }
    assert "fallback" not in specs["qwen-1"]
    assert specs["qwen-2"]["fallback"] is True
    assert specs["qwen-2"]["tls"] == {"wellKnownCACertificates": "System", "sni": "llm.example.com"}


def test_route_weights_the_backends_and_names_the_service_for_other_gateways(run: MockRun) -> None:
    [rule] = named(run, ROUTE, "qwen").inputs["spec"]["rules"]
    assert [(b["kind"], b["name"], b["weight"]) for b in rule["backendRefs"]] == [
        ("Backend", "qwen-0", 3),
        ("Backend", "qwen-1", 1),
        ("Backend", "qwen-2", 1),
    ]
    header = next(f for f in rule["filters"] if f["type"] == "RequestHeaderModifier")
    assert header["requestHeaderModifier"]["set"] == [{"name": "x-modelplane-service", "value": "qwen"}]
    upstream = named(run, ROUTE_FILTER, "qwen-upstream").inputs["spec"]
    assert upstream["urlRewrite"] == {"hostname": {"type": "Backend"}}
    assert upstream["credentialInjection"]["credential"]["valueRef"]["name"] == "qwen-upstream-key"


def test_traffic_policy_checks_health_actively_and_by_outlier_detection_and_retries(run: MockRun) -> None:
    spec = named(run, TRAFFIC_POLICY, "qwen").inputs["spec"]
    assert spec["healthCheck"]["active"]["type"] == "TCP"
    assert spec["healthCheck"]["passive"]["maxEjectionPercent"] == 100
    assert "connect-failure" in spec["retry"]["retryOn"]["triggers"]


def test_callers_keys_are_a_security_policy_over_a_secret_that_the_plan_never_shows(run: MockRun) -> None:
    spec = named(run, SECURITY_POLICY, "qwen").inputs["spec"]
    assert spec["apiKeyAuth"]["credentialRefs"] == [{"group": "", "kind": "Secret", "name": "qwen-callers"}]
    assert spec["apiKeyAuth"]["sanitize"] is True
    shown = str(fleet_services_json(run.resources)) + str(resources_json(run.resources))
    assert "caller-key" not in shown and "endpoint-key" not in shown
    assert {r.inputs["metadata"]["name"] for r in of_type(run, SECRET)} >= {"qwen-callers", "qwen-upstream-key"}


def test_the_other_cluster_publishes_its_deployment_on_its_fleet_listener(run: MockRun) -> None:
    [west_gateway] = [r for r in of_type(run, GATEWAY) if r.name.startswith("west-")]
    fleet_listener = next(x for x in west_gateway.inputs["spec"]["listeners"] if x["name"] == "fleet")
    assert fleet_listener["hostname"] == "west.gw.example.com" and fleet_listener["protocol"] == "HTTPS"
    export = named(run, ROUTE, "qwen-fleet")
    assert export.inputs["metadata"]["namespace"] == "ml-team"
    [rule] = export.inputs["spec"]["rules"]
    assert rule["matches"][0]["headers"] == [{"name": "x-modelplane-service", "value": "qwen"}]
    assert rule["backendRefs"] == [{"name": "qwen", "port": 8000}]
    issued = {r.inputs["metadata"]["name"] for r in of_type(run, CERTIFICATE)}
    assert {"modelplane-fleet-gateway", "qwen-fleet-ca"} <= issued


def test_endpoints_output_and_plan_show_one_url_with_backends_weights_and_failover(run: MockRun) -> None:
    [svc] = fleet_services_json(run.resources)
    assert svc["url"] == "http://{address}/qwen/v1"
    assert svc["failover"] == [["east/qwen", "west/qwen"], ["llm.example.com/qwen"]]
    assert [(b["backend"], b["weight"], b["tier"]) for b in svc["backends"]] == [
        ("east/qwen", 3, 0),
        ("west/qwen", 1, 0),
        ("llm.example.com/qwen", 1, 1),
    ]
    assert svc["callerKeys"] == 1
    assert run.stack is not None
    assert run.stack.outputs["endpoints"]["qwen"]["url"] == "http://{address}/qwen/v1"


def test_callers_keys_on_a_service_of_one_deployment_are_rejected_with_both_ways_out() -> None:
    raw = fleet_raw()
    raw["services"][0] = {"name": "qwen", "cluster": "east", "deployment": "qwen", "apiKeys": [{"secure": "k"}]}
    found = issues(raw)["services[0].deployment"]
    assert "remove apiKeys and failover" in found and "two or more backends" in found


def test_keys_the_engine_hands_over_decrypted_are_read_as_secure_again() -> None:
    # A `secure:` value anywhere under modelplane:services makes the engine hand the whole key over as
    # a secret with its leaves decrypted (pulumi/pulumi#3342); the keys are secure again, nothing else.
    decrypted = {
        "name": "qwen",
        "apiKeys": ["caller-key"],
        "backends": [{"deployment": "qwen"}, {"external": {**EXTERNAL, "apiKey": "endpoint-key"}}],
    }
    service = secure_keys(decrypted)
    assert service["apiKeys"] == [{"secure": "caller-key"}]
    assert service["backends"][0] == {"deployment": "qwen"}
    assert service["backends"][1]["external"]["apiKey"] == {"secure": "endpoint-key"}
    assert service["backends"][1]["external"]["url"] == EXTERNAL["url"]
