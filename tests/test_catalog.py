"""The catalog: the join, the dependency rule, and the supported-drivers table."""

from __future__ import annotations

import pytest

from components.catalog import (
    CATALOG,
    CLOUDS,
    CatalogError,
    Component,
    catalog_for,
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


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_cloud_installs_the_pinned_serving_stack(cloud: str) -> None:
    rows = {r.release: (r.chart, r.repo, r.version, r.dra_drivers) for r in catalog_for(cloud)}
    for release, row in COMMON_ROWS.items():
        assert rows[release] == row, (cloud, release)
    # The standalone NFD serves the AMD operator too on Existing, the one cloud that installs it.
    nfd_tags = (NVIDIA, AMD) if cloud == "Existing" else (NVIDIA,)
    assert rows["mp-node-feature-discovery"] == ("node-feature-discovery", NFD, "0.19.0", nfd_tags)
    amd = ("gpu-operator-charts", "https://rocm.github.io/gpu-operator", "v1.5.1", (AMD,))
    assert rows.get("mp-gpu-operator-charts") == (amd if cloud == "Existing" else None)
    otel = "https://open-telemetry.github.io/opentelemetry-helm-charts"
    assert rows["mp-opentelemetry-collector"] == ("opentelemetry-collector", otel, "0.174.0", ())


def test_release_name_is_mp_and_the_chart_name() -> None:
    assert c("amd-gpu-operator").release == "mp-amd-gpu-operator"
    row = Component("amd-gpu-operator", "gpu-operator-charts", "https://rocm.github.io/gpu-operator", "v1.5.1", "ns")
    assert row.release == "mp-gpu-operator-charts"
    assert not row.oci
    assert Component("lws", "lws", "oci://registry.k8s.io/lws/charts", "v0.8.0", "ns").oci


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
    for cloud in CLOUDS:
        order = [x.key for x in install_order(CATALOG[cloud])]
        for x in CATALOG[cloud]:
            for d in x.depends_on:
                assert order.index(d) < order.index(x.key)


def test_amd_operator_only_on_existing() -> None:
    for cloud in CLOUDS:
        has_amd = any("gpu.amd.com" in x.dra_drivers for x in catalog_for(cloud))
        assert has_amd == (cloud == "Existing")


def test_cycle_is_reported_with_its_path() -> None:
    with pytest.raises(CatalogError) as err:
        check_dependencies("X", [c("a", deps=("b",)), c("b", deps=("c",)), c("c", deps=("a",)), c("d", deps=("a",))])
    assert str(err.value) == (
        "the serving-stack catalog breaks the dependency rule:\n  X: dependency cycle a -> b -> c -> a"
    )


def test_two_rows_with_one_release_name_fail_to_load() -> None:
    rows = [Component("a", "lws", "https://x", "1", "ns"), Component("b", "lws", "https://y", "1", "ns")]
    with pytest.raises(CatalogError) as err:
        check_dependencies("X", rows)
    assert str(err.value).endswith("X: release name 'mp-lws' appears twice")


def test_unknown_cloud_has_no_catalog() -> None:
    with pytest.raises(KeyError, match="unknown cloud 'OCI'; known: GKE, EKS, AKS, Civo, Vultr, Existing"):
        catalog_for("OCI")


# Release -> the releases it waits for, and its namespace, on every cloud (Existing adds the AMD operator).
EDGES = {
    "mp-cert-manager": ((), "cert-manager"),
    "mp-kube-prometheus-stack": ((), "monitoring"),
    "mp-gateway-helm": (("cert-manager",), "envoy-gateway-system"),
    "mp-lws": ((), "lws-system"),
    "mp-opentelemetry-collector": ((), "modelplane-system"),
    "mp-node-feature-discovery": ((), "node-feature-discovery"),
    "mp-gpu-operator": (("node-feature-discovery", "cert-manager", "kube-prometheus-stack"), "gpu-operator"),
    "mp-dra-driver-nvidia-gpu": (("gpu-operator",), "dra-driver-nvidia-gpu"),
    "mp-dra-driver-cpu": ((), "dra-driver-cpu"),
}


@pytest.mark.parametrize("cloud", CLOUDS)
def test_rows_wait_for_what_they_need_in_their_own_namespaces(cloud: str) -> None:
    rows = {r.release: (tuple(r.depends_on), r.namespace) for r in catalog_for(cloud)}
    expected = dict(EDGES)
    if cloud == "Existing":
        expected["mp-gpu-operator-charts"] = (("cert-manager", "node-feature-discovery"), "kube-amd-gpu")
    assert rows == expected
    keys = {r.release: r.key for r in catalog_for(cloud)}
    assert keys["mp-gateway-helm"] == "envoy-gateway" and keys["mp-lws"] == "leader-worker-set"
    assert all(keys[f"mp-{k}"] == k for k in ("cert-manager", "kube-prometheus-stack", "node-feature-discovery"))
    assert all(keys[f"mp-{k}"] == k for k in ("opentelemetry-collector", "gpu-operator", "dra-driver-cpu"))
    assert keys["mp-dra-driver-nvidia-gpu"] == "dra-driver-nvidia-gpu"
    assert keys.get("mp-gpu-operator-charts") == ("amd-gpu-operator" if cloud == "Existing" else None)


@pytest.mark.parametrize("cloud", CLOUDS)
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


def test_install_order_lists_each_row_once_after_its_dependencies() -> None:
    rows = [c("gpu", deps=("nfd", "cm")), c("nfd"), c("cm"), c("dra", deps=("gpu", "ghost"))]
    assert [x.key for x in install_order(rows)] == ["nfd", "cm", "gpu", "dra"]


def test_collector_row_carries_the_collector_values() -> None:
    for cloud in CLOUDS:
        [otel] = [r for r in catalog_for(cloud) if r.key == "opentelemetry-collector"]
        assert otel.values["mode"] == "deployment"
        assert "transform/modelplane-gpu" in otel.values["config"]["processors"]
