"""A Job pod's container run as its kubelet would run it, and a local Hugging Face hub for its downloads.

`python -m tests.engine.jobrun job <pod.json> <tools>` runs in the pod's world (podproc.py
`job_container`, in the pod's mount namespace): it mounts each PersistentVolumeClaim the container
mounts at its mount path (the folder of the claim's bound hostPath PersistentVolume, read-only
where the mount is), runs the container's own command with its environment, and when the command
ends well reports the pod Succeeded through the API server, as the kubelet reports a container that
exited 0 under `restartPolicy: OnFailure`; a failed command exits with its code, and
`PodProcesses` starts it again, as the kubelet restarts it.

Of the image, `hf` is the real CLI of huggingface_hub at the product's pin, talking to `Hub`, a
local stand-in of the hub's HTTP API; `pip`, which would install that client, only records what it
was asked (`write_tools`). What is not here: the hub itself, Xet storage, a gated model's token.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SERVICE_ACCOUNT_DIR = Path("/run/secrets/kubernetes.io/serviceaccount")


def api(method: str, path: str, body: Mapping[str, Any] | None = None, content: str = "application/json") -> Any:
    """A request to the API server with the pod's service account, as client-go's in-cluster config makes it."""
    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
    request = urllib.request.Request(
        f"https://{host}:{port}{path}", data=json.dumps(body).encode() if body is not None else None, method=method
    )
    request.add_header("Authorization", f"Bearer {(SERVICE_ACCOUNT_DIR / 'token').read_text().strip()}")
    request.add_header("Content-Type", content)
    context = ssl.create_default_context(cafile=str(SERVICE_ACCOUNT_DIR / "ca.crt"))
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        return json.loads(response.read())


def volume_folders(pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(host folder, mount path, read-only) of each claim the container mounts: the folder of the
    PersistentVolume the claim is bound to (a hostPath volume, as the test provisions it)."""
    namespace = pod["metadata"]["namespace"]
    claims = {
        v["name"]: v["persistentVolumeClaim"] for v in pod["spec"].get("volumes") or [] if "persistentVolumeClaim" in v
    }
    out = []
    for mount in container.get("volumeMounts") or []:
        source = claims.get(mount["name"])
        if source is None:
            continue
        claim = api("GET", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{source['claimName']}")
        volume = api("GET", f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}")
        read_only = bool(mount.get("readOnly") or source.get("readOnly"))
        out.append((volume["spec"]["hostPath"]["path"], mount["mountPath"], read_only))
    return out


def mount(host: str, target: str, read_only: bool) -> None:
    """Bind `host` at `target` in this (private) mount namespace; the target's parent, which must
    exist on this machine, is covered by a tmpfs first so nothing is created outside the namespace."""
    parent = os.path.dirname(target)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", parent], check=True)
    os.makedirs(target)
    subprocess.run(["mount", "--bind", host, target], check=True)
    if read_only:
        subprocess.run(["mount", "-o", "remount,bind,ro", target], check=True)


def succeeded(pod: Mapping[str, Any], container: Mapping[str, Any]) -> None:
    """The pod's status as the kubelet reports a pod whose only container exited 0 (the fields
    KWOK's pod-complete stage writes, kustomize/stage/pod/fast/pod-complete.yaml at v0.8.0)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    terminated = {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}
    status = {
        "phase": "Succeeded",
        "containerStatuses": [
            {
                "name": container["name"],
                "image": container["image"],
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"terminated": terminated},
            }
        ],
    }
    meta = pod["metadata"]
    path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status"
    api("PATCH", path, {"status": status}, "application/merge-patch+json")


def run_job(pod_file: str, tools: str) -> int:
    """Run the pod's only container's command with its mounts and environment; report success."""
    pod = json.loads(Path(pod_file).read_text())
    (container,) = pod["spec"]["containers"]
    for host, target, read_only in volume_folders(pod, container):
        mount(host, target, read_only)
    env = {**os.environ, "PATH": f"{tools}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    code = subprocess.run([*container.get("command", []), *container.get("args", [])], env=env).returncode
    if code == 0:
        succeeded(pod, container)
    return code


def pip(record: str, args: list[str]) -> int:
    """The image's `pip`: what it was asked, one line a call."""
    with open(record, "a") as f:
        f.write(" ".join(args) + "\n")
    return 0


# The revision the local hub serves every repository at.
REVISION = "0" * 40


class Hub:
    """A local stand-in of the Hugging Face hub's HTTP API for the files of `folder/<org>/<name>`,
    answering what `hf download` of huggingface_hub 2.4.0 asks (tried against that client): the
    repository's revision (`/api/models/<repo>/revision/<rev>`), its file tree
    (`/api/models/<repo>/tree/<rev>`), and each file at `/<repo>/resolve/<rev>/<path>` with the
    commit (`X-Repo-Commit`) and ETag the client files its blobs under; no Xet headers, so it takes
    the plain HTTP path. `fetched` lists the files downloaded (GET), in order."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fetched: list[str] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                hub.answer(self)

            def do_GET(self) -> None:
                hub.answer(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Hub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def files(self, repo: str) -> dict[str, bytes] | None:
        root = self.folder / repo
        if not root.is_dir():
            return None
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    def answer(self, request: http.server.BaseHTTPRequestHandler) -> None:
        path = urllib.parse.unquote(request.path.split("?")[0])
        parts = path.strip("/").split("/")
        body: bytes = b'{"error": "Repository not found"}'
        code, headers = 404, {"Content-Type": "application/json", "X-Error-Code": "RepoNotFound"}
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision", "tree"):
            files = self.files("/".join(parts[2:4]))
            if files is not None:
                code, headers = 200, {"Content-Type": "application/json"}
                if parts[4] == "revision":
                    siblings = [{"rfilename": name} for name in files]
                    body = json.dumps({"id": "/".join(parts[2:4]), "sha": REVISION, "siblings": siblings}).encode()
                else:
                    tree = [{"type": "file", "path": n, "size": len(d), "oid": sha1(d)} for n, d in files.items()]
                    body = json.dumps(tree).encode()
        elif len(parts) >= 5 and parts[2] == "resolve":
            data = (self.files("/".join(parts[:2])) or {}).get("/".join(parts[4:]))
            if data is not None:
                code, body = 200, data
                etag = f'"{hashlib.sha256(data).hexdigest()}"'
                headers = {"Content-Type": "application/octet-stream", "ETag": etag, "X-Repo-Commit": REVISION}
                if request.command == "GET":
                    self.fetched.append("/".join(parts[4:]))
        request.send_response(code)
        for key, value in headers.items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        if request.command == "GET":
            request.wfile.write(body)


def sha1(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def write_tools(folder: Path, hub: str) -> Path:
    """A folder holding the image's `pip` (a stand-in that records its arguments in `pip.log`
    beside it) and `hf`: huggingface_hub 2.4.0's own CLI from this environment (the product's pin,
    `HF_HUB_CLIENT`), pointed at the hub at `hub` (`HF_ENDPOINT`, the environment variables page)."""
    tools = folder / "bin"
    tools.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[2]
    client = Path(sys.executable).parent / "hf"
    (tools / "pip").write_text(
        f'#!/bin/sh\nexec /usr/bin/env PYTHONPATH={root} {sys.executable} -m tests.engine.jobrun pip {folder / "pip.log"} "$@"\n'
    )
    (tools / "hf").write_text(
        f'#!/bin/sh\nexec /usr/bin/env HF_ENDPOINT={hub} HF_HUB_DISABLE_TELEMETRY=1 {client} "$@"\n'
    )
    for name in ("pip", "hf"):
        (tools / name).chmod(0o755)
    return tools


def main(argv: list[str]) -> int:
    what, first, rest = argv[0], argv[1], argv[2:]
    if what == "job":
        return run_job(first, rest[0])
    if what == "pip":
        return pip(first, rest)
    raise SystemExit(f"unknown command {what}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
