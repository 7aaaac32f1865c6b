"""The telemetry collector: one set of GPU series across NVIDIA and AMD, on every cluster."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from clouds import SOURCES
from infra.serving.catalog import catalog_for
from infra.serving.telemetry import (
    METRIC_MAPPINGS,
    active_mappings,
    collector_config,
    collector_values,
    metric_statements,
)
from tests.conftest import cpu_class, named, of_type, run_fleet
from tests.tools import require
from tooling import telemetry_doc
from tooling.telemetry_doc import render_telemetry_doc

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "run `make docs` (modelplane docs), or `python -m tooling.telemetry_doc`, and commit the result"

# --------------------------------------------------------------------------------------------
# The mapping table


# (vendor, source, target, factor, target unit): the contract the issue states.
EXPECTED_MAPPINGS = [
    ("NVIDIA", "DCGM_FI_DEV_FB_USED", "modelplane_gpu_memory_used_bytes", 1048576.0, "By"),
    ("AMD", "gpu_used_vram", "modelplane_gpu_memory_used_bytes", 1048576.0, "By"),
    ("NVIDIA", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "modelplane_gpu_compute_active_ratio", 1.0, "1"),
    ("AMD", "gpu_gfx_activity", "modelplane_gpu_compute_active_ratio", 0.01, "1"),
    ("NVIDIA", "DCGM_FI_PROF_DRAM_ACTIVE", "modelplane_gpu_memory_bandwidth_ratio", 1.0, "1"),
    ("AMD", "gpu_umc_activity", "modelplane_gpu_memory_bandwidth_ratio", 0.01, "1"),
    ("NVIDIA", "DCGM_FI_DEV_GPU_TEMP", "modelplane_gpu_temperature_celsius", 1.0, "Cel"),
    ("AMD", "gpu_junction_temperature", "modelplane_gpu_temperature_celsius", 1.0, "Cel"),
    ("NVIDIA", "DCGM_FI_DEV_POWER_USAGE", "modelplane_gpu_power_watts", 1.0, "W"),
    ("AMD", "gpu_package_power", "modelplane_gpu_power_watts", 1.0, "W"),
    ("NVIDIA", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "modelplane_energy_joules_total", 0.001, "J"),
    ("AMD", "gpu_energy_consumed", "modelplane_energy_joules_total", 0.000001, "J"),
    ("NVIDIA", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "modelplane_gpu_tensor_active_ratio", 1.0, "1"),
    ("AMD", "gpu_prof_tensor_active_percent", "modelplane_gpu_tensor_active_ratio", 0.01, "1"),
]


def flat_statements(groups: Sequence[Mapping[str, Any]]) -> list[tuple[int, str]]:
    """(group index, statement) in execution order."""
    return [(i, s) for i, g in enumerate(groups) for s in g["statements"]]


def where_name(statement: str) -> str:
    match = re.search(r'where metric\.name == "([^"]+)"$', statement)
    assert match, f"statement without a metric-name condition: {statement}"
    return match.group(1)


def transform(values: Mapping[str, Any]) -> Mapping[str, Any]:
    processor: Mapping[str, Any] = values["config"]["processors"]["transform/modelplane-gpu"]
    return processor


def test_the_table_maps_exactly_the_agreed_series() -> None:
    assert [(m.vendor, m.source, m.target, m.factor, m.target_unit) for m in METRIC_MAPPINGS] == EXPECTED_MAPPINGS


@pytest.mark.parametrize(("vendor", "source", "target", "factor", "unit"), EXPECTED_MAPPINGS)
def test_each_series_is_scaled_into_its_target_unit_and_renamed(
    vendor: str, source: str, target: str, factor: float, unit: str
) -> None:
    statements = [s for _, s in flat_statements(metric_statements(METRIC_MAPPINGS)) if where_name(s) == source]
    unit_statements = [s for s in statements if "scale_metric(" in s or s.startswith("set(metric.unit")]
    assert len(unit_statements) == 1
    if factor == 1.0:
        assert unit_statements[0] == f'set(metric.unit, "{unit}") where metric.name == "{source}"'
    else:
        match = re.fullmatch(r'scale_metric\(([0-9.]+), "([^"]+)"\) where metric\.name == "[^"]+"', unit_statements[0])
        assert match, unit_statements[0]
        assert float(match.group(1)) == factor
        assert match.group(2) == unit
    assert statements[-1] == f'set(metric.name, "{target}") where metric.name == "{source}"'


def test_mib_percent_and_energy_factors_are_exact_decimals() -> None:
    rendered = "\n".join(s for _, s in flat_statements(metric_statements(METRIC_MAPPINGS)))
    assert 'scale_metric(1048576.0, "By") where metric.name == "gpu_used_vram"' in rendered
    assert 'scale_metric(0.01, "1") where metric.name == "gpu_gfx_activity"' in rendered
    assert 'scale_metric(0.001, "J") where metric.name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"' in rendered
    assert 'scale_metric(0.000001, "J") where metric.name == "gpu_energy_consumed"' in rendered
    assert "e-" not in rendered


def test_amd_energy_gauge_becomes_a_monotonic_sum_before_it_is_renamed() -> None:
    flat = flat_statements(metric_statements(METRIC_MAPPINGS))
    energy = [(i, n, s) for n, (i, s) in enumerate(flat) if where_name(s) == "gpu_energy_consumed"]
    convert, scale, rename = energy
    assert convert[2] == 'convert_gauge_to_sum("cumulative", true) where metric.name == "gpu_energy_consumed"'
    assert scale[2].startswith("scale_metric(0.000001")
    assert rename[2] == 'set(metric.name, "modelplane_energy_joules_total") where metric.name == "gpu_energy_consumed"'
    # Executed first, and alone in its statement group.
    assert convert[1] < scale[1] < rename[1]
    assert convert[0] < scale[0]
    assert [s for i, s in flat if i == convert[0]] == [convert[2]]


def test_nvidia_energy_is_already_a_counter_and_is_not_converted() -> None:
    statements = [s for _, s in flat_statements(metric_statements(METRIC_MAPPINGS))]
    assert not any("convert_" in s for s in statements if "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" in s)
    assert sum("convert_gauge_to_sum" in s for s in statements) == 1


def test_no_statement_matches_a_name_a_rename_has_already_replaced() -> None:
    targets = {m.target for m in METRIC_MAPPINGS}
    flat = flat_statements(metric_statements(METRIC_MAPPINGS))
    assert not any(where_name(s) in targets for _, s in flat)
    for m in METRIC_MAPPINGS:
        positions = [n for n, (_, s) in enumerate(flat) if where_name(s) == m.source]
        renames = [n for n in positions if flat[n][1].startswith("set(metric.name")]
        assert renames == [max(positions)], f"{m.source} must be renamed last"


def test_transform_ignores_statement_errors() -> None:
    assert transform(collector_values("Existing"))["error_mode"] == "ignore"


def test_tensor_ratio_is_nvidia_only_by_default() -> None:
    statements = str(transform(collector_values("Existing"))["metric_statements"])
    assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in statements
    assert "gpu_prof_tensor_active_percent" not in statements
    tensor = [m for m in active_mappings() if m.target == "modelplane_gpu_tensor_active_ratio"]
    assert [m.vendor for m in tensor] == ["NVIDIA"]


def test_tensor_ratio_maps_amd_mfma_utilization_when_profiler_metrics_are_on() -> None:
    statements = [
        s["statements"] for s in transform(collector_values("Existing", amd_profiler_metrics=True))["metric_statements"]
    ]
    flat = [s for group in statements for s in group]
    assert 'scale_metric(0.01, "1") where metric.name == "gpu_prof_tensor_active_percent"' in flat
    assert (
        'set(metric.name, "modelplane_gpu_tensor_active_ratio") where metric.name == "gpu_prof_tensor_active_percent"'
        in flat
    )


def test_only_amd_profiler_series_depend_on_the_flag() -> None:
    assert set(METRIC_MAPPINGS) - set(active_mappings()) == {
        m for m in METRIC_MAPPINGS if m.source == "gpu_prof_tensor_active_percent"
    }
    assert active_mappings(amd_profiler_metrics=True) == METRIC_MAPPINGS


# --------------------------------------------------------------------------------------------
# Scrape jobs, evaluated as Prometheus evaluates relabel rules


def sanitize(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def discovered_targets(pod: Mapping[str, Any]) -> list[dict[str, str]]:
    """The labels Kubernetes pod discovery gives each container port of `pod`."""
    base = {
        "__meta_kubernetes_namespace": pod.get("namespace", "default"),
        "__meta_kubernetes_pod_name": pod["name"],
        "__meta_kubernetes_pod_node_name": pod.get("node", "node-1"),
    }
    for key, value in pod.get("labels", {}).items():
        base[f"__meta_kubernetes_pod_label_{sanitize(key)}"] = value
        base[f"__meta_kubernetes_pod_labelpresent_{sanitize(key)}"] = "true"
    for key, value in pod.get("annotations", {}).items():
        base[f"__meta_kubernetes_pod_annotation_{sanitize(key)}"] = value
        base[f"__meta_kubernetes_pod_annotationpresent_{sanitize(key)}"] = "true"
    return [
        {
            **base,
            "__address__": f"10.0.0.7:{number}",
            "__metrics_path__": "/metrics",
            "__meta_kubernetes_pod_container_port_name": port_name,
            "__meta_kubernetes_pod_container_port_number": str(number),
        }
        for port_name, number in pod["ports"]
    ]


def relabel(labels: dict[str, str], rules: Sequence[Mapping[str, Any]]) -> dict[str, str] | None:
    """Prometheus relabelling (keep, drop, replace); regexes are anchored at both ends."""
    out = dict(labels)
    for rule in rules:
        value = ";".join(out.get(s, "") for s in rule.get("source_labels", []))
        match = re.fullmatch(rule.get("regex", "(.*)"), value)
        action = rule.get("action", "replace")
        if action == "keep" and not match:
            return None
        if action == "drop" and match:
            return None
        if action == "replace" and match:
            # The collector reads `$$` as a literal `$`; Prometheus then expands `$1`.
            replacement = rule.get("replacement", "$1").replace("$$", "$")
            out[rule["target_label"]] = match.expand(re.sub(r"\$(\d+)", r"\\\1", replacement))
    return out


def jobs_scraping(pod: Mapping[str, Any]) -> dict[str, list[dict[str, str]]]:
    """job name -> the targets it keeps for `pod`, with their final labels."""
    scrape = collector_values("Existing")["config"]["receivers"]["prometheus"]["config"]["scrape_configs"]
    found: dict[str, list[dict[str, str]]] = {}
    for job in scrape:
        kept = [t for t in (relabel(d, job["relabel_configs"]) for d in discovered_targets(pod)) if t is not None]
        if kept:
            found[job["job_name"]] = kept
    return found


AMD_EXPORTER_POD = {
    "name": "default-metrics-exporter-x7k2p",
    "namespace": "kube-amd-gpu",
    "node": "mi325x-0",
    # As the AMD operator labels the DaemonSet's pods.
    "labels": {"app.kubernetes.io/name": "metrics-exporter", "daemonset-name": "default"},
    "ports": [("exporter-port", 5000)],
}
DCGM_OPERATOR_POD = {
    "name": "nvidia-dcgm-exporter-abcde",
    "namespace": "gpu-operator",
    "node": "h100-0",
    "labels": {"app": "nvidia-dcgm-exporter"},
    "ports": [("metrics", 9400)],
}
ENGINE_POD = {
    "name": "qwen-7d9f-0",
    "namespace": "ml-team",
    "node": "mi325x-0",
    "labels": {"modelplane.ai/deployment": "qwen", "app": "qwen"},
    "ports": [("http", 8000), ("debug", 6060)],
}


def test_amd_job_scrapes_the_operators_device_metrics_exporter() -> None:
    jobs = jobs_scraping(AMD_EXPORTER_POD)
    assert list(jobs) == ["modelplane-gpu-amd"]
    (target,) = jobs["modelplane-gpu-amd"]
    assert target["__address__"] == "10.0.0.7:5000"
    assert target["node"] == "mi325x-0"


def test_amd_job_leaves_exporter_pod_and_namespace_labels_to_the_exporter() -> None:
    (target,) = jobs_scraping(AMD_EXPORTER_POD)["modelplane-gpu-amd"]
    assert "pod" not in target
    assert "namespace" not in target


def test_amd_job_ignores_other_ports_and_other_pods() -> None:
    other_port = {**AMD_EXPORTER_POD, "ports": [("http", 8080)]}
    assert "modelplane-gpu-amd" not in jobs_scraping(other_port)
    standalone_named = {**AMD_EXPORTER_POD, "labels": {"app": "amd-metrics-exporter"}}
    assert "modelplane-gpu-amd" not in jobs_scraping(standalone_named)
    assert "modelplane-gpu-amd" not in jobs_scraping(DCGM_OPERATOR_POD)


@pytest.mark.parametrize(
    "labels",
    [{"app": "nvidia-dcgm-exporter"}, {"app.kubernetes.io/name": "dcgm-exporter"}],
    ids=["gpu-operator", "standalone-chart"],
)
@pytest.mark.parametrize("port_name", ["metrics", "gpu-metrics"])
def test_nvidia_job_scrapes_dcgm_exporter(labels: dict[str, str], port_name: str) -> None:
    jobs = jobs_scraping({**DCGM_OPERATOR_POD, "labels": labels, "ports": [(port_name, 9400)]})
    assert list(jobs) == ["modelplane-gpu-nvidia"]
    (target,) = jobs["modelplane-gpu-nvidia"]
    assert target["node"] == "h100-0"
    assert "pod" not in target


def test_engine_job_scrapes_the_http_port_of_deployment_pods() -> None:
    jobs = jobs_scraping(ENGINE_POD)
    assert list(jobs) == ["modelplane-engines"]
    (target,) = jobs["modelplane-engines"]
    assert target["__address__"] == "10.0.0.7:8000"
    assert {k: target[k] for k in ("deployment", "namespace", "pod", "node")} == {
        "deployment": "qwen",
        "namespace": "ml-team",
        "pod": "qwen-7d9f-0",
        "node": "mi325x-0",
    }


def test_substrate_job_scrapes_annotated_pods_at_their_annotated_port_and_path() -> None:
    pod = {
        "name": "envoy-abc",
        "namespace": "envoy-gateway-system",
        "labels": {"app.kubernetes.io/name": "envoy"},
        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "19001", "prometheus.io/path": "/stats"},
        "ports": [("admin", 19000)],
    }
    jobs = jobs_scraping(pod)
    assert list(jobs) == ["modelplane-substrate"]
    (target,) = jobs["modelplane-substrate"]
    assert target["__address__"] == "10.0.0.7:19001"
    assert target["__metrics_path__"] == "/stats"
    assert target["node"] == "node-1"


@pytest.mark.parametrize("pod", [AMD_EXPORTER_POD, DCGM_OPERATOR_POD, ENGINE_POD], ids=["amd", "dcgm", "engine"])
def test_annotated_gpu_exporters_and_engines_are_scraped_once(pod: Mapping[str, Any]) -> None:
    annotated = {**pod, "annotations": {"prometheus.io/scrape": "true"}}
    assert "modelplane-substrate" not in jobs_scraping(annotated)
    assert len(jobs_scraping(annotated)) == 1


def test_unannotated_unrelated_pods_are_not_scraped() -> None:
    assert jobs_scraping({"name": "web", "labels": {"app": "web"}, "ports": [("http", 80)]}) == {}


# --------------------------------------------------------------------------------------------
# The collector's chart values


def test_collector_is_a_contrib_deployment_pinned_to_one_release() -> None:
    values = collector_values("GKE")
    assert values["mode"] == "deployment"
    assert values["replicaCount"] == 1
    assert values["image"] == {"repository": "otel/opentelemetry-collector-contrib", "tag": "0.161.0"}
    assert values["command"] == {"name": "otelcol-contrib"}


def test_collector_gets_a_service_account_and_read_only_discovery_rbac() -> None:
    values = collector_values("GKE")
    assert values["serviceAccount"]["create"] is True
    assert values["clusterRole"]["create"] is True
    granted = {
        (group, resource): set(rule["verbs"])
        for rule in values["clusterRole"]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert granted == {
        ("", "pods"): {"get", "list", "watch"},
        ("", "nodes"): {"get", "list", "watch"},
        ("", "endpoints"): {"get", "list", "watch"},
        ("", "services"): {"get", "list", "watch"},
        ("discovery.k8s.io", "endpointslices"): {"get", "list", "watch"},
    }


def test_metrics_pipeline_transforms_before_batching_and_exports_locally() -> None:
    config = collector_config()
    metrics = config["service"]["pipelines"]["metrics"]
    assert metrics["receivers"] == ["prometheus"]
    assert metrics["processors"] == ["memory_limiter", "transform/modelplane-gpu", "batch"]
    assert metrics["exporters"] == ["prometheus"]
    exporter = config["exporters"]["prometheus"]
    assert exporter["endpoint"].endswith(":8889")
    assert exporter["translation_strategy"] == "UnderscoreEscapingWithoutSuffixes"
    assert set(config["exporters"]) == {"prometheus"}, "no exporter may send data out of the cluster"


def test_prometheus_exporter_port_is_exposed_and_unused_receivers_are_closed() -> None:
    ports = collector_values("GKE")["ports"]
    assert ports["prometheus"] == {"enabled": True, "containerPort": 8889, "servicePort": 8889, "protocol": "TCP"}
    assert all(not ports[p]["enabled"] for p in ("jaeger-compact", "jaeger-thrift", "jaeger-grpc", "zipkin"))


# What the chart's default config defines; the collector config relies on these names.
CHART_DEFAULTS = {
    "receivers": {"otlp", "jaeger", "zipkin", "prometheus"},
    "processors": {"memory_limiter", "batch"},
    "exporters": {"debug"},
}


def test_every_pipeline_component_is_defined_by_our_config_or_the_chart_defaults() -> None:
    config = collector_config(amd_profiler_metrics=True)
    for name, pipeline in config["service"]["pipelines"].items():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in set(config.get(kind, {})) | CHART_DEFAULTS[kind], f"{name}: {kind} {component}"


# --------------------------------------------------------------------------------------------
# Every cluster gets it


@pytest.mark.parametrize("cloud", SOURCES)
def test_collector_is_an_untagged_row_on_every_cloud(cloud: str) -> None:
    rows = [c for c in catalog_for(cloud) if c.key == "opentelemetry-collector"]
    assert len(rows) == 1
    row = rows[0]
    assert row.dra_drivers == ()
    assert row.release == "mp-opentelemetry-collector"
    assert (row.chart, row.repo, row.version, row.namespace) == (
        "opentelemetry-collector",
        "https://open-telemetry.github.io/opentelemetry-helm-charts",
        "0.174.0",
        "modelplane-system",
    )
    assert row.values["image"]["tag"] == "0.161.0"


def test_existing_cluster_without_gpus_installs_the_collector_release() -> None:
    raw = {
        "classes": [cpu_class("cpu-byo", None)],
        "clusters": [
            {
                "name": "lab",
                "source": "Existing",
                "existing": {"kubernetesVersion": "1.36", "kubeconfigKey": "kubeconfig"},
                "nodePools": [{"name": "cpu", "className": "cpu-byo"}],
            }
        ],
    }
    result = run_fleet(raw)
    assert result.error is None
    release = named(result, "lab-stack-opentelemetry-collector")
    assert release.type == "kubernetes:helm.sh/v3:Release"
    assert release.parent == "lab-stack"
    inputs = release.inputs
    assert inputs["name"] == "mp-opentelemetry-collector"
    assert inputs["chart"] == "opentelemetry-collector"
    assert inputs["version"] == "0.174.0"
    assert inputs["namespace"] == "modelplane-system"
    assert inputs["repositoryOpts"] == {"repo": "https://open-telemetry.github.io/opentelemetry-helm-charts"}
    assert inputs["values"]["mode"] == "deployment"
    assert inputs["values"]["image"] == {"repository": "otel/opentelemetry-collector-contrib", "tag": "0.161.0"}
    assert inputs["values"]["replicaCount"] == 1.0
    statements = inputs["values"]["config"]["processors"]["transform/modelplane-gpu"]["metric_statements"]
    # Each source is scaled (or given its unit) and renamed; the AMD energy gauge is first made a
    # cumulative sum, alone in its group, before it is scaled and renamed.
    renames = [
        ("DCGM_FI_DEV_FB_USED", 'scale_metric(1048576.0, "By")', "modelplane_gpu_memory_used_bytes"),
        ("gpu_used_vram", 'scale_metric(1048576.0, "By")', "modelplane_gpu_memory_used_bytes"),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 'set(metric.unit, "1")', "modelplane_gpu_compute_active_ratio"),
        ("gpu_gfx_activity", 'scale_metric(0.01, "1")', "modelplane_gpu_compute_active_ratio"),
        ("DCGM_FI_PROF_DRAM_ACTIVE", 'set(metric.unit, "1")', "modelplane_gpu_memory_bandwidth_ratio"),
        ("gpu_umc_activity", 'scale_metric(0.01, "1")', "modelplane_gpu_memory_bandwidth_ratio"),
        ("DCGM_FI_DEV_GPU_TEMP", 'set(metric.unit, "Cel")', "modelplane_gpu_temperature_celsius"),
        ("gpu_junction_temperature", 'set(metric.unit, "Cel")', "modelplane_gpu_temperature_celsius"),
        ("DCGM_FI_DEV_POWER_USAGE", 'set(metric.unit, "W")', "modelplane_gpu_power_watts"),
        ("gpu_package_power", 'set(metric.unit, "W")', "modelplane_gpu_power_watts"),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 'scale_metric(0.001, "J")', "modelplane_energy_joules_total"),
        (None, 'convert_gauge_to_sum("cumulative", true)', None),
        ("gpu_energy_consumed", 'scale_metric(0.000001, "J")', "modelplane_energy_joules_total"),
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 'set(metric.unit, "1")', "modelplane_gpu_tensor_active_ratio"),
    ]
    expected = []
    for source, unit, target in renames:
        if source is None:
            expected.append({"statements": [f'{unit} where metric.name == "gpu_energy_consumed"']})
            continue
        where = f'where metric.name == "{source}"'
        expected.append({"statements": [f"{unit} {where}", f'set(metric.name, "{target}") {where}']})
    assert statements == expected
    releases = {r.inputs["name"] for r in of_type(result, "kubernetes:helm.sh/v3:Release")}
    assert "mp-opentelemetry-collector" in releases


def test_gpu_operator_turns_on_dcgm_dra_attribution_the_docs_rely_on() -> None:
    (operator,) = [c for c in catalog_for("Existing") if c.key == "gpu-operator"]
    env = operator.values["dcgmExporter"]["env"]
    assert {"name": "KUBERNETES_ENABLE_DRA", "value": "true"} in env


# --------------------------------------------------------------------------------------------
# docs/telemetry.md


def test_telemetry_doc_is_current() -> None:
    path = ROOT / telemetry_doc.DOC_PATH
    assert path.exists(), f"{telemetry_doc.DOC_PATH} is missing: {REGENERATE}"
    assert path.read_text(encoding="utf-8") == render_telemetry_doc(), (
        f"{telemetry_doc.DOC_PATH} is stale: {REGENERATE}"
    )


def test_telemetry_doc_lists_every_mapping_and_explains_energy_and_tensor() -> None:
    doc = render_telemetry_doc()
    for m in METRIC_MAPPINGS:
        assert f"| `{m.target}` | {m.vendor} | `{m.source}` |" in doc
    assert 'convert_gauge_to_sum("cumulative", true)' in doc
    assert "### Energy" in doc
    assert "### Tensor activity" in doc
    assert "MFMA" in doc
    assert "ProfilerMetrics" in doc
    assert "KUBERNETES_ENABLE_DRA=true" in doc


def test_main_writes_the_doc_under_the_given_root(tmp_path: Path) -> None:
    assert telemetry_doc.main([str(tmp_path)]) == 0
    assert (tmp_path / "docs" / "telemetry.md").read_text(encoding="utf-8") == render_telemetry_doc()


# --------------------------------------------------------------------------------------------
# A real collector of the components the config names, built by `engine/build.sh otelcol`


def chart_merged_config() -> dict[str, Any]:
    """Our config over the part of the chart's defaults it relies on (see CHART_DEFAULTS)."""
    config = collector_config(amd_profiler_metrics=True)
    config["receivers"]["otlp"] = {"protocols": {"grpc": {"endpoint": "127.0.0.1:4317"}}}
    config["processors"]["memory_limiter"] = {"check_interval": "5s", "limit_percentage": 80}
    config["exporters"]["debug"] = {}
    for name in ("traces", "logs"):
        config["service"]["pipelines"][name].update({"processors": ["memory_limiter", "batch"], "exporters": ["debug"]})
    return config


def collector_validate(config: dict[str, Any], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`otelcol validate` on a config, as the chart's container runs the collector."""
    binary = require("otelcol", "the collector test")
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return subprocess.run(
        [str(binary), "validate", f"--config={path}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MY_POD_IP": "127.0.0.1"},
        check=False,
    )


def test_real_collector_accepts_the_rendered_config(tmp_path: Path) -> None:
    done = collector_validate(chart_merged_config(), tmp_path)
    assert done.returncode == 0, done.stderr


def test_real_collector_refuses_a_statement_it_cannot_parse(tmp_path: Path) -> None:
    # The same check on a config whose GPU transform has one OTTL statement broken: the collector
    # parses the statements when it validates, so the test above judges them too.
    config = chart_merged_config()
    statements = config["processors"]["transform/modelplane-gpu"]["metric_statements"][0]["statements"]
    statements[0] = statements[0] + ")"
    done = collector_validate(config, tmp_path)
    assert done.returncode != 0
    assert "transform/modelplane-gpu" in done.stderr
