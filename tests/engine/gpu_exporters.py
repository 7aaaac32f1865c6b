"""The GPU exporters of a local cluster: NVIDIA's dcgm-exporter and AMD's device-metrics-exporter,
simulated per node, and the real telemetry collector that scrapes them.

KWOK runs no container, so nothing answers at the exporters' pods. For each Running pod of the
exporters' DaemonSets (labelled and ported as the real operators make them: `standins.EXPORTERS`),
`gpu_exporters()` runs this module on the pod's IP and metrics port, serving the series the
collector maps (`infra.serving.telemetry.METRIC_MAPPINGS`, the source names) for every GPU the
node's DRA driver publishes in its ResourceSlice (devices.py), with the labels the exporters put
on them:

- dcgm-exporter, as NVIDIA's GPU Operator runs it (`DCGM_EXPORTER_COLLECTORS` set to
  /etc/dcgm-exporter/dcp-metrics-included.csv in its assets/state-dcgm-exporter DaemonSet): the
  fields, types and help texts of NVIDIA/dcgm-exporter etc/dcp-metrics-included.csv, whose DCP
  section turns on the three DCGM_FI_PROF_* ratios we map and whose one `label` field,
  DCGM_FI_DRIVER_VERSION, labels every series; TOTAL_ENERGY_CONSUMPTION is a counter (millijoules
  since boot), the rest gauges. Labels `gpu` (the index), `UUID`, `pci_bus_id`, `device`
  (`nvidia<index>`), `modelName`, `Hostname`, and the `pod`, `namespace` and `container` of the
  workload the GPU is given to, as its README's Kubernetes sample shows them.
- AMD's device-metrics-exporter (the AMD GPU Operator's `metricsExporter`): the fields' help texts
  as its metrics list describes them, and the labels of its sample (`card_model`, `gpu_id`,
  `gpu_partition_id`, `gpu_compute_partition_type`, `hostname`, `serial_number`), with `pod`,
  `namespace`, `container` for a GPU in use (ROCm/device-metrics-exporter docs/configuration,
  metricslist.md); every field a gauge, `gpu_energy_consumed` a running total of microjoules,
  activities in percent. Its profiler field (`gpu_prof_tensor_active_percent`) is off by default
  and not served.

Which GPU a workload holds is read from the ResourceClaims allocated on the node (what the real
exporters learn from the kubelet's pod-resources API), refreshed while the exporter runs. The
values are plausible, not measured: steady per GPU, higher for a GPU in use, energy growing with
power over time.

`otel_collector()` runs the real collector (`otelcol`, engine/otelcol: the components the
product's config names, built from the Go module proxy at the image's release) for the collector's
pod, in the pod's world, with the configuration the chart would render from our values.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from components.model_deployment import CONTAINER_NAME
from infra.serving import telemetry
from infra.serving.catalog import CATALOG
from infra.serving.rows import AMD_OPERATOR_KEY, NVIDIA_OPERATOR_KEY
from infra.vocabulary import AMD_GPU_DRIVER, NVIDIA_GPU_DRIVER
from tests.engine.kube import ApiServer
from tests.engine.podproc import Pod, PodProgram, labelled, pod_ip
from tests.engine.standins import EXPORTERS
from tests.tools import tool

NVIDIA = "nvidia"
AMD = "amd"
DRIVER = {NVIDIA: NVIDIA_GPU_DRIVER, AMD: AMD_GPU_DRIVER}
# The program names, as `PodProcesses.serving` takes them.
GPU_EXPORTER = "gpu-exporter"
COLLECTOR = "otel-collector"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


# Each vendor's exporter pods, as the stand-ins render them.
PODS = {
    NVIDIA: next(p for (key, _), p in EXPORTERS.items() if key == NVIDIA_OPERATOR_KEY),
    AMD: next(p for (key, _), p in EXPORTERS.items() if key == AMD_OPERATOR_KEY),
}


# --------------------------------------------------------------------------------------------
# The exporters' series


def _labels(labels: Mapping[str, str]) -> str:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in labels.items()) + "}"


def series(vendor: str, node: str, gpus: list[dict[str, Any]], elapsed: float) -> str:
    """The exposition of every GPU of `node`: `gpus` are `{"device", "workload"}` in index order,
    `workload` the `{pod, namespace, container}` it is given to, or empty."""
    families: dict[str, tuple[str, str, list[str]]] = {}

    def add(name: str, kind: str, help_text: str, labels: Mapping[str, str], value: float) -> None:
        families.setdefault(name, (kind, help_text, []))[2].append(f"{name}{_labels(labels)} {value:g}")

    for index, gpu in enumerate(gpus):
        busy = 1.0 if gpu["workload"] else 0.0
        power = 300.0 + 350.0 * busy + 5 * index
        if vendor == NVIDIA:
            labels = {
                "gpu": str(index),
                "UUID": f"GPU-{node}-{index:04d}",
                "pci_bus_id": f"00000000:{0x18 + index:02X}:00.0",
                "device": f"nvidia{index}",
                "modelName": "NVIDIA H100 80GB HBM3",
                "Hostname": node,
                "DCGM_FI_DRIVER_VERSION": "580.105.08",
                **gpu["workload"],
            }
            add("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", labels, 40 + 20 * busy + index)
            add("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", labels, power)
            add(
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                "counter",
                "Total energy consumption since boot (in mJ).",
                labels,
                round(1e9 + power * elapsed * 1000),
            )
            add("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", labels, 512 + 60000 * busy)
            add(
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                "gauge",
                "Ratio of time the graphics engine is active.",
                labels,
                0.05 + 0.8 * busy,
            )
            add(
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                "gauge",
                "Ratio of cycles the tensor (HMMA) pipe is active.",
                labels,
                0.6 * busy,
            )
            add(
                "DCGM_FI_PROF_DRAM_ACTIVE",
                "gauge",
                "Ratio of cycles the device memory interface is active sending or receiving data.",
                labels,
                0.02 + 0.5 * busy,
            )
        else:
            labels = {
                "gpu_id": str(index),
                "serial_number": f"{node}-{index:04d}",
                "card_model": "AMD Instinct MI300X OAM",
                "gpu_partition_id": "0",
                "gpu_compute_partition_type": "spx",
                "hostname": node,
                **gpu["workload"],
            }
            add(
                "gpu_junction_temperature",
                "gauge",
                "Hotspot (aka junction) temperature value in Celsius",
                labels,
                45 + 25 * busy + index,
            )
            add("gpu_package_power", "gauge", "Current socket power in Watts; not available on guest VM", labels, power)
            add(
                "gpu_energy_consumed",
                "gauge",
                "Energy consumed by GPU in Micro Jules (uJ)",
                labels,
                round(1e12 + power * elapsed * 1e6),
            )
            add("gpu_used_vram", "gauge", "Total VRAM memory used in MB", labels, 1024 + 150000 * busy)
            add("gpu_gfx_activity", "gauge", "Graphics engine usage percentage (0 - 100)", labels, 3 + 80 * busy)
            add("gpu_umc_activity", "gauge", "Memory engine usage percentage (0 - 100)", labels, 2 + 50 * busy)
    lines = []
    for name, (kind, help_text, samples) in families.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
    return "\n".join(lines) + "\n"


def node_gpus(api: ApiServer, node: str, vendor: str) -> list[dict[str, Any]]:
    """The GPUs the node's ResourceSlice publishes for the vendor's driver, in name order, each with
    the workload an allocated ResourceClaim gives it to."""
    driver = DRIVER[vendor]
    devices = sorted(
        d["name"]
        for s in api.list_all("resource.k8s.io/v1", "ResourceSlice")
        if s["spec"].get("nodeName") == node and s["spec"].get("driver") == driver
        for d in s["spec"].get("devices") or []
    )
    given: dict[str, dict[str, str]] = {}
    for claim in api.list_all("resource.k8s.io/v1", "ResourceClaim"):
        status = claim.get("status") or {}
        pods = [r["name"] for r in status.get("reservedFor") or [] if r.get("resource") == "pods"]
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        for result in results:
            if pods and result.get("driver") == driver and result.get("pool") == node:
                given[result["device"]] = {
                    "pod": pods[0],
                    "namespace": claim["metadata"]["namespace"],
                    "container": CONTAINER_NAME,
                }
    return [{"device": d, "workload": given.get(d, {})} for d in devices]


def gpu_exporters() -> list[PodProgram]:
    """A simulated exporter for each Running exporter pod, NVIDIA's and AMD's, at its pod's IP and
    metrics port, with its node's GPUs (rewritten every poll: a claim allocated or released)."""

    def program(vendor: str) -> PodProgram:
        def refresh(pod: Pod, folder: Path, api: ApiServer) -> None:
            text = json.dumps(node_gpus(api, pod["spec"]["nodeName"], vendor))
            path = folder / "gpus.json"
            if not path.exists() or path.read_text() != text:
                path.with_suffix(".tmp").write_text(text)
                path.with_suffix(".tmp").replace(path)

        def argv(pod: Pod, folder: Path, api: ApiServer) -> list[str]:
            refresh(pod, folder, api)
            return [
                *(sys.executable, "-m", "tests.engine.gpu_exporters"),
                *("--vendor", vendor, "--host", pod_ip(pod), "--port", str(PODS[vendor].port[1])),
                *("--node", pod["spec"]["nodeName"], "--gpus", str(folder / "gpus.json")),
            ]

        return PodProgram(f"{GPU_EXPORTER}-{vendor}", labelled(PODS[vendor].labels), argv, refresh, in_pod=False)

    return [program(NVIDIA), program(AMD)]


