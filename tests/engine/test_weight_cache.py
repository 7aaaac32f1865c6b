"""The shared weight cache on the local cluster: the claim bound by the real controller manager to a
statically provisioned ReadWriteMany PersistentVolume, the download Job completed by the real Job
controller after its own command filled the volume, and every engine pod mounting the claim
read-only behind an init container that waits for the Job's marker (docs/serving.md, "Shared
weight cache").

byo-mixed with every deployment's cache `Shared` on the owner's class: its three deployments serve
one model in one namespace, so one claim and one Job serve their four pods. The Job's container runs
its own shell command (jobrun.py) with huggingface_hub's real `hf` at the product's pin, downloading
from a local stand-in of the hub's HTTP API (`jobrun.Hub`); only `pip` is a stand-in, which records
what it would install.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
from pathlib import Path
from typing import Any

from components.features.cache import (
    CACHE_LABELS,
    CACHE_VOLUME,
    COMPLETE_MARKER,
    HF_HUB_CLIENT,
    SHARED_CACHE_PATH,
)
from infra.shared_cache import claim_name
from infra.vocabulary import DEPLOYMENT_LABEL
from tests.engine.cluster import condition, wait_for
from tests.engine.jobrun import REVISION, Hub, write_tools
from tests.engine.podproc import container_of, job_container

STACK = "byo-mixed"
NAMESPACE = "ml-team"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"  # every deployment's --model in byo-mixed
# The owner's ReadWriteMany class, with no provisioner: its volumes are provisioned by hand
# (https://kubernetes.io/docs/concepts/storage/storage-classes/#local).
STORAGE_CLASS = "owner-rwx"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
SIZE = "10Gi"
VOLUME = "owner-weights"
# The Job's pods: the cache's component label (the pod template's labels, `SharedWeightCache`).
HELD = {"app.kubernetes.io/component": CACHE_LABELS["app.kubernetes.io/component"]}
# The local hub's repository: a few files, as a model repository holds.
REPO_FILES = {
    "config.json": b'{"model_type": "qwen2"}',
    "model.safetensors": bytes(range(256)) * 64,
    "tokenizer.json": b'{"version": "1.0"}',
}
# How many engine pods the three deployments run (byo-mixed: 1 + 2 + 1 replicas).
ENGINE_PODS = 4


def shared_stack(config: dict[str, Any]) -> None:
    for dep in config["modelplane:deployments"]:
        dep["cache"] = {"volume": "Shared", "size": SIZE, "storageClassName": STORAGE_CLASS}


def hub_repo(hub: Path) -> None:
    repo = hub / MODEL
    repo.mkdir(parents=True)
    for name, data in REPO_FILES.items():
        (repo / name).write_bytes(data)


def static_volume(folder: Path) -> list[dict[str, Any]]:
    """The owner's class and a PersistentVolume of it, made by hand: a hostPath folder here."""
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": STORAGE_CLASS},
            "provisioner": NO_PROVISIONER,
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": VOLUME},
            "spec": {
                "capacity": {"storage": SIZE},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": STORAGE_CLASS,
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": str(folder), "type": "Directory"},
            },
        },
    ]


def snapshot(volume: Path) -> Path:
    """The model's snapshot in the hub cache at the volume's root (`HF_HUB_CACHE` is the mount path)."""
    return volume / ("models--" + MODEL.replace("/", "--")) / "snapshots" / REVISION


def in_volume(path: str, volume: Path) -> Path:
    """Where a path under the cache's mount path lies in the volume's folder."""
    return volume / Path(path).relative_to(SHARED_CACHE_PATH)


def run_mounted(command: list[str], volume: Path, env: dict[str, str], timeout: float) -> int | None:
    """`command` in a private mount namespace with `volume` at the cache's mount path, as a container
    mounting the claim sees it; its exit code, or None if it still ran after `timeout` seconds."""
    script = " && ".join(
        [
            "mount --make-rprivate /",
            f"mount -t tmpfs tmpfs {Path(SHARED_CACHE_PATH).parent}",
            f"mkdir {SHARED_CACHE_PATH}",
            f"mount --bind {volume} {SHARED_CACHE_PATH}",
            'exec "$@"',
        ]
    )
    argv = ["unshare", "--mount", "--fork", "--kill-child", "sh", "-c", script, "sh", *command]
    try:
        return subprocess.run(argv, env=env, timeout=timeout, capture_output=True).returncode
    except subprocess.TimeoutExpired:
        return None


def test_the_job_runs_the_client_the_product_pins() -> None:
    assert f"huggingface_hub=={importlib.metadata.version('huggingface_hub')}" == HF_HUB_CLIENT


def test_the_shared_cache_is_bound_to_the_owners_volume_filled_once_by_its_job_and_mounted_read_only(
    run: Any, tmp_path: Path
) -> None:
    hub_repo(tmp_path / "hub")
    with Hub(tmp_path / "hub") as hub, Hub(tmp_path / "no-hub") as offline:
        check_cache(run, tmp_path, hub, offline)


