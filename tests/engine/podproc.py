"""Real programs in place of the containers of chosen pods, run where a kubelet would run them.

KWOK marks pods Running and runs nothing in them. For the pods whose behaviour a test claims (the
Prometheus operator of the kube-prometheus-stack release and the Prometheus it creates, KEDA's
operator and metrics server, a deployment's endpoint picker, the model servers of servers.py), a
`PodProgram` names the program, built from the Go module proxy at the version the product pins
(`engine/build.sh`), and `PodProcesses` runs it while its pod is Running, and stops it when the pod
goes. Each runs as a pod's container sees its world:

- it listens on the pod's IP (`cluster.PodNetwork` routes the pod network to this machine's
  loopback device, so a process here can serve any pod address);
- in a mount namespace of its own (`unshare --mount`), where the service account's token and CA sit
  at /var/run/secrets/kubernetes.io/serviceaccount, as the kubelet mounts them, and
  `KUBERNETES_SERVICE_HOST`/`_PORT` name the API server, so client-go's in-cluster configuration
  (`rest.InClusterConfig`) reaches it;
- with an /etc/hosts that resolves each Service's cluster name (`<svc>.<ns>.svc[.cluster.local]`)
  to a Ready endpoint's pod IP: what cluster DNS and the Service proxy give a pod, kept current
  while it runs (so a Service here answers only on its target port, which every Service these
  programs call keeps equal to its port);
- with its container's environment and Secret and ConfigMap volumes (`container_env`,
  `secret_volumes`, `configmap_volumes`) where the program stands for a container of the pod;
- with the pod's Ready condition following its container's readiness probe where the program says
  so (`PodProgram.readiness`): KWOK marks a pod Ready as soon as it runs, before any program here
  has started, where a kubelet holds it not Ready until the probe passes. The first poll that sees
  the pod Running starts the program and marks the pod not Ready; until then (one poll, half a
  second) KWOK's Ready stands.

What stands in for a kubelet's container runtime is this module; what runs in it is the real program.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import grpc

from tests.engine.kube import ApiError, ApiServer, free_port
from tests.tools import tool

# The kubelet's mount point of a pod's service account token, CA and namespace
# (k8s.io/kubernetes pkg/kubelet ... `/var/run/secrets/kubernetes.io/serviceaccount`; client-go
# rest.InClusterConfig reads `token` and `ca.crt` there).
SERVICE_ACCOUNT_DIR = "/run/secrets/kubernetes.io/serviceaccount"  # /var/run is /run here
CLUSTER_DOMAIN = "cluster.local"

Pod = Mapping[str, Any]
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class PodProgram:
    """A program that runs for every Running pod `claims` accepts: `argv(pod, folder)` starts it,
    `refresh(pod, folder, api)` (optional) runs every poll while it runs (a config to reload).

    `in_pod`: in the pod's world (the mount namespace, service account and cluster names above);
    off for a program that needs none of it (the model servers), which then runs as a plain child
    of the tests, in the repository's root.
    """

    name: str
    claims: Callable[[Pod], bool]
    argv: Callable[[Pod, Path, ApiServer], list[str]]
    refresh: Callable[[Pod, Path, ApiServer], None] | None = None
    in_pod: bool = True
    # The pod's container the program stands for, whose environment it gets (`container_env`).
    container: str | None = None
    # The pod is Ready only while that container's readiness probe passes (`probe`), checked every
    # poll, as the kubelet's prober decides; off, KWOK's Ready stands from the pod's start.
    readiness: bool = False


@dataclass
class _Running:
    pod_uid: str
    pod_ip: str
    proc: subprocess.Popen[bytes]
    folder: Path
    log: Any


def pod_ip(pod: Pod) -> str:
    return str((pod.get("status") or {}).get("podIP") or "")


def is_running(pod: Pod) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and bool(pod_ip(pod)) and not pod["metadata"].get("deletionTimestamp")


def service_hosts(api: ApiServer) -> dict[str, str]:
    """Each Service's cluster names -> the pod IP of one of its Ready endpoints."""
    hosts: dict[str, str] = {}
    for piece in api.list_all("discovery.k8s.io/v1", "EndpointSlice"):
        service = (piece["metadata"].get("labels") or {}).get("kubernetes.io/service-name")
        namespace = piece["metadata"]["namespace"]
        ready = [
            e["addresses"][0]
            for e in piece.get("endpoints") or []
            if e.get("addresses") and (e.get("conditions") or {}).get("ready", True)
        ]
        if service and ready:
            for name in (f"{service}.{namespace}.svc.{CLUSTER_DOMAIN}", f"{service}.{namespace}.svc"):
                hosts[name] = ready[0]
    return hosts