# --------------------------------------------------------------------------------------------
# The collector

# The chart's default `config` that our values merge over (values.yaml @
# opentelemetry-collector-0.170.0, the newest tag of its repository: 0.174.0 is not tagged there,
# charts/README.md), less what the build of the collector (engine/otelcol) does not carry and no
# pipeline of ours uses: the `health_check` extension (the chart's probes read it; no kubelet
# probes here), and the `jaeger` and `zipkin` receivers, in no pipeline (their ports are off in
# our values). Left out too: `service.telemetry.resource`, attributes of the collector's own
# metrics (on :8888, which nothing here reads) taken from `OTEL_K8S_*` variables of the chart's pod
# template. Helm merges maps key by key and replaces lists (values over chart defaults).
CHART_DEFAULT_CONFIG: dict[str, Any] = {
    "exporters": {"debug": {}},
    "processors": {
        "batch": {},
        "memory_limiter": {"check_interval": "5s", "limit_percentage": 80, "spike_limit_percentage": 25},
    },
    "receivers": {
        "otlp": {
            "protocols": {
                "grpc": {"endpoint": "${env:MY_POD_IP}:4317"},
                "http": {"endpoint": "${env:MY_POD_IP}:4318"},
            }
        },
        "prometheus": {
            "config": {
                "scrape_configs": [
                    {
                        "job_name": "opentelemetry-collector",
                        "scrape_interval": "10s",
                        "static_configs": [{"targets": ["${env:MY_POD_IP}:8888"]}],
                    }
                ]
            }
        },
    },
    "service": {
        "telemetry": {
            "metrics": {"readers": [{"pull": {"exporter": {"prometheus": {"host": "${env:MY_POD_IP}", "port": 8888}}}}]}
        },
        "pipelines": {
            "logs": {"exporters": ["debug"], "processors": ["memory_limiter", "batch"], "receivers": ["otlp"]},
            "metrics": {
                "exporters": ["debug"],
                "processors": ["memory_limiter", "batch"],
                "receivers": ["otlp", "prometheus"],
            },
            "traces": {"exporters": ["debug"], "processors": ["memory_limiter", "batch"], "receivers": ["otlp"]},
        },
    },
}


