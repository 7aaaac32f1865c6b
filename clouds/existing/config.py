"""The Existing block in the stack file: `clusters[].existing`, a cluster its owner runs."""

from __future__ import annotations

from infra.config.base import KeyDoc, OwnerClusterBlock


# `clusters[].existing`: every key is the owner-cluster block's (`infra.config.base`).
class ExistingCluster(OwnerClusterBlock):
    pass


KEYS = {
    ("ExistingCluster", "kubeconfigKey"): KeyDoc(
        "The `modelplane:` config key that holds the kubeconfig, set with `pulumi config set --secret`.",
        "the cluster's Kubernetes provider",
        "kubeconfigKey: kubeconfig",
    ),
    ("ExistingCluster", "context"): KeyDoc(
        "The kubeconfig context to use.", "the cluster's Kubernetes provider", "context: prod"
    ),
    ("ExistingCluster", "kubernetesVersion"): KeyDoc(
        "The Kubernetes version the cluster runs. Optional, but required once a pool's class claims consumable "
        "capacity (`dra.cpu/cpu`), which schedules only from 1.36.",
        "the version floor and the capacity rule in `infra/checks/clusters.py` (`check_owner_version`)",
        'kubernetesVersion: "1.36"',
    ),
    ("ExistingCluster", "preinstalled"): KeyDoc(
        "Catalog components the cluster already runs (`modelplane catalog` lists the keys): the stack installs no "
        "second copy, still installs what depends on them, and the plan says it relies on the cluster's own "
        "(docs/existing-clusters.md).",
        "`infra.serving.catalog.join_charts`, checked by `preinstalled_problems`; policy `device-stack-filtered`",
        "preinstalled: [cert-manager, kube-prometheus-stack]",
    ),
    ("ExistingCluster", "prometheus"): KeyDoc(
        "The cluster's own Prometheus, when `preinstalled` lists `kube-prometheus-stack`: the deployments' "
        "PodMonitors carry `podMonitorLabels` and KEDA asks it at `url`, instead of the stack's own Prometheus. "
        "Required for an autoscaled deployment there; without it no deployment gets a PodMonitor "
        "(docs/existing-clusters.md).",
        "`components/features/monitoring.py`, `components/features/autoscaling.py`; `check_autoscaling` "
        "(`infra/checks/services.py`)",
        "prometheus: {url: http://prometheus-kube-prometheus-prometheus.monitoring.svc:9090, podMonitorLabels: {release: prometheus}}",
    ),
    ("OwnerPrometheus", "url"): KeyDoc(
        "The address KEDA asks the autoscaling metric at (the ScaledObject trigger's `serverAddress`).",
        "`components/features/autoscaling.py`",
        "url: http://prometheus-kube-prometheus-prometheus.monitoring.svc:9090",
    ),
    ("OwnerPrometheus", "podMonitorLabels"): KeyDoc(
        "Labels the deployments' PodMonitors carry, so the owner's Prometheus selects them: "
        "kube-prometheus-stack's selects `release: <its release name>` unless its values turn "
        "`podMonitorSelectorNilUsesHelmValues` off.",
        "`components/features/monitoring.py`",
        "podMonitorLabels: {release: prometheus}",
    ),
    ("ExistingCluster", "ownerGpuOperator"): KeyDoc(
        "The cluster already runs the GPU operator for its GPUs: the stack installs no second one, nor "
        "node-feature-discovery where the pools claim AMD GPUs and no NVIDIA ones, since the AMD operator "
        "brings its own (docs/existing-clusters.md).",
        "`infra.serving.catalog.join_charts`; policy `device-stack-filtered`",
        "ownerGpuOperator: true",
    ),
}
