"""A model server for one pod of the local cluster: what vLLM's OpenAI server answers, without a model.

It stands in for vLLM 0.23.0 (the image `vllm/vllm-openai:v0.23.0` that infra/serving pins) the
way KWOK stands in for kubelets: the serving stack's probes, scrapes and requests reach a process
at the pod's address (local to this machine, cluster.py `PodNetwork`) and port (`servers.py` starts one
per Running pod), and what it answers follows the load it is given. Sources, all in PyPI's vllm-0.23.0 sdist:

- `GET /health`: 200 with an empty body (vllm/entrypoints/serve/instrumentator/health.py).
- `GET /metrics`: prometheus_client's text exposition (serve/instrumentator/metrics.py mounts its
  ASGI app) of the series `PrometheusStatLogger` (vllm/v1/metrics/loggers.py) names, each with its
  labels `model_name` (the served model name) and `engine` ("0", one engine per server), with the
  help text and the histogram buckets given there: the gauges `vllm:num_requests_running`,
  `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc` (0 to 1); the counters
  `vllm:prompt_tokens`, `vllm:generation_tokens` and `vllm:request_success` (with
  `finished_reason`, one series per `FinishReason`, vllm/v1/engine/__init__.py), exposed with
  `_total` and `_created` as prometheus_client exposes a counter; the histograms
  `vllm:time_to_first_token_seconds` and `vllm:e2e_request_latency_seconds`.
- `POST /v1/completions`, `POST /v1/chat/completions`: the non-streaming response bodies
  (`CompletionResponse`, `ChatCompletionResponse` in entrypoints/openai/{completion,
  chat_completion}/protocol.py): id, object, created, model, choices, usage. `max_tokens` defaults
  to 16 (the completion request's default there). A model other than the served one is a 404.

What is simulated, not read from vLLM: a token is a whitespace-separated word of the prompt; a
request runs for `max_tokens` x `--seconds-per-token` once admitted (its first token after one
token's time); at most `--max-num-seqs` requests run at once (taken from the pod's engine args
when they set it, else `DEFAULT_MAX_NUM_SEQS`, far below vLLM's own defaults of 128 to 1024 per
GPU, `EngineArgs._set_default_max_num_seqs_and_batched_tokens_args` in engine/arg_utils.py, so a
test saturates it with a few requests) and the rest wait in arrival order; the KV cache holds the
prompt and the tokens generated so far of every running request, against `--kv-cache-tokens`.
No streaming, no tokenizer, no text worth reading.
"""

from __future__ import annotations

import argparse
import json
import shlex
import threading
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from infra.formats import flag_value
from infra.serving import vllm_args

# A small bound of running requests, so that a few concurrent requests make some wait (see above).
DEFAULT_MAX_NUM_SEQS = 4
# The simulated KV cache's size in tokens (a fixed capacity; usage is what running requests hold).
DEFAULT_KV_CACHE_TOKENS = 4096
DEFAULT_SECONDS_PER_TOKEN = 0.02
# The completion request's default `max_tokens` (entrypoints/openai/completion/protocol.py).
DEFAULT_MAX_TOKENS = 16
# prometheus_client's text exposition format, as its ASGI app serves it.
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# `FINISH_REASON_STRINGS` (vllm/v1/engine/__init__.py): each has a `vllm:request_success` series.
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")
# vllm/v1/metrics/loggers.py at 0.23.0: the buckets of the time-to-first-token histogram and of
# `request_latency_buckets`, which the e2e latency histogram uses.
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
TTFT_BUCKETS += (20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0)
E2E_BUCKETS += (240.0, 480.0, 960.0, 1920.0, 7680.0)
# Help texts as loggers.py gives them.
HELP = {
    "vllm:num_requests_running": "Number of requests in model execution batches.",
    "vllm:num_requests_waiting": "Number of requests waiting to be processed.",
    "vllm:kv_cache_usage_perc": "KV-cache usage. 1 means 100 percent usage.",
    "vllm:prompt_tokens": "Number of prefill tokens processed.",
    "vllm:generation_tokens": "Number of generation tokens processed.",
    "vllm:request_success": "Count of successfully processed requests.",
    "vllm:time_to_first_token_seconds": "Histogram of time to first token in seconds.",
    "vllm:e2e_request_latency_seconds": "Histogram of e2e request latency in seconds.",
}


