"""Stand-in charts for the cluster tier: one per catalog row, at its chart name and pinned version.

The pinned charts' archives are not in this repository and cannot be fetched in CI
(`charts/README.md` records where each comes from, to fill a mirror), so the cluster tier
installs stand-ins that Helm renders from the same values. Each stand-in renders what its catalog
row (`infra.serving.chart.Chart`) says the real chart installs, from the values paths the real chart
reads (its node agents, taken from each chart's values.yaml at its pinned tag, with the chart's
defaults where the values leave a path unset):

- one DaemonSet per node agent of its release: the chart's own (a DRA kubelet plugin, NFD's
  worker, node-exporter) or one its operator creates from its custom resource (the NVIDIA
  operator's operands, the AMD operator's DRA driver, node labeller, metrics exporter), with the
  node selector, affinity and tolerations those paths resolve to, and none when its `enabled`
  path turns it off;
- the DeviceClass its real chart creates, with that chart's CEL selector;
- a controller Deployment (every chart has one or more), on whatever node admits it;
- the GPU exporters' pods labelled and ported as their operators make them (`EXPORTERS`), and the
  telemetry collector's Deployment as its chart renders it (`collector`), which the collector's
  scrape jobs and its PodMonitor select;
- a post-install hook Job where the real chart runs one (cert-manager's `startupapicheck`), and the
  CRD bundles the row names in `crds/` (`CRD_BUNDLES`: the Gateway API release engine/crds pins, as
  gateway-helm carries it with Envoy Gateway's own policies, lws's LeaderWorkerSet, KEDA's ScaledObject, kube-prometheus-stack's PodMonitor).

So the tier proves the real provider's Helm installs, awaits and hooks, the program's own objects,
the scheduler's placement of every agent from our values, and DRA allocation; it does not prove
the real charts' templates, which `tests/test_values.py` checks offline against each chart's
values.yaml keys.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infra.serving import telemetry
from infra.serving.catalog import CATALOG
from infra.serving.chart import Chart, NodeAgent
from infra.serving.rows import AMD_OPERATOR_KEY, NVIDIA_OPERATOR_KEY
from tests.engine.kube import (
    envoy_gateway_crds,
    gateway_api_crds,
    keda_crds,
    lws_crds,
    pod_monitor_crds,
    prometheus_crds,
    service_monitor_crds,
)

# What every stand-in pod runs; KWOK runs no container, so it is never pulled.
IMAGE = "registry.k8s.io/pause:3.10"
# The CRD bundles a row's `crds` names, each as the stand-in's `crds/<bundle>.yaml`.
CRD_BUNDLES: Mapping[str, Callable[[], list[dict[str, Any]]]] = {
    "gateway-api": gateway_api_crds,
    "envoy-gateway": envoy_gateway_crds,
    "leaderworkerset": lws_crds,
    "keda": keda_crds,
    "podmonitors": pod_monitor_crds,
    "servicemonitors": service_monitor_crds,
    "prometheuses": prometheus_crds,
}


def _lookup(var: str, path: Sequence[str]) -> str:
    """Template lines that set `$<var>` to the value at `path` and `$<var>Ok` to whether it is set."""
    keys = " ".join(json.dumps(k) for k in path)
    return (
        f"{{{{- ${var} := .Values.AsMap }}}}{{{{- ${var}Ok := true }}}}\n"
        f"{{{{- range $k := list {keys} }}}}"
        f'{{{{- if and ${var}Ok (kindIs "map" ${var}) (hasKey ${var} $k) }}}}{{{{- ${var} = index ${var} $k }}}}'
        f"{{{{- else }}}}{{{{- ${var}Ok = false }}}}{{{{- end }}}}{{{{- end }}}}\n"
    )


@dataclass(frozen=True)
class ExporterPods:
    """The pods of a GPU exporter as its real operator labels them and names their metrics port,
    which the collector's scrape jobs select (`infra.serving.telemetry`). `workload` names a
    DaemonSet of its own beside the agent's (one of several operands the stand-in folds into one
    agent); None puts the labels and port on the agent's own pods."""

    labels: Mapping[str, str]
    port: tuple[str, int]
    workload: str | None = None


