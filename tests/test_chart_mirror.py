"""`modelplane:chartMirror`: its forms, its bad inputs, the releases it changes, and how the plan shows it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.serving_stack import planned_release, release_args
from infra.config.issues import ConfigError
from infra.config.model import ChartMirror
from infra.config.stackfile import load_stack_file
from infra.serving.catalog import CATALOG, cluster_charts
from infra.serving.chart import Chart
from infra.serving.mirror import served_from
from policies.resource_rules import mirror_chart_version, pinned_versions
from tests.conftest import cpu_cluster_fleet, of_type, run_fleet
from tests.policy_harness import resource_args, run
from tooling.plan import plan_stack
from tooling.render import source_text

ROOT = Path(__file__).resolve().parents[1]
BYO = ROOT / "stacks" / "Pulumi.byo-amd.yaml"
HTTP = "https://charts.example.internal"
OCI = "oci://registry.example.internal/charts"


def row(key: str, cloud: str = "Existing") -> Chart:
    return next(c for c in CATALOG[cloud] if c.key == key)


def mirror(value: Any) -> ChartMirror:
    return ChartMirror.model_validate(value)


def stack_with(tmp_path: Path, chart_mirror: Any, name: str = "mirrored") -> Path:
    doc = yaml.safe_load(BYO.read_text())
    doc["config"]["modelplane:chartMirror"] = chart_mirror
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def issues_of(tmp_path: Path, chart_mirror: Any) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as err:
        load_stack_file(stack_with(tmp_path, chart_mirror))
    assert all(i.file.endswith("Pulumi.mirrored.yaml") for i in err.value.issues)
    return [(i.path, i.problem, i.fix) for i in err.value.issues]


# --- where a chart comes from


def test_without_a_mirror_every_row_keeps_its_public_repository() -> None:
    cert_manager = row("cert-manager")
    assert served_from(cert_manager, None) is cert_manager
    assert cert_manager.chart_source == {
        "from": "public",
        "publicRepo": "https://charts.jetstack.io",
        "pinnedVersion": "v1.20.2",
    }


def test_an_http_mirror_serves_an_http_chart_by_name_from_the_mirror() -> None:
    args = release_args(served_from(row("cert-manager"), mirror(HTTP)), wait=True)
    assert args["chart"] == "cert-manager"
    assert args["version"] == "v1.20.2"
    assert args["repository_opts"].repo == HTTP


def test_an_http_mirror_serves_an_oci_chart_by_name_too() -> None:
    # The row's own repository is an OCI registry; from an HTTP mirror its chart is a name in that repository.
    args = release_args(served_from(row("leader-worker-set"), mirror(HTTP)), wait=False)
    assert args["chart"] == "lws"
    assert args["repository_opts"].repo == HTTP


def test_an_oci_mirror_addresses_each_chart_under_its_prefix() -> None:
    for key in ("cert-manager", "leader-worker-set"):
        args = release_args(served_from(row(key), mirror(OCI + "/")), wait=False)
        assert args["chart"] == f"{OCI}/{row(key).chart}"
        assert args["repository_opts"] is None


def test_a_component_entry_overrides_the_mirror_and_may_name_its_served_version() -> None:
    m = mirror(
        {
            "url": HTTP,
            "components": {"dra-driver-cpu": {"url": OCI, "version": "0.2.0"}, "cert-manager": {"version": "v1.20.3"}},
        }
    )
    cpu = served_from(row("dra-driver-cpu"), m)
    assert (cpu.repo, cpu.version) == (OCI, "0.2.0")
    assert cpu.chart_source == {
        "from": "mirror",
        "publicRepo": "oci://registry.k8s.io/dra-driver-cpu/charts",
        "pinnedVersion": "0.3.0",
    }
    cert_manager = served_from(row("cert-manager"), m)
    assert (cert_manager.repo, cert_manager.version) == (HTTP, "v1.20.3")
    assert served_from(row("leader-worker-set"), m).repo == HTTP


def test_components_alone_mirror_only_those_components() -> None:
    m = mirror({"components": {"cert-manager": HTTP}})
    assert served_from(row("cert-manager"), m).repo == HTTP
    lws = row("leader-worker-set")
    assert served_from(lws, m) is lws


def test_the_stack_file_mirror_reaches_every_release_of_the_cluster(tmp_path: Path) -> None:
    stack = load_stack_file(stack_with(tmp_path, OCI))
    from infra.facts import derive_fleet

    [facts] = derive_fleet(stack.fleet)
    components = cluster_charts(facts)
    assert components and all(c.mirrored and c.repo == OCI for c in components)
    planned = planned_release(components[0], wait=True)
    assert planned["chart"] == f"{OCI}/{components[0].chart}"
    assert planned["chartSource"]["from"] == "mirror"


# --- bad input


def test_a_mirror_of_another_scheme_is_refused_with_the_forms_helm_reads(tmp_path: Path) -> None:
    [(path, problem, fix)] = issues_of(tmp_path, "ftp://charts.example.internal")
    assert path == "chartMirror.url"
    assert "is not an http://, https:// or oci:// URL" in problem
    assert "HTTP(S) chart repository or an OCI registry" in problem + fix


@pytest.mark.parametrize(
    ("value", "path"),
    [("", "chartMirror.url"), ({"url": "  "}, "chartMirror.url")],
)
def test_an_empty_mirror_url_is_refused(tmp_path: Path, value: Any, path: str) -> None:
    [(found, problem, _)] = issues_of(tmp_path, value)
    assert found == path
    assert "the URL is empty" in problem


def test_a_mirror_naming_nothing_is_refused(tmp_path: Path) -> None:
    [(path, problem, _)] = issues_of(tmp_path, {"components": {}})
    assert path == "chartMirror"
    assert "names no mirror" in problem


def test_a_url_without_a_host_is_refused(tmp_path: Path) -> None:
    [(_, problem, _)] = issues_of(tmp_path, "oci://")
    assert "names no host" in problem


def test_an_unknown_component_names_the_closest_ones(tmp_path: Path) -> None:
    [(path, problem, fix)] = issues_of(tmp_path, {"url": HTTP, "components": {"certmanager": HTTP}})
    assert path == "chartMirror.components.certmanager"
    assert problem == "'certmanager' is not a serving-stack component"
    assert fix.startswith("did you mean 'cert-manager'")
    assert "dra-driver-cpu" in fix  # the fix lists the components


@pytest.mark.parametrize("version", ["^0.3.0", "0.3", "0.3.x", "latest", ">=0.3.0"])
def test_a_version_that_is_not_exact_is_refused(tmp_path: Path, version: str) -> None:
    [(path, problem, _)] = issues_of(tmp_path, {"url": HTTP, "components": {"dra-driver-cpu": {"version": version}}})
    assert path == "chartMirror.components.dra-driver-cpu.version"
    assert "is not an exact chart version" in problem


def test_a_version_with_no_mirror_to_serve_it_is_refused(tmp_path: Path) -> None:
    [(path, problem, fix)] = issues_of(tmp_path, {"components": {"dra-driver-cpu": {"version": "0.2.0"}}})
    assert path == "chartMirror.components.dra-driver-cpu.version"
    assert "no mirror serves it" in problem
    assert "chartMirror.components.dra-driver-cpu.url" in fix


def test_an_entry_naming_neither_url_nor_version_is_refused(tmp_path: Path) -> None:
    [(path, problem, _)] = issues_of(tmp_path, {"url": HTTP, "components": {"leader-worker-set": {}}})
    assert path == "chartMirror.components.leader-worker-set"
    assert "names neither url nor version" in problem


# --- the plan and the pack


def test_the_plan_shows_where_each_chart_comes_from(tmp_path: Path) -> None:
    chart_mirror = {"url": HTTP, "components": {"dra-driver-cpu": {"url": OCI, "version": "0.2.0"}}}
    doc = plan_stack(stack_with(tmp_path, chart_mirror))
    assert doc["ok"], doc["errors"]
    releases = {r["name"]: r for r in doc["clusters"][0]["releases"]}
    cpu = releases["mp-dra-driver-cpu"]
    assert (cpu["repo"], cpu["version"]) == (OCI, "0.2.0")
    assert cpu["chartSource"] == {
        "from": "mirror",
        "publicRepo": "oci://registry.k8s.io/dra-driver-cpu/charts",
        "pinnedVersion": "0.3.0",
    }
    assert source_text(cpu) == (
        f"from mirror {OCI} (instead of oci://registry.k8s.io/dra-driver-cpu/charts, pinned 0.3.0)"
    )
    cert_manager = releases["mp-cert-manager"]
    assert cert_manager["repo"] == HTTP and cert_manager["chartSource"]["from"] == "mirror"
    assert source_text(cert_manager) == f"from mirror {HTTP} (instead of https://charts.jetstack.io)"
    # The served version differs from the pin: an advisory names the component and both versions.
    [advisory] = [v for v in doc["violations"] if v["policy"] == "mirror-chart-version"]
    assert advisory["enforcement"] == "advisory"
    assert "component dra-driver-cpu" in advisory["message"]
    assert "0.2.0 from the mirror" in advisory["message"] and "not the pinned 0.3.0" in advisory["message"]
    assert "checked against 0.3.0 only" in advisory["message"]


def test_a_plan_without_a_mirror_says_each_chart_is_public(tmp_path: Path) -> None:
    doc = plan_stack(BYO)
    releases = doc["clusters"][0]["releases"]
    assert releases and all(r["chartSource"]["from"] == "public" for r in releases)
    assert all(r["repo"] == r["chartSource"]["publicRepo"] for r in releases)
    assert not [v for v in doc["violations"] if v["policy"] == "mirror-chart-version"]


def mirrored_release(version: str, pinned: str, source: str = "mirror") -> dict[str, Any]:
    props = planned_release(served_from(row("dra-driver-cpu"), mirror(OCI)), wait=False)
    return copy.deepcopy(
        {**props, "version": version, "chartSource": {**props["chartSource"], "from": source, "pinnedVersion": pinned}}
    )


def test_the_mirror_version_policy_passes_a_mirror_serving_the_pin() -> None:
    props = mirrored_release("0.3.0", "0.3.0")
    assert run(mirror_chart_version, resource_args("kubernetes:helm.sh/v3:Release", props, name="r")) == []


def test_the_mirror_version_policy_reports_another_version() -> None:
    props = mirrored_release("0.2.0", "0.3.0")
    [message] = run(mirror_chart_version, resource_args("kubernetes:helm.sh/v3:Release", props, name="r"))
    assert "not the pinned 0.3.0" in message


def test_pinned_versions_still_checks_a_mirrored_release() -> None:
    props = mirrored_release("0.2.x", "0.3.0")
    [message] = run(pinned_versions, resource_args("kubernetes:helm.sh/v3:Release", props, name="r"))
    assert "pin an exact chart version" in message


def test_the_program_registers_each_release_from_the_mirror() -> None:
    raw = cpu_cluster_fleet("Existing", "lab")
    raw["chartMirror"] = {"url": HTTP, "components": {"dra-driver-cpu": OCI}}
    result = run_fleet(raw)
    assert result.error is None, result.error
    releases = {r.name: r.inputs for r in of_type(result, "kubernetes:helm.sh/v3:Release")}
    assert releases["lab-stack-dra-driver-cpu"]["chart"] == f"{OCI}/dra-driver-cpu"
    assert "repositoryOpts" not in releases["lab-stack-dra-driver-cpu"]
    assert releases["lab-stack-cert-manager"]["chart"] == "cert-manager"
    assert releases["lab-stack-cert-manager"]["repositoryOpts"] == {"repo": HTTP}
