"""Helm values per chart and cloud: the review's findings and the per-cloud driver decisions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from clouds import SOURCES, profile
from infra.facts import CPU_TAINT_KEY, VENDOR_TAINT_KEY
from infra.serving import values as v
from infra.serving.catalog import CATALOG, catalog_for
from infra.serving.chart import Chart

# Clouds where the stack installs NVIDIA's GPU Operator and NFD: every cloud but those that run
# their own (Vultr's VKE).
OPERATOR_CLOUDS = tuple(c for c in SOURCES if not profile(c).nvidia.managed_operator)


def row(cloud: str, key: str) -> Chart:
    # Built by `catalog_for` on each call rather than read from the table loaded at import.
    return next(c for c in catalog_for(cloud) if c.key == key)


def every_row() -> Iterator[tuple[str, Chart]]:
    for cloud in SOURCES:
        for c in CATALOG[cloud]:
            yield cloud, c


def walk(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (path, value) pair in a values tree, dicts and lists included."""
    yield path, node
    if isinstance(node, dict):
        for k, child in node.items():
            yield from walk(child, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from walk(child, f"{path}[{i}]")


def tolerations_in(values: Any) -> list[tuple[str, dict[str, Any]]]:
    return [
        (path, t)
        for path, node in walk(values)
        if path.lower().endswith("tolerations") and isinstance(node, list)
        for t in node
    ]


def tolerated(toleration: dict[str, Any], key: str, value: str, effect: str = "NoSchedule") -> bool:
    if toleration.get("key") != key or toleration.get("effect", effect) != effect:
        return False
    return toleration.get("operator") == "Exists" or toleration.get("value") == value


# --------------------------------------------------------------------------------------------
# Findings that hold on every cloud


@pytest.mark.parametrize(("cloud", "component"), list(every_row()), ids=lambda x: getattr(x, "key", x))
def test_no_values_tolerate_every_taint(cloud: str, component: Chart) -> None:
    for path, t in tolerations_in(component.values):
        assert t.get("key"), f"{cloud} {component.key} {path}: {t} has no key, so it tolerates every taint"
        assert t.get("operator") in ("Exists", "Equal"), f"{cloud} {component.key} {path}: {t}"


def image_refs(values: Any) -> Iterator[tuple[str, str]]:
    """Every image a values tree names: `image`/`*Image` strings and `repository`+`tag` pairs."""
    for path, node in walk(values):
        if not isinstance(node, dict):
            continue
        for k, child in node.items():
            if (k == "image" or k.endswith("Image")) and isinstance(child, str):
                yield f"{path}.{k}", child
        if "repository" in node and "tag" in node:
            yield f"{path}.repository", f"{node['repository']}:{node['tag']}"


def test_image_walk_sees_every_amd_image() -> None:
    found = {ref for _, ref in image_refs(row("Existing", "amd-gpu-operator").values)}
    assert {
        v.AMD_DRA_DRIVER_IMAGE,
        v.AMD_NODE_LABELLER_IMAGE,
        v.AMD_UTILS_IMAGE,
        v.AMD_METRICS_EXPORTER_IMAGE,
        v.AMD_DEVICE_PLUGIN_IMAGE,
        "docker.io/rocm/gpu-operator:v1.5.1",
    } <= found


@pytest.mark.parametrize(("cloud", "component"), list(every_row()), ids=lambda x: getattr(x, "key", x))
def test_no_floating_image_in_any_values(cloud: str, component: Chart) -> None:
    for path, ref in image_refs(component.values):
        name, _, tag = ref.rpartition(":")
        assert name and "/" not in tag, f"{cloud} {component.key} {path}: {ref} has no tag"
        assert tag and "latest" not in tag, f"{cloud} {component.key} {path}: {ref} floats"


@pytest.mark.parametrize("cloud", SOURCES)
def test_nvidia_device_plugin_is_off_wherever_its_dra_driver_installs(cloud: str) -> None:
    if cloud in OPERATOR_CLOUDS:
        assert row(cloud, "gpu-operator").values["devicePlugin"] == {"enabled": False}
    dra = row(cloud, "dra-driver-nvidia-gpu").values
    assert dra["gpuResourcesEnabledOverride"] is True
    assert dra["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    assert dra["resourceApiVersion"] == "resource.k8s.io/v1"


@pytest.mark.parametrize("cloud", OPERATOR_CLOUDS)
def test_nvidia_operator_leaves_nfd_to_the_standalone_release(cloud: str) -> None:
    assert row(cloud, "gpu-operator").values["nfd"] == {"enabled": False}


@pytest.mark.parametrize("cloud", OPERATOR_CLOUDS)
def test_dcgm_exporter_attributes_dra_allocated_gpus(cloud: str) -> None:
    dcgm = row(cloud, "gpu-operator").values["dcgmExporter"]
    assert dcgm["enabled"] is True
    assert {"name": "KUBERNETES_ENABLE_DRA", "value": "true"} in dcgm["env"]


@pytest.mark.parametrize("cloud", SOURCES)
def test_nvidia_daemonsets_tolerate_only_the_nvidia_taint(cloud: str) -> None:
    gpu_value = "present" if cloud == "GKE" else "true"
    for key in ("gpu-operator", "dra-driver-nvidia-gpu") if cloud in OPERATOR_CLOUDS else ("dra-driver-nvidia-gpu",):
        tolerations = [t for _, t in tolerations_in(row(cloud, key).values)]
        assert tolerations, key
        assert all(t["key"] == VENDOR_TAINT_KEY["nvidia"] for t in tolerations), (key, tolerations)
        assert all(tolerated(t, "nvidia.com/gpu", gpu_value) for t in tolerations), (key, tolerations)


@pytest.mark.parametrize("cloud", SOURCES)
def test_dra_driver_sets_no_controller_values_while_compute_domains_are_off(cloud: str) -> None:
    # dra-driver-nvidia-gpu 0.4.1 renders its controller only with compute domains on
    # (templates/controller.yaml), so controller values would change nothing.
    values = row(cloud, "dra-driver-nvidia-gpu").values
    assert values["resources"]["computeDomains"] == {"enabled": False}
    assert "controller" not in values


@pytest.mark.parametrize(
    ("cloud", "root"),
    [
        ("GKE", "/home/kubernetes/bin/nvidia"),
        ("Civo", "/run/nvidia/driver"),
        ("EKS", "/"),
        ("AKS", "/"),
        ("Vultr", "/"),
        # Nebius's drivers preset puts the driver in the node image at the default root.
        ("Nebius", "/"),
        # DOKS's and OKE's GPU images carry the driver at the default root.
        ("DigitalOcean", "/"),
        ("OCI", "/"),
        ("Existing", "/"),
    ],
)
def test_dra_driver_root_follows_where_each_cloud_puts_the_driver(cloud: str, root: str) -> None:
    assert row(cloud, "dra-driver-nvidia-gpu").values["nvidiaDriverRoot"] == root


@pytest.mark.parametrize(
    ("cloud", "driver", "toolkit"),
    [
        ("GKE", False, True),
        ("EKS", False, False),
        ("AKS", False, False),
        ("Civo", True, False),
        # The drivers preset's image carries driver and toolkit (clouds/nebius/__init__.py).
        ("Nebius", False, False),
        # DOKS's and OKE's GPU images carry driver and toolkit (clouds/digitalocean, clouds/oci).
        ("DigitalOcean", False, False),
        ("OCI", False, False),
        ("Existing", False, False),
    ],
)
def test_gpu_operator_installs_driver_and_toolkit_only_where_the_node_lacks_them(
    cloud: str, driver: bool, toolkit: bool
) -> None:
    values = row(cloud, "gpu-operator").values
    assert values["driver"]["enabled"] is driver
    assert values["toolkit"]["enabled"] is toolkit
    assert profile(cloud).nvidia.driver_by_operator is driver


def test_civo_operator_installs_the_pinned_open_driver() -> None:
    driver = row("Civo", "gpu-operator").values["driver"]
    assert {k: driver[k] for k in ("enabled", "version", "kernelModuleType")} == {
        "enabled": True,
        "version": "580.173.02",
        "kernelModuleType": "open",
    }


def test_gke_operator_uses_googles_driver_directory_and_cdi() -> None:
    values = row("GKE", "gpu-operator").values
    assert values["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert values["toolkit"]["installDir"] == "/home/kubernetes/bin/nvidia"
    assert values["cdi"] == {"enabled": True}


@pytest.mark.parametrize("cloud", OPERATOR_CLOUDS)
def test_gpu_operator_sets_no_value_v26_3_3_ignores(cloud: str) -> None:
    # At v26.3.3 no template reads `operator.defaultRuntime`, and ClusterPolicy's `cdi.default` is
    # deprecated and unused: setting either would only suggest a control we do not have.
    values = row(cloud, "gpu-operator").values
    assert "defaultRuntime" not in values.get("operator", {})
    assert "default" not in values["cdi"]


def test_gke_toolkit_reads_containerds_config_file_not_its_dump() -> None:
    # containerd 2 on GKE 1.33+: writing back `containerd config dump` breaks GKE's CNI path.
    env = row("GKE", "gpu-operator").values["toolkit"]["env"]
    assert env == [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]


def test_aks_operator_runs_its_operands_with_the_aks_nvidia_runtime_class() -> None:
    assert row("AKS", "gpu-operator").values["operator"]["runtimeClass"] == "nvidia-container-runtime"
    for cloud in (c for c in OPERATOR_CLOUDS if c != "AKS"):
        assert "runtimeClass" not in row(cloud, "gpu-operator").values.get("operator", {}), cloud


def test_civo_driver_upgrades_evict_the_dra_kubelet_plugin() -> None:
    manager = row("Civo", "gpu-operator").values["driver"]["manager"]
    assert manager == {"env": [{"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "nvidia.com/dra-kubelet-plugin"}]}
    plugin = row("Civo", "dra-driver-nvidia-gpu").values["kubeletPlugin"]
    assert plugin["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true"}
    for cloud in (c for c in SOURCES if c != "Civo"):
        assert "nodeSelector" not in row(cloud, "dra-driver-nvidia-gpu").values["kubeletPlugin"], cloud


def test_vultr_installs_only_the_dra_driver_next_to_vkes_gpu_operator() -> None:
    keys = [c.key for c in CATALOG["Vultr"] if c.dra_drivers]
    assert keys == ["dra-driver-nvidia-gpu", "dra-driver-cpu"]
    assert row("Vultr", "dra-driver-nvidia-gpu").depends_on == ()


# Provisioned clouds that sell NVIDIA machines only, where the stack installs NFD.
@pytest.mark.parametrize(
    "cloud", [c for c in OPERATOR_CLOUDS if profile(c).provisioned and profile(c).gpu_vendors == ("nvidia",)]
)
def test_nfd_worker_reaches_nvidia_nodes_only_on_provisioned_clouds(cloud: str) -> None:
    keys = {t["key"] for _, t in tolerations_in(row(cloud, "node-feature-discovery").values)}
    assert keys == {"nvidia.com/gpu"}


def test_nfd_worker_reaches_amd_and_nvidia_nodes_on_existing() -> None:
    keys = {t["key"] for _, t in tolerations_in(row("Existing", "node-feature-discovery").values)}
    assert keys == {"nvidia.com/gpu", "amd.com/gpu"}


def test_taint_keys_match_the_taints_pools_carry() -> None:
    assert VENDOR_TAINT_KEY["nvidia"] == v.NVIDIA_TAINT_KEY
    assert VENDOR_TAINT_KEY["amd"] == v.AMD_TAINT_KEY
    assert v.CPU_TAINT_KEY == CPU_TAINT_KEY


# --------------------------------------------------------------------------------------------
# CPU


@pytest.mark.parametrize("cloud", SOURCES)
def test_cpu_driver_runs_only_on_cpu_pools_and_tolerates_only_their_taint(cloud: str) -> None:
    values = row(cloud, "dra-driver-cpu").values
    assert values["nodeSelector"] == {"modelplane.ai/cpu": "true"}
    assert values["tolerations"] == [
        {"key": "modelplane.ai/cpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert values["driverConfig"]["reservedCPUs"] == "0-1"


# --------------------------------------------------------------------------------------------
# AMD (the review's findings on gpu-operator-charts v1.5.1)


def amd() -> dict[str, Any]:
    return dict(row("Existing", "amd-gpu-operator").values)


def test_amd_default_device_config_follows_value_changes_on_upgrade() -> None:
    assert amd()["crds"]["defaultCR"] == {"install": True, "upgrade": True}


def test_amd_operator_neither_installs_nor_watches_kmm() -> None:
    assert amd()["kmm"] == {"enabled": False, "watch": False}


def test_amd_operator_runs_dra_driver_never_with_device_plugin() -> None:
    spec = amd()["deviceConfig"]["spec"]
    assert spec["draDriver"]["enable"] is True
    assert spec["devicePlugin"]["enableDevicePlugin"] is False
    assert spec["driver"]["enable"] is False


def test_amd_operator_leaves_nfd_and_remediation_out() -> None:
    values = amd()
    assert values["node-feature-discovery"] == {"enabled": False}
    assert values["remediation"]["enabled"] is False


def test_amd_chart_leaves_the_device_class_to_the_serving_stack() -> None:
    assert amd()["draDriver"] == {"deviceClass": {"create": False}}


def test_amd_operands_tolerate_only_the_amd_taint() -> None:
    tolerations = tolerations_in(amd())
    assert {p for p, _ in tolerations} >= {
        "deviceConfig.spec.draDriver.tolerations",
        "deviceConfig.spec.metricsExporter.tolerations",
        "deviceConfig.spec.devicePlugin.nodeLabellerTolerations",
    }
    assert all(t == {"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"} for _, t in tolerations)


def test_amd_images_are_the_reviewed_pins() -> None:
    spec = amd()["deviceConfig"]["spec"]
    assert spec["draDriver"]["image"] == "docker.io/rocm/k8s-gpu-dra-driver:v1.0.1"
    assert spec["metricsExporter"]["image"] == "docker.io/rocm/device-metrics-exporter:v1.5.1"
    assert spec["commonConfig"]["utilsContainer"]["image"] == "docker.io/rocm/gpu-operator-utils:v1.5.1"
    # The pair ROCm/k8s-device-plugin's own chart names at its newest tag (v1.31.0.10).
    assert spec["devicePlugin"]["nodeLabellerImage"] == "docker.io/rocm/k8s-device-plugin:labeller-1.31.0.9"
    assert spec["devicePlugin"]["devicePluginImage"] == "docker.io/rocm/k8s-device-plugin:1.31.0.9"


# --------------------------------------------------------------------------------------------
# Neutral components


@pytest.mark.parametrize("cloud", SOURCES)
def test_prometheus_selects_monitors_from_every_namespace(cloud: str) -> None:
    values = row(cloud, "kube-prometheus-stack").values
    assert values["grafana"]["enabled"] is True  # it shows the stack's dashboards (tests/test_dashboards.py)
    assert values["alertmanager"] == {"enabled": False}
    spec = values["prometheus"]["prometheusSpec"]
    assert spec["podMonitorSelectorNilUsesHelmValues"] is False
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False
    assert spec["podMonitorNamespaceSelector"] == {}
    assert spec["serviceMonitorNamespaceSelector"] == {}


@pytest.mark.parametrize("cloud", SOURCES)
def test_cert_manager_installs_its_crds(cloud: str) -> None:
    assert row(cloud, "cert-manager").values["crds"] == {"enabled": True}


def test_amd_operator_keeps_its_default_nfd_rule_and_the_metrics_exporter() -> None:
    # The DeviceConfig selects nodes by the label the default NodeFeatureRule sets, and the
    # collector scrapes the device-metrics-exporter (docs/telemetry.md).
    values = amd()
    assert values["installdefaultNFDRule"] is True
    assert values["deviceConfig"]["spec"]["metricsExporter"]["enable"] is True
    assert values["deviceConfig"]["spec"]["devicePlugin"]["enableNodeLabeller"] is True


NVIDIA_TOLERATION_BY_CLOUD = {
    "AKS": {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    "GKE": {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    "EKS": {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    "Civo": {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    "Vultr": {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    "Nebius": {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    "DigitalOcean": {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    "OCI": {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    "Existing": {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
}


@pytest.mark.parametrize("cloud", SOURCES)
def test_nvidia_daemonsets_tolerate_the_nvidia_taint_as_each_cloud_spells_it(cloud: str) -> None:
    # AKS pools carry `nvidia.com/gpu=true`, tolerated as AKS's accelerated-node toleration is
    # spelled; GKE sets `present` itself and an Existing owner picks their own value: Exists.
    # VKE's own operator runs on Vultr, so there only the DRA driver is ours.
    keys = ("dra-driver-nvidia-gpu",) if cloud == "Vultr" else ("gpu-operator", "dra-driver-nvidia-gpu")
    for key in keys:
        tolerations = [t for _, t in tolerations_in(row(cloud, key).values)]
        assert tolerations, key
        assert all(t == NVIDIA_TOLERATION_BY_CLOUD[cloud] for t in tolerations), (key, tolerations)


CPU_TOLERATION = {"key": "modelplane.ai/cpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
AMD_TOLERATION = {"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize("cloud", SOURCES)
def test_node_exporter_and_nfd_tolerate_exactly_the_taints_of_the_clouds_pools(cloud: str) -> None:
    gpu = [NVIDIA_TOLERATION_BY_CLOUD[cloud], *([AMD_TOLERATION] if "amd" in profile(cloud).gpu_vendors else [])]
    prometheus = row(cloud, "kube-prometheus-stack").values
    assert prometheus["prometheus-node-exporter"]["tolerations"] == [*gpu, CPU_TOLERATION]
    assert prometheus["alertmanager"] == {"enabled": False}
    if cloud != "Vultr":  # VKE's add-on runs NFD there
        assert row(cloud, "node-feature-discovery").values["worker"]["tolerations"] == gpu


@pytest.mark.parametrize("cloud", SOURCES)
def test_gateway_serves_backends_and_lws_keeps_its_chart_defaults(cloud: str) -> None:
    gateway = row(cloud, "envoy-gateway").values
    assert gateway == {"config": {"envoyGateway": {"extensionApis": {"enableBackend": True}}}}
    assert row(cloud, "leader-worker-set").values == {}
    assert row(cloud, "cert-manager").values == {"crds": {"enabled": True}}


@pytest.mark.parametrize("cloud", [c for c in OPERATOR_CLOUDS if c != "GKE"])
def test_gpu_operator_elsewhere_than_gke_keeps_the_nodes_toolkit_and_cdi_without_default(cloud: str) -> None:
    values = row(cloud, "gpu-operator").values
    assert values["toolkit"] == {"enabled": False}
    assert values["cdi"] == {"enabled": True}
    assert "hostPaths" not in values
    # No `defaultRuntime` (read by no template at v26.3.3); AKS names the node's runtime class.
    expected_operator = {"runtimeClass": "nvidia-container-runtime"} if cloud == "AKS" else None
    assert values.get("operator") == expected_operator
    if cloud != "Civo":
        assert values["driver"] == {"enabled": False}


def test_amd_operator_pins_its_own_images_and_pull_policy() -> None:
    values = amd()
    assert values["controllerManager"]["manager"] == {
        "image": {"repository": "docker.io/rocm/gpu-operator", "tag": "v1.5.1"},
        "imagePullPolicy": "IfNotPresent",
    }
    common = values["deviceConfig"]["spec"]["commonConfig"]
    assert common["initContainerImage"] == "docker.io/library/busybox:1.36"
    plugin = values["deviceConfig"]["spec"]["devicePlugin"]
    # The tags ROCm/k8s-device-plugin's own chart names at its newest tag (1.31.0.9).
    assert plugin["devicePluginImage"] == "docker.io/rocm/k8s-device-plugin:1.31.0.9"
    assert plugin["nodeLabellerImage"] == "docker.io/rocm/k8s-device-plugin:labeller-1.31.0.9"
    assert values["remediation"] == {"enabled": False, "installCRDs": False}
    assert values["crds"]["defaultCR"]["install"] is True


@pytest.mark.parametrize("cloud", SOURCES)
def test_values_sit_at_the_keys_the_charts_read(cloud: str) -> None:
    # The tolerations above are found wherever they sit; here each must sit at its chart's key.
    nvidia = [NVIDIA_TOLERATION_BY_CLOUD[cloud]]
    if cloud != "Vultr":  # VKE runs its own operator
        assert row(cloud, "gpu-operator").values["daemonsets"] == {"tolerations": nvidia}
    plugin: dict[str, object] = {"tolerations": nvidia}
    if cloud == "Civo":  # the driver manager evicts the plugin through this label on driver upgrades
        plugin["nodeSelector"] = {"nvidia.com/dra-kubelet-plugin": "true"}
    assert row(cloud, "dra-driver-nvidia-gpu").values["kubeletPlugin"] == plugin
    spec = row(cloud, "kube-prometheus-stack").values["prometheus"]["prometheusSpec"]
    assert (spec["podMonitorSelector"], spec["serviceMonitorSelector"]) == ({}, {})


def test_amd_operands_read_their_tolerations_at_the_device_configs_keys() -> None:
    spec = amd()["deviceConfig"]["spec"]
    assert spec["devicePlugin"]["devicePluginTolerations"] == [AMD_TOLERATION]
    assert spec["devicePlugin"]["nodeLabellerTolerations"] == [AMD_TOLERATION]
    assert spec["draDriver"]["tolerations"] == [AMD_TOLERATION]
    assert spec["metricsExporter"]["tolerations"] == [AMD_TOLERATION]