# NVIDIA's GPU Operator runs dcgm-exporter as one of its operands, its pods labelled
# `app: nvidia-dcgm-exporter` with the container port `metrics`, 9400 (assets/state-dcgm-exporter
# 0800_daemonset.yaml @ NVIDIA/gpu-operator v26.3.3, as infra/serving/telemetry.py records it);
# the AMD operator's metrics exporter labels its pods `app.kubernetes.io/name: metrics-exporter`,
# container port `exporter-port`, 5000 unless the DeviceConfig sets another
# (internal/metricsexporter @ ROCm/gpu-operator v1.5.1, ibid.).
EXPORTERS: Mapping[tuple[str, str], ExporterPods] = {
    (NVIDIA_OPERATOR_KEY, "operands"): ExporterPods(
        {"app": "nvidia-dcgm-exporter"}, ("metrics", 9400), workload="nvidia-dcgm-exporter"
    ),
    (AMD_OPERATOR_KEY, "metrics-exporter"): ExporterPods(
        {"app.kubernetes.io/name": "metrics-exporter"}, ("exporter-port", 5000)
    ),
}


def daemonset(agent: NodeAgent, workload: str | None = None, pods: ExporterPods | None = None) -> str:
    """A DaemonSet placed as `tooling.placement.agent_placement` resolves the agent's values (named
    for `workload`, default the agent's), its pods labelled and ported as `pods` says."""
    out = []
    if agent.enabled is not None:
        out.append(_lookup("on", agent.enabled))
        out.append(f"{{{{- if (ternary $on {json.dumps(agent.enabled_default)} $onOk) }}}}\n")
    out.append(_lookup("tol", agent.tolerations))
    out.append(
        f"{{{{- if not $tolOk }}}}{{{{- $tol = fromJsonArray {json.dumps(json.dumps(list(agent.default_tolerations)))} }}}}{{{{- end }}}}\n"
    )
    out.append(f"{{{{- $sel := fromJson {json.dumps(json.dumps(dict(agent.default_node_selector)))} }}}}\n")
    out.append("{{- $selDone := false }}\n")
    for i, path in enumerate(agent.node_selectors):
        last = i == len(agent.node_selectors) - 1
        out.append(_lookup(f"s{i}", path))
        # An empty component selector defers to the shared one; an empty last one selects every node.
        cond = f"$s{i}Ok" if last else f"(and $s{i}Ok $s{i})"
        out.append(
            f"{{{{- if and (not $selDone) {cond} }}}}{{{{- $sel = (default dict $s{i}) }}}}{{{{- $selDone = true }}}}{{{{- end }}}}\n"
        )
    out.append(f"{{{{- $aff := fromJson {json.dumps(json.dumps(agent.default_affinity or {}))} }}}}\n")
    if agent.affinity is not None:
        out.append(_lookup("af", agent.affinity))
        out.append("{{- if $afOk }}{{- $aff = (default dict $af) }}{{- end }}\n")
    name = f"{{{{ .Release.Name }}}}-{workload or agent.workload}"
    labels = json.dumps({"app": name, **(pods.labels if pods else {})})
    container = {"name": "agent", "image": IMAGE}
    if pods is not None:
        container["ports"] = [{"name": pods.port[0], "containerPort": pods.port[1]}]  # type: ignore[list-item]
    out.append(
        f"""apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
  namespace: {{{{ .Release.Namespace }}}}
spec:
  selector:
    matchLabels: {labels}
  template:
    metadata:
      labels: {labels}
    spec:
      nodeSelector: {{{{ $sel | toJson }}}}
      affinity: {{{{ $aff | toJson }}}}
      tolerations: {{{{ $tol | toJson }}}}
      containers:
        - {json.dumps(container)}
"""
    )
    if agent.enabled is not None:
        out.append("{{- end }}\n")
    return "".join(out)


