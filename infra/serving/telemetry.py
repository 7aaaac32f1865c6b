"""Telemetry: one set of GPU metrics across NVIDIA and AMD, collected on every cluster.

Every cluster runs one OpenTelemetry collector (the upstream `opentelemetry-collector` chart, a
catalog row like any other). It scrapes the inference engines, NVIDIA's dcgm-exporter, the AMD GPU
operator's device-metrics-exporter and the annotated substrate, and renames both vendors' GPU
series onto the same `modelplane_gpu_*` names with the units the names promise. The mapping is the
table `METRIC_MAPPINGS`; the transform statements are rendered from it, and so is
`docs/telemetry.md` (`tooling.telemetry_doc`).

This module builds Helm values, and the spec of the PodMonitor through which a Prometheus scrapes
the collector's exporter (`collector_pod_monitor_spec`; the ServingStack creates it). It decides
nothing about where the collector installs (the catalog does: untagged, so every cluster), creates
no resources and writes no documentation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from infra.vocabulary import DEPLOYMENT_LABEL

Values = dict[str, Any]

CHART = "opentelemetry-collector"
# Its catalog key (`infra.serving.rows`).
COMPONENT = "opentelemetry-collector"
CHART_REPO = "https://open-telemetry.github.io/opentelemetry-helm-charts"
# Chart 0.174.0 ships collector 0.161.0 as its appVersion; the image tag is pinned to the same
# release so the chart's defaults and the binary agree.
CHART_VERSION = "0.174.0"
NAMESPACE = "modelplane-system"
IMAGE_REPOSITORY = "otel/opentelemetry-collector-contrib"
IMAGE_TAG = "0.161.0"
# The contrib image's binary; the prometheus receiver and transform processor are contrib-only.
COMMAND = "otelcol-contrib"

PROMETHEUS_EXPORTER_PORT = 8889

ENGINE_PORT = "http"
# dcgm-exporter pods: the GPU operator labels them `app: nvidia-dcgm-exporter`, the standalone
# chart `app.kubernetes.io/name: dcgm-exporter`.
DCGM_POD_REGEX = ".*dcgm.*"
# A pod target's port is the container port. The GPU operator names dcgm-exporter's container port
# `metrics` and only its Service port `gpu-metrics`; both are accepted so either naming scrapes.
DCGM_PORT_REGEX = "(gpu-)?metrics"
# The AMD operator's exporter pods carry `app.kubernetes.io/name: metrics-exporter` and expose the
# container port `exporter-port` (5000 unless the DeviceConfig sets another).
AMD_EXPORTER_POD_REGEX = ".*metrics-exporter.*"
AMD_EXPORTER_PORT = "exporter-port"

Vendor = Literal["NVIDIA", "AMD"]


@dataclass(frozen=True)
class MetricMapping:
    """One source series renamed onto a modelplane name.

    `factor` multiplies every value (`scale_metric`); `conversion` is an OTTL metric function that
    runs first, while the series still has its source name (a gauge that is really a running total
    becomes a monotonic sum before it takes a `_total` name). `amd_profiler` marks a series the AMD
    exporter only reports with its profiler metrics on; it is mapped only when the collector is told
    they are (`amd_profiler_metrics`).
    """

    vendor: Vendor
    source: str
    target: str
    source_unit: str
    factor: float
    target_unit: str
    conversion: str | None = None
    amd_profiler: bool = False
    note: str = ""


# Units are UCUM, as OpenTelemetry spells them: MiBy, By, %, 1 (a ratio), Cel, W, mJ, uJ, J.
METRIC_MAPPINGS: tuple[MetricMapping, ...] = (
    MetricMapping("NVIDIA", "DCGM_FI_DEV_FB_USED", "modelplane_gpu_memory_used_bytes", "MiBy", 1048576.0, "By"),
    MetricMapping(
        "AMD",
        "gpu_used_vram",
        "modelplane_gpu_memory_used_bytes",
        "MiBy",
        1048576.0,
        "By",
        note="The exporter's help text says MB; read as MiB, like DCGM's framebuffer fields (unconfirmed upstream).",
    ),
    MetricMapping("NVIDIA", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "modelplane_gpu_compute_active_ratio", "1", 1.0, "1"),
    MetricMapping(
        "AMD",
        "gpu_gfx_activity",
        "modelplane_gpu_compute_active_ratio",
        "%",
        0.01,
        "1",
        note="On a partitioned GPU the exporter reports it for partition 0 only.",
    ),
    MetricMapping("NVIDIA", "DCGM_FI_PROF_DRAM_ACTIVE", "modelplane_gpu_memory_bandwidth_ratio", "1", 1.0, "1"),
    MetricMapping(
        "AMD",
        "gpu_umc_activity",
        "modelplane_gpu_memory_bandwidth_ratio",
        "%",
        0.01,
        "1",
        note="UMC is the memory controller: its activity is the share of time HBM is busy.",
    ),
    MetricMapping("NVIDIA", "DCGM_FI_DEV_GPU_TEMP", "modelplane_gpu_temperature_celsius", "Cel", 1.0, "Cel"),
    MetricMapping(
        "AMD",
        "gpu_junction_temperature",
        "modelplane_gpu_temperature_celsius",
        "Cel",
        1.0,
        "Cel",
        note=(
            "Junction (hotspot) is the die temperature the firmware throttles on, the counterpart of "
            "DCGM's GPU (die) temperature; edge lags the die and memory measures HBM."
        ),
    ),
    MetricMapping("NVIDIA", "DCGM_FI_DEV_POWER_USAGE", "modelplane_gpu_power_watts", "W", 1.0, "W"),
    MetricMapping(
        "AMD",
        "gpu_package_power",
        "modelplane_gpu_power_watts",
        "W",
        1.0,
        "W",
        note="Package power of the whole accelerator (MI3xx), the counterpart of DCGM's board power.",
    ),
    MetricMapping(
        "NVIDIA",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "modelplane_energy_joules_total",
        "mJ",
        0.001,
        "J",
        note="A counter of millijoules since boot: scaled to joules, still a monotonic sum.",
    ),
    MetricMapping(
        "AMD",
        "gpu_energy_consumed",
        "modelplane_energy_joules_total",
        "uJ",
        0.000001,
        "J",
        # The exporter publishes a running total of microjoules as a Gauge. Converted to a
        # cumulative monotonic sum before the rename, so `modelplane_energy_joules_total` is one
        # type (a counter) whichever vendor it came from; `rate()` and OTLP sinks then agree.
        conversion='convert_gauge_to_sum("cumulative", true)',
        note=(
            "Published as a Gauge holding a running total of microjoules; converted to a cumulative "
            "monotonic sum before the rename so both vendors' series are the same type."
        ),
    ),
    MetricMapping("NVIDIA", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "modelplane_gpu_tensor_active_ratio", "1", 1.0, "1"),
    # Off by default for two reasons. The exporter reports GPU_PROF_* fields only when its
    # ProfilerMetrics setting is on, which it is not by default (and never on Radeon). And MFMA
    # utilization is close to, but not the same measure as, DCGM's tensor-pipe activity: mixing the
    # two under one name would make a fleet-wide average mean something different per vendor unless
    # the operator has chosen to accept that.
    MetricMapping(
        "AMD",
        "gpu_prof_tensor_active_percent",
        "modelplane_gpu_tensor_active_ratio",
        "%",
        0.01,
        "1",
        amd_profiler=True,
        note=(
            "MFMA (matrix core) utilization: close to, not the same as, DCGM's tensor-pipe activity. "
            "A profiler metric, off in the exporter by default; mapped only with `amd_profiler_metrics`."
        ),
    ),
)


def active_mappings(amd_profiler_metrics: bool = False) -> tuple[MetricMapping, ...]:
    """The rows the collector applies: AMD profiler rows only when profiler metrics are on."""
    return tuple(m for m in METRIC_MAPPINGS if amd_profiler_metrics or not m.amd_profiler)


def ottl_float(value: float) -> str:
    """A decimal literal OTTL parses (no exponent: 0.000001, not 1e-06)."""
    text = f"{value:.12f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def metric_statements(mappings: Iterable[MetricMapping]) -> list[Values]:
    """Transform-processor statement groups, in table order.

    Statements run in order and a rename is visible to the statements after it, so every statement
    of a row matches on the source name and the rename comes last. A conversion sits in its own
    group ahead of the row's scaling, as the transform processor asks of `convert_*` calls.
    """
    groups: list[Values] = []
    for m in mappings:
        where = f'where metric.name == "{m.source}"'
        if m.conversion:
            groups.append({"statements": [f"{m.conversion} {where}"]})
        unit = (
            f'scale_metric({ottl_float(m.factor)}, "{m.target_unit}") {where}'
            if m.factor != 1.0
            else f'set(metric.unit, "{m.target_unit}") {where}'
        )
        groups.append({"statements": [unit, f'set(metric.name, "{m.target}") {where}']})
    return groups


# --------------------------------------------------------------------------------------------
# Scrape jobs (prometheus receiver, Kubernetes pod discovery)


def _meta_label(name: str) -> str:
    """Prometheus' discovery label for a pod label: every character outside [a-zA-Z0-9_] becomes `_`."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