def check_cache(run: Any, tmp_path: Path, hub: Hub, offline: Hub) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    tools = write_tools(tmp_path / "image", hub.url)
    mixed = run(STACK, programs=[job_container(HELD, "download", tools)], edit=shared_stack, held_jobs=HELD)
    for obj in static_volume(volume):
        mixed.cluster.server.create(obj)
    mixed.up()
    claim = claim_name(MODEL)

    # The program's claim, bound by the controller manager's binder to the owner's volume.
    def bound() -> dict[str, Any] | None:
        pvc = mixed.cluster.server.get(
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim, "namespace": NAMESPACE}}
        )
        return pvc if pvc and (pvc.get("status") or {}).get("phase") == "Bound" else None

    pvc = wait_for(f"claim {claim} Bound", bound, timeout=60, every=0.5)
    assert pvc["spec"]["volumeName"] == VOLUME
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["storageClassName"] == STORAGE_CLASS
    pv = mixed.cluster.server.get({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": VOLUME}})
    assert pv is not None and pv["status"]["phase"] == "Bound"
    assert (pv["spec"]["claimRef"]["namespace"], pv["spec"]["claimRef"]["name"]) == (NAMESPACE, claim)

    # The Job: its own command filled the volume and wrote the marker; then the real Job controller,
    # seeing its pod Succeeded, marked it Complete.
    def complete() -> bool:
        job = mixed.cluster.server.get(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": claim, "namespace": NAMESPACE}}
        )
        return bool(job) and condition(job or {}, "Complete")

    wait_for(f"Job {claim} Complete", complete, timeout=60, every=0.5)
    assert in_volume(COMPLETE_MARKER, volume).is_file()
    files = {p.name: p.read_bytes() for p in snapshot(volume).iterdir()}
    assert files == REPO_FILES
    assert (tools.parent / "pip.log").read_text().split() == ["install", "--quiet", HF_HUB_CLIENT]
    assert sorted(hub.fetched) == sorted(REPO_FILES)

    # Every engine pod of every deployment: the claim, mounted read-only at the cache's path, behind
    # an init container that mounts it too and waits for the marker.
    pods = [
        p
        for p in mixed.cluster.list("v1", "Pod", NAMESPACE)
        if DEPLOYMENT_LABEL in (p["metadata"].get("labels") or {}) and not p["metadata"].get("deletionTimestamp")
    ]
    assert len(pods) == ENGINE_PODS, [p["metadata"]["name"] for p in pods]
    for pod in pods:
        (source,) = [v for v in pod["spec"]["volumes"] if v["name"] == CACHE_VOLUME]
        assert source["persistentVolumeClaim"] == {"claimName": claim, "readOnly": True}
        (engine,) = pod["spec"]["containers"]
        (init,) = pod["spec"]["initContainers"]
        for container in (engine, init):
            mount = next(m for m in container["volumeMounts"] if m["name"] == CACHE_VOLUME)
            assert (mount["mountPath"], mount.get("readOnly")) == (SHARED_CACHE_PATH, True), container["name"]
        assert {e["name"]: e.get("value") for e in engine.get("env") or []}["HF_HUB_CACHE"] == SHARED_CACHE_PATH

    # The init container's own command over the volume: it waits while the marker is missing (an
    # empty volume, as before the Job ends) and ends once it is there (the volume the Job filled).
    wait = container_of(pods[0], init["name"])["command"]
    shell = {"PATH": "/usr/bin:/bin"}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_mounted(wait, empty, shell, timeout=3) is None
    assert run_mounted(wait, volume, shell, timeout=30) == 0

    # The Job's command again. Over the complete volume it downloads nothing; over one cut short (a
    # blob and the marker missing, as after a killed pod) it resumes, fetching only what is missing.
    job = mixed.cluster.server.get(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": claim, "namespace": NAMESPACE}}
    )
    assert job is not None
    (download,) = job["spec"]["template"]["spec"]["containers"]
    env = {"PATH": f"{tools}:/usr/bin:/bin", **{e["name"]: e["value"] for e in download["env"] if "value" in e}}
    assert run_mounted(download["command"], volume, env, timeout=60) == 0
    assert len(hub.fetched) == len(REPO_FILES)
    cut = tmp_path / "cut"
    shutil.copytree(volume, cut, symlinks=True)
    in_volume(COMPLETE_MARKER, cut).unlink()
    lost = snapshot(cut) / "model.safetensors"
    (lost.parent / lost.readlink()).resolve().unlink()
    assert run_mounted(download["command"], cut, env, timeout=60) == 0
    assert hub.fetched[len(REPO_FILES) :] == ["model.safetensors"]
    assert in_volume(COMPLETE_MARKER, cut).is_file()
    assert {p.name: p.read_bytes() for p in snapshot(cut).iterdir()} == REPO_FILES

    # A download that fails (a hub without the model) fails the command and leaves no marker, so the
    # pods keep waiting and the Job's controller runs it again.
    failed = tmp_path / "failed"
    failed.mkdir()
    env["PATH"] = f"{write_tools(tmp_path / 'offline', offline.url)}:/usr/bin:/bin"
    assert run_mounted(download["command"], failed, env, timeout=60) not in (0, None)
    assert not in_volume(COMPLETE_MARKER, failed).exists()
