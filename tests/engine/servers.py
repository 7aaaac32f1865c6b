"""The model servers of a local cluster: one simulator process (simulator.py) per model pod that the
cluster reports Running with an address, stopped when its pod goes.

The kubelet would start the engine's container when the pod is bound and stop it when the pod is
deleted; KWOK only writes the pod's status. `model_servers` is the program `podproc.PodProcesses`
runs for each pod of a model deployment (those with `infra.vocabulary.DEPLOYMENT_LABEL`) whose
engine container names the engine's port (`components.model_deployment.ENGINE_PORT_NAME`; a
headless worker of a multi-node group names none and serves no HTTP): a simulator listening on
the pod's address (local to this machine: `cluster.PodNetwork`) and that port, with the
container's args. A pod being deleted has gone: its engine would have had SIGTERM.
"""

from __future__ import annotations

import json
import shlex
import sys
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.model_deployment import ENGINE_PORT_NAME
from infra.vocabulary import DEPLOYMENT_LABEL
from tests.engine.podproc import Pod, PodProgram
from tests.metrics_text import Family, parse

# The program's name, as `PodProcesses.serving` takes it.
MODEL_SERVER = "model-server"


@dataclass(frozen=True)
class Served:
    """Where one pod's engine listens, and with which args."""

    pod: str  # namespace/name
    ip: str  # the pod's
    port: int
    args: tuple[str, ...]

    @property
    def address(self) -> str:
        """Where its server listens: the pod's address."""
        return self.ip

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}"


def served(pod: Pod) -> Served | None:
    """What a model pod's engine serves, or None while it is not Running with an address, is
    going, or its engine names no port."""
    meta, status = pod["metadata"], pod.get("status") or {}
    if DEPLOYMENT_LABEL not in (meta.get("labels") or {}) or meta.get("deletionTimestamp"):
        return None
    if status.get("phase") != "Running" or not status.get("podIP"):
        return None
    for container in pod["spec"]["containers"]:
        for port in container.get("ports") or []:
            if port.get("name") == ENGINE_PORT_NAME:
                name = f"{meta['namespace']}/{meta['name']}"
                return Served(name, status["podIP"], int(port["containerPort"]), tuple(container.get("args") or ()))
    return None


def model_servers(seconds_per_token: float = 0.02) -> PodProgram:
    """A simulator (simulator.py) for each served pod, at its address and engine port, with its
    container's args; `podproc.PodProcesses` starts it with its pod and stops it when the pod goes
    (first: a new pod may be given a gone one's address)."""

    def argv(pod: Pod, folder: Path, api: Any) -> list[str]:
        s = served(pod)
        assert s is not None, "claimed only when served"
        command = [sys.executable, "-m", "tests.engine.simulator", "--host", s.address, "--port", str(s.port)]
        return [*command, "--seconds-per-token", str(seconds_per_token), "--engine-args", shlex.join(s.args)]

    return PodProgram(MODEL_SERVER, lambda pod: served(pod) is not None, argv, in_pod=False)


# --------------------------------------------------------------------------------------------
# A client of a served engine, as the tests load and read it

# The queue gauges, as vLLM names them (simulator.py).
QUEUE = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def completion(
    url: str, model: str, max_tokens: int, timeout: float = 120, prompt: str = "Say something long"
) -> dict[str, Any]:
    """One OpenAI completion from the engine at `url`, `max_tokens` long."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens}).encode()
    request = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def metrics(url: str) -> dict[str, Family]:
    """The engine's `/metrics`, read strictly."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
        return parse(response.read().decode())


def gauges(url: str, names: tuple[str, ...] = QUEUE) -> dict[str, float]:
    """The engine's gauges `names`: by default its requests running and waiting."""
    families = metrics(url)
    return {name: families[name].samples[0].value for name in names}


@dataclass
class Load:
    """`requests` completions kept in flight at the engine at `url` until `stop`: each of as many
    threads sends its next request as soon as its last is answered. A request of `max_tokens` takes
    `max_tokens` x the simulator's seconds a token, and waits behind the running ones, so the
    engine is idle that long after `stop`; a prompt of `prompt_words` words holds that many tokens
    of the KV cache while it runs."""

    url: str
    model: str
    requests: int
    max_tokens: int = 200
    prompt_words: int = 3
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        prompt = " ".join(["word"] * self.prompt_words)
        for _ in range(self.requests):
            thread = threading.Thread(target=self._send, args=(prompt,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _send(self, prompt: str) -> None:
        while not self._stop.is_set():
            try:
                completion(self.url, self.model, self.max_tokens, timeout=300, prompt=prompt)
            except OSError:
                self._stop.wait(0.5)  # the engine stopping or not yet there: try again

    def stop(self) -> None:
        """No request is sent after this; those in flight finish on their own."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()
