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
