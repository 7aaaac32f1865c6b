"""The catalog: the join, the dependency rule, and the supported-drivers table."""

from __future__ import annotations

import pytest

from components.catalog import (
    CATALOG,
    CLOUDS,
    CatalogError,
    Component,
    check_dependencies,
    install_order,
    join_components,
    supported_drivers,
)

EXPECTED_SUPPORTED = {
    "GKE": ["dra.cpu", "gpu.nvidia.com"],
    "AKS": ["dra.cpu", "gpu.nvidia.com"],
    "Civo": ["dra.cpu", "gpu.nvidia.com"],
    "Vultr": ["dra.cpu", "gpu.nvidia.com"],
    "EKS": ["dra.cpu", "dra.net", "gpu.nvidia.com"],
    "Existing": ["dra.cpu", "gpu.amd.com", "gpu.nvidia.com"],
}


@pytest.mark.parametrize("cloud", CLOUDS)
def test_supported_drivers_match_the_spec_table(cloud: str) -> None:
    assert supported_drivers(cloud) == EXPECTED_SUPPORTED[cloud]


def c(key: str, tags: tuple[str, ...] = (), deps: tuple[str, ...] = ()) -> Component:
    return Component(key, key, "https://charts.example", "1.0.0", key, dra_drivers=tags, depends_on=deps)


def test_untagged_components_always_install() -> None:
    rows = [c("base"), c("nv", ("gpu.nvidia.com",))]
    assert [x.key for x in join_components(rows, [])] == ["base"]


def test_unset_drivers_mean_none_claimed() -> None:
    rows = [c("base"), c("nv", ("gpu.nvidia.com",))]
    assert [x.key for x in join_components(rows, None)] == ["base"]


def test_tagged_component_installs_when_any_of_its_drivers_is_claimed() -> None:
    rows = [c("nfd", ("gpu.nvidia.com", "gpu.amd.com")), c("amd", ("gpu.amd.com",))]
    assert [x.key for x in join_components(rows, ["gpu.amd.com"])] == ["nfd", "amd"]
    assert [x.key for x in join_components(rows, ["gpu.nvidia.com"])] == ["nfd"]


def test_owner_run_gpu_operators_leave_the_join_and_nothing_else_does() -> None:
    every = ("dra.cpu", "gpu.amd.com", "gpu.nvidia.com")
    ours = {c.key for c in join_components(CATALOG["Existing"], every)}
    owners = {c.key for c in join_components(CATALOG["Existing"], every, owner_gpu_operator=True)}
    assert ours - owners == {"gpu-operator", "amd-gpu-operator"}
    assert {"dra-driver-nvidia-gpu", "node-feature-discovery", "dra-driver-cpu"} <= owners


def test_dependency_lacking_a_dependents_driver_fails_to_load() -> None:
    rows = [c("nfd", ("gpu.nvidia.com",)), c("amd", ("gpu.amd.com",), ("nfd",))]
    with pytest.raises(CatalogError) as err:
        check_dependencies("Existing", rows)
    text = str(err.value)
    assert "'amd' (tagged gpu.amd.com) depends on 'nfd'" in text
    assert "untag 'nfd' or add the missing tags" in text


def test_untagged_dependency_and_superset_tags_are_fine() -> None:
    check_dependencies("X", [c("cm"), c("nfd", ("a", "b")), c("amd", ("a",), ("cm", "nfd"))])


def test_unknown_dependency_and_cycle_fail_to_load() -> None:
    with pytest.raises(CatalogError, match="does not list"):
        check_dependencies("X", [c("a", deps=("ghost",))])
    with pytest.raises(CatalogError, match="cycle"):
        check_dependencies("X", [c("a", deps=("b",)), c("b", deps=("a",))])


def test_duplicate_keys_fail_to_load() -> None:
    with pytest.raises(CatalogError, match="appears twice"):
        check_dependencies("X", [c("a"), c("a")])


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_join_keeps_every_dependency(cloud: str) -> None:
    drivers = supported_drivers(cloud)
    subsets = [[d for i, d in enumerate(drivers) if mask >> i & 1] for mask in range(1 << len(drivers))]
    for subset in subsets:
        joined = {x.key for x in join_components(CATALOG[cloud], subset)}
        for x in join_components(CATALOG[cloud], subset):
            assert set(x.depends_on) <= joined, (cloud, subset, x.key)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_rows_are_pinned_and_named_mp_chart(cloud: str) -> None:
    for row in CATALOG[cloud]:
        assert row.release == f"mp-{row.chart}"
        assert row.version and not any(ch in row.version for ch in "^~*<>= x")
        assert row.repo.startswith(("https://", "oci://"))


def test_install_order_puts_dependencies_first() -> None:
    for cloud in CLOUDS:
        order = [x.key for x in install_order(CATALOG[cloud])]
        for x in CATALOG[cloud]:
            for d in x.depends_on:
                assert order.index(d) < order.index(x.key)


def test_amd_operator_only_on_existing() -> None:
    for cloud in CLOUDS:
        has_amd = any("gpu.amd.com" in x.dra_drivers for x in CATALOG[cloud])
        assert has_amd == (cloud == "Existing")