@dataclass
class Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(init=False)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * len(self.buckets)

    def observe(self, value: float) -> None:
        self.total += value
        self.count += 1
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1


@dataclass
class Request:
    prompt_tokens: int
    max_tokens: int
    arrived: float
    admitted: float | None = None

    def held_tokens(self, now: float, seconds_per_token: float) -> int:
        """What the request holds in the KV cache: its prompt and the tokens generated so far."""
        if self.admitted is None:
            return 0
        generated = min(self.max_tokens, int((now - self.admitted) / seconds_per_token)) if seconds_per_token else 0
        return self.prompt_tokens + generated


class Engine:
    """The scheduler and the counters: a bounded set of running requests and a waiting queue."""

    def __init__(self, model: str, max_num_seqs: int, kv_cache_tokens: int, seconds_per_token: float) -> None:
        self.model = model
        self.max_num_seqs = max_num_seqs
        self.kv_cache_tokens = kv_cache_tokens
        self.seconds_per_token = seconds_per_token
        self.started = time.time()
        self.lock = threading.Condition()
        self.running: list[Request] = []
        self.waiting: deque[Request] = deque()
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success = dict.fromkeys(FINISH_REASONS, 0)
        self.ttft = Histogram(TTFT_BUCKETS)
        self.e2e = Histogram(E2E_BUCKETS)

    def serve(self, prompt_tokens: int, max_tokens: int) -> Request:
        """Queue a request, run it once admitted (in arrival order), and count it when done."""
        request = Request(prompt_tokens, max_tokens, time.monotonic())
        with self.lock:
            self.waiting.append(request)
            while not (self.waiting[0] is request and len(self.running) < self.max_num_seqs):
                self.lock.wait()
            self.waiting.popleft()
            request.admitted = time.monotonic()
            self.running.append(request)
            self.lock.notify_all()  # the next in line may fit too
        first = self.seconds_per_token if max_tokens else 0.0
        time.sleep(max_tokens * self.seconds_per_token)
        with self.lock:
            self.running.remove(request)
            now = time.monotonic()
            self.ttft.observe(request.admitted - request.arrived + first)
            self.e2e.observe(now - request.arrived)
            self.prompt_tokens += prompt_tokens
            self.generation_tokens += max_tokens
            self.success["length"] += 1  # every request runs to its max_tokens
            self.lock.notify_all()
        return request

    def kv_cache_usage(self) -> float:
        now = time.monotonic()
        held = sum(r.held_tokens(now, self.seconds_per_token) for r in self.running)
        return min(1.0, held / self.kv_cache_tokens)

    def exposition(self) -> str:
        """The series in prometheus_client's text format: labels in `labelnames` order, a counter's
        family named with `_total`, and each `_created` sample in a gauge family of its own after
        its metric's (prometheus_client/exposition.py, `generate_latest`)."""
        labels = f'model_name="{self.model}",engine="0"'
        lines: list[str] = []

        def family(name: str, kind: str, help_of: str, samples: list[str]) -> None:
            lines.extend([f"# HELP {name} {HELP[help_of]}", f"# TYPE {name} {kind}", *samples])

        def created(name: str, label_sets: list[str]) -> None:
            family(f"{name}_created", "gauge", name, [f"{name}_created{{{ls}}} {self.started!r}" for ls in label_sets])

        with self.lock:
            gauges = {
                "vllm:num_requests_running": float(len(self.running)),
                "vllm:num_requests_waiting": float(len(self.waiting)),
                "vllm:kv_cache_usage_perc": self.kv_cache_usage(),
            }
            for name, value in gauges.items():
                family(name, "gauge", name, [f"{name}{{{labels}}} {value!r}"])
            counters = {
                "vllm:prompt_tokens": {labels: self.prompt_tokens},
                "vllm:generation_tokens": {labels: self.generation_tokens},
                "vllm:request_success": {f'{labels},finished_reason="{r}"': n for r, n in self.success.items()},
            }
            for name, values in counters.items():
                family(
                    f"{name}_total", "counter", name, [f"{name}_total{{{ls}}} {float(n)!r}" for ls, n in values.items()]
                )
                created(name, list(values))
            histograms = {"vllm:time_to_first_token_seconds": self.ttft, "vllm:e2e_request_latency_seconds": self.e2e}
            for name, hist in histograms.items():
                samples = [
                    f'{name}_bucket{{{labels},le="{bound!r}"}} {float(count)!r}'
                    for bound, count in zip(hist.buckets, hist.counts, strict=True)
                ]
                samples.append(f'{name}_bucket{{{labels},le="+Inf"}} {float(hist.count)!r}')
                samples.append(f"{name}_count{{{labels}}} {float(hist.count)!r}")
                samples.append(f"{name}_sum{{{labels}}} {hist.total!r}")
                family(name, "histogram", name, samples)
                created(name, [labels])
        return "\n".join(lines) + "\n"


