"""The fleet model's deployments and services: what runs on a pool and how it is published."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    Discriminator,
    Field,
    StrictInt,
    StringConstraints,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from infra.config.base import Model, unitless_bytes
from infra.config.classes import CapacityValue
from infra.config.names import (
    DNS1035_LABEL,
    MAX_POOL_NODES,
    MAX_REPLICAS,
    MAX_STABILIZATION_SECONDS,
    MAX_STARTUP_SECONDS,
    DnsLabel,
    shown,
)
from infra.formats import parse_quantity


class DeploymentDevice(Model):
    name: str
    count: Annotated[StrictInt, Field(ge=1, le=64)] = 1


class CacheVolume(StrEnum):
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    NODE_LOCAL = "NodeLocal"
    SHARED = "Shared"


class ModelCache(Model):
    """Where the engine keeps downloaded weights across restarts.

    `PersistentVolumeClaim`: a volume of `size` from `storageClassName` (default: the cloud's class,
    listed in docs/serving.md); `NodeLocal`: a directory on the node (kept while the pod returns to the
    same node, nothing to provision); `Shared`: a ReadWriteMany volume of `size` per cluster, namespace
    and model, filled once by a download Job and mounted read-only by every pod
    (`infra.shared_cache`; the cloud's class, or `storageClassName`).
    """

    volume: CacheVolume = CacheVolume.PERSISTENT_VOLUME_CLAIM
    size: str | None = None
    storage_class_name: DnsLabel | None = None

    @field_validator("size", mode="before")
    @classmethod
    def _size_quantity(cls, v: Any) -> str | None:
        if v is None:
            return None
        value = CapacityValue(value=v).value
        unitless_bytes("size", v)
        return value

    @model_validator(mode="after")
    def _size_for_claims(self) -> ModelCache:
        if self.volume is not CacheVolume.NODE_LOCAL and self.size is None:
            raise ValueError(
                f"a {self.volume} cache needs a size; set size to more than the model's weights, "
                "e.g. 50Gi, or use volume: NodeLocal"
            )
        if self.volume is CacheVolume.NODE_LOCAL and (self.size or self.storage_class_name):
            raise ValueError(
                "a NodeLocal cache takes no size or storageClassName; remove them, or use volume: PersistentVolumeClaim"
            )
        return self


class ScalingMetric(StrEnum):
    """The load signals a deployment scales on, each one of vLLM's own metrics
    (`infra.serving.autoscaling.VLLM_METRICS` names them and their source)."""

    REQUESTS_WAITING = "RequestsWaiting"
    REQUESTS_RUNNING = "RequestsRunning"
    KV_CACHE_USAGE = "KVCacheUsage"


class Autoscaling(Model):
    """`deployments[].autoscaling`: replicas follow `metric`, kept between the bounds.

    `target` is the metric's value one replica is meant to carry: a request count for the request
    metrics, a fraction of the KV cache (0 to 1) for `KVCacheUsage`. Rules across keys (`minReplicas: 0`,
    `replicas` beside it): `infra.checks.services.check_autoscaling`.

    `scaleDownSeconds` is how long the load must stay low before replicas fall back (the HPA's
    scale-down stabilization window). Unset, the ScaledObject sets nothing and the HPA keeps its
    default of 300 s, so a stack without the key plans as before. Scale-up has no key: the HPA's
    default (no window; double or add 4 pods per 15 s) already follows the load at once.
    """

    min_replicas: Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)] = 1
    max_replicas: Annotated[StrictInt, Field(ge=1, le=MAX_REPLICAS)]
    metric: ScalingMetric
    target: Annotated[float, Field(gt=0)]
    scale_down_seconds: Annotated[StrictInt, Field(ge=0, le=MAX_STABILIZATION_SECONDS)] | None = None
    # How long the endpoint picker holds a request while no replica can take it (its flow control's
    # request time to live), which is what lets `minReplicas: 0` answer a first request; the rules
    # that tie it to routing and the start-up time: `infra.checks.services.check_autoscaling`.
    queue_seconds: Annotated[StrictInt, Field(ge=1, le=MAX_STARTUP_SECONDS)] | None = None

    @model_validator(mode="after")
    def _bounds(self) -> Autoscaling:
        if self.min_replicas > self.max_replicas:
            raise ValueError(
                f"minReplicas {self.min_replicas} is above maxReplicas {self.max_replicas}; "
                "set minReplicas at most maxReplicas"
            )
        if self.metric is ScalingMetric.KV_CACHE_USAGE and self.target > 1:
            raise ValueError(
                f"KVCacheUsage is a fraction of the KV cache from 0 to 1, not {self.target:g}; "
                "write the target as a fraction, e.g. 0.8"
            )
        return self


class SecureValue(Model):
    """A `secure:` value inside structured config: ciphertext offline, never shown in plain."""

    secure: str


# An env value is plain text or a `secure:` mapping. The discriminator picks the one member the
# value can be (a mapping: a secret reference), so a mistake gets one error, not one per member.
# The tags appear in pydantic's error locations; `issues_from_validation` drops them, since they
# name no place in the stack file (the parentheses keep them apart from the keys users write).
UNION_TAGS = frozenset({"(text)", "(secure)"})


def _env_value_kind(value: Any) -> str:
    return "(secure)" if isinstance(value, dict | SecureValue) else "(text)"


EnvValue = Annotated[
    Annotated[str, Tag("(text)")] | Annotated[SecureValue, Tag("(secure)")], Discriminator(_env_value_kind)
]


class ModelDeploymentSpec(Model):
    # The name is also the Service's name, and a Service's name is an RFC 1035 label
    # (https://kubernetes.io/docs/concepts/services-networking/service/): it starts with a letter.
    name: DnsLabel
    namespace: DnsLabel = "default"
    cluster: str
    pool: str
    image: str
    args: list[str] = Field(default_factory=list)
    replicas: Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)] = 1
    devices: Annotated[list[DeploymentDevice], Field(min_length=1)]
    # Environment variable names: any printable ASCII but '=' (KEP-4369, on by default since
    # Kubernetes 1.32, the floor here is 1.34), and not empty. A `secure:` value (a gated model's
    # token) reaches the pod through a Secret, never in plain.
    env: dict[str, EnvValue] = Field(default_factory=dict)
    # Size of the memory-backed /dev/shm; it counts against the node's RAM (and the pod's memory).
    shm_size: str = "2Gi"

    # The one port of the engine: the program passes it as `--port`, and the container port, the
    # probes, the Service and the route all use it (check_serving rejects args that set another).
    port: Annotated[int, Field(ge=1, le=65535)] = 8000
    # Memory request and limit of the engine container (the same value: an engine is not burstable);
    # when it is required: check_serving.
    memory: str | None = None
    cache: ModelCache | None = None
    # How long a first start may take (download and load) before the startup probe gives up.
    startup_seconds: Annotated[int, Field(ge=60, le=MAX_STARTUP_SECONDS)] = 1800
    # Replicas that follow the load (a KEDA ScaledObject); exclusive with `replicas`.
    autoscaling: Autoscaling | None = None

    @property
    def peak_replicas(self) -> int:
        """The most replicas the deployment runs: `replicas`, or `autoscaling.maxReplicas`. What the
        pool must hold at its largest (`infra.checks.schedulable`)."""
        return self.autoscaling.max_replicas if self.autoscaling is not None else self.replicas

    @property
    def peak_replicas_key(self) -> str:
        """The key under the deployment that sets `peak_replicas`."""
        return "autoscaling.maxReplicas" if self.autoscaling is not None else "replicas"

    @property
    def least_replicas(self) -> int:
        """The fewest replicas the deployment runs: `replicas`, or `autoscaling.minReplicas`."""
        return self.autoscaling.min_replicas if self.autoscaling is not None else self.replicas

    # Multi-node replicas: how many nodes one replica spans, one pod on each. Above 1 the
    # deployment is a LeaderWorkerSet of groups of this size (`components.features.multinode`); the rules
    # across keys are `infra.checks.parallelism.check_multinode`.
    nodes: Annotated[StrictInt, Field(ge=1, le=MAX_POOL_NODES)] = 1

    # A floor on reclaimable capacity: `floor` replicas stay on `pool` (on-demand or reserved), the
    # rest run on `spotPool`, a pool of the same cluster whose nodes the cloud may reclaim
    # (`components.model_deployment`, docs/serving.md "Capacity: a floor on spot"). The rules across
    # keys and pools: `infra.checks.reclaim`.
    spot_pool: str | None = None
    floor: Annotated[StrictInt, Field(ge=1, le=MAX_REPLICAS)] | None = None
    # The owner accepts that replicas of several nodes run on reclaimable capacity, where one
    # reclaimed node takes its whole group down (`infra.checks.reclaim.check_reclaim`).
    accept_reclaim: bool = False

    @property
    def floor_replicas(self) -> int:
        """The replicas kept on `pool` when the rest run on `spotPool`; 0 without a spot pool."""
        return (self.floor or 0) if self.spot_pool is not None else 0

    def replicas_on(self, pool: str) -> int:
        """The most replicas the deployment runs on `pool`: all of them on its pool, or with a spot
        pool the floor there and the rest on the spot pool (what `infra.checks.schedulable` counts)."""
        floor = self.floor_replicas
        if pool == self.pool:
            return floor if self.spot_pool is not None else self.peak_replicas
        if pool == self.spot_pool:
            return self.peak_replicas - floor
        return 0

    @field_validator("name")
    @classmethod
    def _service_name(cls, v: str) -> str:
        if not DNS1035_LABEL.match(v):
            raise ValueError(
                f"{shown(v)} also names the deployment's Service, which must start with a letter; "
                "start the name with a lowercase letter"
            )
        return v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str | SecureValue]) -> dict[str, str | SecureValue]:
        for name in v:
            if not name or "=" in name or not all(" " <= ch <= "~" for ch in name):
                raise ValueError(
                    f"{shown(name)} is not an environment variable name; use printable ASCII characters "
                    "other than '=', such as VLLM_LOGGING_LEVEL"
                )
        return v

    @field_validator("shm_size", "memory", mode="before")
    @classmethod
    def _positive_size(cls, v: Any, info: ValidationInfo) -> str | None:
        if v is None:
            return None
        text = str(v) if isinstance(v, int) and not isinstance(v, bool) else v
        size = parse_quantity(text) if isinstance(text, str) else None
        if size is None or size <= 0:
            raise ValueError(f"{shown(v)} is not a positive size; write a quantity of memory such as 2Gi or 512Mi")
        unitless_bytes("shmSize" if info.field_name == "shm_size" else "memory", v)
        return str(text)


# Path prefixes a route matches: `/`, `/qwen`, `/team/qwen` (no trailing slash, no query).
_ROUTE_PATH = r"^/([A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*)?$"
RoutePath = Annotated[str, StringConstraints(pattern=_ROUTE_PATH, max_length=200)]
# A DNS name of at least two labels (a certificate's name; Envoy Gateway's FQDN endpoint pattern).
FQDN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$")
# A listener/route hostname as Gateway API accepts it, without wildcards (a certificate names it).
Hostname = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$", max_length=253),
]


class IssuerKind(StrEnum):
    CLUSTER_ISSUER = "ClusterIssuer"
    ISSUER = "Issuer"


class IssuerRef(Model):
    name: DnsLabel
    kind: IssuerKind = IssuerKind.CLUSTER_ISSUER


class ServiceTls(Model):
    """TLS on the Gateway for the service's host, with a certificate from a cert-manager issuer."""

    issuer_ref: IssuerRef


class Routing(StrEnum):
    """How a service's gateway picks the replica for each request (docs/serving.md, "Routing").

    `Picker`: the deployment's endpoint picker chooses by prompt prefix and queue
    (`components.features.picker`); `Service`: the gateway balances over the deployment's Service.
    """

    PICKER = "Picker"
    SERVICE = "Service"


# Gateway API's bound on a backendRef's weight (apis/v1/shared_types.go `BackendRef.Weight`,
# maximum 1,000,000, at gateway-api v1.5.1).
MAX_BACKEND_WEIGHT = 1_000_000


class ExternalEndpoint(Model):
    """`services[].backends[].external`: an OpenAI-compatible endpoint outside the fleet.

    `url` is its base URL as OpenAI clients write it (`https://api.example.com/v1`); `model` is the
    model it answers by; `apiKey` (a `secure:` value) is sent to it in `Authorization: Bearer`.
    Rules across keys: `infra.checks.fleet`.
    """

    url: str
    model: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    api_key: SecureValue | None = None

    @field_validator("url")
    @classmethod
    def _https_base(cls, v: str) -> str:
        parts = urlsplit(v)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(
                f"{shown(v)} is not an https URL; an external endpoint is reached over TLS across the "
                "internet and gets the API key: write its base URL as https://<host>/v1"
            )
        if parts.path.rstrip("/") not in ("", "/v1") or parts.query or parts.fragment:
            # The gateway sends every backend of a service the same path (the client's, without the
            # service's prefix): `/v1/...`.
            raise ValueError(
                f"{shown(v)} has the path {shown(parts.path)}: every backend of a service gets the client's "
                "/v1/... path; use an endpoint that serves the OpenAI API at https://<host>/v1"
            )
        if not FQDN.match(parts.hostname) or parts.hostname.replace(".", "").isdigit():
            raise ValueError(
                f"{shown(v)} names no DNS host; write the endpoint's host name (an IP address has no "
                "certificate name to check)"
            )
        return v

    @property
    def host(self) -> str:
        host = urlsplit(self.url).hostname
        assert host is not None, "an https URL with a host (validated)"
        return host

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 443


class ServiceBackend(Model):
    """`services[].backends[]`: a deployment (of the service's cluster, or of another with `cluster`)
    or an `external` endpoint, and its share of the requests."""

    deployment: str | None = None
    cluster: DnsLabel | None = None
    external: ExternalEndpoint | None = None
    weight: Annotated[StrictInt, Field(ge=0, le=MAX_BACKEND_WEIGHT)] = 1

    @model_validator(mode="after")
    def _one_target(self) -> ServiceBackend:
        if (self.deployment is None) == (self.external is None):
            raise ValueError(
                "a backend is a deployment or an external endpoint; set deployment: <name> (and cluster: "
                "<name> for another cluster's), or external: {url, model, apiKey}, not both and not neither"
            )
        if self.external is not None and self.cluster is not None:
            raise ValueError("an external endpoint belongs to no cluster; remove cluster from this backend")
        return self

    @property
    def shown_name(self) -> str:
        """How the plan and the errors name the backend."""
        if self.external is not None:
            return f"{self.external.host}/{self.external.model}"
        return f"{self.cluster}/{self.deployment}" if self.cluster else str(self.deployment)


class ModelServiceSpec(Model):
    """`modelplane:services[]`: publish one deployment, or a weighted split over several, through
    their cluster's Envoy Gateway. Exactly one of `deployment` and `backends`; rules across the
    deployments a split names: `infra.checks.routing`. A service whose backends reach other clusters
    or external endpoints is a fleet service (`fleet`; rules: `infra.checks.fleet`)."""

    name: DnsLabel
    deployment: str | None = None
    backends: Annotated[list[ServiceBackend], Field(min_length=2)] | None = None
    # Unset: `Picker` for one deployment, `Service` for a split (`resolved_routing`).
    routing: Routing | None = None
    # Needed only when deployments of that name run on more than one cluster.
    cluster: str | None = None
    host: Hostname | None = None
    # Default: `/<name>` without a host, `/` with one.
    path: RoutePath | None = None
    tls: ServiceTls | None = None
    # A fleet service's order of failover: tiers of indices into `backends`, the first tier served by
    # weight, the next only while the ones before it are unhealthy (`infra.checks.fleet`).
    failover: list[list[StrictInt]] | None = None
    # Keys callers must send (`x-api-key`); each a `secure:` value, never shown.
    api_keys: list[SecureValue] = Field(default_factory=list)

    @field_validator("path", mode="before")
    @classmethod
    def _no_trailing_slash(cls, v: Any) -> Any:
        # Gateway API ignores a trailing '/' in a PathPrefix match (gateway-api apis/v1/httproute_types.go,
        # PathMatchPathPrefix: "When specified, a trailing `/` is ignored"), so `/llama/` routes what
        # `/llama` routes; one spelling keeps two services from taking the same route unnoticed.
        if isinstance(v, str) and len(v) > 1 and v.endswith("/") and re.fullmatch(_ROUTE_PATH, v.rstrip("/")):
            raise ValueError(
                f"{shown(v)} ends with '/': a route's path prefix is written without one (the gateway "
                f"ignores it, and {v.rstrip('/')} matches {v.rstrip('/')}/ and every path under it); "
                f"drop the trailing slash: path: {v.rstrip('/')}"
            )
        return v

    @model_validator(mode="after")
    def _one_target(self) -> ModelServiceSpec:
        if (self.deployment is None) == (self.backends is None):
            raise ValueError(
                "a service publishes one deployment or a split over several; set deployment: <name>, "
                "or backends: [{deployment: <name>, weight: <n>}, ...], not both and not neither"
            )
        return self

    @property
    def targets(self) -> list[ServiceBackend]:
        """The deployments the service routes to, each with its weight (one, at weight 1, unsplit)."""
        if self.backends is not None:
            return list(self.backends)
        assert self.deployment is not None, "one of deployment and backends (validated)"
        return [ServiceBackend(deployment=self.deployment)]

    @property
    def fleet(self) -> bool:
        """A fleet service: some backend is another cluster's deployment or an external endpoint,
        or the service asks for a failover order or callers' keys (`infra.serving.fleet`)."""
        return bool(self.failover is not None or self.api_keys) or any(
            t.external is not None or (t.cluster is not None and t.cluster != self.cluster) for t in self.targets
        )

    @property
    def resolved_routing(self) -> Routing:
        if self.routing is not None:
            return self.routing
        return Routing.SERVICE if self.backends is not None else Routing.PICKER

    @property
    def route_path(self) -> str:
        if self.path is not None:
            return self.path
        return "/" if self.host else f"/{self.name}"
