"""What driver filtering saves on each cluster: releases and DaemonSets installed.

Per cloud, three clusters: CPU-only (`dra.cpu`), NVIDIA (`gpu.nvidia.com`), and unfiltered (every
component the cloud's catalog lists, as a stack that ignored `draDrivers` would install). Releases
come from the catalog join; DaemonSets from the chart values actually passed (a DaemonSet that a
value turns off is not counted). The DaemonSet table is data: one entry per chart, each a list of
(DaemonSet, condition on the values).

    uv run python -m bench.footprint
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from clouds import SOURCES
from infra.serving.catalog import CATALOG, join_charts
from infra.serving.chart import Chart


def at(values: Mapping[str, Any], path: str, default: Any) -> Any:
    cur: Any = values
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return default
        cur = cur[part]
    return cur


def on(path: str, default: bool = True) -> Callable[[Mapping[str, Any]], bool]:
    return lambda values: bool(at(values, path, default))


ALWAYS: Callable[[Mapping[str, Any]], bool] = lambda values: True  # noqa: E731

# chart -> DaemonSets it brings (directly or through the operator it installs), with the value
# that turns each on; defaults are the charts' own.
DAEMONSETS: Mapping[str, Sequence[tuple[str, Callable[[Mapping[str, Any]], bool]]]] = {
    "kube-prometheus-stack": [("prometheus-node-exporter", on("nodeExporter.enabled"))],
    "node-feature-discovery": [("nfd-worker", on("worker.enable"))],
    "gpu-operator": [
        ("nvidia-driver-daemonset", on("driver.enabled")),
        ("nvidia-container-toolkit-daemonset", on("toolkit.enabled")),
        ("nvidia-device-plugin-daemonset", on("devicePlugin.enabled")),
        ("gpu-feature-discovery", on("gfd.enabled")),
        ("nvidia-dcgm-exporter", on("dcgmExporter.enabled")),
        ("nvidia-mig-manager", on("migManager.enabled")),
        ("nvidia-operator-validator", ALWAYS),
    ],
    "dra-driver-nvidia-gpu": [("dra-driver-nvidia-gpu-kubelet-plugin", on("resources.gpus.enabled"))],
    "dra-driver-cpu": [("dra-driver-cpu", ALWAYS)],
    "gpu-operator-charts": [
        ("default-dra-driver", on("deviceConfig.spec.draDriver.enable", False)),
        ("default-device-plugin", on("deviceConfig.spec.devicePlugin.enableDevicePlugin")),
        ("default-node-labeller", on("deviceConfig.spec.devicePlugin.enableNodeLabeller")),
        ("default-metrics-exporter", on("deviceConfig.spec.metricsExporter.enable")),
    ],
}


def daemonsets(components: Sequence[Chart]) -> list[str]:
    out = []
    for c in components:
        out += [f"{c.release}/{name}" for name, cond in DAEMONSETS.get(c.chart, []) if cond(c.values)]
    return out


def footprint() -> list[dict[str, Any]]:
    rows = []
    for cloud in SOURCES:
        unfiltered = list(CATALOG[cloud])
        for label, drivers in (("CPU only", ["dra.cpu"]), ("NVIDIA", ["gpu.nvidia.com"])):
            joined = join_charts(CATALOG[cloud], drivers)
            rows.append(
                {
                    "cloud": cloud,
                    "cluster": label,
                    "releases": len(joined),
                    "daemonsets": len(daemonsets(joined)),
                    "unfiltered_releases": len(unfiltered),
                    "unfiltered_daemonsets": len(daemonsets(unfiltered)),
                }
            )
    return rows


def markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    lines = [
        "| cloud | cluster | releases | DaemonSets | unfiltered releases | unfiltered DaemonSets | releases ratio | DaemonSets ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['cloud']} | {r['cluster']} | {r['releases']} | {r['daemonsets']} | {r['unfiltered_releases']} | "
            f"{r['unfiltered_daemonsets']} | {r['releases'] / r['unfiltered_releases']:.2f} | "
            f"{r['daemonsets'] / max(r['unfiltered_daemonsets'], 1):.2f} |"
        )
    return "\n".join(lines)


def main() -> int:
    print(markdown(footprint()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
