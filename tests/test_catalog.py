"""The catalog: the join, the dependency rule, and the supported-drivers table."""

from __future__ import annotations

import pytest

from clouds import BY_SOURCE as CLOUD_RECORDS
from clouds import SOURCES
from infra.facts import derive_cluster
from infra.serving.catalog import (
    CATALOG,
    CatalogError,
    catalog_for,
    check_dependencies,
    check_served_drivers,
    critical_pod_namespaces,
    install_order,
    join_charts,
    load_catalog,
    release_values,
    supported_drivers,
)
from infra.serving.chart import Chart
from tests.conftest import cpu_cluster_fleet, fleet_of
from tooling.catalog_doc import catalog_json, catalog_markdown

EXPECTED_SUPPORTED = {
    "GKE": ["dra.cpu", "gpu.nvidia.com"],
    "AKS": ["dra.cpu", "gpu.nvidia.com"],
    "Civo": ["dra.cpu", "gpu.nvidia.com"],
    "Vultr": ["dra.cpu", "gpu.nvidia.com"],
    "Nebius": ["dra.cpu", "gpu.nvidia.com"],
    "DigitalOcean": ["dra.cpu", "gpu.amd.com", "gpu.nvidia.com"],
    "OCI": ["dra.cpu", "gpu.amd.com", "gpu.nvidia.com"],
    "EKS": ["dra.cpu", "dra.net", "gpu.nvidia.com"],
    "Existing": ["dra.cpu", "gpu.amd.com", "gpu.nvidia.com"],
}


@pytest.mark.parametrize("cloud", SOURCES)
def test_supported_drivers_match_the_spec_table(cloud: str) -> None:
    assert supported_drivers(cloud) == EXPECTED_SUPPORTED[cloud]


def c(key: str, tags: tuple[str, ...] = (), deps: tuple[str, ...] = ()) -> Chart:
    return Chart(key, key, "https://charts.example", "1.0.0", key, dra_drivers=tags, depends_on=deps)


def test_untagged_components_always_install() -> None:
    rows = [c("base"), c("nv", ("gpu.nvidia.com",))]
    assert [x.key for x in join_charts(rows, [])] == ["base"]


def test_unset_drivers_mean_none_claimed() -> None:
    rows = [c("base"), c("nv", ("gpu.nvidia.com",))]
    assert [x.key for x in join_charts(rows, None)] == ["base"]


def test_tagged_component_installs_when_any_of_its_drivers_is_claimed() -> None:
    rows = [c("nfd", ("gpu.nvidia.com", "gpu.amd.com")), c("amd", ("gpu.amd.com",))]
    assert [x.key for x in join_charts(rows, ["gpu.amd.com"])] == ["nfd", "amd"]
    assert [x.key for x in join_charts(rows, ["gpu.nvidia.com"])] == ["nfd"]


def test_owner_run_gpu_operators_leave_the_join_and_nothing_else_does() -> None:
    every = ("dra.cpu", "gpu.amd.com", "gpu.nvidia.com")
    ours = {c.key for c in join_charts(CATALOG["Existing"], every)}
    owners = {c.key for c in join_charts(CATALOG["Existing"], every, owner_gpu_operator=True)}
    assert ours - owners == {"gpu-operator", "amd-gpu-operator"}
    assert {"dra-driver-nvidia-gpu", "node-feature-discovery", "dra-driver-cpu"} <= owners


def test_owner_amd_operator_brings_its_own_nfd_so_an_amd_only_join_leaves_ours_out() -> None:
    # The AMD operator's chart installs NFD by default; a second NFD fights it over node labels.
    amd_only = ("dra.cpu", "gpu.amd.com")
    assert "node-feature-discovery" in {c.key for c in join_charts(CATALOG["Existing"], amd_only)}
    owners = {c.key for c in join_charts(CATALOG["Existing"], amd_only, owner_gpu_operator=True)}
    assert "node-feature-discovery" not in owners
    assert "dra-driver-cpu" in owners
    # With NVIDIA claimed too, the NVIDIA DRA driver reads our NFD's labels: it stays.
    mixed = {c.key for c in join_charts(CATALOG["Existing"], (*amd_only, "gpu.nvidia.com"), owner_gpu_operator=True)}
    assert "node-feature-discovery" in mixed


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


