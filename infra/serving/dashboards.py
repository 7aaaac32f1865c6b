"""The Grafana dashboards the serving stack installs: the fleet's GPUs and each model's serving.

Dashboards are data here: each is a tuple of panels, each panel a title, a unit and its PromQL
targets, so the dashboards' JSON, `docs/telemetry.md` and the tests read one list. The ServingStack
installs each dashboard as a ConfigMap that kube-prometheus-stack's Grafana sidecar reads
(`dashboard_config_map`), labelled from the chart's values (`infra.serving.values`).

What the panels read, and whether the stack's Prometheus holds it:
- vLLM's own series, scraped through each deployment's PodMonitor
  (`infra.serving.autoscaling`), which copies the deployment's label onto every series;
- kube-state-metrics' series, scraped by the ServiceMonitor kube-prometheus-stack installs with it;
- the `modelplane_gpu_*` series, the one GPU schema for NVIDIA and AMD (`infra.serving.telemetry`).
  The collector serves them on its own Prometheus exporter, scraped through the PodMonitor the
  ServingStack creates for it (`infra.serving.telemetry.collector_pod_monitor_spec`), which keeps
  the labels the GPU exporters put on each series. The panels query these names, not the vendors'
  own series, which the stack's Prometheus does not hold.

This module builds data only: it creates no resources (the ServingStack does) and writes no
documentation (`tooling.dashboards_doc` does). Every query is plain PromQL with Grafana variables
only inside label matchers, so Prometheus itself can parse each one (`panel_queries`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from infra.config.model import ScalingMetric
from infra.serving.autoscaling import SERIES_DEPLOYMENT_LABEL, VLLM_METRICS
from infra.serving.telemetry import METRIC_MAPPINGS
from infra.serving.values import GRAFANA_DASHBOARD_NAMESPACES

# The Prometheus datasource kube-prometheus-stack provisions for its Grafana: name `Prometheus`,
# uid `prometheus`, the default datasource (values.yaml `grafana.sidecar.datasources.name`, `uid`,
# `isDefaultDatasource` and templates/grafana/configmaps-datasources.yaml @ kube-prometheus-stack-84.4.0).
DATASOURCE = {"type": "prometheus", "uid": "prometheus"}
# The Grafana folder the sidecar files our dashboards under (`values.GRAFANA_FOLDER_ANNOTATION`).
FOLDER = "Modelplane"
# Dashboard JSON model version written (Grafana's `schemaVersion`, which Grafana migrates forward);
# the one kube-prometheus-stack 84.4.0's own dashboards carry (templates/grafana/dashboards-1.14).
SCHEMA_VERSION = 39
# Rates and quantiles over a fixed window rather than Grafana's `$__rate_interval`, so every query
# stays PromQL that Prometheus parses as written: four scrapes of the 15s default interval and more.
WINDOW = "5m"

# The series of vLLM v0.23.0 the dashboards read, as its `/metrics` serves them: PrometheusStatLogger
# in vllm/v1/metrics/loggers.py of the v0.23.0 release (line numbers of PyPI's vllm-0.23.0 sdist),
# which builds them with prometheus_client's Counter, Gauge and Histogram (`_counter_cls` and so on,
# lines 405-407); in prometheus_client's exposition a Counter gains `_total` and a Histogram
# `_bucket`, `_sum` and `_count`:
# - the gauges `vllm:num_requests_running` (line 452), `vllm:num_requests_waiting` (462) and
#   `vllm:kv_cache_usage_perc` (520), the autoscaling triggers' series (`VLLM_METRICS`);
# - the counters `vllm:prompt_tokens` (629) and `vllm:generation_tokens` (663);
# - the histogram `vllm:time_to_first_token_seconds` (755).
# A stand-in for vLLM must serve each of these for the serving dashboard to show data.
VLLM_RUNNING = VLLM_METRICS[ScalingMetric.REQUESTS_RUNNING].name
VLLM_WAITING = VLLM_METRICS[ScalingMetric.REQUESTS_WAITING].name
VLLM_KV_CACHE = VLLM_METRICS[ScalingMetric.KV_CACHE_USAGE].name
VLLM_PROMPT_TOKENS = "vllm:prompt_tokens_total"
VLLM_GENERATION_TOKENS = "vllm:generation_tokens_total"
VLLM_TTFT_BUCKET = "vllm:time_to_first_token_seconds_bucket"
VLLM_SERIES: tuple[str, ...] = (
    VLLM_RUNNING,
    VLLM_WAITING,
    VLLM_KV_CACHE,
    VLLM_PROMPT_TOKENS,
    VLLM_GENERATION_TOKENS,
    VLLM_TTFT_BUCKET,
)

# kube-state-metrics v2.18.0's series (the appVersion of its chart 7.3.0, which kube-prometheus-stack
# 84.4.0 pins): docs/metrics/workload/horizontalpodautoscaler-metrics.md and deployment-metrics.md
# @ v2.18.0, labelled `horizontalpodautoscaler` / `deployment` and `namespace`.
KSM_SERIES: tuple[str, ...] = (
    "kube_horizontalpodautoscaler_status_current_replicas",
    "kube_horizontalpodautoscaler_status_desired_replicas",
    "kube_horizontalpodautoscaler_spec_min_replicas",
    "kube_horizontalpodautoscaler_spec_max_replicas",
    "kube_deployment_status_replicas",
)

# The one GPU schema, as the collector publishes it.
GPU_SERIES: tuple[str, ...] = tuple(dict.fromkeys(m.target for m in METRIC_MAPPINGS))

# KEDA names the HPA it creates for a ScaledObject `keda-hpa-<name>` (controllers/keda/hpa.go
# `getDefaultHpaName` @ kedacore/keda v2.20.2); a deployment's ScaledObject takes its name.
KEDA_HPA_PREFIX = "keda-hpa-"


@dataclass(frozen=True)
class Source:
    """Where a set of series comes from, and whether the stack's Prometheus holds it."""

    series: tuple[str, ...]
    exported_by: str
    scraped: bool
    how: str