def controller() -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Release.Name }}}}-controller
  namespace: {{{{ .Release.Namespace }}}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: {{{{ .Release.Name }}}}-controller}}
  template:
    metadata:
      labels: {{app: {{{{ .Release.Name }}}}-controller}}
    spec:
      containers:
        - {{name: controller, image: {IMAGE}}}
"""


def hook_job() -> str:
    # cert-manager's startupapicheck: a post-install/post-upgrade hook Job (templates/startupapicheck-job.yaml).
    return f"""apiVersion: batch/v1
kind: Job
metadata:
  name: {{{{ .Release.Name }}}}-startupapicheck
  namespace: {{{{ .Release.Namespace }}}}
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 4
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - {{name: check, image: {IMAGE}}}
"""


def prometheus_server() -> str:
    """kube-prometheus-stack's Prometheus: the `Prometheus` its operator runs, and the Service KEDA
    and our dashboards ask.

    The selectors follow the chart's own template (templates/prometheus/prometheus.yaml @
    kube-prometheus-stack-84.4.0): a selector the values set is used as written; an empty or unset
    one selects `release: <release>` while `<kind>SelectorNilUsesHelmValues` is true (the chart's
    default, values.yaml), else everything. Names as its helpers make them: the fullname is the
    release name when that holds the chart's name (`mp-kube-prometheus-stack`), the custom resource
    and the Service `<fullname>-prometheus`, port 9090, selecting the operator's pods of it
    (templates/prometheus/service.yaml).
    """
    return """{{- $ps := dig "prometheus" "prometheusSpec" dict .Values.AsMap }}
{{- $name := printf "%s-prometheus" .Release.Name }}
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata:
  name: {{ $name }}
  namespace: {{ .Release.Namespace }}