@pytest.mark.parametrize("cloud", SOURCES)
def test_every_join_keeps_every_dependency(cloud: str) -> None:
    drivers = supported_drivers(cloud)
    subsets = [[d for i, d in enumerate(drivers) if mask >> i & 1] for mask in range(1 << len(drivers))]
    for subset in subsets:
        joined = {x.key for x in join_charts(CATALOG[cloud], subset)}
        for x in join_charts(CATALOG[cloud], subset):
            assert set(x.depends_on) <= joined, (cloud, subset, x.key)


NVIDIA, AMD, CPU = "gpu.nvidia.com", "gpu.amd.com", "dra.cpu"
# The serving stack every cloud installs: release -> (chart, repository, exact version, tags).
COMMON_ROWS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "mp-cert-manager": ("cert-manager", "https://charts.jetstack.io", "v1.20.2", ()),
    "mp-kube-prometheus-stack": (
        "kube-prometheus-stack",
        "https://prometheus-community.github.io/helm-charts",
        "84.4.0",
        (),
    ),
    "mp-gateway-helm": ("gateway-helm", "oci://docker.io/envoyproxy", "v1.8.4", ()),
    "mp-lws": ("lws", "oci://registry.k8s.io/lws/charts", "v0.8.0", ()),
    "mp-gpu-operator": ("gpu-operator", "https://helm.ngc.nvidia.com/nvidia", "v26.3.3", (NVIDIA,)),
    "mp-dra-driver-nvidia-gpu": (
        "dra-driver-nvidia-gpu",
        "oci://registry.k8s.io/dra-driver-nvidia/charts",
        "0.4.1",
        (NVIDIA,),
    ),
    "mp-dra-driver-cpu": ("dra-driver-cpu", "oci://registry.k8s.io/dra-driver-cpu/charts", "0.3.0", (CPU,)),
}
NFD = "https://kubernetes-sigs.github.io/node-feature-discovery/charts"
# The clouds whose stack carries AMD's operator: those whose profile serves AMD (the provisioned ones
# with AMD machines, and Existing).
AMD_CLOUDS = {c for c in SOURCES if "amd" in CLOUD_RECORDS[c].profile.gpu_vendors}


@pytest.mark.parametrize("cloud", SOURCES)
def test_every_cloud_installs_the_pinned_serving_stack(cloud: str) -> None:
    rows = {r.release: (r.chart, r.repo, r.version, r.dra_drivers) for r in catalog_for(cloud)}
    # VKE's managed GPU add-on runs the GPU operator and NFD, so Vultr installs neither.
    vke_runs = {"mp-gpu-operator", "mp-node-feature-discovery"} if cloud == "Vultr" else set()
    for release, row in COMMON_ROWS.items():
        assert rows.get(release) == (None if release in vke_runs else row), (cloud, release)
    # The standalone NFD serves the AMD operator too where it installs.
    nfd_tags = (NVIDIA, AMD) if cloud in AMD_CLOUDS else (NVIDIA,)
    nfd = ("node-feature-discovery", NFD, "0.19.0", nfd_tags)
    assert rows.get("mp-node-feature-discovery") == (None if cloud == "Vultr" else nfd)
    amd = ("gpu-operator-charts", "https://rocm.github.io/gpu-operator", "v1.5.1", (AMD,))
    assert rows.get("mp-gpu-operator-charts") == (amd if cloud in AMD_CLOUDS else None)
    otel = "https://open-telemetry.github.io/opentelemetry-helm-charts"
    assert rows["mp-opentelemetry-collector"] == ("opentelemetry-collector", otel, "0.174.0", ())


def test_release_name_is_mp_and_the_chart_name() -> None:
    assert c("amd-gpu-operator").release == "mp-amd-gpu-operator"
    row = Chart("amd-gpu-operator", "gpu-operator-charts", "https://rocm.github.io/gpu-operator", "v1.5.1", "ns")
    assert row.release == "mp-gpu-operator-charts"
    assert not row.oci
    assert Chart("lws", "lws", "oci://registry.k8s.io/lws/charts", "v0.8.0", "ns").oci


