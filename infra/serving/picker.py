"""The endpoint picker of a deployment as data: its InferencePool, its configuration and its pod.

A deployment that a service routes with `routing: Picker` (`infra.serving.routes.picker_deployments`)
is fronted by the Gateway API Inference Extension: an `InferencePool` selecting exactly its serving
pods, and that project's endpoint picker (EPP), which scrapes each pod's vLLM metrics and answers the
gateway, for every request, with the pod to send it to: the one that served the prompt's prefix
(its KV cache holds it) unless its queue says otherwise. The objects follow what the project's
`inferencepool` chart renders at the pinned tag (config/charts/inferencepool and config/charts/epplib
at v1.5.0); each value names its source. The gateway's side of it is `components.features.routing`.

With `autoscaling.queueSeconds`, the picker's flow control holds requests while no pod can take them
(the pool is empty or saturated) for up to that long, and its queue is what brings a deployment at
zero replicas back (`flow_control_query`).

Not here: the Pulumi objects (`components.features.picker`), the rules (`infra.checks.routing`).
"""

from __future__ import annotations

from typing import Any

from infra.config.model import ChartMirror, ModelDeploymentSpec

# The project's release the picker, the pool API and the CRDs come from (the last with the full picker:
# v1.6.0 moved it to llm-d's router, GAIE PR #2973).
VERSION = "v1.5.0"
# The image its chart runs (config/charts/epplib/values.yaml `inferenceExtension.image` at v1.5.0).
IMAGE = f"registry.k8s.io/gateway-api-inference-extension/epp:{VERSION}"
# The CRDs of the release, one file (site-src/guides/index.md at v1.5.0: "kubectl apply -f
# https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/<tag>/manifests.yaml").
CRDS_URL = (
    f"https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/{VERSION}/manifests.yaml"
)
# The chart mirror's key for that file (`modelplane:chartMirror.components`, infra.serving.mirror).
CRDS_COMPONENT = "inference-extension-crds"

POOL_API = "inference.networking.k8s.io/v1"
POOL_GROUP = "inference.networking.k8s.io"
POOL_KIND = "InferencePool"
# The API group of the picker's optional kinds, which its Role lets it read
# (config/charts/inferencepool/templates/rbac.yaml at v1.5.0).
OBJECTIVES_GROUP = "inference.networking.x-k8s.io"
CONFIG_API = "inference.networking.x-k8s.io/v1alpha1"  # apix/config/v1alpha1 (its strict loader's kind)

# The picker's ports (config/charts/epplib/templates/_deployment.yaml and _service.yaml at v1.5.0;
# the flags' defaults in pkg/epp/server/options.go).
EXT_PROC_PORT = 9002
HEALTH_PORT = 9003
METRICS_PORT = 9090
EXT_PROC_PORT_NAME = "grpc-ext-proc"
METRICS_PORT_NAME = "metrics"
# The gRPC health service its probes ask with one replica (_deployment.yaml, `inference-extension`).
HEALTH_SERVICE = "inference-extension"

CONFIG_FILE = "picker.yaml"
CONFIG_DIR = "/config"
# The pod label the picker's own pods carry (ours): the deployment it picks for.
PICKER_LABEL = "modelplane.ai/endpoint-picker"

# The header the picker names its choice in, "ip:port" (pkg/epp/metadata/consts.go at v1.5.0,
# `DestinationEndpointKey`), which the gateway's load balancer reads.
DESTINATION_HEADER = "x-gateway-destination-endpoint"

# The scorers and their weights: prefix-cache 3 and queue 2, as in the picker's own default profile
# (pkg/epp/config/loader/defaults.go at v1.5.0), which modelplane's picker also uses
# (functions/compose-model-replica/function/routing.py). The KV-cache scorer is left out: it adds
# nothing to the queue's view that this configuration promises, and every scorer here is tested.
SCORERS = (("prefix-cache-scorer", 3), ("queue-scorer", 2))

# Flow control's queue-size gauge (pkg/epp/metrics/metrics.go at v1.5.0, labelled `inference_pool`
# with the pool's name), which the project's flow-control guide names for KEDA and scale to zero
# (site-src/guides/flow-control.md, "Autoscaling: KEDA and Scale-to-Zero").
QUEUE_METRIC = "inference_extension_flow_control_queue_size"


def crds_url(mirror: ChartMirror | None) -> str:
    """Where the cluster takes the pool's CRDs from: the file a chart mirror names for
    `inference-extension-crds` (an air-gapped cluster's copy of the release's manifests.yaml), else
    the release's own. A mirror's repository URL alone does not serve it: a Helm repository holds
    charts, and no chart holds these CRDs."""
    own = mirror.components.get(CRDS_COMPONENT) if mirror is not None else None
    return own.url if own is not None and own.url is not None else CRDS_URL