POD_LABEL = "__meta_kubernetes_pod_label_"
POD_LABEL_PRESENT = "__meta_kubernetes_pod_labelpresent_"
PORT_NAME = "__meta_kubernetes_pod_container_port_name"
NODE_NAME = "__meta_kubernetes_pod_node_name"
SCRAPE_ANNOTATION = "__meta_kubernetes_pod_annotation_prometheus_io_scrape"

_ENGINE_POD = {
    "source_labels": [POD_LABEL_PRESENT + _meta_label(DEPLOYMENT_LABEL)],
    "regex": "true",
}
_DCGM_POD = {
    "source_labels": [POD_LABEL + "app_kubernetes_io_name", POD_LABEL + "app"],
    "regex": DCGM_POD_REGEX,
}
_AMD_EXPORTER_POD = {
    "source_labels": [POD_LABEL + "app_kubernetes_io_name"],
    "regex": AMD_EXPORTER_POD_REGEX,
}


def _keep(rule: Values) -> Values:
    return {"action": "keep", **rule}


def _drop(rule: Values) -> Values:
    return {"action": "drop", **rule}


def _port(regex: str) -> Values:
    return {"action": "keep", "source_labels": [PORT_NAME], "regex": regex}


def _copy(source: str, target: str) -> Values:
    return {"action": "replace", "source_labels": [source], "target_label": target}


