"""Model servers at pod addresses: after `up` of a committed stack on the local cluster, each model pod
has an address from its node's pod CIDR and a simulated vLLM answers at that address (cluster.py
`PodNetwork`, servers.py, simulator.py), its queue follows the load, and it stops
when its pod goes. Read from the cluster and from the servers, as Prometheus and the gateway would.
"""

from __future__ import annotations

import ipaddress
import threading
import urllib.error
import urllib.request
from typing import Any

from infra.vocabulary import DEPLOYMENT_LABEL
from tests.engine.cluster import wait_for
from tests.engine.servers import MODEL_SERVER, completion, gauges, metrics
from tests.engine.simulator import served_model
from tests.engine.stackrun import Run

STACK = "recipe-qwen-mi325x"
# The bound of running requests the test gives the engine (vLLM's `--max-num-seqs`).
MAX_NUM_SEQS = 3
# Tokens per request: long enough (at the servers' 0.02 s a token) that the load is seen running.
MAX_TOKENS = 300


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


def answers(url: str) -> bool:
    try:
        return get(url)[0] == 200
    except OSError:
        return False


def refuses(url: str) -> bool:
    try:
        get(url)
    except urllib.error.URLError as err:
        return isinstance(err.reason, ConnectionRefusedError)
    except ConnectionRefusedError:
        return True
    return False


def model_pods(run: Run, name: str) -> list[dict[str, Any]]:
    return [
        p
        for p in run.cluster.list("v1", "Pod", "ml-team")
        if (p["metadata"].get("labels") or {}).get(DEPLOYMENT_LABEL) == name
        and not p["metadata"].get("deletionTimestamp")
    ]


def complete(url: str, model: str, results: list[dict[str, Any]]) -> None:
    results.append(completion(url, model, MAX_TOKENS))


def test_model_pods_are_served_at_their_addresses_queue_under_load_and_stop_with_their_pods(run: Any) -> None:
    recipe = run(STACK)
    (dep,) = recipe.deployments()
    model = served_model(dep["args"])
    recipe.edit_deployment(dep["name"], args=[*dep["args"], "--max-num-seqs", str(MAX_NUM_SEQS)])
    recipe.up()

    # The pod has an address of its node's pod CIDR, and its engine answers there.
    cidrs = recipe.cluster.pod_cidrs()
    (pod,) = model_pods(recipe, dep["name"])
    ip = ipaddress.ip_address(pod["status"]["podIP"])
    assert ip in ipaddress.ip_network(cidrs[pod["spec"]["nodeName"]]), (ip, cidrs)
    # Every node's pod CIDR is its own.
    assert len(set(cidrs.values())) == len(cidrs)
    # The deployment's Service has the pod as its endpoint (a loopback address would be refused).
    assert recipe.site.endpoints(dep["namespace"], dep["name"]) == {pod["metadata"]["name"]}
    url = f"http://{ip}:{dep['port']}"
    wait_for(f"{url}/health answering", lambda: answers(url + "/health"), timeout=60, every=0.5)
    families = metrics(url)
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"):
        assert [s.labels for s in families[name].samples] == [{"model_name": model, "engine": "0"}], name
    assert gauges(url) == {"vllm:num_requests_running": 0.0, "vllm:num_requests_waiting": 0.0}

    # More requests than the engine runs at once (its `--max-num-seqs`): the rest wait, then all finish.
    results: list[dict[str, Any]] = []
    load = [threading.Thread(target=complete, args=(url, model, results)) for _ in range(MAX_NUM_SEQS + 2)]
    for thread in load:
        thread.start()
    busy = {"vllm:num_requests_running": float(MAX_NUM_SEQS), "vllm:num_requests_waiting": 2.0}
    wait_for("the engine running its bound and queueing the rest", lambda: gauges(url) == busy, timeout=30, every=0.1)
    kv = metrics(url)["vllm:kv_cache_usage_perc"].samples[0].value
    assert 0 < kv <= 1
    for thread in load:
        thread.join(timeout=120)
    assert len(results) == MAX_NUM_SEQS + 2
    assert all(r["model"] == model and r["usage"]["completion_tokens"] == MAX_TOKENS for r in results)
    assert gauges(url) == {"vllm:num_requests_running": 0.0, "vllm:num_requests_waiting": 0.0}
    families = metrics(url)
    success = {s.labels["finished_reason"]: s.value for s in families["vllm:request_success_total"].samples}
    assert success["length"] == MAX_NUM_SEQS + 2
    assert families["vllm:generation_tokens_total"].samples[0].value == (MAX_NUM_SEQS + 2) * MAX_TOKENS

    # Scaled to zero through the API: the pod goes and takes its server with it.
    recipe.cluster.server.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": dep["name"], "namespace": dep["namespace"]},
            "spec": {"replicas": 0},
        }
    )
    wait_for(f"{url} refusing connections", lambda: refuses(url + "/health"), timeout=60, every=0.5)
    wait_for("no model pod left", lambda: not model_pods(recipe, dep["name"]), timeout=60, every=0.5)
    assert not recipe.pods.serving(MODEL_SERVER)