def picker_name(spec: ModelDeploymentSpec) -> str:
    """The picker's Deployment, Service, ConfigMap and ServiceAccount: `<release>-epp` in the chart,
    the pool being the release (config/charts/epplib/templates/_helpers.tpl at v1.5.0)."""
    return f"{spec.name}-epp"


def pool_name(spec: ModelDeploymentSpec) -> str:
    """The InferencePool: the deployment's own name, as the chart names the pool after its release."""
    return spec.name


def picker_config(spec: ModelDeploymentSpec) -> dict[str, Any]:
    """The EndpointPickerConfig (apix/config/v1alpha1/endpointpickerconfig_types.go at v1.5.0).

    Plugins are declared by type, each named after it; the profile weighs the scorers and picks the
    highest score. Omitted parts are the picker's defaults (pkg/epp/config/loader/defaults.go):
    vLLM's metric names, the approximate prefix producer the prefix scorer needs, the utilization
    saturation detector. With `queueSeconds`, flow control holds a request that no pod can take yet
    for that long (`flowControl.defaultRequestTTL`; feature gate `flowControl`, pkg/epp/flowcontrol/config.go).
    """
    plugins = [{"type": name} for name, _ in SCORERS] + [
        {"type": "max-score-picker"},
        {"type": "single-profile-handler"},
    ]
    config: dict[str, Any] = {
        "apiVersion": CONFIG_API,
        "kind": "EndpointPickerConfig",
        "plugins": plugins,
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [{"pluginRef": name, "weight": weight} for name, weight in SCORERS]
                + [{"pluginRef": "max-score-picker"}],
            }
        ],
    }
    seconds = queue_seconds(spec)
    if seconds is not None:
        config["featureGates"] = ["flowControl"]
        config["flowControl"] = {"defaultRequestTTL": f"{seconds}s"}
    return config


def queue_seconds(spec: ModelDeploymentSpec) -> int | None:
    return spec.autoscaling.queue_seconds if spec.autoscaling is not None else None


def picker_args(spec: ModelDeploymentSpec) -> list[str]:
    """The picker's command line: the chart's (config/charts/epplib/templates/_deployment.yaml at
    v1.5.0: the pool by name, namespace and group; JSON logs; the config file; tracing off), and
    two flags of pkg/epp/server/options.go the chart leaves at their defaults:

    - `--secure-serving=false`: the gateway reaches the picker in plain gRPC inside the cluster; with
      the default the picker serves a self-signed certificate, which Envoy Gateway's ext_proc
      backends verify against a CA (BackendTLSPolicy) and nothing here could name one;
    - `--metrics-endpoint-auth=false`: Prometheus scrapes the flow-control queue without a token (the
      chart's `monitoring.prometheus.auth.enabled: false` sets the same flag).
    """
    return [
        "--pool-name",
        pool_name(spec),
        "--pool-namespace",
        spec.namespace,
        "--pool-group",
        POOL_GROUP,
        "--zap-encoder",
        "json",
        "--config-file",
        f"{CONFIG_DIR}/{CONFIG_FILE}",
        "--tracing=false",
        "--metrics-endpoint-auth=false",
        "--secure-serving=false",
    ]


def pool_spec(spec: ModelDeploymentSpec, selector: dict[str, str]) -> dict[str, Any]:
    """The InferencePool (api/v1/inferencepool_types.go at v1.5.0): the deployment's serving pods (the
    leaders of multi-node groups, the same selector as its Service), its engine port, and its picker.

    `failureMode: FailClose`: what the gateway does when the picker does not answer. Envoy Gateway
    v1.8.3 cannot fail open to this picker, which answers in full-duplex streaming: its ext_proc API
    refuses `failOpen` with `FullDuplexStreamed` (api/v1alpha1/ext_proc_types.go), so the pool says
    what happens rather than what modelplane writes (FailOpen).
    """
    return {
        "selector": {"matchLabels": dict(selector)},
        "targetPorts": [{"number": spec.port}],
        "endpointPickerRef": {
            "name": picker_name(spec),
            "port": {"number": EXT_PROC_PORT},
            "failureMode": "FailClose",
        },
    }


def picker_rules() -> list[dict[str, Any]]:
    """The picker's Role (config/charts/epplib/templates/_rbac.yaml and
    config/charts/inferencepool/templates/rbac.yaml at v1.5.0): it reads its pool and the pods."""
    read = ["get", "watch", "list"]
    return [
        {"apiGroups": [""], "resources": ["pods"], "verbs": read},
        {"apiGroups": [POOL_GROUP], "resources": ["inferencepools"], "verbs": read},
        {
            "apiGroups": [OBJECTIVES_GROUP],
            "resources": ["inferenceobjectives", "inferencemodelrewrites"],
            "verbs": read,
        },
    ]


def flow_control_query(spec: ModelDeploymentSpec) -> str:
    """What KEDA asks Prometheus to wake a deployment at zero: the requests its picker holds."""
    return f'sum({QUEUE_METRIC}{{namespace="{spec.namespace}",inference_pool="{pool_name(spec)}"}})'
