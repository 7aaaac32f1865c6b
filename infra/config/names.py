"""Names and bounds a stack file's values are held to, and how an error quotes a value.

Kubernetes' name and label forms, the limits every model shares, and `shown`/`cut` for echoing a
rejected value. Imports nothing of the project beyond the vocabulary.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import (
    StringConstraints,
)

# Rejected values are echoed up to this many characters, so one long value cannot bury the error.
SHOWN_MAX = 80


def shown(value: Any) -> str:
    """A rejected value as an error message quotes it: its repr, cut to SHOWN_MAX characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"a {value.bit_length()}-bit integer"  # repr of a 4,301-digit int raises
    return cut(repr(value) if isinstance(value, str | int | float | bool) or value is None else type(value).__name__)


def cut(text: str) -> str:
    """`text` up to SHOWN_MAX characters, saying how long it was when cut."""
    return text if len(text) <= SHOWN_MAX else f"{text[: SHOWN_MAX - 1]}… ({len(text)} characters)"


DnsLabel = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)]
PoolName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=40)]
# A DRA driver name is a DNS subdomain (KEP-4381), e.g. `gpu.nvidia.com`, `dra.cpu`.
DriverName = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", max_length=63),
]


# Kubernetes object-name and label rules, from the API machinery's validators
# (k8s.io/apimachinery/pkg/util/validation/validation.go, v0.34) as
# https://kubernetes.io/docs/concepts/overview/working-with-objects/names/ and
# https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set state them.
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*\Z")
DNS1123_SUBDOMAIN_MAX = 253
# A Service's name is an RFC 1035 label: it starts with a letter.
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
LABEL_MAX = 63
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")


def label_value_problem(value: str) -> str | None:
    """Why `value` is no label value: at most 63 characters, alphanumeric at both ends, `-_.` inside."""
    if len(value) > LABEL_MAX:
        return f"{shown(value)} is longer than the {LABEL_MAX} characters a label value holds"
    if not LABEL_VALUE.match(value):
        return f"{shown(value)} is not a label value (letters, digits, '-', '_', '.'; alphanumeric at both ends)"
    return None


def qualified_name_problem(key: str) -> str | None:
    """Why `key` is no label or taint key: `[prefix/]name`, prefix a DNS subdomain, name as a label value."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > DNS1123_SUBDOMAIN_MAX or not DNS1123_SUBDOMAIN.match(prefix)):
        return f"the prefix of {shown(key)} is not a DNS subdomain (lowercase letters, digits, '-' and '.')"
    if not name or len(name) > LABEL_MAX or not _QUALIFIED_NAME.match(name):
        return (
            f"{shown(key)} is not a qualified name ([prefix/]name, the name 1-{LABEL_MAX} letters, digits, "
            "'-', '_', '.', alphanumeric at both ends)"
        )
    return None


# Devices of one kind on a node: a device's count and an accelerator's count share this bound.
MAX_DEVICES_PER_NODE = 64
# Kubernetes supports clusters of up to 5,000 nodes
# (https://kubernetes.io/docs/setup/best-practices/cluster-large/); no pool is larger.
MAX_POOL_NODES = 5000
# `replicas` is an int32 in apps/v1 DeploymentSpec.
MAX_REPLICAS = 2**31 - 1
# The longest HPA stabilization window: autoscaling/v2 `HPAScalingRules.stabilizationWindowSeconds`
# "must be less than or equal to 3600" (pkg/apis/autoscaling/validation/validation.go lines 35-36
# and 212-214, `MaxStabilizationWindowSeconds`, at kubernetes v1.36.0).
MAX_STABILIZATION_SECONDS = 3600
# The longest first start a deployment declares (`startupSeconds`, a day), and so the longest a
# picker holds a request for a replica still starting (`autoscaling.queueSeconds`).
MAX_STARTUP_SECONDS = 86400


NAMESPACE = "modelplane"


FLEET_KEYS = ("classes", "clusters", "deployments", "services", "protect", "budget", "chartMirror")


# A `secure:` env value makes the engine mark the whole `modelplane:deployments` key secret and hand
# the program its decrypted text (pulumi/pulumi#3342); no other fleet key may be a secret.
SECRET_FLEET_KEYS = ("deployments", "services")


class WrittenFloat(float):
    """A number as the stack file's YAML loader read it, with the text as written (`1.30`, read as 1.3).

    An error about a number that should have been a string quotes what the user wrote, not what
    YAML made of it (`kubernetesVersion: 1.30` is the string "1.30" quoted, not "1.3").
    """

    written: str

    def __new__(cls, value: float, written: str | None = None) -> WrittenFloat:
        number = super().__new__(cls, value)
        number.written = str(float(value)) if written is None else written
        return number