def test_dependency_lacking_any_of_a_dependents_tags_fails_to_load() -> None:
    # The dependent's second tag is the one missing: every tag is checked, not only the first.
    rows = [c("nfd", ("gpu.nvidia.com",)), c("dra", ("gpu.nvidia.com", "gpu.amd.com"), ("nfd",))]
    with pytest.raises(CatalogError) as err:
        check_dependencies("Existing", rows)
    assert str(err.value) == (
        "the serving-stack catalog breaks the dependency rule:\n"
        "  Existing: 'dra' (tagged gpu.nvidia.com, gpu.amd.com) depends on 'nfd' (tagged gpu.nvidia.com), which "
        "lacks gpu.amd.com: a cluster claiming only gpu.amd.com would install 'dra' without it; untag 'nfd' or add "
        "the missing tags to it"
    )


def test_dependency_carrying_exactly_its_dependents_tags_loads() -> None:
    check_dependencies("X", [c("nfd", ("a", "b")), c("dra", ("b", "a"), ("nfd",))])


def test_install_order_puts_dependencies_first() -> None:
    for cloud in SOURCES:
        order = [x.key for x in install_order(CATALOG[cloud])]
        for x in CATALOG[cloud]:
            for d in x.depends_on:
                assert order.index(d) < order.index(x.key)


def test_amd_operator_exactly_where_the_catalog_has_amd_machines_and_on_existing() -> None:
    for cloud in SOURCES:
        has_amd = any("gpu.amd.com" in x.dra_drivers for x in catalog_for(cloud))
        assert has_amd == (cloud in AMD_CLOUDS)
        sells_amd = any(m.gpu is not None and m.gpu.vendor == "amd" for m in CLOUD_RECORDS[cloud].machines)
        assert has_amd == (sells_amd or cloud == "Existing"), cloud


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


@pytest.mark.parametrize("cloud", SOURCES)
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


def test_cycle_is_reported_with_its_path() -> None:
    with pytest.raises(CatalogError) as err:
        check_dependencies("X", [c("a", deps=("b",)), c("b", deps=("c",)), c("c", deps=("a",)), c("d", deps=("a",))])
    assert str(err.value) == (
        "the serving-stack catalog breaks the dependency rule:\n  X: dependency cycle a -> b -> c -> a"
    )


def test_two_rows_with_one_release_name_fail_to_load() -> None:
    rows = [Chart("a", "lws", "https://x", "1", "ns"), Chart("b", "lws", "https://y", "1", "ns")]
    with pytest.raises(CatalogError) as err:
        check_dependencies("X", rows)
    assert str(err.value).endswith("X: release name 'mp-lws' appears twice")


def test_unknown_cloud_has_no_catalog() -> None:
    with pytest.raises(
        KeyError, match="unknown cloud 'Linode'; known: GKE, EKS, AKS, Civo, Vultr, Nebius, DigitalOcean, OCI, Existing"
    ):
        catalog_for("Linode")


# Release -> the releases it waits for, and its namespace, on every cloud (Existing adds the AMD operator).
EDGES = {
    "mp-cert-manager": ((), "cert-manager"),
    "mp-kube-prometheus-stack": ((), "monitoring"),
    "mp-gateway-helm": (("cert-manager",), "envoy-gateway-system"),
    "mp-lws": ((), "lws-system"),
    "mp-opentelemetry-collector": ((), "modelplane-system"),
    "mp-keda": (("kube-prometheus-stack",), "keda"),
    "mp-node-feature-discovery": ((), "node-feature-discovery"),
    "mp-gpu-operator": (("node-feature-discovery", "cert-manager", "kube-prometheus-stack"), "gpu-operator"),
    "mp-dra-driver-nvidia-gpu": (("gpu-operator",), "dra-driver-nvidia-gpu"),
    "mp-dra-driver-cpu": ((), "dra-driver-cpu"),
}


