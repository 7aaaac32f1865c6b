"""The model servers of a local cluster: one simulator process (simulator.py) per model pod that the
cluster reports Running with an address, stopped when its pod goes.

The kubelet would start the engine's container when the pod is bound and stop it when the pod is
deleted; KWOK only writes the pod's status. `ModelServers` polls the API server for the pods of
model deployments (those with `infra.vocabulary.DEPLOYMENT_LABEL`) and keeps one process per pod
whose engine container names the engine's port (`components.model_deployment.ENGINE_PORT_NAME`;
a headless worker of a multi-node group names none and serves no HTTP), listening on the pod's
address (local to this machine: `cluster.PodNetwork`) and that port, with the container's args. A pod being deleted has gone: its engine would
have had SIGTERM. It is not a kubelet: no probe, no restart, no container other than the engine.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.model_deployment import ENGINE_PORT_NAME
from infra.vocabulary import DEPLOYMENT_LABEL
from tests.engine.cluster import LocalCluster
from tests.engine.kube import ApiError

ROOT = Path(__file__).resolve().parents[2]
# How often the pods are read: a new pod is served, and a gone one stopped, within about this.
POLL_SECONDS = 0.5


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


def served(pod: dict[str, Any]) -> Served | None:
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


class ModelServers:
    """A poller that keeps one simulator per served pod (keyed by the pod's uid); `stop` ends them all."""

    def __init__(self, cluster: LocalCluster, folder: Path, seconds_per_token: float = 0.02) -> None:
        self.cluster = cluster
        self.folder = folder
        self.seconds_per_token = seconds_per_token
        self.procs: dict[str, tuple[Served, subprocess.Popen[bytes]]] = {}
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="model-servers", daemon=True)

    def start(self) -> ModelServers:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.thread.start()
        return self

    def serving(self) -> dict[str, Served]:
        """The pods served now: pod (namespace/name) -> where its engine listens."""
        with self.lock:
            return {s.pod: s for s, _ in self.procs.values()}

    def _loop(self) -> None:
        while not self.done.wait(POLL_SECONDS):
            try:
                self.reconcile(self.cluster.list("v1", "Pod"))
            except (ApiError, OSError):
                continue  # the API server restarting or stopping: read again

    def reconcile(self, pods: list[dict[str, Any]]) -> None:
        """Stop the servers of pods gone (first: a new pod may be given a gone one's address), then
        start one for each served pod that has none."""
        want = {p["metadata"]["uid"]: s for p in pods if (s := served(p))}
        with self.lock:
            # A server that exited (its address not yet free, say) is started again below.
            ended = [u for u, (s, proc) in self.procs.items() if want.get(u) != s or proc.poll() is not None]
            for uid in ended:
                self._end(self.procs.pop(uid)[1])
            for uid, s in want.items():
                if uid not in self.procs and not self.done.is_set():
                    self.procs[uid] = (s, self._spawn(s))

    def _spawn(self, s: Served) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "tests.engine.simulator", "--host", s.address, "--port", str(s.port)]
        command += ["--seconds-per-token", str(self.seconds_per_token), "--engine-args", shlex.join(s.args)]
        with open(self.folder / f"{s.pod.replace('/', '_')}.log", "ab") as log:
            return subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    @staticmethod
    def _end(proc: subprocess.Popen[bytes]) -> None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def stop(self) -> None:
        self.done.set()
        if self.thread.is_alive():
            self.thread.join()
        with self.lock:
            for _, proc in self.procs.values():
                self._end(proc)
            self.procs.clear()