# The top-level values each chart version reads: every `.Values.<key>` in its templates plus the
# keys of its Chart.yaml dependency conditions, recorded from the chart's sources at that version.
# A value the chart does not read is dropped silently by Helm, so a key set for a version that does
# not read it is a setting that does nothing.
CHART_READS: dict[tuple[str, str], frozenset[str]] = {
    # kubernetes-sigs/dra-driver-cpu deployment/helm/dra-driver-cpu/templates @v0.2.0: no
    # nodeSelector (the DaemonSet lands on every node it tolerates) and no driverConfig.
    ("dra-driver-cpu", "0.2.0"): frozenset(
        {
            "args",
            "fullnameOverride",
            "healthzPath",
            "healthzPort",
            "image",
            "imagePullSecrets",
            "nameOverride",
            "podAnnotations",
            "podLabels",
            "rbac",
            "resources",
            "serviceAccount",
            "tolerations",
        }
    ),
    # The same chart after v0.2.0 (main, templates/daemonset.yaml and _helpers.tpl) adds
    # nodeSelector, affinity and the driverConfig file among others.
    ("dra-driver-cpu", "0.3.0"): frozenset(
        {
            "affinity",
            "args",
            "driverConfig",
            "extraVolumeMounts",
            "extraVolumes",
            "fullnameOverride",
            "healthzPath",
            "healthzPort",
            "image",
            "imagePullSecrets",
            "kubeletRootDir",
            "nameOverride",
            "nodeSelector",
            "podAnnotations",
            "podLabels",
            "rbac",
            "resources",
            "serviceAccount",
            "tolerations",
        }
    ),
    # kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu/templates @v0.4.1.
    ("dra-driver-nvidia-gpu", "0.4.1"): frozenset(
        {
            "allowDefaultNamespace",
            "altProcDevices",
            "controller",
            "featureGates",
            "fullnameOverride",
            "gpuResourcesEnabledOverride",
            "image",
            "imagePullSecrets",
            "kubeletPlugin",
            "logVerbosity",
            "maskNvidiaDriverParams",
            "nameOverride",
            "namespace",
            "namespaceOverride",
            "nvidiaCDIHookPath",
            "nvidiaCtkPath",
            "nvidiaDriverRoot",
            "resourceApiVersion",
            "resources",
            "selectorLabelsOverride",
            "serviceAccount",
            "webhook",
        }
    ),
    # NVIDIA/gpu-operator deployments/gpu-operator templates and Chart.yaml (nfd.enabled) @v26.3.3.
    ("gpu-operator", "v26.3.3"): frozenset(
        {
            "ccManager",
            "cdi",
            "daemonsets",
            "dcgm",
            "dcgmExporter",
            "devicePlugin",
            "driver",
            "extraObjects",
            "fullnameOverride",
            "gdrcopy",
            "gds",
            "gfd",
            "hostPaths",
            "kataManager",
            "kataSandboxDevicePlugin",
            "mig",
            "migManager",
            "nameOverride",
            "nfd",
            "nodeStatusExporter",
            "operator",
            "platform",
            "psa",
            "sandboxDevicePlugin",
            "sandboxWorkloads",
            "toolkit",
            "validator",
            "vfioManager",
            "vgpuDeviceManager",
            "vgpuManager",
        }
    ),
    # ROCm/gpu-operator helm-charts-k8s templates and Chart.yaml conditions (node-feature-discovery,
    # kmm, remediation) @v1.5.1.
    ("gpu-operator-charts", "v1.5.1"): frozenset(
        {
            "configManager",
            "controllerManager",
            "crds",
            "deviceConfig",
            "draDriver",
            "fullnameOverride",
            "global",
            "installdefaultNFDRule",
            "kmm",
            "kmmDevicePlugin",
            "kmmModuleLoader",
            "kubernetesClusterDomain",
            "managerConfig",
            "metricsExporter",
            "nameOverride",
            "node-feature-discovery",
            "nodeLabeller",
            "remediation",
            "serviceAccount",
            "testRunner",
            "upgradeCRD",
            "utilsContainer",
        }
    ),
}
RECORDED_CHARTS = {chart for chart, _ in CHART_READS}


def unread_keys(chart: str, version: str, values: dict[str, object]) -> list[str]:
    """Top-level keys set in `values` that this chart version does not read (all of them if unrecorded)."""
    reads = CHART_READS.get((chart, version), frozenset())
    return sorted(k for k in values if k not in reads)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_value_set_is_read_by_the_pinned_chart_version(cloud: str) -> None:
    for row in CATALOG[cloud]:
        if row.chart not in RECORDED_CHARTS:
            continue
        assert (row.chart, row.version) in CHART_READS, (
            f"{row.chart} {row.version} is pinned but its values were recorded for another version: "
            "record the keys its templates read at that tag"
        )
        assert unread_keys(row.chart, row.version, dict(row.values)) == [], (cloud, row.key)


def test_cpu_driver_values_would_be_dropped_by_chart_0_2_0() -> None:
    # The CPU driver's scoping (nodeSelector) and reserved CPUs (driverConfig) need 0.3.0: on
    # 0.2.0 Helm drops both and the driver runs on every node it tolerates, the system pool included.
    row = next(c for c in CATALOG["Civo"] if c.key == "dra-driver-cpu")
    assert row.version == "0.3.0"
    assert unread_keys("dra-driver-cpu", "0.2.0", dict(row.values)) == ["driverConfig", "nodeSelector"]
    assert unread_keys("dra-driver-cpu", "0.3.0", dict(row.values)) == []