def _write_in_place(path: Path, text: str) -> None:
    """Rewrite a bind-mounted file through the same inode, so the process's view changes too."""
    with open(path, "a+") as f:
        f.seek(0)
        if f.read() == text:
            return
        f.seek(0)
        f.truncate()
        f.write(text)


@dataclass
class PodProcesses:
    """Runs `programs` for the pods they claim, polling the API server; `stop` ends every one."""

    api: ApiServer
    folder: Path
    programs: Sequence[PodProgram]
    interval: float = 0.5
    running: dict[tuple[str, str, str], _Running] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> PodProcesses:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._loop, name="pod-processes", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for key in list(self.running):
            # Killed: nothing a program here keeps outlives the test, and a controller's graceful
            # shutdown (a manager's, up to its 30 s timeout) would be paid at the end of every test.
            self._end(key, signal.SIGKILL)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync()
            except (OSError, ApiError, ValueError):
                continue  # a poll that failed (the API server starting or stopping) is retried

    def sync(self) -> None:
        pods = self.api.list_all("v1", "Pod")
        wanted: dict[tuple[str, str, str], tuple[PodProgram, Pod]] = {}
        for pod in pods:
            if not is_running(pod):
                continue
            for program in self.programs:
                if program.claims(pod):
                    meta = pod["metadata"]
                    wanted[(program.name, meta["namespace"], meta["name"])] = (program, pod)
        for key, run in list(self.running.items()):
            got = wanted.get(key)
            if got is None or got[1]["metadata"]["uid"] != run.pod_uid or pod_ip(got[1]) != run.pod_ip:
                self._end(key)
            elif run.proc.poll() is not None:
                self._end(key)  # exited: started again below, as a kubelet restarts a container
        # The cluster's names, read only while a program that runs in a pod's world wants them.
        hosts = self._hosts_text() if any(program.in_pod for program, _ in wanted.values()) else ""
        for key, (program, pod) in wanted.items():
            if key not in self.running:
                self._begin(key, program, pod)
            run = self.running[key]
            if program.in_pod:
                _write_in_place(run.folder / "hosts", hosts)
            if program.refresh is not None:
                program.refresh(pod, run.folder, self.api)
            if program.readiness and program.container is not None:
                self._report_ready(pod, program.container, run)

    def _report_ready(self, pod: Pod, container: str, run: _Running) -> None:
        """The pod's Ready and ContainersReady conditions, where they differ from what the probe says."""
        ready = run.proc.poll() is None and probe(pod, container)
        said = {c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or []}
        status = "True" if ready else "False"
        if said.get("Ready") == status and said.get("ContainersReady") == status:
            return
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conditions = [
            {"type": kind, "status": status, "lastTransitionTime": now} for kind in ("Ready", "ContainersReady")
        ]
        with contextlib.suppress(ApiError):  # the pod going: nothing to report
            self.api.patch_status({"apiVersion": "v1", "kind": "Pod", **pod}, {"conditions": conditions})

    def serving(self, program: str) -> set[str]:
        """The pods (`namespace/name`) `program` runs for now."""
        return {f"{namespace}/{name}" for (p, namespace, name) in list(self.running) if p == program}

    def _hosts_text(self) -> str:
        lines = ["127.0.0.1 localhost"] + [f"{ip} {name}" for name, ip in sorted(service_hosts(self.api).items())]
        return "\n".join(lines) + "\n"

    def _begin(self, key: tuple[str, str, str], program: PodProgram, pod: Pod) -> None:
        folder = self.folder / "-".join(key)
        folder.mkdir(parents=True, exist_ok=True)
        argv = program.argv(pod, folder, self.api)
        if program.in_pod:
            command, env, cwd = self._in_pod(argv, pod, folder)
            if program.container is not None:
                env.update(container_env(pod, program.container))
        else:
            command, env, cwd = argv, None, ROOT
        log = open(folder / f"{program.name}.log", "ab")  # noqa: SIM115 (the process writes to it until it stops)
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
        self.running[key] = _Running(pod["metadata"]["uid"], pod_ip(pod), proc, folder, log)

    def _in_pod(self, argv: list[str], pod: Pod, folder: Path) -> tuple[list[str], dict[str, str], Path]:
        """`argv` in the pod's world: its service account and the cluster's names, mounted in a
        private mount namespace (a tmpfs over /run for the service account's mount point, the hosts
        file over /etc/hosts; nothing outside the namespace sees either), and the environment a
        container in the pod gets."""
        account = folder / "serviceaccount"
        account.mkdir(exist_ok=True)
        (account / "token").write_text(self.api.token)
        (account / "ca.crt").write_bytes(Path(self.api.ca_file).read_bytes())
        (account / "namespace").write_text(pod["metadata"]["namespace"])
        _write_in_place(folder / "hosts", self._hosts_text())
        script = " && ".join(
            [
                "mount --make-rprivate /",
                "mount -t tmpfs tmpfs /run",
                f"mkdir -p {SERVICE_ACCOUNT_DIR}",
                f"mount --bind {shlex.quote(str(account))} {SERVICE_ACCOUNT_DIR}",
                f"mount --bind {shlex.quote(str(folder / 'hosts'))} /etc/hosts",
                'exec "$@"',
            ]
        )
        server = urlparse(self.api.url)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(folder),
            "KUBERNETES_SERVICE_HOST": server.hostname or "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(server.port),
            "POD_NAME": pod["metadata"]["name"],
            "POD_NAMESPACE": pod["metadata"]["namespace"],
            "POD_IP": pod_ip(pod),
        }
        # --kill-child: the program ends with `unshare`, which is what `_end` stops.
        return ["unshare", "--mount", "--fork", "--kill-child", "sh", "-c", script, "sh", *argv], env, folder

    def _end(self, key: tuple[str, str, str], sig: signal.Signals = signal.SIGTERM) -> None:
        """Stop a program: by default as the kubelet stops a container whose pod goes (SIGTERM)."""
        run = self.running.pop(key)
        if run.proc.poll() is None:
            # To its whole process group (its own session): an in-pod program's `unshare --fork`
            # outlives a SIGTERM of its own while it waits for the program (util-linux 2.38.1, tried
            # here), so the signal must reach the program itself; what still runs after the grace
            # period is killed.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.proc.pid, sig)
            try:
                run.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait(timeout=10)
        run.log.close()


