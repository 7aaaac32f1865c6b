"""Helm values for each catalog row, per cloud.

One function per chart, taking the cloud; what differs between clouds is decided here, next to
the value, with the reason. The catalog (`components.catalog`) calls these when it loads.
"""

from __future__ import annotations

from typing import Any

Values = dict[str, Any]


def cert_manager(cloud: str) -> Values:
    return {"crds": {"enabled": True}}


def kube_prometheus_stack(cloud: str) -> Values:
    return {"grafana": {"enabled": False}, "alertmanager": {"enabled": False}}


def envoy_gateway(cloud: str) -> Values:
    return {}


def leader_worker_set(cloud: str) -> Values:
    return {}


def node_feature_discovery(cloud: str) -> Values:
    return {}


def nvidia_gpu_operator(cloud: str) -> Values:
    return {"devicePlugin": {"enabled": False}}


def dra_driver_nvidia_gpu(cloud: str) -> Values:
    return {"gpuResourcesEnabledOverride": True}


def dra_driver_cpu(cloud: str) -> Values:
    return {"nodeSelector": {"modelplane.ai/cpu": "true"}}


def amd_gpu_operator(cloud: str) -> Values:
    return {"kmm": {"enabled": False}, "crds": {"defaultCR": {"upgrade": True}}}