SOURCES: dict[str, Source] = {
    "vllm": Source(
        VLLM_SERIES,
        "each vLLM server's `/metrics`",
        True,
        "each deployment's PodMonitor (`components.features.monitoring`)",
    ),
    "kube-state-metrics": Source(
        KSM_SERIES,
        "kube-state-metrics, installed by kube-prometheus-stack",
        True,
        "the ServiceMonitor kube-prometheus-stack installs with it",
    ),
    "collector": Source(
        GPU_SERIES,
        "the telemetry collector's Prometheus exporter",
        True,
        "the collector's PodMonitor, which the stack creates next to its release "
        "(`infra.serving.telemetry.collector_pod_monitor_spec`), honouring the exporters' labels",
    ),
}


@dataclass(frozen=True)
class Target:
    """One query of a panel and the legend of its series."""

    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    """One time-series panel: `unit` is Grafana's unit id (`percentunit` reads 0 to 1 as percent)."""

    title: str
    unit: str
    targets: tuple[Target, ...]
    description: str


@dataclass(frozen=True)
class Variable:
    """A dashboard variable whose values are a label's values on one series."""

    name: str
    label: str
    series: str
    selector: str = ""

    @property
    def query(self) -> str:
        return f"label_values({self.series}{{{self.selector}}}, {self.label})"


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    description: str
    source: tuple[str, ...]
    panels: tuple[Panel, ...]
    variables: tuple[Variable, ...] = ()


def _gpu(title: str, unit: str, expr: str, description: str) -> Panel:
    return Panel(title, unit, (Target(expr, "{{node}}"),), description)


