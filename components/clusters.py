"""Which component builds a cluster of each source; the cloud modules share `components.base`."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import pulumi

from components.base import CloudProviders, ClusterArgs, ClusterComponent
from infra.facts import ClusterFacts

# source -> (module in components/, class). One module per cloud, all with the same outline.
CLUSTER_KINDS: Mapping[str, tuple[str, str]] = {
    "GKE": ("gke", "GkeCluster"),
    "EKS": ("eks", "EksCluster"),
    "AKS": ("aks", "AksCluster"),
    "Civo": ("civo", "CivoCluster"),
    "Vultr": ("vultr", "VultrCluster"),
    "Existing": ("existing", "ExistingCluster"),
}


def cluster_class(source: str) -> type[ClusterComponent]:
    module, cls = CLUSTER_KINDS[source]
    found: type[ClusterComponent] = getattr(importlib.import_module(f"components.{module}"), cls)
    return found


def cluster_component(
    facts: ClusterFacts,
    class_specs: Mapping[str, Any],
    protect: bool,
    providers: CloudProviders,
    kubeconfig: pulumi.Input[str] | None = None,
) -> ClusterComponent:
    args = ClusterArgs(facts, class_specs, protect, kubeconfig, providers)
    return cluster_class(facts.source)(facts.name, args)