# --------------------------------------------------------------------------------------------
# A pod's container as the kubelet would start it: its arguments, environment and secret volumes

# The pod fields a `fieldRef` of a container's environment may name, as the kubelet resolves them
# (k8s.io/kubernetes pkg/kubelet/kubelet_pods.go, `podFieldSelectorRuntimeValue`).
FIELD_REFS: Mapping[str, Callable[[Pod], str]] = {
    "metadata.name": lambda pod: str(pod["metadata"]["name"]),
    "metadata.namespace": lambda pod: str(pod["metadata"]["namespace"]),
    "status.podIP": pod_ip,
}


def container_of(pod: Pod, name: str) -> Mapping[str, Any]:
    for container in [*pod["spec"].get("containers", []), *pod["spec"].get("initContainers", [])]:
        if container["name"] == name:
            return dict(container)
    raise ValueError(f"pod {pod['metadata']['name']} has no container {name}")


def container_env(pod: Pod, name: str) -> dict[str, str]:
    """The container's environment: its values, and its references to the pod's own fields."""
    env: dict[str, str] = {}
    with contextlib.suppress(ValueError):
        for item in container_of(pod, name).get("env") or []:
            if "valueFrom" not in item:  # an empty value is stored as none (`omitempty`)
                env[item["name"]] = str(item.get("value", ""))
            elif (field := (item["valueFrom"].get("fieldRef") or {}).get("fieldPath")) in FIELD_REFS:
                env[item["name"]] = FIELD_REFS[field](pod)
    return env


def secret_volumes(pod: Pod, container: str, folder: Path, api: ApiServer) -> dict[str, Path]:
    """Each Secret volume the container mounts, written as the kubelet writes it (a file per key,
    kept current; an optional Secret not there yet is an empty folder) under `folder`: mount path ->
    the folder standing for it. Files are replaced whole, so a reader never sees half of one."""
    return _volumes(pod, container, folder, api, "secret")