def merged(defaults: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` over `defaults` as Helm merges them: maps key by key, anything else replaced."""
    out = copy.deepcopy(dict(defaults))
    for key, value in values.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def collector_config() -> dict[str, Any]:
    """The configuration the collector's pod runs: the product's config over the chart's defaults."""
    return merged(CHART_DEFAULT_CONFIG, telemetry.collector_config())


def otel_collector() -> PodProgram:
    """The real collector for the pod of the collector's Deployment (`standins.collector`), with
    `MY_POD_IP` set from the pod's IP as the chart's pod template sets it."""

    def argv(pod: Pod, folder: Path, api: ApiServer) -> list[str]:
        path = folder / "config.yaml"
        path.write_text(yaml.safe_dump(collector_config(), sort_keys=False))
        return ["/usr/bin/env", f"MY_POD_IP={pod_ip(pod)}", str(tool("otelcol")), f"--config=file:{path}"]

    release = next(c.release for c in CATALOG["Existing"] if c.key == telemetry.COMPONENT)
    selector = telemetry.collector_pod_labels(release)
    return PodProgram(COLLECTOR, labelled(selector), argv)


# --------------------------------------------------------------------------------------------
# The exporter process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vendor", choices=(NVIDIA, AMD), required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--gpus", type=Path, required=True)
    args = parser.parse_args()
    started = time.monotonic()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            gpus = json.loads(args.gpus.read_text())
            body = series(args.vendor, args.node, gpus, time.monotonic() - started).encode()
            self.send_response(200)
            self.send_header("Content-Type", METRICS_CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *items: Any) -> None:
            return

    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
