"""A real Kubernetes API server for the engine tier: etcd and kube-apiserver v1.36.0 on loopback.

`engine/build.sh etcd` and `engine/build.sh kube-apiserver` build the two binaries from the Go
module proxy once per machine (`make engine`). `Etcd` starts one store per test session; each
`ApiServer` keeps its objects under its own etcd prefix, so every cluster of every test starts
with nothing but the serving stack's CRDs (`default_crds`, copied from a template: `seed_crds`). The kubernetes test provider (`tests/engine/provider.py`) sends every Kubernetes object
that is not a Helm release to the server standing for its cluster (`ServerPool`), as
pulumi-kubernetes sends it to the cluster's.

The flags below are those a trial ran a v1.36.0 server with: loopback only, a service-account key
pair made here, a static token, and no authorization (the tier checks objects, not permissions).
Everything the server stores is what a cluster's API server would: defaulting, validation (CEL
rules, immutable fields), admission (a namespace must exist), feature gates and emulated versions.
There is no controller manager and no scheduler: nothing runs, and a deleted namespace stays
terminating.
"""

from __future__ import annotations

import base64
import fcntl
import functools
import hashlib
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.tools import ROOT, tool

FIELD_MANAGER = "pulumi-kubernetes"  # what pulumi-kubernetes applies as (provider/pkg/await/await.go)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(pid: int, sig: signal.Signals = signal.SIGTERM) -> None:
    """Stop a process started here with `sig` (SIGKILL after 5 s), and wait for it when it is our child."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return
        except ChildProcessError:  # not our child: poll until it is gone
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.05)
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@dataclass
class Etcd:
    """One etcd on loopback with a fresh data directory."""

    url: str
    pid: int

    @classmethod
    def start(cls, folder: Path) -> Etcd:
        folder.mkdir(parents=True, exist_ok=True)
        client, peer = free_port(), free_port()
        url = f"http://127.0.0.1:{client}"
        log = open(folder / "etcd.log", "w")  # noqa: SIM115 (the process writes to it after we return)
        proc = subprocess.Popen(
            [
                str(tool("etcd")),
                "--name=default",
                f"--data-dir={folder / 'data'}",
                f"--listen-client-urls={url}",
                f"--advertise-client-urls={url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=default=http://127.0.0.1:{peer}",
                "--log-level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        etcd = cls(url, proc.pid)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"etcd exited with {proc.returncode}: {(folder / 'etcd.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if json.loads(r.read()).get("health") == "true":
                        return etcd
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        etcd.stop()
        raise RuntimeError("etcd did not become healthy in 30 s")

    def stop(self) -> None:
        stop(self.pid)


# Installing the default CRDs through the API (`ApiServer.install_crds`) took a server 4.2 to 4.6 s
# of CPU, more than the 1.8 s of its start to ready. So the first server of an etcd with a given set
# of flags installs them through its API and copies what it stored (the CRD objects, established)
# to a template under `CRD_TEMPLATES`; every later server of that etcd starts with the template
# copied under its own prefix and reads the CRDs from storage, as a restarted server does: 2.6 s in
# all to ready with every CRD served, against 6.2 s. (Servers started one at a time beside one etcd,
# two each way, CPU read from /proc.)
CRD_TEMPLATES = "/modelplane-test/crd-templates"
CRD_STORAGE = "/apiextensions.k8s.io/customresourcedefinitions/"


def _etcd_call(etcd_url: str, method: str, body: Mapping[str, str]) -> dict[str, Any]:
    """One call of etcd's v3 JSON gateway (keys and values base64, go.etcd.io/etcd/api/etcdserverpb)."""
    request = urllib.request.Request(f"{etcd_url}/v3/kv/{method}", data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def etcd_items(etcd_url: str, prefix: str) -> dict[str, str]:
    """Every key under `prefix`, without it, with its value as stored (base64)."""
    start = prefix.encode()
    end = start[:-1] + bytes([start[-1] + 1])
    found = _etcd_call(etcd_url, "range", {"key": _b64(start), "range_end": _b64(end)})
    return {base64.b64decode(kv["key"]).decode()[len(prefix) :]: kv["value"] for kv in found.get("kvs", [])}


def etcd_put(etcd_url: str, key: str, value: str) -> None:
    _etcd_call(etcd_url, "put", {"key": _b64(key.encode()), "value": value})


def crd_template(flags: tuple[str, ...]) -> str:
    """Where the CRDs of a server started with `flags` are kept: servers of other flags (an emulated
    version, a feature gate) store theirs apart."""
    return f"{CRD_TEMPLATES}/{hashlib.sha256(json.dumps(flags).encode()).hexdigest()[:16]}"


def seed_crds(etcd_url: str, template: str, prefix: str) -> bool:
    """Copy a complete template's CRDs under `prefix`; False when there is none yet."""
    if not etcd_items(etcd_url, f"{template}/complete"):
        return False
    for key, value in etcd_items(etcd_url, f"{template}/crds/").items():
        etcd_put(etcd_url, prefix + CRD_STORAGE + key, value)
    return True


def save_crds(etcd_url: str, template: str, prefix: str) -> None:
    """Keep the CRDs a server stored under `prefix` as the template, marked complete last (two
    servers saving at once write the same objects)."""
    for key, value in etcd_items(etcd_url, prefix + CRD_STORAGE).items():
        etcd_put(etcd_url, f"{template}/crds/{key}", value)
    etcd_put(etcd_url, f"{template}/complete", _b64(b"1"))


def api_root(api_version: str) -> str:
    """Where a group version is served: the core group under /api, every other under /apis."""
    return f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"


class ApiError(RuntimeError):
    """The API server's refusal, with its status code and message."""

    def __init__(self, code: int, status: Mapping[str, Any]) -> None:
        self.code = code
        self.status = dict(status)
        self.reason = str(status.get("reason", ""))
        super().__init__(f"{status.get('message', status)} ({code})")


# The client name the server proxies to extension API servers as, which they accept from the
# front proxy's authority (kubeadm's `front-proxy-client`, cmd/kubeadm/app/constants).
FRONT_PROXY_CLIENT = "front-proxy-client"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def aggregation_flags(folder: Path) -> tuple[str, ...]:
    """The flags of the aggregation layer: the ones kubeadm gives the server
    (cmd/kubeadm/app/phases/controlplane/manifests.go, `getAPIServerCommand`: a front-proxy
    authority, the client certificate the server proxies with, the request headers that carry the
    user), and routing to an APIService's endpoints rather than its Service's cluster IP
    (`--enable-aggregator-routing`, which kubeadm leaves off: its clusters run kube-proxy, which
    gives cluster IPs a route; none does here, while endpoints are pod addresses this machine serves).

    The server publishes the authority and header names in kube-system's
    `extension-apiserver-authentication` ConfigMap, where an extension server (KEDA's metrics
    server) reads whom to trust."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "ca.crt", folder / "ca.key"
    cert, key, request = folder / "client.crt", folder / "client.key", folder / "client.csr"
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-days", "1", "-subj", "/CN=front-proxy-ca", "-keyout", str(ca_key), "-out", str(ca))
    _openssl("req", *ec, "-subj", f"/CN={FRONT_PROXY_CLIENT}", "-keyout", str(key), "-out", str(request))
    _openssl(
        "x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
        "-days", "1", "-out", str(cert),
    )  # fmt: skip
    return (
        f"--requestheader-client-ca-file={ca}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-username-headers=X-Remote-User",
        f"--proxy-client-cert-file={cert}",
        f"--proxy-client-key-file={key}",
        "--enable-aggregator-routing=true",
    )


@dataclass
class ApiServer:
    """A kube-apiserver: where it listens, how to authenticate, and its process."""

    url: str
    token: str
    ca_file: str
    pid: int

    # ---------------------------------------------------------------------------------------
    # Start and stop

    @classmethod
    def start(
        cls,
        folder: Path,
        etcd_url: str,
        prefix: str,
        extra_flags: tuple[str, ...] = (),
        crds: bool = True,
        aggregation: bool = False,
    ) -> ApiServer:
        """Start a server whose objects live under `prefix` in etcd, wait until ready, and install
        `default_crds()` unless `crds` is off (a cluster whose charts install them); with
        `aggregation`, it proxies APIServices to their servers (`aggregation_flags`)."""
        folder.mkdir(parents=True, exist_ok=True)
        if aggregation:
            extra_flags = (*extra_flags, *aggregation_flags(folder / "front-proxy"))
        key = folder / "sa.key"
        if not key.exists():
            subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
            subprocess.run(
                ["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(folder / "sa.pub")],
                check=True,
                capture_output=True,
            )
        template = crd_template(extra_flags)
        seeded = crds and seed_crds(etcd_url, template, prefix)
        token = secrets.token_hex(16)
        (folder / "tokens.csv").write_text(f'{token},admin,admin,"system:masters"\n')
        port = free_port()
        log = open(folder / "kube-apiserver.log", "w")  # noqa: SIM115 (the process writes to it after we return)
        proc = subprocess.Popen(
            [
                str(tool("kube-apiserver")),
                f"--etcd-servers={etcd_url}",
                f"--etcd-prefix={prefix}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={folder / 'certs'}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={folder / 'sa.pub'}",
                f"--service-account-signing-key-file={key}",
                f"--token-auth-file={folder / 'tokens.csv'}",
                "--authorization-mode=AlwaysAllow",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--profiling=false",
                *extra_flags,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        server = cls(f"https://127.0.0.1:{port}", token, str(folder / "certs" / "apiserver.crt"), proc.pid)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = (folder / "kube-apiserver.log").read_text()[-3000:]
                raise RuntimeError(f"kube-apiserver exited with {proc.returncode}: {tail}")
            try:
                if server._request("GET", "/readyz", raw=True) == b"ok":
                    break
            except (OSError, ApiError, ssl.SSLError):
                pass
            time.sleep(0.2)
        else:
            server.stop()
            raise RuntimeError("kube-apiserver was not ready in 90 s")
        if seeded:
            server.wait_served(default_crds())
        elif crds:
            server.install_crds()
            save_crds(etcd_url, template, prefix)
        return server

    def stop(self) -> None:
        # Killed, not asked to stop: a test's server keeps nothing (its objects live under an etcd
        # prefix of its own that no later test reads), and its graceful shutdown, which drains
        # requests and watches first, took 1.2 s a server, paid at the end of every engine test.
        stop(self.pid, signal.SIGKILL)

    # ---------------------------------------------------------------------------------------
    # HTTP

    def _context(self) -> ssl.SSLContext:
        # The server's self-signed certificate (written to --cert-dir) is its own authority.
        context = ssl.create_default_context(cafile=self.ca_file)
        context.check_hostname = False  # issued to the host name and 127.0.0.1 only as IP SAN
        return context

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        raw: bool = False,
    ) -> Any:
        request = urllib.request.Request(self.url + path, data=body, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if body is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._context(), timeout=30) as response:
                data = response.read()
        except urllib.error.HTTPError as err:
            text = err.read()
            try:
                status = json.loads(text)
            except ValueError:
                status = {"message": text.decode(errors="replace")}
            raise ApiError(err.code, status) from None
        if raw:
            return data
        return json.loads(data) if data else {}

    # ---------------------------------------------------------------------------------------
    # Discovery and CRDs

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """The plural resource name of a kind and whether it is namespaced (the server's discovery)."""
        base = api_root(api_version)
        try:
            listing = self._request("GET", base)
        except ApiError as err:
            if err.code == 404:
                raise ApiError(404, {"message": f"no matches for kind {kind!r} in version {api_version!r}"}) from None
            raise
        for entry in listing.get("resources", []):
            if entry.get("kind") == kind and "/" not in entry["name"]:
                return str(entry["name"]), bool(entry["namespaced"])
        raise ApiError(404, {"message": f"no matches for kind {kind!r} in version {api_version!r}"})

    def path(self, obj: Mapping[str, Any]) -> str:
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        plural, namespaced = self.resource(api_version, kind)
        base = api_root(api_version)
        meta = obj.get("metadata") or {}
        name = urllib.parse.quote(str(meta["name"]))
        if namespaced:
            return f"{base}/namespaces/{meta.get('namespace') or 'default'}/{plural}/{name}"
        return f"{base}/{plural}/{name}"

    def install_crds(self, crds: list[dict[str, Any]] | None = None) -> None:
        """Install `crds` and wait until they are served; by default `default_crds()`."""
        crds = default_crds() if crds is None else crds
        for crd in crds:
            self.apply(crd)
        self.wait_served(crds)

    def wait_served(self, crds: list[dict[str, Any]]) -> None:
        deadline = time.monotonic() + 60
        # Each kind in its group version's listing: a group already served for another kind (a
        # PodMonitor before a Prometheus) lists a new one only once its CRD is established.
        pending = {
            (c["spec"]["group"] + "/" + v["name"], c["spec"]["names"]["plural"])
            for c in crds
            for v in c["spec"]["versions"]
            if v["served"]
        }
        while pending and time.monotonic() < deadline:
            for group_version, plural in sorted(pending):
                try:
                    listing = self._request("GET", f"/apis/{group_version}")
                except ApiError:
                    continue
                if any(r.get("name") == plural for r in listing.get("resources", [])):
                    pending.discard((group_version, plural))
            time.sleep(0.1)
        if pending:
            raise RuntimeError(f"CRDs not served in 60 s: {sorted(pending)}")

    # ---------------------------------------------------------------------------------------
    # Objects

    def apply(self, obj: Mapping[str, Any], dry_run: bool = False, force: bool = True) -> dict[str, Any]:
        """Server-side apply, as pulumi-kubernetes does (PATCH application/apply-patch+yaml)."""
        query = {"fieldManager": FIELD_MANAGER, "force": "true" if force else "false"}
        if dry_run:
            query["dryRun"] = "All"
        body = json.dumps(obj).encode()
        return dict(
            self._request(
                "PATCH", f"{self.path(obj)}?{urllib.parse.urlencode(query)}", body, "application/apply-patch+yaml"
            )
        )

    def get(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        try:
            return dict(self._request("GET", self.path(obj)))
        except ApiError as err:
            if err.code == 404:
                return None
            raise

    def list(self, kind: Mapping[str, Any], namespace: str) -> list[dict[str, Any]]:
        """Every object of `kind` (its apiVersion and kind) in a namespace."""
        api_version = str(kind["apiVersion"])
        plural, _ = self.resource(api_version, str(kind["kind"]))
        base = api_root(api_version)
        return list(self._request("GET", f"{base}/namespaces/{namespace}/{plural}")["items"])

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """POST an object to its collection, status included (a Node's status is taken on create)."""
        path = self.path(obj).rsplit("/", 1)[0]
        return dict(self._request("POST", path, json.dumps(obj).encode()))

    def list_all(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Every object of a kind, in one namespace or, for None, in all of them (or cluster-wide)."""
        plural, namespaced = self.resource(api_version, kind)
        base = api_root(api_version)
        where = f"/namespaces/{namespace}" if namespaced and namespace else ""
        return list(self._request("GET", f"{base}{where}/{plural}")["items"])

    def patch_status(self, obj: Mapping[str, Any], status: Mapping[str, Any]) -> None:
        """A strategic merge patch of the object's status (a pod's conditions merge by type), as
        the kubelet writes a pod's."""
        body = json.dumps({"status": status}).encode()
        self._request("PATCH", f"{self.path(obj)}/status", body, "application/strategic-merge-patch+json")

    def delete(self, obj: Mapping[str, Any]) -> None:
        try:
            self._request("DELETE", self.path(obj))
        except ApiError as err:
            if err.code != 404:
                raise

    def version(self) -> dict[str, Any]:
        return dict(self._request("GET", "/version"))


# The Gateway API kinds the program creates (components/features/routing.py); their CRDs are installed.
GATEWAY_API_KINDS = ("gatewayclasses", "gateways", "httproutes")


def module_dir(module: str, pins: str) -> Path:
    """The folder of Go module `module` at the version engine/<pins>/go.mod pins, from Go's module
    cache (`go mod download`, which fetches it if the build has not)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", module],
        cwd=ROOT / "engine" / pins,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return Path(json.loads(out)["Dir"])


@functools.cache
def gateway_api_crds() -> list[dict[str, Any]]:
    """The CRDs of `GATEWAY_API_KINDS` from the Gateway API release engine/crds pins, experimental
    channel, as Envoy Gateway's chart carries them."""
    folder = module_dir("sigs.k8s.io/gateway-api", "crds") / "config" / "crd" / "experimental"
    crds = []
    for kind in GATEWAY_API_KINDS:
        for doc in yaml.load_all(
            (folder / f"gateway.networking.k8s.io_{kind}.yaml").read_text(), Loader=yaml.CSafeLoader
        ):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                crds.append(doc)
    return crds


def module_crds(module: str, path: str) -> list[dict[str, Any]]:
    """The CRDs of one YAML file of a Go module at the version engine/crds pins."""
    docs = yaml.load_all((module_dir(module, "crds") / path).read_text(), Loader=yaml.CSafeLoader)
    return [doc for doc in docs if doc and doc.get("kind") == "CustomResourceDefinition"]


@functools.cache
def envoy_gateway_crds() -> list[dict[str, Any]]:
    """Envoy Gateway's own CRDs as its chart at the release engine/crds pins carries them
    (charts/gateway-helm/charts/crds/crds/generated): the route policies a picker-routed service
    creates, and the Backends, route filter and security policy of a fleet service."""
    return [
        crd
        for kind in (
            "envoyextensionpolicies",
            "backendtrafficpolicies",
            "backends",
            "httproutefilters",
            "securitypolicies",
        )
        for crd in module_crds(
            "github.com/envoyproxy/gateway",
            f"charts/gateway-helm/charts/crds/crds/generated/gateway.envoyproxy.io_{kind}.yaml",
        )
    ]


# The CRD files of the Gateway API Inference Extension release engine/crds pins, the content of that
# release's manifests.yaml (the InferencePool, and the kinds its picker reads where served).
INFERENCE_CRD_FILES = (
    "inference.networking.k8s.io_inferencepools.yaml",
    "inference.networking.x-k8s.io_inferenceobjectives.yaml",
    "inference.networking.x-k8s.io_inferencemodelrewrites.yaml",
    "inference.networking.x-k8s.io_inferencepoolimports.yaml",
)


@functools.cache
def inference_crds() -> list[dict[str, Any]]:
    return [
        crd
        for name in INFERENCE_CRD_FILES
        for crd in module_crds("sigs.k8s.io/gateway-api-inference-extension", f"config/crd/bases/{name}")
    ]


@functools.cache
def lws_crds() -> list[dict[str, Any]]:
    """The LeaderWorkerSet CRD of the lws release engine/crds pins (config/crd/bases), the kind
    multi-node deployments create (components/features/multinode.py)."""
    return module_crds("sigs.k8s.io/lws", "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml")


# The six CRDs the keda chart installs (kedacore/charts keda/templates/crds/ @ v2.20.2), each the
# release's config/crd/bases file: the operator watches every one of their kinds from its start
# (cmd/operator/main.go, one reconciler each) and waits for all of them to be served.
KEDA_CRD_FILES = (
    "keda.sh_scaledobjects.yaml",
    "keda.sh_scaledjobs.yaml",
    "keda.sh_triggerauthentications.yaml",
    "keda.sh_clustertriggerauthentications.yaml",
    "eventing.keda.sh_cloudeventsources.yaml",
    "eventing.keda.sh_clustercloudeventsources.yaml",
)


@functools.cache
def keda_crds() -> list[dict[str, Any]]:
    """The CRDs of the KEDA release engine/crds pins (config/crd/bases), the ScaledObject (the kind an
    autoscaled deployment creates, components/features/autoscaling.py) first."""
    return [
        crd for name in KEDA_CRD_FILES for crd in module_crds("github.com/kedacore/keda/v2", f"config/crd/bases/{name}")
    ]


def operator_crds(kind: str) -> list[dict[str, Any]]:
    """The CRD of one kind (`podmonitors`) of the prometheus-operator release engine/crds pins, the
    copy kube-prometheus-stack's crds subchart carries."""
    return module_crds(
        "github.com/prometheus-operator/prometheus-operator",
        f"example/prometheus-operator-crd/monitoring.coreos.com_{kind}.yaml",
    )


@functools.cache
def pod_monitor_crds() -> list[dict[str, Any]]:
    """The PodMonitor CRD: an autoscaled deployment creates one."""
    return operator_crds("podmonitors")


@functools.cache
def service_monitor_crds() -> list[dict[str, Any]]:
    """The ServiceMonitor CRD, whose selectors the stack's Prometheus is given."""
    return operator_crds("servicemonitors")


@functools.cache
def prometheus_crds() -> list[dict[str, Any]]:
    """The Prometheus CRD (the release's Prometheus, which the operator runs), and the rule and
    probe CRDs its Prometheus controller watches and waits for before it reconciles anything
    (prometheus-operator v0.90.1 pkg/prometheus/server/operator.go: its informers, unconditional)."""
    return operator_crds("prometheuses") + operator_crds("prometheusrules") + operator_crds("probes")


def default_crds() -> list[dict[str, Any]]:
    """The CRDs the serving stack's charts install (engine/crds): Envoy Gateway's Gateway API CRDs
    and its policies', the LeaderWorkerSet chart's, KEDA's ScaledObject and kube-prometheus-stack's
    PodMonitor, and the InferencePool CRDs the stack applies from the inference extension's release file."""
    return gateway_api_crds() + envoy_gateway_crds() + lws_crds() + keda_crds() + pod_monitor_crds() + inference_crds()


# ---------------------------------------------------------------------------------------------
# One server per cluster, started when a provider first needs it


@dataclass
class ServerPool:
    """The API servers of one test, one per cluster, keyed by the server URL of its kubeconfig.

    The kubernetes test provider runs in a process of its own per cluster (the engine starts one
    plugin per provider), so a server is started by whichever provider process first needs it,
    under a lock, and stays up until the test ends (`close`). `servers.json` in `folder` maps each
    cluster's kubeconfig server to the real one.
    """

    folder: Path
    etcd_url: str
    extra_flags: tuple[str, ...] = ()

    ENV = "MODELPLANE_TEST_KUBE_POOL"

    def env(self) -> dict[str, str]:
        return {self.ENV: json.dumps({"folder": str(self.folder), "etcd": self.etcd_url, "flags": self.extra_flags})}

    @classmethod
    def from_env(cls) -> ServerPool | None:
        raw = os.environ.get(cls.ENV)
        if not raw:
            return None
        spec = json.loads(raw)
        return cls(Path(spec["folder"]), spec["etcd"], tuple(spec["flags"]))

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "servers.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            index = self.folder / "servers.json"
            servers = json.loads(index.read_text()) if index.exists() else {}
            yield servers
            index.write_text(json.dumps(servers))

    def server(self, cluster_url: str) -> ApiServer:
        with self._locked() as servers:
            if cluster_url not in servers:
                n = len(servers)
                # A prefix of its own in the shared etcd: the server starts with the CRDs alone.
                started = ApiServer.start(
                    self.folder / f"server-{n}", self.etcd_url, f"/{secrets.token_hex(8)}", self.extra_flags
                )
                servers[cluster_url] = started.__dict__
            return ApiServer(**servers[cluster_url])

    def servers(self) -> dict[str, ApiServer]:
        with self._locked() as servers:
            return {url: ApiServer(**spec) for url, spec in servers.items()}

    def close(self) -> None:
        for server in self.servers().values():
            server.stop()