def configmap_volumes(pod: Pod, container: str, folder: Path, api: ApiServer) -> dict[str, Path]:
    """Each ConfigMap volume the container mounts, as `secret_volumes` writes Secret volumes: a file
    per key of its `data` and `binaryData`."""
    return _volumes(pod, container, folder, api, "configMap")


def _volumes(pod: Pod, container: str, folder: Path, api: ApiServer, kind: str) -> dict[str, Path]:
    # A volume's source names its object by `secretName` (a Secret) or `name` (a ConfigMap).
    name_field, object_kind = {"secret": ("secretName", "Secret"), "configMap": ("name", "ConfigMap")}[kind]
    volumes = {v["name"]: v[kind] for v in pod["spec"].get("volumes") or [] if kind in v}
    mounts: dict[str, Path] = {}
    for mount in container_of(pod, container).get("volumeMounts") or []:
        source = volumes.get(mount["name"])
        if source is None:
            continue
        where = folder / "volumes" / mount["name"]
        where.mkdir(parents=True, exist_ok=True)
        ref = {"metadata": {"name": source[name_field], "namespace": pod["metadata"]["namespace"]}}
        found = api.get({"apiVersion": "v1", "kind": object_kind, **ref}) or {}
        # A Secret's `data` and a ConfigMap's `binaryData` are base64; a ConfigMap's `data` is text.
        files = {key: base64.b64decode(value) for key, value in (found.get("binaryData") or {}).items()}
        for key, value in (found.get("data") or {}).items():
            files[key] = base64.b64decode(value) if kind == "secret" else value.encode()
        for key, data in files.items():
            target = where / key
            if not target.exists() or target.read_bytes() != data:
                temporary = where / f".{key}.new"
                temporary.write_bytes(data)
                temporary.replace(target)
        mounts[mount["mountPath"]] = where
    return mounts


def container_args(pod: Pod, container: str, mounts: Mapping[str, Path]) -> list[str]:
    """The container's arguments, with each path under a volume's mount path moved to the folder
    that stands for it here (the programs run in this machine's file system, where the mount path
    is not created): a flag's value after `=`, or an argument of its own (`--flag /path`)."""
    out = []
    for arg in container_of(pod, container).get("args") or []:
        for mount_path, where in mounts.items():
            arg = arg.replace(f"={mount_path}/", f"={where}/")
            if arg.endswith(f"={mount_path}"):
                arg = arg[: -len(mount_path)] + str(where)
            if arg == mount_path or arg.startswith(f"{mount_path}/"):
                arg = str(where) + arg[len(mount_path) :]
        out.append(arg)
    return out


# The status a gRPC health check answers when serving (grpc/grpc-proto grpc/health/v1/health.proto:
# `HealthCheckResponse.ServingStatus`, SERVING = 1), and the messages' wire form: field 1 of each,
# the request's `service` a string (tag 0x0a), the response's `status` an enum (tag 0x08).
GRPC_SERVING = 1


def health_status(address: str, service: str, timeout: float = 1) -> int:
    """What the gRPC health service at `address` ("ip:port") answers for `service`."""
    data = service.encode()
    assert len(data) < 128, "one varint byte of length"
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary("/grpc.health.v1.Health/Check")
        answer = call(b"\x0a" + bytes([len(data)]) + data if data else b"", timeout=timeout)
    return answer[1] if answer[:1] == b"\x08" else 0  # an empty message: UNKNOWN (0)


def probe(pod: Pod, container: str) -> bool:
    """Whether the container's readiness probe passes now, at the pod's IP (the kubelet's prober,
    pkg/kubelet/prober: gRPC health `Check`, HTTP GET answered 200 to 399, or a TCP connect); a
    container without one is ready while it runs."""
    spec = container_of(pod, container)
    check = spec.get("readinessProbe")
    if not check:
        return True
    named = {p["name"]: int(p["containerPort"]) for p in spec.get("ports") or [] if p.get("name")}
    timeout = float(check.get("timeoutSeconds", 1))

    def port(value: Any) -> int:
        return named[value] if isinstance(value, str) and not value.isdigit() else int(value)

    ip = pod_ip(pod)
    try:
        if "grpc" in check:
            address = f"{ip}:{port(check['grpc']['port'])}"
            return health_status(address, check["grpc"].get("service") or "", timeout) == GRPC_SERVING
        if "httpGet" in check:
            get = check["httpGet"]
            url = f"{get.get('scheme', 'HTTP').lower()}://{ip}:{port(get['port'])}{get.get('path', '/')}"
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return bool(200 <= response.status < 400)
        if "tcpSocket" in check:
            with socket.create_connection((ip, port(check["tcpSocket"]["port"])), timeout=timeout):
                return True
    except (OSError, grpc.RpcError):
        return False
    raise ValueError(f"pod {pod['metadata']['name']}: no prober here for {sorted(check)}")


