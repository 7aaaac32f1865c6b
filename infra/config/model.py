"""The typed fleet model: the fleet, its budget and chart mirror, and every model of it by one name.

The models are defined by topic (`infra.config.classes`, `infra.config.clusters`,
`infra.config.deployments`) and importable from here. Shape only: one field's rules are validators;
rules across keys are the checks' (`infra.checks`); reading a stack file is `infra.config.stackfile`.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Field,
    field_validator,
    model_validator,
)

from infra.config.base import Model
from infra.config.classes import (
    AttributeValue,
    CapacityValue,
    ClaimMode,
    Device,
    InferenceClass,
    Provider,
    Provisioning,
    ProvisioningBase,
    Source,
    Supplied,
)
from infra.config.clusters import (
    FleetGateway,
    InferenceCluster,
    InferenceClusterBase,
    NodePool,
    PoolCapacity,
    Taint,
    TaintEffect,
    cluster_region,
)
from infra.config.deployments import (
    UNION_TAGS,
    Autoscaling,
    CacheVolume,
    DeploymentDevice,
    EnvValue,
    ExternalEndpoint,
    Hostname,
    IssuerKind,
    IssuerRef,
    ModelCache,
    ModelDeploymentSpec,
    ModelServiceSpec,
    RoutePath,
    Routing,
    ScalingMetric,
    SecureValue,
    ServiceBackend,
    ServiceTls,
)
from infra.config.names import (
    shown,
)
from infra.formats import EXACT_CHART_VERSION

# Every model of the fleet is importable from here, wherever it is defined.
__all__ = [
    "MIRROR_URL_RE",
    "UNION_TAGS",
    "AttributeValue",
    "Autoscaling",
    "Budget",
    "CacheVolume",
    "CapacityValue",
    "ChartMirror",
    "ClaimMode",
    "DeploymentDevice",
    "Device",
    "EnvValue",
    "ExternalEndpoint",
    "Fleet",
    "FleetGateway",
    "Hostname",
    "InferenceClass",
    "InferenceCluster",
    "InferenceClusterBase",
    "IssuerKind",
    "IssuerRef",
    "MirroredChart",
    "ModelCache",
    "ModelDeploymentSpec",
    "ModelServiceSpec",
    "NodePool",
    "PoolCapacity",
    "Provider",
    "Provisioning",
    "ProvisioningBase",
    "RoutePath",
    "Routing",
    "ScalingMetric",
    "SecureValue",
    "ServiceBackend",
    "ServiceTls",
    "Source",
    "Supplied",
    "Taint",
    "TaintEffect",
    "cluster_region",
]


class Budget(Model):
    """`modelplane:budget`: what the stack may cost a month, in USD (`infra.cost` checks it)."""

    monthly_usd: Annotated[Decimal, Field(gt=0)]

    @field_validator("monthly_usd", mode="before")
    @classmethod
    def _plain_amount(cls, v: Any) -> Any:
        # An amount as people write one (`$5,000`, `5000 USD`) is no number to pydantic, whose own
        # message would say only that it is not a decimal: name the plain number it means.
        if not isinstance(v, str):
            return v  # a number, or the type check says what the key takes
        try:
            Decimal(v.strip())
            return v
        except InvalidOperation:
            pass
        plain = re.sub(r"[\s$,_]|usd", "", v, flags=re.IGNORECASE)
        try:
            amount = Decimal(plain) if plain else None
        except InvalidOperation:
            amount = None
        shown_amount = plain if amount is not None and amount.is_finite() and amount > 0 else "5000"
        raise ValueError(
            f"{shown(v)} is not a plain number; write the amount in USD without a currency sign, unit or "
            f"thousands separator: monthlyUsd: {shown_amount}"
        )


def _mirror_url(v: Any) -> Any:
    """A chart mirror's URL: an HTTP(S) Helm repository or an `oci://` registry prefix, with its host."""
    if not isinstance(v, str):
        return v  # the type check says what the key takes
    if not v.strip():
        raise ValueError(
            "the URL is empty; write the mirror's URL, such as https://charts.example.internal or "
            "oci://registry.example.internal/charts"
        )
    scheme, sep, _ = v.partition("://")
    if not sep or scheme not in MIRROR_SCHEMES:
        raise ValueError(
            f"{shown(v)} is not an http://, https:// or oci:// URL; Helm reads charts from an HTTP(S) chart "
            "repository or an OCI registry, so write one of those"
        )
    if not MIRROR_URL_RE.match(v):
        raise ValueError(
            f"{shown(v)} names no host, or has spaces, a query or a fragment; write {scheme}://<host>[/<path>]"
        )
    # Charts are addressed below the URL (`<url>/index.yaml`, `<prefix>/<chart>`): one form, no trailing slash.
    return v.rstrip("/")