spec:
  replicas: 1
  version: v3.11.3
{{- range $kind := list "podMonitor" "serviceMonitor" }}
{{- $sel := get $ps (printf "%sSelector" $kind) }}
{{- if $sel }}
  {{ $kind }}Selector: {{ $sel | toJson }}
{{- else if (dig (printf "%sSelectorNilUsesHelmValues" $kind) true $ps) }}
  {{ $kind }}Selector: {"matchLabels": {"release": {{ $.Release.Name | quote }}}}
{{- else }}
  {{ $kind }}Selector: {}
{{- end }}
  {{ $kind }}NamespaceSelector: {{ (get $ps (printf "%sNamespaceSelector" $kind)) | default dict | toJson }}
{{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  namespace: {{ .Release.Namespace }}
spec:
  ports:
    - {name: http-web, port: 9090, targetPort: 9090}
  selector:
    app.kubernetes.io/name: prometheus
    operator.prometheus.io/name: {{ $name }}
"""


def keda_servers() -> str:
    """The keda chart's operator and metrics API server, their Services, and the APIService of the
    external metrics API, as kedacore/charts keda 2.20.2 renders them with its default values
    (templates/manager/deployment.yaml and service.yaml, templates/metrics-server/deployment.yaml,
    service.yaml and apiservice.yaml; names from values.yaml `operator.name: keda-operator`,
    `certificates.secretName: kedaorg-certs`, `certificates.mountPath: /certs`, `service.portHttps:
    443`, `service.portHttpsTarget: 6443`). The containers' arguments, environment and certificate
    volume are the chart's, which the real programs run with (`podproc.keda`); the operator makes
    the certificates (`--enable-cert-rotation=true`: `certificates.autoGenerated: true`) and writes
    their authority into the APIService. The admission webhooks' Deployment is left out: no test
    here claims their behaviour, and a registered webhook nobody serves would slow every write."""
    env = """            - {name: WATCH_NAMESPACE, value: ""}
            - name: POD_NAMESPACE
              valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
            - {name: KEDA_HTTP_DEFAULT_TIMEOUT, value: "3000"}
            - {name: KEDA_HTTP_MIN_TLS_VERSION, value: TLS12}
            - {name: KEDA_HTTP_TLS_CIPHER_LIST, value: ""}
            - {name: KEDA_SERVICE_MIN_TLS_VERSION, value: TLS13}
            - {name: KEDA_SERVICE_TLS_CIPHER_LIST, value: ""}
            - {name: KEDA_HTTP_DISABLE_KEEP_ALIVE, value: "true"}"""
    certificates = """          volumeMounts:
            - {name: certificates, mountPath: /certs, readOnly: true}
      volumes:
        - name: certificates
          secret: {secretName: kedaorg-certs, defaultMode: 420, optional: true}"""
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: keda-operator
  namespace: {{{{ .Release.Namespace }}}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: keda-operator}}
  template:
    metadata:
      labels: {{app: keda-operator, name: keda-operator, app.kubernetes.io/name: keda-operator}}
    spec:
      containers:
        - name: keda-operator
          image: {IMAGE}
          command: [/keda]
          args:
            - --leader-elect
            - --disable-compression=true
            - --zap-log-level=info
            - --zap-encoder=console
            - --zap-time-encoding=rfc3339
            - --enable-webhook-patching=true
            - --cert-dir=/certs
            - --enable-cert-rotation=true
            - --cert-secret-name=kedaorg-certs
            - --operator-service-name=keda-operator
            - --metrics-server-service-name=keda-operator-metrics-apiserver
            - --webhooks-service-name=keda-admission-webhooks
            - --k8s-cluster-name=kubernetes-default
            - --k8s-cluster-domain=cluster.local
            - --enable-prometheus-metrics=false
            - --http-max-idle-conns=0
            - --http-max-idle-conns-per-host=1000
            - --http-idle-conn-timeout=90s
          ports:
            - {{containerPort: 9666, name: metricsservice, protocol: TCP}}
          env:
            - name: POD_NAME
              valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}
            - {{name: OPERATOR_NAME, value: keda-operator}}
{env}
{certificates}
---
apiVersion: v1
kind: Service
metadata:
  name: keda-operator
  namespace: {{{{ .Release.Namespace }}}}
spec:
  ports:
    - {{name: metricsservice, port: 9666, targetPort: 9666}}
  selector: {{app: keda-operator}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: keda-operator-metrics-apiserver
  namespace: {{{{ .Release.Namespace }}}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: keda-operator-metrics-apiserver}}
  template:
    metadata:
      labels: {{app: keda-operator-metrics-apiserver, app.kubernetes.io/name: keda-operator-metrics-apiserver}}
    spec:
      containers:
        - name: keda-operator-metrics-apiserver
          image: {IMAGE}
          command: [/keda-adapter]
          args:
            - --port=8080
            - --secure-port=6443
            - --logtostderr=true
            - --stderrthreshold=ERROR
            - --disable-compression=true
            - --metrics-service-address=keda-operator.{{{{ .Release.Namespace }}}}.svc.cluster.local:9666
            - --client-ca-file=/certs/ca.crt
            - --tls-cert-file=/certs/tls.crt
            - --tls-private-key-file=/certs/tls.key
            - --cert-dir=/certs
            - --v=0
            - --zap-log-level=info
            - --zap-encoder=console
            - --zap-time-encoding=rfc3339
          ports:
            - {{containerPort: 6443, name: https, protocol: TCP}}
            - {{containerPort: 8080, name: metrics, protocol: TCP}}
          env:
{env}
{certificates}
---
apiVersion: v1
kind: Service
metadata:
  name: keda-operator-metrics-apiserver
  namespace: {{{{ .Release.Namespace }}}}
spec:
  ports:
    - {{name: https, port: 443, targetPort: 6443, protocol: TCP, appProtocol: https}}
    - {{name: metrics, port: 8080, targetPort: 8080, protocol: TCP}}
  selector: {{app: keda-operator-metrics-apiserver}}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.external.metrics.k8s.io
spec:
  service:
    name: keda-operator-metrics-apiserver
    namespace: {{{{ .Release.Namespace }}}}
    port: 443
  group: external.metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
"""


def collector() -> str:
    """The telemetry collector's Deployment as the chart renders it in `mode: deployment`: named
    for the release (which holds the chart's name), its pods labelled with the chart's selector
    labels and component, a container port for each enabled `ports` entry named by its key, and
    `MY_POD_IP` from the pod's IP, which the collector's config reads (templates/deployment.yaml,
    templates/_pod.tpl, `podPortsConfig` in templates/_config.tpl and templates/_helpers.tpl @
    opentelemetry-collector-0.170.0, the newest tag of the chart's repository)."""
    return f"""{{{{- $labels := dict "app.kubernetes.io/name" "{telemetry.CHART}" "app.kubernetes.io/instance" .Release.Name "component" "standalone-collector" }}}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Release.Name }}}}
  namespace: {{{{ .Release.Namespace }}}}
spec:
  replicas: 1
  selector:
    matchLabels: {{{{ $labels | toJson }}}}
  template:
    metadata:
      labels: {{{{ $labels | toJson }}}}
    spec:
      containers:
        - name: opentelemetry-collector
          image: {IMAGE}
          ports:
{{{{- range $key, $port := .Values.ports }}}}
{{{{- if $port.enabled }}}}
            - {{name: {{{{ $key }}}}, containerPort: {{{{ $port.containerPort }}}}, protocol: {{{{ $port.protocol }}}}}}
{{{{- end }}}}
{{{{- end }}}}
          env:
            - {{name: MY_POD_IP, valueFrom: {{fieldRef: {{apiVersion: v1, fieldPath: status.podIP}}}}}}
"""


# Objects a row's stand-in carries beyond its workloads, by catalog key: what the data plane's
# real programs (`podproc.py`) act on.
DATA_PLANE: Mapping[str, Callable[[], str]] = {
    "kube-prometheus-stack": prometheus_server,
    "keda": keda_servers,
    telemetry.COMPONENT: collector,
}


def device_class(name: str, cel: str, gate: tuple[str, ...] | None) -> str:
    body = f"""apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: {name}
spec:
  selectors:
    - cel:
        expression: {json.dumps(cel)}
"""
    if gate is None:
        return body
    return _lookup("dc", gate) + "{{- if (ternary $dc true $dcOk) }}\n" + body + "{{- end }}\n"


def files_of(chart: Chart) -> dict[str, str]:
    files = {
        "Chart.yaml": yaml.safe_dump(
            {
                "apiVersion": "v2",
                "name": chart.chart,
                "version": chart.version,
                "description": f"Stand-in for {chart.chart} {chart.version} (tests/engine/standins.py)",
            },
            sort_keys=False,
        ),
        "values.yaml": "{}\n",
        "templates/controller.yaml": controller(),
    }
    for agent in chart.agents:
        pods = EXPORTERS.get((chart.key, agent.workload))
        if pods is not None and pods.workload is not None:
            files[f"templates/{pods.workload}.yaml"] = daemonset(agent, pods.workload, pods)
            pods = None
        files[f"templates/{agent.workload}.yaml"] = daemonset(agent, pods=pods)
    if chart.device_class is not None:
        dc = chart.device_class
        files["templates/deviceclass.yaml"] = device_class(dc.name, dc.cel, dc.created_by)
    if chart.post_install_hook:
        files["templates/hook.yaml"] = hook_job()
    if chart.key in DATA_PLANE:
        files["templates/data-plane.yaml"] = DATA_PLANE[chart.key]()
    for bundle in chart.crds:
        files[f"crds/{bundle}.yaml"] = yaml.safe_dump_all(CRD_BUNDLES[bundle](), sort_keys=False)
    return files


def package(chart: Chart, folder: Path) -> Path:
    """The stand-in as a chart archive, `<chart>-<version>.tgz`, as `helm package` lays it out."""
    archive = folder / f"{chart.chart}-{chart.version}.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in sorted(files_of(chart).items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{chart.chart}/{name}")
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return archive


def build(folder: Path, source: str = "Existing") -> list[Path]:
    """A stand-in archive for every catalog row of a cloud, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    return [package(c, folder) for c in CATALOG[source]]