# --------------------------------------------------------------------------------------------
# The monitoring chain of the kube-prometheus-stack release


# The operator pod of the stack's kube-prometheus-stack release: its stand-in's controller
# Deployment (`standins.controller`, labelled `app: <release>-controller`).
STACK_OPERATOR = {"app": "mp-kube-prometheus-stack-controller"}


def labelled(selector: Mapping[str, str]) -> Callable[[Pod], bool]:
    def claims(pod: Pod) -> bool:
        labels = pod["metadata"].get("labels") or {}
        return all(labels.get(k) == v for k, v in selector.items())

    return claims


def prometheus_operator(selector: Mapping[str, str]) -> PodProgram:
    """prometheus-operator v0.90.1, the operator kube-prometheus-stack 84.4.0 runs (its Chart.yaml
    appVersion), in-cluster, for the pods `selector` picks; no kubelet Service (`--kubelet-service`
    unset: it writes none)."""

    def argv(pod: Pod, folder: Path, api: ApiServer) -> list[str]:
        return [str(tool("prometheus-operator")), f"--web.listen-address={pod_ip(pod)}:8080", "--log-level=info"]

    return PodProgram("prometheus-operator", labelled(selector), argv)


# The operator's labels on the pods of a Prometheus it runs (prometheus-operator v0.90.1
# pkg/prometheus/server/statefulset.go: `app.kubernetes.io/name: prometheus`), and the Secret that
# holds the configuration it generates, gzipped (pkg/prometheus/server/operator.go,
# `configFilename = "prometheus.yaml.gz"`), which its config-reloader sidecar expands for Prometheus.
PROMETHEUS_POD_LABEL = ("app.kubernetes.io/name", "prometheus")
CONFIG_KEY = "prometheus.yaml.gz"
PROMETHEUS_PORT = 9090


def _config_secret(pod: Pod) -> str:
    for volume in pod["spec"].get("volumes") or []:
        if volume.get("name") == "config" and "secret" in volume:
            return str(volume["secret"]["secretName"])
    raise ValueError(f"pod {pod['metadata']['name']} has no config Secret volume")


def reloader_env(pod: Pod) -> dict[str, str]:
    """The environment of the pod's config-reloader container, whose `$(NAME)` references it
    substitutes in the configuration (`POD_NAME` from the pod's name, `SHARD`: prometheus-operator
    v0.90.1 pkg/operator/config_reloader.go, `PodNameEnvVar`, `ShardEnvVar`)."""
    return container_env(pod, "config-reloader")


def expand_config(pod: Pod, folder: Path, api: ApiServer) -> bool:
    """Write the operator's configuration for `pod` as its config-reloader does: gunzipped, with
    each `$(NAME)` of its environment replaced (prometheus-config-reloader's
    `--config-envsubst-file`). True if it changed."""
    secret = api.get(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": _config_secret(pod), "namespace": pod["metadata"]["namespace"]},
        }
    )
    data = ((secret or {}).get("data") or {}).get(CONFIG_KEY)
    if data is None:
        return False
    text = gzip.decompress(base64.b64decode(data)).decode()
    for name, value in reloader_env(pod).items():
        text = text.replace(f"$({name})", value)
    path = folder / "prometheus.yaml"
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def prometheus() -> PodProgram:
    """Prometheus v3.11.3, the image kube-prometheus-stack 84.4.0 pins (values.yaml
    `prometheus.prometheusSpec.image.tag`), on its pod's IP with the operator's configuration."""

    def claims(pod: Pod) -> bool:
        key, value = PROMETHEUS_POD_LABEL
        return (pod["metadata"].get("labels") or {}).get(key) == value

    def argv(pod: Pod, folder: Path, api: ApiServer) -> list[str]:
        deadline = time.monotonic() + 60
        while not expand_config(pod, folder, api) and not (folder / "prometheus.yaml").exists():
            if time.monotonic() > deadline:
                raise ValueError(f"the operator wrote no configuration for {pod['metadata']['name']}")
            time.sleep(0.5)
        return [
            str(tool("prometheus")),
            f"--config.file={folder / 'prometheus.yaml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address={pod_ip(pod)}:{PROMETHEUS_PORT}",
            # How the config-reloader asks for a reload (the operator sets it: statefulset.go).
            "--web.enable-lifecycle",
        ]

    def refresh(pod: Pod, folder: Path, api: ApiServer) -> None:
        if expand_config(pod, folder, api):
            with contextlib.suppress(OSError):
                reload = f"http://{pod_ip(pod)}:{PROMETHEUS_PORT}/-/reload"
                urllib.request.urlopen(urllib.request.Request(reload, method="POST"), timeout=5).close()

    return PodProgram("prometheus", claims, argv, refresh)


