"""The local Helm repository: its index, its archives, and a mirror that lacks a chart."""

from __future__ import annotations

import hashlib
import io
import re
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tooling.chart_repo import ChartArchiveError, chart_metadata, serve


def package(folder: Path, name: str, version: str, app_version: str = "v1") -> Path:
    """A chart archive laid out as `helm package` lays it out: one top folder named after the chart."""
    archive = folder / f"{name}-{version}.tgz"
    files = {
        "Chart.yaml": yaml.safe_dump({"apiVersion": "v2", "name": name, "version": version, "appVersion": app_version}),
        "values.yaml": "replicas: 1\n",
        "templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    }
    with tarfile.open(archive, "w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
        return body


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    package(tmp_path, "lws", "v0.8.0", "v0.8.0")
    package(tmp_path, "node-feature-discovery", "0.19.0", "v0.19.0")
    package(tmp_path, "node-feature-discovery", "0.18.3", "v0.18.3")
    return tmp_path


def test_the_index_lists_every_archive_with_its_digest(folder: Path) -> None:
    with serve(folder) as url:
        assert url.startswith("http://127.0.0.1:")
        index = yaml.safe_load(get(f"{url}/index.yaml"))
    assert index["apiVersion"] == "v1"
    assert sorted(index["entries"]) == ["lws", "node-feature-discovery"]
    nfd = {e["version"]: e for e in index["entries"]["node-feature-discovery"]}
    assert sorted(nfd) == ["0.18.3", "0.19.0"]
    entry = nfd["0.19.0"]
    archive = folder / "node-feature-discovery-0.19.0.tgz"
    assert entry["name"] == "node-feature-discovery"
    assert entry["appVersion"] == "v0.19.0"
    assert entry["urls"] == ["node-feature-discovery-0.19.0.tgz"]
    assert entry["digest"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert entry["created"].endswith("Z")
    # The index is also left in the folder, so any static HTTP server can serve it afterwards.
    assert yaml.safe_load((folder / "index.yaml").read_text())["entries"] == index["entries"]


def test_an_archive_downloads_byte_for_byte(folder: Path) -> None:
    with serve(folder) as url:
        index = yaml.safe_load(get(f"{url}/index.yaml"))
        [entry] = index["entries"]["lws"]
        body = get(f"{url}/{entry['urls'][0]}")
    assert hashlib.sha256(body).hexdigest() == entry["digest"]


def test_a_subset_serves_only_the_named_archives(folder: Path) -> None:
    with serve(folder, only=["lws-v0.8.0.tgz"]) as url:
        index = yaml.safe_load(get(f"{url}/index.yaml"))
        assert list(index["entries"]) == ["lws"]
        with pytest.raises(urllib.error.HTTPError) as missing:
            get(f"{url}/node-feature-discovery-0.19.0.tgz")
    assert missing.value.code == 404


def test_a_subset_naming_an_absent_archive_is_refused(folder: Path) -> None:
    refused = pytest.raises(ChartArchiveError, match=re.escape("no archive gateway-helm-v1.8.4.tgz to serve"))
    with refused, serve(folder, only=["gateway-helm-v1.8.4.tgz"]):
        pass


def test_the_server_stops_with_the_block(folder: Path) -> None:
    with serve(folder) as url:
        get(f"{url}/index.yaml")
    with pytest.raises(urllib.error.URLError):
        get(f"{url}/index.yaml")


def test_an_archive_without_a_chart_folder_is_named(tmp_path: Path) -> None:
    archive = tmp_path / "loose-1.0.0.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("Chart.yaml")
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(ChartArchiveError, match=re.escape("loose-1.0.0.tgz: no <chart>/Chart.yaml")):
        chart_metadata(archive)
