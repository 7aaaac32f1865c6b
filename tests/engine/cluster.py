"""A local Kubernetes cluster with nothing fake above the kubelet, for the real provider's runs.

Real: etcd, kube-apiserver, kube-controller-manager and kube-scheduler v1.36.0 (`engine/build.sh`),
so Deployments get ReplicaSets and pods, DaemonSets get a pod per admitted node, the scheduler
places pods by taints, selectors and affinity, and allocates their ResourceClaims from the
ResourceSlices (DRA's allocator runs in the scheduler), and a deleted namespace is emptied.

Simulated: the kubelets, by KWOK v0.8.0 (`sigs.k8s.io/kwok`), whose stages (its module's
`kustomize/stage/`) mark nodes Ready and pods Running and Ready, and complete Job pods; and the
hardware: `DevicePublisher` writes each node's ResourceSlices as the DRA driver of its devices
publishes them (see `devices.py`), and each node carries the labels node discovery would put on it
(`infra.placement.nodes_of`). No container runs, so a chart's webhooks cannot answer: the API
server runs without the webhook admission plugins (`WEBHOOKS_OFF`), and an operator's own
operands (the DaemonSets the NVIDIA and AMD operators create from their custom resources) never
appear, since the operator's pod only looks Running.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.engine.kube import ApiError, ApiServer, stop
from tests.tools import tool

# Webhook configurations the charts register point at pods that never run; with these admission
# plugins on, every object they match would be refused ("failed calling webhook").
WEBHOOKS_OFF = "--disable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook"
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

    def node(self) -> dict[str, Any]:
        allocatable = {"cpu": str(self.cpu), "memory": self.memory, "pods": "110", "ephemeral-storage": "1Ti"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": {"kubernetes.io/hostname": self.name, "type": "kwok", **self.labels},
                "annotations": {KWOK_ANNOTATION: "fake"},
            },
            "spec": {"taints": [dict(t) for t in self.taints]},
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
    out = subprocess.run(
        ["go", "mod", "download", "-json", "sigs.k8s.io/kwok"],
        cwd=Path(__file__).resolve().parents[2] / "engine" / "kwok",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    root = Path(json.loads(out)["Dir"]) / "kustomize" / "stage"
    return sorted(f for stage in KWOK_STAGES for f in (root / stage).glob("*.yaml") if f.name != "kustomization.yaml")


@dataclass
class LocalCluster:
    """The control plane, KWOK and the nodes; `stop` ends every process it started."""

    folder: Path
    server: ApiServer
    nodes: list[NodeSpec]
    pids: list[int] = field(default_factory=list)

    @classmethod
    def start(cls, folder: Path, etcd_url: str, prefix: str, nodes: Sequence[NodeSpec]) -> LocalCluster:
        server = ApiServer.start(folder / "apiserver", etcd_url, prefix, (WEBHOOKS_OFF, PRIVILEGED), crds=False)
        cluster = cls(folder, server, list(nodes))
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
                *[f"--config={f}" for f in stage_files()],
            )
            for node in nodes:
                server.create(node.node())
                for piece in node.slices:
                    server.create(dict(piece))
            cluster.wait_ready()
        except BaseException:
            cluster.stop()
            raise
        return cluster

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

    def stop(self) -> None:
        for pid in reversed(self.pids):
            stop(pid)
        self.server.stop()


def condition(obj: Mapping[str, Any], kind: str) -> bool:
    """Whether `obj`'s status has condition `kind` with status True."""
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or []
    )


def wait_for(what: str, check: Any, timeout: float = 120, every: float = 1.0) -> Any:
    """Poll `check()` until it returns a truthy value; fail with `what` and its last answer."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        with suppress(ApiError):
            last = check()
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"{what} did not happen in {timeout:.0f} s; last: {last!r}")
