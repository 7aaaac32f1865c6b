"""The Grafana dashboards the serving stack installs: what their panels query, and how Grafana finds them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import pytest

from clouds import SOURCES
from infra.serving import dashboards
from infra.serving.autoscaling import PROMETHEUS_COMPONENT, VLLM_METRICS
from infra.serving.catalog import CATALOG
from infra.serving.dashboards import (
    DASHBOARDS,
    DATASOURCE,
    GPU_SERIES,
    KSM_SERIES,
    VLLM_SERIES,
    dashboard_config_map,
    dashboard_json,
    panel_queries,
    searched,
)
from infra.serving.telemetry import (
    COMPONENT,
    METRIC_MAPPINGS,
    PROMETHEUS_EXPORTER_PORT,
    collector_pod_labels,
    collector_pod_monitor_spec,
)
from infra.serving.values import kube_prometheus_stack
from tests.conftest import of_type, run_fleet
from tests.test_autoscaling import OWN_PROMETHEUS, POD_MONITOR, RELEASE
from tests.test_model_deployment import lab_fleet
from tests.test_serving_stack import AMD_BYO, existing_fleet, run_existing
from tooling.plan import plain

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"

# Every series a panel may read: what vLLM v0.23.0 serves (and a stand-in for it must), the one GPU
# schema the collector publishes, and kube-state-metrics'.
KNOWN_SERIES = {*VLLM_SERIES, *(m.target for m in METRIC_MAPPINGS), *KSM_SERIES}
# The PromQL words the queries use beside series and label names.
PROMQL_WORDS = {"sum", "avg", "max", "count", "by", "rate", "increase", "histogram_quantile"}
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"


def series_in(expr: str) -> set[str]:
    """The series an expression selects: every name written before a `{` matcher list."""
    return set(re.findall(rf"({NAME})\{{", expr))


def bare_words(expr: str) -> set[str]:
    """The names an expression holds outside matchers and `by (...)` lists: functions, keywords and
    any series written without `{...}`, which `series_in` would miss."""
    stripped = re.sub(r"\{[^}]*\}", "{}", expr)
    stripped = re.sub(r"by \([^)]*\)", "by ()", stripped)
    stripped = re.sub(r"\[[^]]*\]", "[]", stripped)
    return set(re.findall(NAME, stripped)) - series_in(stripped)


def kps_values(cloud: str = "Existing") -> Mapping[str, Any]:
    return kube_prometheus_stack(cloud)


# --------------------------------------------------------------------------------------------
# Panels


def test_every_panel_query_reads_only_series_that_exist() -> None:
    for dashboard, panel, expr in panel_queries():
        assert series_in(expr), (dashboard, panel, expr)
        assert series_in(expr) <= KNOWN_SERIES, (dashboard, panel, series_in(expr) - KNOWN_SERIES)
        assert bare_words(expr) <= PROMQL_WORDS, (dashboard, panel, bare_words(expr) - PROMQL_WORDS)


def test_a_misspelt_series_is_caught() -> None:
    # The check above must be able to fail: vLLM's pre-v1 cache gauge, and a series left bare.
    assert series_in("avg(vllm:gpu_cache_usage_perc{})") - KNOWN_SERIES == {"vllm:gpu_cache_usage_perc"}
    assert bare_words("sum(rate(vllm:generation_tokens_total[5m]))") - PROMQL_WORDS == {"vllm:generation_tokens_total"}


def test_every_panel_has_a_title_a_unit_and_a_query() -> None:
    for dashboard in DASHBOARDS:
        for panel in dashboard.panels:
            assert panel.title and panel.unit and panel.description, panel
            assert panel.targets and all(t.expr and t.legend for t in panel.targets), panel


def test_panel_titles_are_unique_within_a_dashboard() -> None:
    for dashboard in DASHBOARDS:
        titles = [p.title for p in dashboard.panels]
        assert len(titles) == len(set(titles)), dashboard.title


def test_panel_queries_lists_every_target_once() -> None:
    listed = list(panel_queries())
    assert len(listed) == sum(len(p.targets) for d in DASHBOARDS for p in d.panels)
    assert {d for d, _, _ in listed} == {"Fleet GPUs", "Model serving"}


def test_queries_carry_grafana_variables_only_inside_label_matchers() -> None:
    # So each parses as PromQL as written: `$__rate_interval` or a variable range would not.
    for dashboard, panel, expr in panel_queries():
        outside = re.sub(r"\{[^}]*\}", "{}", expr)
        assert "$" not in outside, (dashboard, panel, expr)


def test_vllm_series_are_the_autoscaling_gauges_and_the_v0_23_0_counters_and_histogram() -> None:
    assert {m.name for m in VLLM_METRICS.values()} <= set(VLLM_SERIES)
    assert set(VLLM_SERIES) == {
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:time_to_first_token_seconds_bucket",
    }


def test_gpu_dashboard_reads_every_series_of_the_one_gpu_schema_and_nothing_vendor_specific() -> None:
    exprs = [t.expr for p in dashboards.FLEET_GPUS.panels for t in p.targets]
    read = set().union(*(series_in(e) for e in exprs))
    assert read == set(GPU_SERIES)
    sources = {m.source for m in METRIC_MAPPINGS}
    assert not any(s in e for s in sources for e in exprs)


def test_serving_panels_select_one_deployment_by_the_label_the_pod_monitor_copies() -> None:
    for panel in dashboards.MODEL_SERVING.panels:
        for target in panel.targets:
            if series_in(target.expr) <= set(VLLM_SERIES):
                assert 'namespace="$namespace",modelplane_ai_deployment="$deployment"' in target.expr, panel.title


def test_replicas_are_read_from_the_hpa_keda_creates_for_the_deployments_scaled_object() -> None:
    panel = next(p for p in dashboards.MODEL_SERVING.panels if p.title == "Replicas and bounds")
    hpa = [t.expr for t in panel.targets if t.expr.startswith("kube_horizontalpodautoscaler_")]
    assert len(hpa) == 4
    assert all('horizontalpodautoscaler="keda-hpa-$deployment"' in e for e in hpa)


def test_the_gpu_dashboard_reads_the_collectors_series() -> None:
    assert set(dashboards.SOURCES["collector"].series) == set(GPU_SERIES)
    assert dashboards.FLEET_GPUS.source == ("collector",)


def collector_monitor(result: Any) -> dict[str, Any] | None:
    """The PodMonitor the stack plans for the collector, with its metadata and spec, if any."""
    found = [r for r in of_type(result, POD_MONITOR) if r.name.endswith("-collector-podmonitor")]
    assert len(found) <= 1
    return (
        {"metadata": plain(found[0].inputs["metadata"]), "spec": plain(found[0].inputs["spec"]), "reg": found[0]}
        if found
        else None
    )


def scraped_by_the_stack(source: str, result: Any) -> bool:
    """Whether the stack planned in `result` has its Prometheus scrape `source`'s exporter: a
    PodMonitor per deployment (vLLM), the chart's own ServiceMonitor (kube-state-metrics, on by
    default in kube-prometheus-stack 84.4.0 values.yaml `kubeStateMetrics.enabled`), the collector's
    PodMonitor selecting the collector's pods at its exporter's port."""
    if source == "vllm":
        return any(r.name.endswith("-podmonitor") and "collector" not in r.name for r in of_type(result, POD_MONITOR))
    if source == "kube-state-metrics":
        row = prometheus_row()
        return any(r.inputs["name"] == row.release for r in of_type(result, RELEASE)) and row.values.get(
            "kubeStateMetrics", {}
        ).get("enabled", True)
    if source == "collector":
        monitor = collector_monitor(result)
        row = collector_row()
        if monitor is None or not any(r.inputs["name"] == row.release for r in of_type(result, RELEASE)):
            return False
        (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
        ports = row.values["ports"]
        return (
            monitor["metadata"]["namespace"] == row.namespace
            and monitor["spec"]["selector"]["matchLabels"] == collector_pod_labels(row.release)
            and ports[endpoint["port"]]["enabled"]
            and ports[endpoint["port"]]["containerPort"] == PROMETHEUS_EXPORTER_PORT
            and endpoint["honorLabels"] is True
        )
    raise AssertionError(f"no check for the source {source}")


def test_every_dashboard_source_is_scraped_by_something_the_stack_installs() -> None:
    result = run_fleet(lab_fleet())
    assert result.error is None, result.error
    assert {d for dashboard in DASHBOARDS for d in dashboard.source} <= set(dashboards.SOURCES)
    for key, source in dashboards.SOURCES.items():
        assert source.scraped, key
        assert scraped_by_the_stack(key, result), key


def test_the_collector_check_fails_without_the_collectors_pod_monitor() -> None:
    # The check above must be able to fail: an owner's kube-prometheus-stack no one names.
    raw = lab_fleet()
    raw["clusters"][0]["existing"]["preinstalled"] = [PROMETHEUS_COMPONENT]
    result = run_fleet(raw)
    assert result.error is None, result.error
    assert collector_monitor(result) is None
    assert not scraped_by_the_stack("collector", result)


def test_the_collectors_pod_monitor_keeps_the_exporters_workload_labels() -> None:
    # The GPU series carry the `pod`/`namespace`/`container` of the workload using the GPU; the
    # target's own (the collector's) are dropped, not written over them.
    (endpoint,) = collector_pod_monitor_spec("r")["podMetricsEndpoints"]
    assert endpoint["honorLabels"] is True
    assert endpoint["relabelings"] == [{"action": "labeldrop", "regex": "namespace|pod|container"}]


def test_the_collectors_pod_monitor_waits_for_the_collector_and_the_crd() -> None:
    result = run_fleet(lab_fleet())
    monitor = collector_monitor(result)
    assert monitor is not None
    releases = {r.inputs["name"]: r.urn for r in of_type(result, RELEASE)}
    for row in (collector_row(), prometheus_row()):
        assert releases[row.release] in monitor["reg"].dependencies
    assert "labels" not in monitor["metadata"] or not monitor["metadata"]["labels"]


def test_on_an_owners_prometheus_the_collectors_pod_monitor_carries_its_labels() -> None:
    raw = lab_fleet()
    raw["clusters"][0]["existing"]["preinstalled"] = [PROMETHEUS_COMPONENT]
    raw["clusters"][0]["existing"]["prometheus"] = OWN_PROMETHEUS
    result = run_fleet(raw)
    assert result.error is None, result.error
    monitor = collector_monitor(result)
    assert monitor is not None
    assert monitor["metadata"]["labels"] == OWN_PROMETHEUS["podMonitorLabels"]
    assert scraped_by_the_stack("collector", result)


# --------------------------------------------------------------------------------------------
# Dashboard JSON


def test_dashboards_are_json_with_unique_uids_and_the_charts_datasource() -> None:
    uids = [d.uid for d in DASHBOARDS]
    assert len(uids) == len(set(uids))
    for dashboard in DASHBOARDS:
        model = json.loads(json.dumps(dashboard_json(dashboard)))
        assert (model["uid"], model["title"]) == (dashboard.uid, dashboard.title)
        assert len(model["uid"]) <= 40  # Grafana's limit on a dashboard uid
        for panel in model["panels"]:
            assert panel["datasource"] == DATASOURCE
            assert panel["fieldConfig"]["defaults"]["unit"]
            assert [t["refId"] for t in panel["targets"]] == [chr(65 + i) for i in range(len(panel["targets"]))]
            assert all(t["expr"] and t["datasource"] == DATASOURCE for t in panel["targets"])
        assert [p["id"] for p in model["panels"]] == list(range(1, len(model["panels"]) + 1))


def test_datasource_is_the_one_kube_prometheus_stack_provisions() -> None:
    # values.yaml `grafana.sidecar.datasources.uid: prometheus` @ kube-prometheus-stack-84.4.0; our
    # values leave it at that default.
    assert "datasources" not in kps_values()["grafana"]["sidecar"]
    assert DATASOURCE == {"type": "prometheus", "uid": "prometheus"}


def test_serving_variables_list_namespaces_then_deployments_from_vllm_series() -> None:
    variables = dashboard_json(dashboards.MODEL_SERVING)["templating"]["list"]
    assert [v["name"] for v in variables] == ["namespace", "deployment"]
    assert variables[1]["query"]["query"] == (
        'label_values(vllm:num_requests_running{namespace="$namespace"}, modelplane_ai_deployment)'
    )


# --------------------------------------------------------------------------------------------
# Grafana in kube-prometheus-stack, and the ConfigMaps its sidecar reads


@pytest.mark.parametrize("cloud", SOURCES)
def test_grafana_is_on_with_no_admin_password(cloud: str) -> None:
    grafana = kps_values(cloud)["grafana"]
    assert grafana["enabled"] is True
    # Left unset, the chart generates one into its Secret; set, it would sit in the plan and the state.
    assert not {"adminPassword", "admin"} & set(grafana)
    assert "GF_SECURITY_ADMIN_PASSWORD" not in json.dumps(grafana)
    assert "defaultDashboardsEnabled" not in grafana  # the chart's own dashboards stay on


@pytest.mark.parametrize("dashboard", DASHBOARDS, ids=lambda d: d.uid)
def test_config_map_carries_the_sidecars_label_and_folder_from_our_values(dashboard: dashboards.Dashboard) -> None:
    values = kps_values()
    sidecar = values["grafana"]["sidecar"]["dashboards"]
    cm = dashboard_config_map(dashboard, values, "monitoring")
    assert cm["metadata"]["labels"] == {sidecar["label"]: sidecar["labelValue"]}
    assert cm["metadata"]["annotations"] == {sidecar["folderAnnotation"]: dashboards.FOLDER}
    assert sidecar["provider"]["foldersFromFilesStructure"] is True
    assert searched(values, cm["metadata"]["namespace"], "monitoring")
    (name, text), *rest = cm["data"].items()
    assert not rest and name == f"{dashboard.uid}.json"
    assert json.loads(text) == dashboard_json(dashboard)


def test_config_map_follows_a_change_of_the_sidecars_label() -> None:
    values = json.loads(json.dumps(kps_values()))
    values["grafana"]["sidecar"]["dashboards"].update(label="team_dashboard", labelValue="yes")
    cm = dashboard_config_map(DASHBOARDS[0], values, "monitoring")
    assert cm["metadata"]["labels"] == {"team_dashboard": "yes"}


def test_sidecar_searches_its_own_namespace_when_unset_and_the_listed_ones_otherwise() -> None:
    values = json.loads(json.dumps(kps_values()))
    assert searched(values, "ml-team", "monitoring")  # ALL
    values["grafana"]["sidecar"]["dashboards"]["searchNamespace"] = None
    assert searched(values, "monitoring", "monitoring") and not searched(values, "ml-team", "monitoring")
    values["grafana"]["sidecar"]["dashboards"]["searchNamespace"] = ["ml-team"]
    assert searched(values, "ml-team", "monitoring") and not searched(values, "monitoring", "monitoring")


def prometheus_row() -> Any:
    return next(c for c in CATALOG["Existing"] if c.key == PROMETHEUS_COMPONENT)


def collector_row() -> Any:
    return next(c for c in CATALOG["Existing"] if c.key == COMPONENT)


def test_stack_installs_one_labelled_config_map_per_dashboard_after_kube_prometheus_stack() -> None:
    result = run_existing(AMD_BYO)
    maps = {r.inputs["metadata"]["name"]: r for r in of_type(result, CONFIG_MAP)}
    assert set(maps) == {f"{d.uid}-dashboard" for d in DASHBOARDS}
    row = prometheus_row()
    sidecar = row.values["grafana"]["sidecar"]["dashboards"]
    release = next(r for r in of_type(result, "kubernetes:helm.sh/v3:Release") if r.inputs["name"] == row.release)
    for cm in maps.values():
        assert cm.inputs["metadata"]["namespace"] == row.namespace
        assert cm.inputs["metadata"]["labels"] == {sidecar["label"]: sidecar["labelValue"]}
        assert release.urn in cm.dependencies
        assert cm.parent == "byo-stack"


def test_owner_run_kube_prometheus_stack_gets_no_dashboards() -> None:
    fleet = existing_fleet(AMD_BYO)
    fleet["clusters"][0]["existing"]["preinstalled"] = [PROMETHEUS_COMPONENT]
    result = run_fleet(fleet)
    assert result.error is None, result.error
    assert of_type(result, CONFIG_MAP) == []