def _chart_version(v: Any) -> Any:
    if isinstance(v, str) and not EXACT_CHART_VERSION.match(v):
        raise ValueError(
            f"{shown(v)} is not an exact chart version (semver such as 1.2.3 or v1.2.3, no range or wildcard); "
            "write the version the mirror serves"
        )
    return v


# The schemes Helm fetches charts over: an HTTP(S) chart repository, or an OCI registry.
MIRROR_SCHEMES = ("http", "https", "oci")
# A host, then an optional path; no spaces, query or fragment (Helm appends `/index.yaml` or `/<chart>`).
MIRROR_URL_RE = re.compile(r"^(?:https?|oci)://[^/\s?#]+(?:/[^\s?#]*)?$")

MirrorUrl = Annotated[str, BeforeValidator(_mirror_url)]
ChartVersion = Annotated[str, BeforeValidator(_chart_version)]


class MirroredChart(Model):
    """`modelplane:chartMirror.components.<key>`: where one component's chart comes from instead.

    A URL alone may be written as the value. `version` names the version the mirror serves when
    it is not the catalog's pin (the plan then warns that the values were checked against the pin).
    """

    url: MirrorUrl | None = None
    version: ChartVersion | None = None

    @model_validator(mode="before")
    @classmethod
    def _url_alone(cls, v: Any) -> Any:
        return {"url": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _says_something(self) -> MirroredChart:
        if self.url is None and self.version is None:
            raise ValueError("names neither url nor version; write {url: ...}, {version: ...} or remove the entry")
        return self


class ChartMirror(Model):
    """`modelplane:chartMirror`: a Helm repository serving every component's chart in place of its own.

    A URL alone may be written as the value. Which component keys exist, and where each row's
    chart then comes from, is the serving stack's (`infra.serving.mirror`).
    """

    url: MirrorUrl | None = None
    components: dict[str, MirroredChart] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _url_alone(cls, v: Any) -> Any:
        return {"url": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _says_something(self) -> ChartMirror:
        if self.url is None and not self.components:
            raise ValueError(
                "names no mirror; write the mirror's URL (chartMirror: https://charts.example.internal) "
                "or per-component entries under components"
            )
        return self


class Fleet(Model):
    classes: list[InferenceClass] = Field(default_factory=list)
    clusters: list[InferenceCluster] = Field(default_factory=list)
    deployments: list[ModelDeploymentSpec] = Field(default_factory=list)
    services: list[ModelServiceSpec] = Field(default_factory=list)
    protect: bool = False
    budget: Budget | None = None
    chart_mirror: ChartMirror | None = None

    @field_validator("protect", mode="before")
    @classmethod
    def _pulumi_bool(cls, v: Any) -> Any:
        # The spellings Pulumi's own `Config.get_bool` takes (pulumi/config.py, `_get_bool`); the
        # CLI hands `protect: true` over as the text "true". Anything else ("yes", "1", "on") is
        # refused rather than read as pydantic would, so a typo never decides whether clusters
        # may be deleted.
        if isinstance(v, bool) or v in ("true", "True", "false", "False"):
            return v
        raise ValueError(f"{shown(v)} is not true or false; write protect: true or protect: false")

    def class_named(self, name: str) -> InferenceClass:
        for c in self.classes:
            if c.name == name:
                return c
        raise KeyError(name)

    def cluster_named(self, name: str) -> InferenceCluster:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(name)