FLEET_GPUS = Dashboard(
    uid="modelplane-fleet-gpus",
    title="Fleet GPUs",
    description=(
        "Every GPU of the fleet, NVIDIA and AMD, in the one `modelplane_gpu_*` schema the telemetry "
        "collector publishes, per node, scraped from the collector's exporter."
    ),
    source=("collector",),
    panels=(
        _gpu(
            "GPUs reporting",
            "none",
            "count by (node) (modelplane_gpu_temperature_celsius{})",
            "GPUs with a temperature series, per node: each GPU reports one.",
        ),
        _gpu(
            "Compute active",
            "percentunit",
            "avg by (node) (modelplane_gpu_compute_active_ratio{})",
            "Mean share of time the GPUs' compute engines are busy.",
        ),
        _gpu(
            "Tensor active",
            "percentunit",
            "avg by (node) (modelplane_gpu_tensor_active_ratio{})",
            "Mean tensor-pipe activity; NVIDIA only unless AMD profiler metrics are mapped.",
        ),
        _gpu(
            "Memory used",
            "bytes",
            "sum by (node) (modelplane_gpu_memory_used_bytes{})",
            "GPU memory in use.",
        ),
        _gpu(
            "Memory bandwidth",
            "percentunit",
            "avg by (node) (modelplane_gpu_memory_bandwidth_ratio{})",
            "Mean share of time the GPUs' memory is busy.",
        ),
        _gpu(
            "Temperature",
            "celsius",
            "max by (node) (modelplane_gpu_temperature_celsius{})",
            "The hottest GPU's die temperature.",
        ),
        _gpu(
            "Power",
            "watt",
            "sum by (node) (modelplane_gpu_power_watts{})",
            "GPU power draw.",
        ),
        _gpu(
            "Energy per hour",
            "joule",
            "sum by (node) (increase(modelplane_energy_joules_total{}[1h]))",
            "Energy the GPUs used over the last hour.",
        ),
    ),
)

# One deployment's series: the namespace and the deployment label the PodMonitor copies.
_SERVING = f'namespace="$namespace",{SERIES_DEPLOYMENT_LABEL}="$deployment"'
_HPA = f'namespace="$namespace",horizontalpodautoscaler="{KEDA_HPA_PREFIX}$deployment"'


def _ttft(quantile: str) -> Target:
    expr = f"histogram_quantile({quantile}, sum by (le) (rate({VLLM_TTFT_BUCKET}{{{_SERVING}}}[{WINDOW}])))"
    return Target(expr, f"p{quantile[2:]}")


MODEL_SERVING = Dashboard(
    uid="modelplane-model-serving",
    title="Model serving",
    description=(
        "One model deployment's serving, picked by namespace and deployment: vLLM's own series, "
        "scraped through the deployment's PodMonitor, and its replicas against the bounds of the "
        "HPA KEDA creates for its ScaledObject."
    ),
    source=("vllm", "kube-state-metrics"),
    variables=(
        Variable("namespace", "namespace", VLLM_RUNNING),
        Variable("deployment", SERIES_DEPLOYMENT_LABEL, VLLM_RUNNING, 'namespace="$namespace"'),
    ),
    panels=(
        Panel(
            "Requests running",
            "none",
            (Target(f"sum by (pod) ({VLLM_RUNNING}{{{_SERVING}}})", "{{pod}}"),),
            "Requests in the engines' running batches, per pod.",
        ),
        Panel(
            "Requests waiting",
            "none",
            (Target(f"sum by (pod) ({VLLM_WAITING}{{{_SERVING}}})", "{{pod}}"),),
            "Requests queued for a place in a running batch, per pod.",
        ),
        Panel(
            "KV-cache usage",
            "percentunit",
            (Target(f"avg by (pod) ({VLLM_KV_CACHE}{{{_SERVING}}})", "{{pod}}"),),
            "Share of the KV cache in use (vLLM reports 0 to 1), per pod.",
        ),
        Panel(
            "Time to first token",
            "s",
            (_ttft("0.50"), _ttft("0.95"), _ttft("0.99")),
            f"Quantiles of the time to a request's first token, over {WINDOW}.",
        ),
        Panel(
            "Token throughput",
            "short",
            (
                Target(f"sum(rate({VLLM_GENERATION_TOKENS}{{{_SERVING}}}[{WINDOW}]))", "generated tokens/s"),
                Target(f"sum(rate({VLLM_PROMPT_TOKENS}{{{_SERVING}}}[{WINDOW}]))", "prompt tokens/s"),
            ),
            f"Tokens per second, generated and prefilled, over {WINDOW}.",
        ),
        Panel(
            "Replicas and bounds",
            "none",
            (
                Target(f"kube_horizontalpodautoscaler_status_current_replicas{{{_HPA}}}", "current"),
                Target(f"kube_horizontalpodautoscaler_status_desired_replicas{{{_HPA}}}", "desired"),
                Target(f"kube_horizontalpodautoscaler_spec_min_replicas{{{_HPA}}}", "min"),
                Target(f"kube_horizontalpodautoscaler_spec_max_replicas{{{_HPA}}}", "max"),
                Target(
                    'kube_deployment_status_replicas{namespace="$namespace",deployment="$deployment"}',
                    "pods (Deployment)",
                ),
            ),
            "The HPA's replicas (pods of a Deployment, groups of a LeaderWorkerSet) against its bounds. "
            "KEDA gives the HPA a minimum of 1 when the ScaledObject's is 0, and scales to zero itself.",
        ),
    ),
)