@pytest.mark.parametrize("cloud", SOURCES)
def test_rows_wait_for_what_they_need_in_their_own_namespaces(cloud: str) -> None:
    rows = {r.release: (tuple(r.depends_on), r.namespace) for r in catalog_for(cloud)}
    expected = dict(EDGES)
    if cloud == "Vultr":  # VKE runs the operator and NFD; the DRA driver installs against VKE's operator
        del expected["mp-gpu-operator"], expected["mp-node-feature-discovery"]
        expected["mp-dra-driver-nvidia-gpu"] = ((), "dra-driver-nvidia-gpu")
    if cloud in AMD_CLOUDS:
        expected["mp-gpu-operator-charts"] = (("cert-manager", "node-feature-discovery"), "kube-amd-gpu")
    assert rows == expected
    keys = {r.release: r.key for r in catalog_for(cloud)}
    assert keys["mp-gateway-helm"] == "envoy-gateway" and keys["mp-lws"] == "leader-worker-set"
    assert all(keys[f"mp-{k}"] == k for k in ("cert-manager", "kube-prometheus-stack", "opentelemetry-collector"))
    assert all(keys.get(f"mp-{k}", k) == k for k in ("node-feature-discovery", "gpu-operator", "dra-driver-cpu"))
    assert keys["mp-dra-driver-nvidia-gpu"] == "dra-driver-nvidia-gpu"
    assert keys.get("mp-gpu-operator-charts") == ("amd-gpu-operator" if cloud in AMD_CLOUDS else None)


@pytest.mark.parametrize("cloud", SOURCES)
def test_every_clouds_rows_keep_the_dependency_rule(cloud: str) -> None:
    check_dependencies(cloud, catalog_for(cloud))  # raises CatalogError naming the rows otherwise


def test_every_problem_of_every_row_is_reported_each_on_its_line() -> None:
    rows = [
        c("nfd", ("a",)),
        c("dra", ("a", "b", "c"), ("ghost", "nfd")),
    ]
    with pytest.raises(CatalogError) as err:
        check_dependencies("X", rows)
    assert str(err.value).splitlines() == [
        "the serving-stack catalog breaks the dependency rule:",
        "  X: 'dra' depends on 'ghost', which the X catalog does not list",
        "  X: 'dra' (tagged a, b, c) depends on 'nfd' (tagged a), which lacks b, c: a cluster claiming only b "
        "would install 'dra' without it; untag 'nfd' or add the missing tags to it",
    ]


def test_dependency_message_lists_every_tag_of_the_dependency() -> None:
    # The dependency carries two tags and still lacks one of its dependent's: both sides are named in full.
    rows = [c("nfd", ("a", "b")), c("dra", ("a", "b", "c"), ("nfd",))]
    with pytest.raises(CatalogError) as err:
        check_dependencies("X", rows)
    assert str(err.value).splitlines()[1:] == [
        "  X: 'dra' (tagged a, b, c) depends on 'nfd' (tagged a, b), which lacks c: a cluster claiming only c "
        "would install 'dra' without it; untag 'nfd' or add the missing tags to it",
    ]


def test_install_order_lists_each_row_once_after_its_dependencies() -> None:
    rows = [c("gpu", deps=("nfd", "cm")), c("nfd"), c("cm"), c("dra", deps=("gpu", "ghost"))]
    assert [x.key for x in install_order(rows)] == ["nfd", "cm", "gpu", "dra"]


def test_collector_row_carries_the_collector_values() -> None:
    for cloud in SOURCES:
        [otel] = [r for r in catalog_for(cloud) if r.key == "opentelemetry-collector"]
        assert otel.values["mode"] == "deployment"
        assert "transform/modelplane-gpu" in otel.values["config"]["processors"]


@pytest.mark.parametrize("cloud", SOURCES)
def test_each_clouds_tags_and_external_drivers_agree_with_its_profile(cloud: str) -> None:
    check_served_drivers(cloud, catalog_for(cloud))  # raises CatalogError otherwise


def test_a_catalog_serving_other_drivers_than_its_profile_fails_to_load() -> None:
    # EKS's profile serves dra.cpu, gpu.nvidia.com and the external dra.net; these rows tag no NVIDIA driver.
    rows = [c("cpu", ("dra.cpu",))]
    with pytest.raises(CatalogError) as err:
        check_served_drivers("EKS", rows)
    assert str(err.value) == (
        "EKS: the catalog serves ['dra.cpu', 'dra.net'] but the cloud profile says "
        "['dra.cpu', 'dra.net', 'gpu.nvidia.com']; tag the rows or change the profile's gpu_vendors / "
        "external_drivers so they agree"
    )


