"""The dashboards section of docs/telemetry.md, from `infra.serving.dashboards`.

Each dashboard, each panel with its unit and queries, and where the series come from are read from
the dashboards' module, and the Grafana settings from kube-prometheus-stack's values; this module
writes text only. `tooling.telemetry_doc` puts the section in the page.
"""

from __future__ import annotations

from infra.serving.autoscaling import PROMETHEUS_COMPONENT
from infra.serving.catalog import CATALOG
from infra.serving.dashboards import DASHBOARDS, DATASOURCE, FOLDER, SOURCES, Dashboard, config_map_name
from infra.serving.values import kube_prometheus_stack


def _code(text: str) -> str:
    """Inline code a Markdown table cell can hold (a `|` would end the cell)."""
    return "`" + text.replace("|", "\\|") + "`"


def _dashboard(dashboard: Dashboard) -> list[str]:
    lines = [f"### {dashboard.title}", "", dashboard.description, ""]
    lines.append(f"uid `{dashboard.uid}`, ConfigMap `{config_map_name(dashboard)}`.")
    if dashboard.variables:
        variables = ", ".join(f"`${v.name}` ({_code(v.query)})" for v in dashboard.variables)
        lines.append(f"Variables: {variables}.")
    lines += ["", "| panel | unit | query | legend |", "|---|---|---|---|"]
    for panel in dashboard.panels:
        for i, target in enumerate(panel.targets):
            title, unit = (panel.title, f"`{panel.unit}`") if i == 0 else ("", "")
            lines.append(f"| {title} | {unit} | {_code(target.expr)} | {target.legend} |")
    lines.append("")
    return lines


def _sources() -> list[str]:
    lines = ["| series from | exported by | in the stack's Prometheus | scraped through |", "|---|---|---|---|"]
    for key, source in SOURCES.items():
        lines.append(f"| {key} | {source.exported_by} | {'yes' if source.scraped else 'no'} | {source.how} |")
    return lines


def dashboards_section() -> list[str]:
    """The `## Dashboards` section: Grafana's settings, where the series come from, every panel."""
    sidecar = kube_prometheus_stack("Existing")["grafana"]["sidecar"]["dashboards"]
    # The grafana subchart's fullname is `<release>-grafana` (charts/grafana/templates/_helpers.tpl
    # `grafana.fullname` @ grafana-12.3.0, for a release name without "grafana" in it).
    release = next(c.release for c in CATALOG["Existing"] if c.key == PROMETHEUS_COMPONENT)
    return [
        "## Dashboards",
        "",
        " ".join(
            (
                "Where the serving stack installs kube-prometheus-stack, its Grafana is on and the",
                "stack adds the dashboards below, one ConfigMap each in the release's namespace,",
                f'labelled `{sidecar["label"]}: "{sidecar["labelValue"]}"` for Grafana\'s dashboard',
                f"sidecar (whose `searchNamespace` is `{sidecar['searchNamespace']}`) and annotated",
                f"`{sidecar['folderAnnotation']}: {FOLDER}`, so they appear in Grafana's `{FOLDER}` folder.",
                "kube-prometheus-stack's own dashboards stay on, in the General folder. Every panel",
                f"queries the Prometheus datasource the chart provisions (uid `{DATASOURCE['uid']}`).",
                "No admin password is set: the grafana chart generates one into the Secret",
                f"`{release}-grafana` (key `admin-password`). A cluster whose owner runs",
                "kube-prometheus-stack (`existing.preinstalled`) gets no dashboards: nothing says the",
                "owner's Grafana reads these labels.",
            )
        ),
        "",
        *_sources(),
        "",
        " ".join(
            (
                "The GPU panels read the collector's exporter, through the PodMonitor the stack",
                "creates for it; the serving panels read every deployment's series, through its",
                "PodMonitor. On an Existing cluster that runs its own kube-prometheus-stack, both",
                "exist only when `existing.prometheus` names the Prometheus, whose labels they carry.",
            )
        ),
        "",
        *[line for dashboard in DASHBOARDS for line in _dashboard(dashboard)],
    ]