# Every job keeps the node the target runs on. The GPU jobs add nothing else from discovery: the
# exporters label each series with the pod, namespace and container that use the GPU, and a target
# label of the same name would push those aside (to `exported_pod`, ...).
_NODE = _copy(NODE_NAME, "node")
_WORKLOAD = [
    _copy("__meta_kubernetes_namespace", "namespace"),
    _copy("__meta_kubernetes_pod_name", "pod"),
    _NODE,
]


def scrape_configs() -> list[Values]:
    """The four jobs; each target belongs to exactly one of them."""
    pods = [{"role": "pod"}]
    return [
        {
            "job_name": "modelplane-engines",
            "scrape_interval": "15s",
            "kubernetes_sd_configs": pods,
            "relabel_configs": [
                _keep(_ENGINE_POD),
                _port(ENGINE_PORT),
                *_WORKLOAD,
                _copy(POD_LABEL + _meta_label(DEPLOYMENT_LABEL), "deployment"),
            ],
        },
        {
            "job_name": "modelplane-gpu-nvidia",
            "scrape_interval": "15s",
            "kubernetes_sd_configs": pods,
            "relabel_configs": [_keep(_DCGM_POD), _port(DCGM_PORT_REGEX), _NODE],
        },
        {
            "job_name": "modelplane-gpu-amd",
            "scrape_interval": "15s",
            "kubernetes_sd_configs": pods,
            "relabel_configs": [_keep(_AMD_EXPORTER_POD), _port(AMD_EXPORTER_PORT), _NODE],
        },
        {
            "job_name": "modelplane-substrate",
            "scrape_interval": "30s",
            "kubernetes_sd_configs": pods,
            "relabel_configs": [
                _keep({"source_labels": [SCRAPE_ANNOTATION], "regex": "true"}),
                # Scraped by the jobs above already; a second scrape would double every series.
                _drop(_ENGINE_POD),
                _drop(_DCGM_POD),
                _drop(_AMD_EXPORTER_POD),
                {
                    "action": "replace",
                    "source_labels": ["__meta_kubernetes_pod_annotation_prometheus_io_path"],
                    "regex": "(.+)",
                    "target_label": "__metrics_path__",
                },
                {
                    # `$$` is a literal `$` in collector config (a single `$` starts a variable).
                    "action": "replace",
                    "source_labels": ["__address__", "__meta_kubernetes_pod_annotation_prometheus_io_port"],
                    "regex": "([^:]+)(?::\\d+)?;(\\d+)",
                    "replacement": "$$1:$$2",
                    "target_label": "__address__",
                },
                *_WORKLOAD,
            ],
        },
    ]


# --------------------------------------------------------------------------------------------
# Collector configuration and chart values