def test_loading_the_catalog_gives_every_cloud_its_rows() -> None:
    loaded = load_catalog()
    assert list(loaded) == ["GKE", "EKS", "AKS", "Civo", "Vultr", "Nebius", "DigitalOcean", "OCI", "Existing"]
    assert {cloud: [r.key for r in rows] for cloud, rows in loaded.items()} == {
        cloud: [r.key for r in catalog_for(cloud)] for cloud in SOURCES
    }


def test_a_cloud_whose_rows_break_the_dependency_rule_fails_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    import infra.serving.catalog

    real = infra.serving.catalog.catalog_for

    def with_a_duplicate(cloud: str) -> list[Chart]:
        rows = real(cloud)
        return [*rows, rows[0]] if cloud == "Civo" else rows

    monkeypatch.setattr(infra.serving.catalog, "catalog_for", with_a_duplicate)
    with pytest.raises(CatalogError) as err:
        load_catalog()
    assert str(err.value).splitlines()[1:] == [
        "  Civo: key 'cert-manager' appears twice",
        "  Civo: release name 'mp-cert-manager' appears twice",
    ]


# Pods at system-node-critical or system-cluster-critical: the GPU operator's daemonsets
# (deployments/gpu-operator/values.yaml @v26.3.3, `daemonsets.priorityClassName`), the NVIDIA DRA
# driver's controller and kubelet plugin (deployments/helm/dra-driver-nvidia-gpu/values.yaml @v0.4.1)
# and the CPU driver's DaemonSet, fixed in deployment/helm/dra-driver-cpu/templates/daemonset.yaml.
# VKE runs its own GPU operator.
@pytest.mark.parametrize("cloud", SOURCES)
def test_the_drivers_and_the_gpu_operator_are_the_rows_with_critical_pods(cloud: str) -> None:
    rows = catalog_for(cloud)
    operator = set() if cloud == "Vultr" else {"mp-gpu-operator"}
    assert {r.release for r in rows if r.critical_pods is True} == {
        "mp-dra-driver-nvidia-gpu",
        "mp-dra-driver-cpu",
        *operator,
    }
    namespaces = ["dra-driver-cpu", "dra-driver-nvidia-gpu"] + ([] if cloud == "Vultr" else ["gpu-operator"])
    assert critical_pod_namespaces(rows) == namespaces


def test_a_cpu_only_cluster_gets_the_untagged_rows_and_the_cpu_driver() -> None:
    fleet = fleet_of(cpu_cluster_fleet("Existing", "lab"))
    values = release_values(derive_cluster(fleet, fleet.clusters[0]))
    assert sorted(values) == [
        "mp-cert-manager",
        "mp-dra-driver-cpu",
        "mp-gateway-helm",
        "mp-kube-prometheus-stack",
        "mp-lws",
        "mp-opentelemetry-collector",
    ]
    assert values["mp-dra-driver-cpu"]["nodeSelector"] == {"modelplane.ai/cpu": "true"}


def test_the_table_says_a_row_for_a_serving_feature_installs_only_with_it() -> None:
    # KEDA joins a cluster only when one of its deployments is autoscaled (`join_charts`); the table
    # and the JSON say so, never "always".
    [keda] = [line for line in catalog_markdown().splitlines() if line.startswith("| keda |")]
    assert keda.split(" | ")[4:] == ["with autoscaling"] * (len(SOURCES) - 1) + ["with autoscaling |"]
    for cloud in SOURCES:
        rows = {c["key"]: c for c in catalog_json()["clouds"][cloud]["components"]}
        assert rows["keda"]["features"] == ["autoscaling"]
        assert rows["cert-manager"]["features"] == []
        # What the table says is what the join does.
        assert "keda" not in {c.key for c in join_charts(CATALOG[cloud], None)}
        assert "keda" in {c.key for c in join_charts(CATALOG[cloud], None, features=["autoscaling"])}
