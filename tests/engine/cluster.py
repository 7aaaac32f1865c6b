"""A local Kubernetes cluster with nothing fake above the kubelet, for the real provider's runs.

Real: etcd, kube-apiserver, kube-controller-manager and kube-scheduler v1.36.0 (`engine/build.sh`),
so Deployments get ReplicaSets and pods, DaemonSets get a pod per admitted node, the scheduler
places pods by taints, selectors and affinity, and allocates their ResourceClaims from the
ResourceSlices (DRA's allocator runs in the scheduler), and a deleted namespace is emptied.

Simulated: the kubelets, by KWOK v0.8.0 (`sigs.k8s.io/kwok`), whose stages (its module's
`kustomize/stage/`) mark nodes Ready and pods Running and Ready, and complete Job pods, giving each
Running pod an address from its node's pod CIDR (`PodNetwork`), which a process of this machine
listens on (the pod network is local to this machine: `PodNetwork`; the model servers:
`servers.py`, other programs: `podproc.py`); and the
hardware: `DevicePublisher` writes each node's ResourceSlices as the DRA driver of its devices
publishes them (see `devices.py`), and each node carries the labels node discovery would put on it
(`infra.placement.nodes_of`). No container runs, so an operator's own operands (the DaemonSets
the NVIDIA and AMD operators create from their custom resources) never appear, since the
operator's pod only looks Running, and no chart's webhook could answer; the stand-in charts
register none.

Real beside them: the lws chart's LeaderWorkerSet controller manager (lws v0.8.0, `engine/build.sh
lws`), run as a process (`Lws`) with its webhooks, which the API server calls: without its pod
webhook no group pod gets its group index, group key or LWS environment, and the controller
cannot count a group (`Lws` says where).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.engine.kube import ApiError, ApiServer, free_port, lws_crds, module_dir, stop
from tests.tools import tool

# Driver kubelet plugins and node agents run privileged, which a cluster's API server admits only
# with this flag (every managed cloud's and kubeadm's set it; its default is false).
PRIVILEGED = "--allow-privileged=true"
# KWOK renews each node's Lease; at its default duration the controller manager's node lifecycle
# controller saw some leases expire between renewals on two busy cores, marked those nodes
# NotReady and their pods not Ready. 40 s is the kubelet's own default (`nodeLeaseDurationSeconds`).
NODE_LEASE_SECONDS = 40
# What KWOK manages: only nodes annotated so (its `--manage-nodes-with-annotation-selector`).
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# The kwok module's stages (kustomize/stage/ at v0.8.0): nodes Ready with leases, pods through
# their lifecycle (pending, ready, complete, delete).
KWOK_STAGES = ("node/fast", "pod/fast")

# Pod addresses. KWOK's pod stage gives a Running pod `PodIPsWith` (kustomize/stage/pod/fast/
# pod-ready.yaml line 80 at v0.8.0), which takes a free address of the pod's node's
# `spec.podCIDRs`, else its `spec.podCIDR`, else of KWOK's `--cidr` (`funcPodIPsWith`,
# pkg/kwok/controllers/pod_controller.go lines 797-802; its pool hands out the CIDR's address
# + 1, + 2, ... and reuses a deleted pod's, `ipPool` in utils.go). Each cluster takes a /20 of
# 10.16.0.0/12 (256 clusters), each of its nodes a /24 of that: apart from the Services' range
# (10.96.0.0/16, kube.py) and KWOK's node address.
#
# The pods' addresses cannot be on loopback (127.0.0.0/8): the API server refuses an
# EndpointSlice holding one (`ValidateEndpointIP`, pkg/apis/core/validation/validation.go line
# 8433 at v1.36.0, called for every IPv4 endpoint by pkg/apis/discovery/validation/validation.go
# line 123), so a Service over such pods would have no endpoints. The pod network is made local
# to this machine instead: a `local` route for it on the loopback device (`ip route replace local
# 10.16.0.0/12 dev lo`, ip-route(8): "local - the destinations are assigned to this host"), so a
# process can listen on any pod address and reach it, as on a node, and nothing of the range
# leaves the machine. Prometheus then scrapes the addresses Kubernetes gives the pods, unchanged.
POD_NETWORKS = ipaddress.ip_network("10.16.0.0/12")
CLUSTER_PREFIX = 20
NODE_PREFIX = 24
# The port a cluster holds on its /20's first address while it runs, so that clusters
# started at once on this machine (tests in several processes) never share a /20: a second bind
# fails. KWOK never hands that address to a pod (its pools start at + 1).
CLAIM_PORT = 41051


def make_pod_network_local() -> None:
    """The `local` route that lets processes here listen on pod addresses (idempotent: `replace`)."""
    done = subprocess.run(
        ["ip", "route", "replace", "local", str(POD_NETWORKS), "dev", "lo"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"the local cluster needs the pod network {POD_NETWORKS} routed to this machine's loopback "
            f"device (`ip route replace local {POD_NETWORKS} dev lo`, as root): {done.stderr.strip()}"
        )


@dataclass
class PodNetwork:
    """The /20 of 10.16.0.0/12 one cluster's nodes take their pod CIDRs from, held by a listening
    socket on its first address until `release`."""

    network: ipaddress.IPv4Network
    claim: socket.socket

    @classmethod
    def claim_one(cls, seed: str) -> PodNetwork:
        """The first free /20 from one `seed` picks (the cluster's etcd prefix, unique per cluster)."""
        make_pod_network_local()
        blocks = list(POD_NETWORKS.subnets(new_prefix=CLUSTER_PREFIX))
        start = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:4], "big")
        for i in range(len(blocks)):
            block = blocks[(start + i) % len(blocks)]
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((str(block.network_address), CLAIM_PORT))
                sock.listen(1)
            except OSError:
                sock.close()
                continue
            return cls(block, sock)
        raise RuntimeError(f"every /{CLUSTER_PREFIX} of {POD_NETWORKS} is held by a running local cluster")

    def node_cidrs(self, count: int) -> list[str]:
        """A /24 per node, in order."""
        subnets = list(self.network.subnets(new_prefix=NODE_PREFIX))
        if count > len(subnets):
            raise RuntimeError(f"a local cluster has at most {len(subnets)} nodes ({count} asked)")
        return [str(s) for s in subnets[:count]]

    def release(self) -> None:
        self.claim.close()