def monitoring(operator: Mapping[str, str] = STACK_OPERATOR) -> list[PodProgram]:
    """The chain for the operator pods `operator` picks (the stack's, or an owner's) and every
    Prometheus an operator runs."""
    return [prometheus_operator(operator), prometheus()]


# --------------------------------------------------------------------------------------------
# KEDA: the operator and its metrics API server

# The pods of the keda release's two servers (`standins.keda_servers`: the chart's `app` labels),
# each one container named as its pod.
KEDA_OPERATOR = "keda-operator"
KEDA_METRICS_SERVER = "keda-operator-metrics-apiserver"


def keda_program(container: str, tool_name: str, addresses: Callable[[Pod], list[str]]) -> PodProgram:
    """KEDA v2.20.2's `tool_name` for the pods of `container`, run with the container's own
    arguments and environment and the certificates Secret synced where its `--cert-dir` points.

    Every pod here shares this machine's network, so a server that binds every address (`:9666`,
    the chart's defaults) would hold its port for every pod: `addresses(pod)` adds the flags that
    bind each listener to the pod's own IP, after the chart's (the last of a repeated flag wins)."""

    def argv(pod: Pod, folder: Path, api: ApiServer) -> list[str]:
        mounts = secret_volumes(pod, container, folder, api)
        return [str(tool(tool_name)), *container_args(pod, container, mounts), *addresses(pod)]

    def refresh(pod: Pod, folder: Path, api: ApiServer) -> None:
        secret_volumes(pod, container, folder, api)  # the kubelet's periodic sync of the volume

    return PodProgram(tool_name, labelled({"app": container}), argv, refresh, container=container)


def keda() -> list[PodProgram]:
    """KEDA's operator (ScaledObjects into HPAs, and the gRPC metrics service) and its metrics API
    server (the external metrics API the HPA controller asks through the API server's aggregation
    layer), for the keda release's pods."""

    def operator(pod: Pod) -> list[str]:
        ip = pod_ip(pod)
        # cmd/operator/main.go @ v2.20.2: the probe server (`:8081`) and the gRPC metrics service
        # (`:9666`, the port the chart's Service and the metrics server's address name).
        return [f"--health-probe-bind-address={ip}:8081", f"--metrics-service-bind-address={ip}:9666"]

    def metrics_server(pod: Pod) -> list[str]:
        # The secure port on the pod's IP (`--bind-address`, k8s.io/apiserver SecureServingOptions),
        # and its own /metrics, which binds every address (`--port`, cmd/adapter/main.go
        # `RunMetricsServer`), on a port no other process here holds.
        return [f"--bind-address={pod_ip(pod)}", f"--port={free_port()}"]

    return [
        keda_program(KEDA_OPERATOR, "keda", operator),
        keda_program(KEDA_METRICS_SERVER, "keda-adapter", metrics_server),
    ]


def prometheus_address(api: ApiServer, namespace: str = "monitoring") -> str | None:
    """Where a Prometheus of `namespace` answers (its pod's address), or None while none does."""
    for pod in api.list_all("v1", "Pod", namespace):
        key, value = PROMETHEUS_POD_LABEL
        if (pod["metadata"].get("labels") or {}).get(key) == value and pod_ip(pod):
            address = f"{pod_ip(pod)}:{PROMETHEUS_PORT}"
            get_json(address, "/api/v1/status/buildinfo")
            return address
    return None


def query(address: str, promql: str) -> list[dict[str, Any]]:
    """A Prometheus instant query's result vector."""
    url = f"http://{address}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.loads(response.read())
    if body.get("status") != "success":
        raise ValueError(body)
    return list(body["data"]["result"])