def collector_config(amd_profiler_metrics: bool = False) -> Values:
    """The collector's `config`, merged by the chart over its defaults.

    The chart's default traces and logs pipelines stay (OTLP in, the debug exporter out; nothing
    leaves the cluster): Helm values cannot delete a chart default through Pulumi, whose SDK drops
    nulls, so they are narrowed to the OTLP receiver instead.
    """
    return {
        "receivers": {"prometheus": {"config": {"scrape_configs": scrape_configs()}}},
        "processors": {
            "transform/modelplane-gpu": {
                # A statement that fails (a series with an unexpected type) skips that series
                # instead of dropping the whole batch.
                "error_mode": "ignore",
                "metric_statements": metric_statements(active_mappings(amd_profiler_metrics)),
            },
            "batch": {},
        },
        "exporters": {
            "prometheus": {
                "endpoint": f"${{env:MY_POD_IP}}:{PROMETHEUS_EXPORTER_PORT}",
                # Our names already carry their unit and `_total`; add no suffixes to them.
                "translation_strategy": "UnderscoreEscapingWithoutSuffixes",
            },
        },
        "service": {
            "pipelines": {
                "metrics": {
                    "receivers": ["prometheus"],
                    "processors": ["memory_limiter", "transform/modelplane-gpu", "batch"],
                    "exporters": ["prometheus"],
                },
                "traces": {"receivers": ["otlp"]},
                "logs": {"receivers": ["otlp"]},
            },
        },
    }


# --------------------------------------------------------------------------------------------
# The stack's Prometheus scraping the collector's exporter

# The collector's pods as its chart labels them in `mode: deployment` (templates/_helpers.tpl
# `opentelemetry-collector.selectorLabels` and `.component`, templates/deployment.yaml), and the name
# its pod template gives the exporter's container port: its key under `ports` (`podPortsConfig` in
# templates/_config.tpl), all @ opentelemetry-collector-0.170.0, the newest tag of the chart's
# repository; 0.174.0 is not tagged there (charts/README.md).
COLLECTOR_COMPONENT = {"component": "standalone-collector"}
PROMETHEUS_PORT_NAME = "prometheus"


def collector_pod_labels(release: str) -> dict[str, str]:
    """The labels the chart gives the collector's pods in release `release`."""
    return {"app.kubernetes.io/name": CHART, "app.kubernetes.io/instance": release, **COLLECTOR_COMPONENT}


def collector_pod_monitor_spec(release: str) -> Values:
    """The PodMonitor that has a Prometheus scrape the collector's exporter.

    The chart has a `podMonitor` value of its own, but 0.174.0 could not be read to check it; the
    ServingStack creates this one instead, where the stack's Prometheus or the owner's named one
    selects it. `honorLabels` keeps the labels the GPU exporters put on each series (the `pod`,
    `namespace` and `container` of the workload using the GPU) instead of renaming them `exported_*`
    for the collector's own pod (prometheus-operator v0.90.1 Documentation/api-reference/api.md,
    PodMetricsEndpoint `honorLabels`); the target's own `namespace`, `pod` and `container` (the
    collector's) are dropped, so a GPU no workload uses is not credited to the collector
    (Prometheus `honor_labels`: a target label fills in only where the series has none).
    """
    return {
        "selector": {"matchLabels": collector_pod_labels(release)},
        "podMetricsEndpoints": [
            {
                "port": PROMETHEUS_PORT_NAME,
                "honorLabels": True,
                "relabelings": [{"action": "labeldrop", "regex": "namespace|pod|container"}],
            }
        ],
    }


# Kubernetes service discovery reads these; nothing else.
DISCOVERY_RULES: list[Values] = [
    {"apiGroups": [""], "resources": ["pods", "nodes", "endpoints", "services"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
]


def collector_values(cloud: str, amd_profiler_metrics: bool = False) -> Values:
    """Helm values for the `opentelemetry-collector` chart (the same on every cloud)."""
    return {
        "mode": "deployment",
        # One replica: pod discovery without a target allocator gives every replica every target,
        # so a second replica would scrape (and export) everything twice.
        "replicaCount": 1,
        "image": {"repository": IMAGE_REPOSITORY, "tag": IMAGE_TAG},
        "command": {"name": COMMAND},
        "serviceAccount": {"create": True},
        "clusterRole": {"create": True, "rules": DISCOVERY_RULES},
        "config": collector_config(amd_profiler_metrics),
        "ports": {
            PROMETHEUS_PORT_NAME: {
                "enabled": True,
                "containerPort": PROMETHEUS_EXPORTER_PORT,
                "servicePort": PROMETHEUS_EXPORTER_PORT,
                "protocol": "TCP",
            },
            # Nothing sends Jaeger or Zipkin here; their receivers are in no pipeline.
            "jaeger-compact": {"enabled": False},
            "jaeger-thrift": {"enabled": False},
            "jaeger-grpc": {"enabled": False},
            "zipkin": {"enabled": False},
        },
        # memory_limiter sizes itself from the container's memory limit.
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
    }