@dataclass(frozen=True)
class NodeSpec:
    """One simulated node: its name, labels, taints, allocatable resources and published devices."""

    name: str
    pool: str
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...] = ()
    cpu: int = 32
    memory: str = "256Gi"
    slices: tuple[Mapping[str, Any], ...] = ()

    def node(self, pod_cidr: str | None = None) -> dict[str, Any]:
        """The Node object; `pod_cidr`, immutable once set, is where KWOK takes its pods' addresses."""
        allocatable = {"cpu": str(self.cpu), "memory": self.memory, "pods": "110", "ephemeral-storage": "1Ti"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": {"kubernetes.io/hostname": self.name, "type": "kwok", **self.labels},
                "annotations": {KWOK_ANNOTATION: "fake"},
            },
            "spec": {
                "taints": [dict(t) for t in self.taints],
                **({"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]} if pod_cidr else {}),
            },
            "status": {
                "capacity": allocatable,
                "allocatable": allocatable,
                "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.36.0"},
            },
        }


def kubeconfig(server: ApiServer, name: str = "local") -> str:
    """A kubeconfig for the server: its URL, its certificate as the authority, the admin token."""
    ca = Path(server.ca_file).read_bytes()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server.url, "certificate-authority-data": base64.b64encode(ca).decode()},
            }
        ],
        "users": [{"name": "admin", "user": {"token": server.token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
        "current-context": name,
    }
    return json.dumps(doc)


def stage_files() -> list[Path]:
    """The YAML files of `KWOK_STAGES` in the kwok module the build pinned (engine/kwok)."""
    root = module_dir("sigs.k8s.io/kwok", "kwok") / "kustomize" / "stage"
    return sorted(f for stage in KWOK_STAGES for f in (root / stage).glob("*.yaml") if f.name != "kustomization.yaml")


# The stage that completes a Job's pod as soon as it runs (kustomize/stage/pod/fast/pod-complete.yaml).
POD_COMPLETE = "pod-complete.yaml"


def held_stages(folder: Path, held: Mapping[str, str]) -> list[Path]:
    """`stage_files`, with KWOK's pod-complete stage leaving alone the Job pods carrying any label
    of `held`: their program (podproc.py `job_container`) runs their container and reports its end,
    as a kubelet would. A selector's `NotIn` matches a label the pod lacks
    (pkg/utils/expression/selector.go at v0.8.0)."""
    if not held:
        return stage_files()
    files = []
    for f in stage_files():
        if f.name == POD_COMPLETE:
            doc = yaml.safe_load(f.read_text())
            doc["spec"]["selector"]["matchExpressions"] += [
                {"key": f'.metadata.labels["{key}"]', "operator": "NotIn", "values": [value]}
                for key, value in held.items()
            ]
            f = folder / POD_COMPLETE
            f.write_text(yaml.safe_dump(doc))
        files.append(f)
    return files


@dataclass
class LocalCluster:
    """The control plane, KWOK and the nodes; `stop` ends every process it started."""

    folder: Path
    server: ApiServer
    nodes: list[NodeSpec]
    pod_network: PodNetwork
    pids: list[int] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        folder: Path,
        etcd_url: str,
        prefix: str,
        nodes: Sequence[NodeSpec],
        held_jobs: Mapping[str, str] | None = None,
    ) -> LocalCluster:
        """`held_jobs`: the labels of Job pods KWOK does not complete (`held_stages`)."""
        pod_network = PodNetwork.claim_one(prefix)
        try:
            server = ApiServer.start(
                folder / "apiserver", etcd_url, prefix, (PRIVILEGED,), crds=False, aggregation=True
            )
        except BaseException:
            pod_network.release()
            raise
        cluster = cls(folder, server, list(nodes), pod_network)
        try:
            config = folder / "kubeconfig"
            config.write_text(kubeconfig(server))
            key = folder / "apiserver" / "sa.key"
            cluster._spawn(
                "kube-controller-manager",
                f"--kubeconfig={config}",
                "--leader-elect=false",
                "--controllers=*",
                f"--service-account-private-key-file={key}",
                f"--root-ca-file={server.ca_file}",
                "--use-service-account-credentials=false",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
            )
            cluster._spawn("kube-scheduler", f"--kubeconfig={config}", "--leader-elect=false", "--secure-port=0")
            cluster._spawn(
                "kwok",
                f"--kubeconfig={config}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",
                "--cidr=10.0.0.1/16",
                "--node-ip=10.0.0.1",
                *[f"--config={f}" for f in held_stages(folder, held_jobs or {})],
            )
            cluster._start_lws(config)
            for node, cidr in zip(nodes, pod_network.node_cidrs(len(nodes)), strict=True):
                server.create(node.node(cidr))
                for piece in node.slices:
                    server.create(dict(piece))
            cluster.wait_ready()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _start_lws(self, config: Path) -> None:
        """The LeaderWorkerSet controller manager with its webhooks, once its CRD is served.

        The CRD goes first: the manager watches LeaderWorkerSets from its start and exits when the
        kind is not served within its cache sync timeout (controller-runtime v0.22, two minutes),
        which a cluster reaches only once the lws chart is installed. Helm then finds the chart's
        CRD present and skips it (`crds/` are installed only when absent).
        """
        self.server.install_crds(lws_crds())
        folder = self.folder / "lws"
        folder.mkdir(parents=True, exist_ok=True)
        lws = Lws.prepare(folder)
        self._spawn("lws", f"--kubeconfig={config}", f"--config={lws.config}", "--leader-elect=false")
        lws.wait_serving()
        for webhook in lws.webhook_configurations():
            self.server.create(webhook)

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.folder / f"{name}.log", "w")  # noqa: SIM115 (the process writes to it after we return)
        proc = subprocess.Popen([str(tool(name)), *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pids.append(proc.pid)

    def wait_ready(self, timeout: float = 90) -> None:
        """Until every node is Ready and the default service account exists (pods need it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = {n["metadata"]["name"] for n in self.list("v1", "Node") if condition(n, "Ready")}
            if ready >= {n.name for n in self.nodes} and self.server.get(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}}
            ):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the local cluster's nodes were not Ready in {timeout:.0f} s (see {self.folder})")

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.server.list_all(api_version, kind, namespace)

    def kubeconfig(self) -> str:
        return kubeconfig(self.server)

    def pod_cidrs(self) -> dict[str, str]:
        """Each node's pod CIDR, as the cluster has it: node name -> CIDR."""
        return {n["metadata"]["name"]: n["spec"].get("podCIDR", "") for n in self.list("v1", "Node")}

    def stop(self) -> None:
        # Killed, like the API server (kube.py): a cluster keeps nothing past its test, and the
        # controllers' graceful shutdowns took up to the 5 s `stop` allows each.
        for pid in reversed(self.pids):
            stop(pid, signal.SIGKILL)
        self.server.stop()
        self.pod_network.release()


# Where the lws chart installs (infra/serving/rows.py); its webhook configurations name it.
LWS_NAMESPACE = "lws-system"
# The chart's webhook configurations at v0.8.0, and their paths (`charts/lws/templates/webhook/`).
LWS_WEBHOOKS = "charts/lws/templates/webhook/webhook.yaml"
POD_WEBHOOK_PATH = "/mutate--v1-pod"


@dataclass(frozen=True)
class Lws:
    """The lws chart's controller manager as a process on loopback: its configuration file and the
    certificate its webhook server serves.

    The chart runs it with `--config` holding leader election on and its own certificate
    management (`templates/manager/configmap.yaml` at v0.8.0), which writes the certificate into a
    Secret and the webhook configurations' `caBundle` for the chart's Service. Here there is one
    process and no Service in front of it: leader election is off, the certificate is made here
    (for 127.0.0.1) and handed to it in `webhook.certDir` with `internalCertManagement.enable: false`
    (api/config/v1alpha1/configuration_types.go), and the chart's webhook configurations are
    registered with the process's URL in place of the Service. Metrics and health probes are off
    ("0", `ControllerMetrics`, `ControllerHealth`).
    """

    config: Path
    cert: Path
    port: int

    @classmethod
    def prepare(cls, folder: Path) -> Lws:
        cert, key = folder / "tls.crt", folder / "tls.key"  # the names the webhook server reads
        request = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
        files = ["-keyout", str(key), "-out", str(cert)]
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", *request, *files],
            check=True,
            capture_output=True,
        )
        port = free_port()
        doc = {
            "apiVersion": "config.lws.x-k8s.io/v1alpha1",
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": port, "certDir": str(folder)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": "0"},
        }
        config = folder / "config.yaml"
        config.write_text(yaml.safe_dump(doc))
        return cls(config, cert, port)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def wait_serving(self, timeout: float = 60) -> None:
        """Until the webhook server answers on the pod webhook's path: the manager registers its
        webhooks after it starts (cmd/main.go, `setupControllers`), and until then the path is 404."""
        context = ssl.create_default_context(cafile=str(self.cert))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            request = urllib.request.Request(self.url + POD_WEBHOOK_PATH, data=b"{}", method="POST")
            request.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(request, context=context, timeout=2):
                    return
            except urllib.error.HTTPError as err:
                if err.code != 404:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the LeaderWorkerSet webhooks did not answer in {timeout:.0f} s")

    def webhook_configurations(self) -> list[dict[str, Any]]:
        """The chart's two webhook configurations, each webhook calling this process at its path."""
        text = (module_dir("sigs.k8s.io/lws", "lws") / LWS_WEBHOOKS).read_text()
        text = text.replace("{{ .Release.Namespace }}", LWS_NAMESPACE)
        assert "{{" not in text, "the chart's webhook configurations template only the namespace"
        ca = base64.b64encode(self.cert.read_bytes()).decode()
        docs = [d for d in yaml.safe_load_all(text) if d]
        for doc in docs:
            for webhook in doc["webhooks"]:
                service = webhook["clientConfig"]["service"]
                webhook["clientConfig"] = {"url": self.url + service["path"], "caBundle": ca}
        return docs


def condition(obj: Mapping[str, Any], kind: str) -> bool:
    """Whether `obj`'s status has condition `kind` with status True."""
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or []
    )


# What a check raises while what it asks does not answer yet: the API server's errors, a refused or
# failed HTTP request (a program still starting), a body or result without what it reads.
NOT_YET = (ApiError, OSError, ValueError, KeyError)


def wait_for(
    what: str,
    check: Any,
    timeout: float = 120,
    every: float = 1.0,
    retrying: tuple[type[BaseException], ...] = (ApiError,),
) -> Any:
    """Poll `check()` until it returns a truthy value; fail with `what` and its last answer. An error
    of `retrying` (what does not answer yet: by default the API server's) counts as a falsy answer."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except retrying as err:
            last = err
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"{what} did not happen in {timeout:.0f} s; last: {last!r}")
