"""The chart records in `charts/`: one per pinned catalog chart, each well formed; archives checked against them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from infra.serving.catalog import CATALOG
from infra.serving.chart import Chart
from tooling.chart_records import CHARTS_DIR, check_folder, load_records, sha256_of

ALL_ROWS = [c for rows in CATALOG.values() for c in rows]


def test_every_pinned_chart_has_a_well_formed_record() -> None:
    assert check_folder(ALL_ROWS) == []


def test_a_chart_not_obtainable_at_its_pin_says_why() -> None:
    records, _ = load_records()
    missing = {key for key, r in records.items() if not r.obtainable}
    # The three charts no source here holds at the pinned version (charts/README.md).
    assert missing == {("gateway-helm", "v1.8.4"), ("opentelemetry-collector", "0.174.0"), ("dra-driver-cpu", "0.3.0")}
    assert all(records[key].fields["reason"] for key in missing)


def _folder_with(tmp_path: Path, *names: str) -> Path:
    for name in names:
        shutil.copy(CHARTS_DIR / name, tmp_path / name)
    return tmp_path


def test_a_catalog_pin_without_a_record_is_named(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, "lws-v0.8.0.tgz.json")
    row = Chart("leader-worker-set", "lws", "oci://registry.k8s.io/lws/charts", "v0.9.0", "lws-system")
    problems = check_folder([row], folder)
    assert "lws-v0.9.0.tgz.json is missing: record where lws v0.9.0 comes from" in problems
    assert "lws-v0.8.0.tgz.json: no catalog row pins lws v0.8.0; delete the record" in problems


def test_a_record_from_another_repository_than_the_row_is_named(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, "lws-v0.8.0.tgz.json")
    row = Chart("leader-worker-set", "lws", "oci://mirror.example/lws", "v0.8.0", "lws-system")
    assert check_folder([row], folder) == [
        "lws-v0.8.0.tgz.json: published.repository is oci://registry.k8s.io/lws/charts, "
        "the catalog's row says oci://mirror.example/lws"
    ]


def test_an_archive_is_checked_against_its_published_sha256(tmp_path: Path) -> None:
    record = json.loads((CHARTS_DIR / "node-feature-discovery-0.19.0.tgz.json").read_text())
    archive = tmp_path / "node-feature-discovery-0.19.0.tgz"
    archive.write_bytes(b"not the published archive")
    row = Chart("node-feature-discovery", "node-feature-discovery", record["published"]["repository"], "0.19.0", "nfd")
    (tmp_path / "node-feature-discovery-0.19.0.tgz.json").write_text(json.dumps(record))
    [problem] = check_folder([row], tmp_path)
    assert problem.startswith(f"node-feature-discovery-0.19.0.tgz: sha256 {sha256_of(archive)} is not the published")
    record["published"]["sha256"] = sha256_of(archive)
    (tmp_path / "node-feature-discovery-0.19.0.tgz.json").write_text(json.dumps(record))
    assert check_folder([row], tmp_path) == []


def test_a_malformed_record_names_its_file_and_field(tmp_path: Path) -> None:
    record = json.loads((CHARTS_DIR / "lws-v0.8.0.tgz.json").read_text())
    record["source"]["commit"] = "fc19b9a"
    record["obtainable"] = False
    (tmp_path / "lws-v0.8.0.tgz.json").write_text(json.dumps(record))
    (tmp_path / "broken.tgz.json").write_text("{")
    _, problems = load_records(tmp_path)
    assert problems == [
        "broken.tgz.json: not JSON (Expecting property name enclosed in double quotes, line 1)",
        "lws-v0.8.0.tgz.json: source.commit must be a full 40-hex commit, not 'fc19b9a'",
        "lws-v0.8.0.tgz.json: a chart that cannot be had at its pin needs a 'reason'",
    ]