def get_json(address: str, path: str) -> Any:
    with urllib.request.urlopen(f"http://{address}{path}", timeout=10) as response:
        return json.loads(response.read())["data"]


# --------------------------------------------------------------------------------------------
# A deployment's endpoint picker

# The label of a deployment's endpoint picker pods, whose value is the deployment's name.
PICKER_LABEL = "modelplane.ai/endpoint-picker"
PICKER_CONTAINER = "epp"
# The picker's listeners and their defaults (pkg/epp/server/options.go at v1.5.0: `DefaultGrpcPort`
# 9002, `GRPCHealthPort` 9003, `MetricsPort` 9090); each binds every address, with no flag for the
# address (`net.Listen("tcp", fmt.Sprintf(":%d", port))` in internal/runnable/grpc.go, and the
# metrics server's `BindAddress: fmt.Sprintf(":%d", ...)` in cmd/epp/runner/runner.go).
PICKER_PORTS = (("--grpc-port", 9002), ("--grpc-health-port", 9003), ("--metrics-port", 9090))
PORTMAP = Path(__file__).with_name("portmap.py")


def flag_value(args: Sequence[str], flag: str) -> str | None:
    """The last value `args` give `flag` (`--flag=value` or `--flag value`), as pflag reads them."""
    value = None
    for i, arg in enumerate(args):
        if arg.startswith(f"{flag}="):
            value = arg.split("=", 1)[1]
        elif arg == flag and i + 1 < len(args):
            value = args[i + 1]
    return value


def endpoint_picker() -> PodProgram:
    """The endpoint picker v1.5.0 (`epp` of sigs.k8s.io/gateway-api-inference-extension) for each
    picker pod, with its container's own arguments, environment and ConfigMap volume, in the pod's
    world (in-cluster configuration: the picker has no --kubeconfig flag and reads the service
    account's token as in a pod, controller-runtime's `GetConfig`).

    Its three listeners bind every address, which on this machine would hold the port for every pod:
    each is moved to a free loopback port (the last of a repeated flag wins, pflag), and portmap.py
    listens on the pod's own IP at the port the container's arguments (or the picker's default)
    give it and relays there. The pod is Ready while its readiness probe (gRPC health on 9003) says
    the picker is serving, which it says once its InferencePool is synced (cmd/epp/runner/health.go)."""

    def argv(pod: Pod, folder: Path, api: ApiServer) -> list[str]:
        mounts = configmap_volumes(pod, PICKER_CONTAINER, folder, api)
        args = container_args(pod, PICKER_CONTAINER, mounts)
        forwards, moved = [], []
        for flag, default in PICKER_PORTS:
            port, local = int(flag_value(args, flag) or default), free_port()
            forwards += ["--forward", f"{pod_ip(pod)}:{port}={local}"]
            moved.append(f"{flag}={local}")
        return [sys.executable, str(PORTMAP), *forwards, "--", str(tool("epp")), *args, *moved]

    def refresh(pod: Pod, folder: Path, api: ApiServer) -> None:
        configmap_volumes(pod, PICKER_CONTAINER, folder, api)  # the kubelet's periodic sync of the volume

    return PodProgram(
        "endpoint-picker",
        lambda pod: PICKER_LABEL in (pod["metadata"].get("labels") or {}),
        argv,
        refresh,
        container=PICKER_CONTAINER,
        readiness=True,
    )


# --------------------------------------------------------------------------------------------
# A Job's container: its own command, its claims mounted, its end reported (jobrun.py)


def job_container(selector: Mapping[str, str], container: str, tools: Path) -> PodProgram:
    """Container `container` of the Job pods `selector` picks, run by `jobrun.run_job` in the pod's
    world with the container's environment and the image's tools from `tools` (`jobrun.write_tools`).
    The cluster must hold these pods back from KWOK's completion (`LocalCluster.start`'s
    `held_jobs`): the program reports their end."""

    def claims(pod: Pod) -> bool:
        owners = pod["metadata"].get("ownerReferences") or []
        return labelled(selector)(pod) and any(o.get("kind") == "Job" for o in owners)

    def argv(pod: Pod, folder: Path, api: ApiServer) -> list[str]:
        (folder / "pod.json").write_text(json.dumps(pod))
        run = ["/usr/bin/env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "tests.engine.jobrun", "job"]
        return [*run, str(folder / "pod.json"), str(tools)]

    return PodProgram(f"job-{container}", claims, argv, container=container)
