"""The records of the serving stack's charts in `charts/`: where each pinned chart comes from.

One record per catalog chart and version, `<chart>-<version>.tgz.json` beside the archive a
mirror serves: the chart's source repository, tag, commit, folder and license, the release
packaging its project applies, the Helm repository that publishes it and, where that
repository's own index publishes one, the archive's sha256. A record whose chart cannot be had
at the pin says so (`obtainable: false`) with the reason. `charts/README.md` says how a mirror is
filled from them.

This module reads and checks records; it never downloads a chart.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.serving.chart import Chart

CHARTS_DIR = Path(__file__).resolve().parents[1] / "charts"

RECORD_SUFFIX = ".tgz.json"
_SOURCE_KEYS = ("repository", "tag", "commit", "path", "license")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ChartRecord:
    chart: str
    version: str
    published_repository: str
    sha256: str | None
    obtainable: bool
    fields: Mapping[str, Any]

    @property
    def archive_name(self) -> str:
        return archive_name(self.chart, self.version)


def archive_name(chart: str, version: str) -> str:
    """The file name `helm package` gives a chart's archive."""
    return f"{chart}-{version}.tgz"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_problems(name: str, data: Any) -> list[str]:
    """What is wrong with one record's content, each naming the record file and the field."""
    if not isinstance(data, dict):
        return [f"{name}: a record is a JSON object"]
    problems: list[str] = []
    chart, version = data.get("chart"), data.get("version")
    if not (isinstance(chart, str) and isinstance(version, str)):
        return [f"{name}: 'chart' and 'version' must be strings"]
    if name != archive_name(chart, version) + ".json":
        problems.append(f"{name}: names {chart} {version}; rename it {archive_name(chart, version)}.json")
    source = data.get("source")
    if not isinstance(source, dict):
        problems.append(f"{name}: 'source' must be an object with {', '.join(_SOURCE_KEYS)}")
    else:
        problems += [f"{name}: source.{k} is missing" for k in _SOURCE_KEYS if not source.get(k)]
        if source.get("commit") and not _COMMIT.fullmatch(str(source["commit"])):
            problems.append(f"{name}: source.commit must be a full 40-hex commit, not {source['commit']!r}")
    published = data.get("published")
    if not isinstance(published, dict) or not published.get("repository"):
        problems.append(f"{name}: 'published.repository' names the Helm repository that publishes the chart")
    elif published.get("sha256") is not None and not _SHA256.fullmatch(str(published["sha256"])):
        problems.append(f"{name}: published.sha256 must be 64 lowercase hex digits")
    if not isinstance(data.get("obtainable"), bool):
        problems.append(f"{name}: 'obtainable' must be true or false")
    elif not data["obtainable"] and not data.get("reason"):
        problems.append(f"{name}: a chart that cannot be had at its pin needs a 'reason'")
    if not data.get("packaging"):
        problems.append(f"{name}: 'packaging' says which release-packaging step applies, or 'None'")
    return problems


def load_records(folder: Path = CHARTS_DIR) -> tuple[dict[tuple[str, str], ChartRecord], list[str]]:
    """Every record in the folder by (chart, version), and the problems found reading them."""
    records: dict[tuple[str, str], ChartRecord] = {}
    problems: list[str] = []
    for path in sorted(folder.glob("*" + RECORD_SUFFIX)):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            problems.append(f"{path.name}: not JSON ({e.msg}, line {e.lineno})")
            continue
        found = record_problems(path.name, data)
        problems += found
        if found:
            continue
        records[(data["chart"], data["version"])] = ChartRecord(
            chart=data["chart"],
            version=data["version"],
            published_repository=data["published"]["repository"],
            sha256=data["published"].get("sha256"),
            obtainable=data["obtainable"],
            fields=data,
        )
    return records, problems


def check_folder(components: Iterable[Chart], folder: Path = CHARTS_DIR) -> list[str]:
    """The records against the catalog, and any archive in the folder against its record.

    Every catalog chart at its pinned version has a record from the same repository; no record
    is left for a chart the catalog no longer pins; an archive present whose record carries a
    published sha256 has exactly that sha256 (an archive is checked, never trusted).
    """
    records, problems = load_records(folder)
    pinned = {(c.chart, c.version): c for c in components}
    for (chart, version), component in sorted(pinned.items()):
        record = records.get((chart, version))
        if record is None:
            problems.append(
                f"{archive_name(chart, version)}.json is missing: record where {chart} {version} comes from"
            )
        elif record.published_repository != component.repo:
            problems.append(
                f"{record.archive_name}.json: published.repository is {record.published_repository}, "
                f"the catalog's row says {component.repo}"
            )
    for key, record in sorted(records.items()):
        if key not in pinned:
            problems.append(f"{record.archive_name}.json: no catalog row pins {key[0]} {key[1]}; delete the record")
        archive = folder / record.archive_name
        if archive.exists() and record.sha256 is not None and sha256_of(archive) != record.sha256:
            problems.append(
                f"{record.archive_name}: sha256 {sha256_of(archive)} is not the published {record.sha256}; "
                "pull the archive again from the published repository"
            )
    return problems