def words(text: Any) -> int:
    return len(str(text).split())


def prompt_tokens(path: str, body: dict[str, Any]) -> int:
    if path == "/v1/chat/completions":
        return sum(words(m.get("content") or "") for m in body.get("messages") or [])
    prompt = body.get("prompt") or ""
    return sum(words(p) for p in prompt) if isinstance(prompt, list) else words(prompt)


def response(path: str, model: str, prompt: int, generated: int) -> dict[str, Any]:
    """The body of a non-streaming completion or chat completion of `generated` tokens."""
    text = " ".join(["token"] * generated)
    usage = {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": prompt + generated}
    base = {"created": int(time.time()), "model": model, "usage": usage}
    if path == "/v1/chat/completions":
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": "length"}
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "choices": [choice], **base}
    choice = {"index": 0, "text": text, "finish_reason": "length"}
    return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "choices": [choice], **base}


def handler(engine: Engine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def reply(self, status: int, body: bytes = b"", content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self.reply(200)
            elif self.path == "/metrics":
                self.reply(200, engine.exposition().encode(), METRICS_CONTENT_TYPE)
            else:
                self.reply(404, b'{"detail":"Not Found"}')

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                self.reply(404, b'{"detail":"Not Found"}')
                return
            model = body.get("model") or engine.model
            if model != engine.model:
                error = {"message": f"The model `{model}` does not exist.", "type": "NotFoundError", "code": 404}
                self.reply(404, json.dumps({"error": error}).encode())
                return
            prompt = prompt_tokens(self.path, body)
            max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or DEFAULT_MAX_TOKENS)
            engine.serve(prompt, max_tokens)
            self.reply(200, json.dumps(response(self.path, model, prompt, max_tokens)).encode())

    return Handler


def served_model(args: Sequence[str]) -> str:
    """The model name the simulated engine serves: vLLM's reading of the args
    (`infra.serving.vllm_args.served_model`), "model" where they name none."""
    return vllm_args.served_model(args) or "model"


def server(host: str, port: int, engine: Engine) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer((host, port), handler(engine))
    httpd.daemon_threads = True
    return httpd


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds-per-token", type=float, default=DEFAULT_SECONDS_PER_TOKEN)
    parser.add_argument("--kv-cache-tokens", type=int, default=DEFAULT_KV_CACHE_TOKENS)
    parser.add_argument("--engine-args", default="", help="the pod's engine args, shell-quoted")
    opts = parser.parse_args(argv)
    args = shlex.split(opts.engine_args)
    seqs = (flag_value(args, "--max-num-seqs") or (0, ""))[1]
    engine = Engine(served_model(args), int(seqs or DEFAULT_MAX_NUM_SEQS), opts.kv_cache_tokens, opts.seconds_per_token)
    with server(opts.host, opts.port, engine) as httpd:
        httpd.serve_forever()


if __name__ == "__main__":
    main()
