"""The model-server simulator alone (tests/engine/simulator.py), without a cluster: its metrics as
vLLM 0.23.0 exposes them, its queue, its OpenAI-compatible answers, and the supervisor that starts
and stops one per pod (tests/engine/servers.py, run by tests/engine/podproc.py) fed pods by hand.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, cast

import pytest

from infra.formats import flag_value
from infra.vocabulary import DEPLOYMENT_LABEL
from tests.engine import simulator
from tests.engine.kube import free_port
from tests.engine.podproc import PodProcesses
from tests.engine.servers import MODEL_SERVER, Served, model_servers, served
from tests.metrics_text import FormatError, parse

LABELS = {"model_name": "qwen", "engine": "0"}


def wait_until(check: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not reached"
        time.sleep(0.02)


@pytest.fixture
def engine() -> simulator.Engine:
    return simulator.Engine("qwen", max_num_seqs=2, kv_cache_tokens=100, seconds_per_token=0.01)


@pytest.fixture
def url(engine: simulator.Engine) -> Iterator[str]:
    httpd = simulator.server("127.0.0.1", 0, engine)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def value(families: Any, name: str, **labels: str) -> float:
    """The one sample of that name and labels (with `LABELS`), in whichever family holds it."""
    (sample,) = [s for f in families.values() for s in f.samples if s.name == name and s.labels == {**LABELS, **labels}]
    return float(sample.value)


def test_the_metrics_are_the_series_vllm_names_with_its_labels_types_and_buckets(engine: simulator.Engine) -> None:
    families = parse(engine.exposition())
    types = {name: f.type for name, f in families.items() if not name.endswith("_created")}
    assert types == {
        "vllm:num_requests_running": "gauge",
        "vllm:num_requests_waiting": "gauge",
        "vllm:kv_cache_usage_perc": "gauge",
        "vllm:prompt_tokens_total": "counter",
        "vllm:generation_tokens_total": "counter",
        "vllm:request_success_total": "counter",
        "vllm:time_to_first_token_seconds": "histogram",
        "vllm:e2e_request_latency_seconds": "histogram",
    }
    for name in ("vllm:num_requests_running", "vllm:prompt_tokens_total", "vllm:e2e_request_latency_seconds_created"):
        assert {frozenset(s.labels.items()) for s in families[name].samples} == {frozenset(LABELS.items())}
    reasons = {s.labels["finished_reason"] for s in families["vllm:request_success_total"].samples}
    assert reasons == {"stop", "length", "abort", "error", "repetition"}
    # vLLM's buckets (vllm/v1/metrics/loggers.py at 0.23.0): the first and last finite bounds.
    for name, first, last in (
        ("vllm:time_to_first_token_seconds", 0.001, 2560.0),
        ("vllm:e2e_request_latency_seconds", 0.3, 7680.0),
    ):
        bounds = [s.labels["le"] for s in families[name].samples if s.name == name + "_bucket"]
        assert (float(bounds[0]), float(bounds[-2]), bounds[-1]) == (first, last, "+Inf")
    assert families["vllm:kv_cache_usage_perc"].help == "KV-cache usage. 1 means 100 percent usage."


@pytest.mark.parametrize(
    "text",
    [
        "# TYPE a gauge\na 1",  # no final newline
        "a 1\n",  # a sample before its TYPE
        "# TYPE a gauge\nb 1\n",  # a sample of another family
        "# TYPE a gauge\na{x=1} 1\n",  # an unquoted label value
        '# TYPE a gauge\na{x="1",x="2"} 1\n',  # a label twice
        '# TYPE a gauge\na{x="1"} 1\na{x="1"} 2\n',  # a series twice
        '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\nh_sum 0\n',  # not cumulative
        '# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\nh_sum 0\n',  # no +Inf
        "# TYPE a gauge\na one\n",  # not a number
    ],
)
def test_the_metrics_reader_refuses_what_the_format_does_not_allow(text: str) -> None:
    with pytest.raises(FormatError):
        parse(text)


def test_requests_beyond_the_bound_wait_and_the_kv_cache_follows_the_running_ones(engine: simulator.Engine) -> None:
    done: list[simulator.Request] = []
    load = [threading.Thread(target=lambda: done.append(engine.serve(10, 100))) for _ in range(5)]
    for thread in load:
        thread.start()
    wait_until(lambda: (len(engine.running), len(engine.waiting)) == (2, 3))
    families = parse(engine.exposition())
    assert value(families, "vllm:num_requests_running") == 2
    assert value(families, "vllm:num_requests_waiting") == 3
    # Two running requests hold their 10 prompt tokens and what they generated so far, of 100.
    assert 0.2 <= value(families, "vllm:kv_cache_usage_perc") <= 1
    for thread in load:
        thread.join()
    families = parse(engine.exposition())
    assert value(families, "vllm:num_requests_running") == value(families, "vllm:num_requests_waiting") == 0
    assert value(families, "vllm:kv_cache_usage_perc") == 0
    assert value(families, "vllm:prompt_tokens_total") == 50
    assert value(families, "vllm:generation_tokens_total") == 500
    assert value(families, "vllm:request_success_total", finished_reason="length") == 5
    assert value(families, "vllm:e2e_request_latency_seconds_count") == 5
    # In arrival order: the last three were admitted only after the first two ended.
    admitted = sorted(r.admitted or 0 for r in done)
    first_done = min(r.admitted or 0 for r in done) + 100 * 0.01
    assert sum(a >= first_done for a in admitted) == 3
    # A request that waited has a first token no sooner than its wait.
    assert value(families, "vllm:time_to_first_token_seconds_sum") >= 3 * 100 * 0.01


def test_completions_and_chat_completions_answer_as_openai_does(url: str) -> None:
    with urllib.request.urlopen(url + "/health", timeout=10) as response:
        assert (response.status, response.read()) == (200, b"")
    got = post(url, "/v1/completions", {"model": "qwen", "prompt": "one two three", "max_tokens": 4})
    assert got["object"] == "text_completion" and got["id"].startswith("cmpl-") and got["model"] == "qwen"
    assert got["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert len(got["choices"][0]["text"].split()) == 4
    chat = post(url, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi there"}]})
    assert chat["object"] == "chat.completion" and chat["id"].startswith("chatcmpl-")
    assert chat["choices"][0]["message"]["role"] == "assistant"
    assert chat["usage"]["completion_tokens"] == simulator.DEFAULT_MAX_TOKENS
    with pytest.raises(urllib.error.HTTPError) as missing:
        post(url, "/v1/completions", {"model": "other", "prompt": "x"})
    assert missing.value.code == 404


@pytest.mark.parametrize(
    ("args", "model", "seqs"),
    [
        (["--model", "Qwen/Q", "--served-model-name", "qwen", "--max-num-seqs", "8"], "qwen", "8"),
        (["--model=Qwen/Q", "--max-num-seqs=3", "--port", "8000"], "Qwen/Q", "3"),
        (["Qwen/Q", "--port", "8000"], "Qwen/Q", None),
    ],
)
def test_the_model_name_and_bound_come_from_the_engine_args(args: list[str], model: str, seqs: str | None) -> None:
    assert simulator.served_model(args) == model
    assert (flag_value(args, "--max-num-seqs") or (0, None))[1] == seqs


def pod(name: str, port: int, ip: str = "127.31.255.250", **changes: Any) -> dict[str, Any]:
    container = {
        "name": "engine",
        "args": ["--served-model-name", "qwen"],
        "ports": [{"name": "http", "containerPort": port}],
    }
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}", "labels": {DEPLOYMENT_LABEL: "qwen"}},
        "spec": {"containers": [container]},
        "status": {"phase": "Running", "podIP": ip},
    }
    for key, value in changes.items():
        obj[key] = {**obj[key], **value}
    return obj


def test_only_running_model_pods_with_an_address_and_an_engine_port_are_served() -> None:
    assert served(pod("a", 8000)) == Served("ml/a", "127.31.255.250", 8000, ("--served-model-name", "qwen"))
    assert served(pod("a", 8000)).url == "http://127.31.255.250:8000"  # type: ignore[union-attr]
    assert served(pod("a", 8000, status={"phase": "Pending"})) is None
    assert served(pod("a", 8000, status={"podIP": ""})) is None
    assert served(pod("a", 8000, metadata={"labels": {}})) is None
    assert served(pod("a", 8000, metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"})) is None
    headless = pod("a", 8000)
    headless["spec"]["containers"][0]["ports"] = []
    assert served(headless) is None


class Pods:
    """Stands in for the cluster: the pods it lists are the test's."""

    def __init__(self) -> None:
        self.pods: list[dict[str, Any]] = []

    def list_all(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self.pods) if kind == "Pod" else []


def test_a_server_starts_with_its_pod_and_stops_when_it_goes(tmp_path: Any) -> None:
    cluster = Pods()
    servers = PodProcesses(cast(Any, cluster), tmp_path, [model_servers()]).start()
    port = free_port()
    health = f"http://127.31.255.250:{port}/health"  # the pod's address, on loopback here

    def answering() -> bool:
        try:
            with urllib.request.urlopen(health, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    try:
        cluster.pods = [pod("a", port)]
        wait_until(answering)
        assert set(servers.serving(MODEL_SERVER)) == {"ml/a"}
        cluster.pods = [pod("a", port, metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"})]
        wait_until(lambda: not answering() and not servers.serving(MODEL_SERVER))
    finally:
        servers.stop()