DASHBOARDS: tuple[Dashboard, ...] = (FLEET_GPUS, MODEL_SERVING)


def panel_queries() -> Iterator[tuple[str, str, str]]:
    """`(dashboard title, panel title, expr)` for every target of every panel."""
    for dashboard in DASHBOARDS:
        for panel in dashboard.panels:
            for target in panel.targets:
                yield dashboard.title, panel.title, target.expr


def _ref(index: int) -> str:
    return chr(ord("A") + index)


def _panel_json(panel: Panel, index: int) -> dict[str, Any]:
    # Two panels a row, each half of Grafana's 24-column grid.
    width, height = 12, 8
    return {
        "id": index + 1,
        "type": "timeseries",
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": {"h": height, "w": width, "x": (index % 2) * width, "y": (index // 2) * height},
        "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
        "targets": [
            {"refId": _ref(i), "datasource": DATASOURCE, "expr": t.expr, "legendFormat": t.legend}
            for i, t in enumerate(panel.targets)
        ],
    }


def _variable_json(variable: Variable) -> dict[str, Any]:
    return {
        "name": variable.name,
        "label": variable.name,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": variable.query, "refId": f"{variable.name}-values"},
        "definition": variable.query,
        # Refresh the values when the time range changes, so new deployments appear.
        "refresh": 2,
        "includeAll": False,
        "multi": False,
        "sort": 1,
    }


def dashboard_json(dashboard: Dashboard) -> dict[str, Any]:
    """The dashboard in Grafana's JSON model, as the sidecar hands it to Grafana's file provider."""
    return {
        "uid": dashboard.uid,
        "title": dashboard.title,
        "description": dashboard.description,
        "tags": ["modelplane"],
        "schemaVersion": SCHEMA_VERSION,
        "editable": False,
        "timezone": "utc",
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [_variable_json(v) for v in dashboard.variables]},
        "panels": [_panel_json(p, i) for i, p in enumerate(dashboard.panels)],
    }


def sidecar_settings(kps_values: Mapping[str, Any]) -> Mapping[str, Any]:
    """The dashboard sidecar's settings in kube-prometheus-stack's values."""
    settings: Mapping[str, Any] = kps_values["grafana"]["sidecar"]["dashboards"]
    return settings


def config_map_name(dashboard: Dashboard) -> str:
    return f"{dashboard.uid}-dashboard"


def dashboard_config_map(dashboard: Dashboard, kps_values: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The ConfigMap that holds one dashboard, labelled as the sidecar in `kps_values` reads, in
    `namespace` (kube-prometheus-stack's, where Grafana runs; the sidecar searches every namespace)."""
    sidecar = sidecar_settings(kps_values)
    annotations = {sidecar["folderAnnotation"]: FOLDER} if sidecar.get("folderAnnotation") else {}
    return {
        "metadata": {
            "name": config_map_name(dashboard),
            "namespace": namespace,
            "labels": {sidecar["label"]: sidecar["labelValue"]},
            "annotations": annotations,
        },
        "data": {f"{dashboard.uid}.json": json.dumps(dashboard_json(dashboard), indent=1, sort_keys=True)},
    }


def searched(kps_values: Mapping[str, Any], namespace: str, grafana_namespace: str) -> bool:
    """Whether the sidecar in `kps_values`, running in `grafana_namespace`, searches `namespace`.

    Unset, it searches its own namespace only; `ALL` means every namespace
    (charts/grafana/values.yaml `sidecar.dashboards.searchNamespace` @ grafana-12.3.0)."""
    where = sidecar_settings(kps_values).get("searchNamespace")
    if where is None:
        return namespace == grafana_namespace
    if where == GRAFANA_DASHBOARD_NAMESPACES:
        return True
    return namespace in (where if isinstance(where, list) else [where])
