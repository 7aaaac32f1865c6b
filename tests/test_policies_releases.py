"""pinned-versions, amd-operator-values and no-wildcard-tolerations on Helm releases and workloads."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pulumi_policy.proxy import UnknownValueError

from infra.serving.catalog import CATALOG
from policies.resource_rules import (
    amd_operator_values,
    chart_name,
    image_problems,
    no_wildcard_tolerations,
    parent_type,
    pinned_versions,
    wildcard_tolerations,
)
from tests.policy_harness import UNKNOWN_ARRAY_VALUE, UNKNOWN_STRING_VALUE, resource_args, run, verdict

RELEASE = "kubernetes:helm.sh/v3:Release"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def release(chart: str, version: str, values: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    return {"name": name or f"mp-{chart}", "chart": chart, "version": version, "namespace": "ns", "values": values}


def catalog_release(cloud: str, key: str) -> dict[str, Any]:
    row = next(c for c in CATALOG[cloud] if c.key == key)
    return release(row.chart, row.version, copy.deepcopy(dict(row.values)))


def check(policy: Any, props: dict[str, Any], token: str = RELEASE, **config: Any) -> list[str]:
    return run(policy, resource_args(token, props, name="r", policy=policy, config=config or None))


@pytest.mark.parametrize("cloud", sorted(CATALOG))
def test_every_catalog_release_passes_the_release_policies(cloud: str) -> None:
    for row in CATALOG[cloud]:
        props = release(row.chart, row.version, dict(row.values))
        for policy in (pinned_versions, amd_operator_values, no_wildcard_tolerations):
            assert check(policy, props) == [], (cloud, row.key, policy.name)


# pinned-versions


@pytest.mark.parametrize("version", ["", "^1.2.0", "~1.2", ">=1.0.0", "1.x", "*", "1.2"])
def test_chart_version_range_or_empty_is_rejected(version: str) -> None:
    found = check(pinned_versions, release("lws", version, {}))
    assert len(found) == 1 and "pin an exact chart version" in found[0]


@pytest.mark.parametrize("version", ["v1.20.2", "84.4.0", "0.3.0", "v26.3.3", "1.0.0-rc.1"])
def test_exact_chart_version_is_accepted(version: str) -> None:
    assert check(pinned_versions, release("lws", version, {})) == []


@pytest.mark.parametrize(
    ("values", "path"),
    [
        ({"image": "docker.io/rocm/k8s-gpu-dra-driver:latest"}, "values.image"),
        ({"draDriver": {"image": "docker.io/rocm/k8s-gpu-dra-driver"}}, "values.draDriver.image"),
        ({"spec": {"nodeLabellerImage": "rocm/k8s-device-plugin:labeller-latest"}}, "values.spec.nodeLabellerImage"),
        ({"manager": {"image": {"repository": "rocm/gpu-operator", "tag": "latest"}}}, "values.manager.image"),
        ({"manager": {"image": {"repository": "rocm/gpu-operator"}}}, "values.manager.image"),
        ({"exporter": {"repository": "rocm/exporter", "tag": ""}}, "values.exporter"),
        ({"driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": "latest"}}, "values.driver"),
    ],
)
def test_floating_or_untagged_image_is_rejected(values: dict[str, Any], path: str) -> None:
    found = check(pinned_versions, release("gpu-operator-charts", "v1.5.1", values))
    assert len(found) == 1 and found[0].startswith(f"release mp-gpu-operator-charts: {path}:"), found


@pytest.mark.parametrize(
    "values",
    [
        {"image": "registry.k8s.io/dra-driver-cpu:v0.3.0"},
        {"image": "localhost:5000/dra@sha256:" + "ab" * 32},
        {"image": {"repository": "rocm/gpu-operator", "tag": "v1.5.1"}},
        {"driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": "580.95.05"}},
        {"imagePullPolicy": "Always"},
        {"image": {"repository": "registry.k8s.io/x", "tag": 1.0}},
    ],
)
def test_pinned_image_is_accepted(values: dict[str, Any]) -> None:
    assert check(pinned_versions, release("any", "1.0.0", values)) == []


def test_unknown_version_during_preview_raises_for_an_advisory_diagnostic() -> None:
    with pytest.raises(UnknownValueError):
        check(pinned_versions, release("lws", UNKNOWN_STRING_VALUE, {}))


# amd-operator-values


def test_amd_operator_from_the_catalog_is_accepted() -> None:
    assert check(amd_operator_values, catalog_release("Existing", "amd-gpu-operator")) == []


def test_amd_operator_with_kmm_on_is_rejected() -> None:
    props = catalog_release("Existing", "amd-gpu-operator")
    props["values"]["kmm"] = {"enabled": True, "watch": False}
    found = check(amd_operator_values, props)
    assert len(found) == 1 and "kmm.enabled must be false" in found[0]


@pytest.mark.parametrize("kmm", [{"enabled": False}, {"enabled": False, "watch": True}])
def test_amd_operator_watching_kmm_without_kmm_is_rejected(kmm: dict[str, bool]) -> None:
    # The chart's default is `kmm.watch: true`, so leaving it out is as bad as setting it.
    props = catalog_release("Existing", "amd-gpu-operator")
    props["values"]["kmm"] = kmm
    found = check(amd_operator_values, props)
    assert len(found) == 1 and found[0].startswith("release mp-gpu-operator-charts: kmm.watch must be false")


def test_amd_operator_without_default_cr_upgrade_is_rejected() -> None:
    props = catalog_release("Existing", "amd-gpu-operator")
    del props["values"]["crds"]
    assert any("crds.defaultCR.upgrade must be true" in m for m in check(amd_operator_values, props))


def test_amd_operator_with_device_plugin_next_to_dra_driver_is_rejected() -> None:
    props = catalog_release("Existing", "amd-gpu-operator")
    props["values"]["deviceConfig"]["spec"]["devicePlugin"].pop("enableDevicePlugin")  # the chart's default is on
    assert any("enableDevicePlugin must be false" in m for m in check(amd_operator_values, props))


def test_amd_operator_chart_is_recognised_from_an_oci_or_repo_path() -> None:
    props = release("rocm/gpu-operator-charts", "v1.5.1", {"kmm": {"enabled": True}})
    assert len(check(amd_operator_values, props)) == 3


def test_other_charts_are_not_amd_operators() -> None:
    assert check(amd_operator_values, release("gpu-operator", "v26.3.3", {"kmm": {"enabled": True}})) == []


# no-wildcard-tolerations

WILDCARD = {"operator": "Exists"}


def test_release_tolerating_everything_is_rejected() -> None:
    props = release("dra-driver-cpu", "0.3.0", {"tolerations": [WILDCARD]})
    found = check(no_wildcard_tolerations, props)
    assert len(found) == 1 and "values.tolerations[0] tolerates every taint" in found[0]


def test_nested_vendor_tolerations_key_is_checked() -> None:
    props = release("x", "1.0.0", {"spec": {"devicePluginTolerations": [{"key": "", "operator": "Exists"}]}})
    assert len(check(no_wildcard_tolerations, props)) == 1


def test_scoped_toleration_is_accepted() -> None:
    scoped = {"key": "modelplane.ai/cpu", "operator": "Exists", "effect": "NoSchedule"}
    assert check(no_wildcard_tolerations, release("dra-driver-cpu", "0.3.0", {"tolerations": [scoped]})) == []


def test_allowlisted_release_may_tolerate_everything() -> None:
    props = release("node-exporter", "1.0.0", {"tolerations": [WILDCARD]})
    assert check(no_wildcard_tolerations, props, allowedReleases=["mp-node-exporter"]) == []


def test_deployment_tolerating_everything_is_rejected() -> None:
    props = {
        "metadata": {"name": "qwen", "namespace": "models"},
        "spec": {"template": {"spec": {"tolerations": [WILDCARD], "containers": [{"name": "vllm"}]}}},
    }
    found = check(no_wildcard_tolerations, props, token=DEPLOYMENT)
    assert len(found) == 1 and "spec.template.spec.tolerations[0]" in found[0]


# Which releases a resource states: a ServingStack's plan, or a Release outside any ServingStack.

STACK = "modelplane:stack:ServingStack"


@pytest.mark.parametrize(
    ("urn", "parent"),
    [
        ("urn:pulumi:dev::modelplane::kubernetes:helm.sh/v3:Release::mp-lws", ""),
        (f"urn:pulumi:dev::modelplane::{STACK}$kubernetes:helm.sh/v3:Release::byo-stack-lws", STACK),
        (
            f"urn:pulumi:dev::modelplane::modelplane:existing:ExistingCluster${STACK}$kubernetes:helm.sh/v3:Release::x",
            STACK,
        ),
        (
            "urn:pulumi:dev::modelplane::modelplane:existing:ExistingCluster$kubernetes:helm.sh/v3:Release::x",
            "modelplane:existing:ExistingCluster",
        ),
        ("mp-lws", ""),
    ],
)
def test_parent_type_is_the_type_before_the_resources_own_in_the_urn(urn: str, parent: str) -> None:
    assert parent_type(urn) == parent


@pytest.mark.parametrize(
    ("chain", "judged"),
    [
        ("", True),
        ("modelplane:existing:ExistingCluster$", True),
        (f"{STACK}$", False),
        (f"modelplane:existing:ExistingCluster${STACK}$", False),
    ],
)
def test_release_is_judged_on_its_own_only_outside_a_serving_stack(chain: str, judged: bool) -> None:
    urn = f"urn:pulumi:dev::modelplane::{chain}{RELEASE}::byo-stack-lws"
    args = resource_args(RELEASE, release("lws", "^0.8", {}), name="byo-stack-lws", urn=urn)
    expected = ["release mp-lws (chart lws) pins '^0.8'; pin an exact chart version"] if judged else []
    assert run(pinned_versions, args) == expected


def stack_plan(*releases: dict[str, Any]) -> dict[str, Any]:
    return {"cluster": "byo", "source": "Existing", "releases": list(releases)}


def test_serving_stack_plan_names_each_release_by_name_then_key_then_stack() -> None:
    named = {"key": "lws", **release("lws", "^0.8", {})}
    keyed = {"key": "cert-manager", "chart": "cert-manager", "version": ""}
    bare = {"chart": "gateway-helm", "version": "1.x"}
    args = resource_args(STACK, stack_plan(named, keyed, bare), name="byo-stack")
    assert run(pinned_versions, args) == [
        "release mp-lws (chart lws) pins '^0.8'; pin an exact chart version",
        "release cert-manager (chart cert-manager) pins no version; pin an exact chart version",
        "release byo-stack (chart gateway-helm) pins '1.x'; pin an exact chart version",
    ]


def test_release_without_a_name_is_named_by_its_resource() -> None:
    assert check(pinned_versions, {"chart": "lws", "version": "^0.8"}) == [
        "release r (chart lws) pins '^0.8'; pin an exact chart version"
    ]


def test_release_without_a_version_or_chart_says_so() -> None:
    props = {"name": "mp-x", "values": {}}
    assert check(pinned_versions, props) == ["release mp-x (chart ) pins no version; pin an exact chart version"]


@pytest.mark.parametrize(
    ("chart", "name"),
    [
        ("gpu-operator-charts", "gpu-operator-charts"),
        ("rocm/gpu-operator-charts", "gpu-operator-charts"),
        ("oci://registry.k8s.io/lws/charts/lws", "lws"),
        ("oci://registry.k8s.io/lws/charts/lws/", "lws"),
        ("", ""),
    ],
)
def test_chart_name_is_the_last_path_segment(chart: str, name: str) -> None:
    assert chart_name({"chart": chart}) == name


@pytest.mark.parametrize(
    ("policy", "token", "props", "what"),
    [
        (pinned_versions, STACK, {"releases": UNKNOWN_ARRAY_VALUE}, "the releases planned by r"),
        (
            pinned_versions,
            RELEASE,
            release("lws", UNKNOWN_STRING_VALUE, {}),
            "the chart version or values of release mp-lws",
        ),
        (
            amd_operator_values,
            RELEASE,
            {"name": "mp-x", "chart": UNKNOWN_STRING_VALUE, "version": "v1.5.1"},
            "the chart or values of release mp-x",
        ),
        (
            no_wildcard_tolerations,
            RELEASE,
            release("x", "1.0.0", {"tolerations": UNKNOWN_ARRAY_VALUE}),
            "the tolerations in the values of release mp-x",
        ),
        (
            no_wildcard_tolerations,
            DEPLOYMENT,
            {"metadata": {"name": "qwen"}, "spec": {"template": {"spec": {"tolerations": UNKNOWN_ARRAY_VALUE}}}},
            "the pod tolerations of deployment r",
        ),
    ],
)
def test_unknown_value_in_a_preview_names_what_is_undecided(
    policy: Any, token: str, props: dict[str, Any], what: str
) -> None:
    found = verdict(policy, resource_args(token, props, name="r", policy=policy))
    assert isinstance(found, str) and found.startswith(f"undecided: {what} is not known in this preview ("), found
    assert found.endswith("; the policy decides on `pulumi up`, which knows it")


DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("values", "found"),
    [
        # A digest pins an image whatever its tag says.
        ({"manager": {"image": {"repository": "rocm/gpu-operator", "tag": "latest", "digest": DIGEST}}}, []),
        ({"driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": "latest", "digest": DIGEST}}, []),
        (
            {"driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": "580.95.05", "digest": "sha1:x"}},
            ["values.driver: image nvcr.io/nvidia/driver has an invalid digest 'sha1:x'"],
        ),
        # A `repository` outside an image (a git or chart source) is not an image.
        ({"source": {"repository": "https://github.com/ROCm/gpu-operator"}}, []),
        ({"repository": "https://github.com/ROCm/gpu-operator"}, []),
        ({"sources": [{"repository": "https://github.com/ROCm/gpu-operator"}]}, []),
        ({"app": {"version": "latest"}}, []),
        # An image that overrides only the chart's tag is judged by that tag; an empty one keeps the chart's.
        ({"image": {"tag": "latest"}}, ["values.image: the chart's image floats on tag 'latest'"]),
        ({"driver": {"image": {"tag": "v1.5.1"}}}, []),
        ({"image": {"tag": "latest", "digest": DIGEST}}, []),
        ({"image": {"tag": "", "pullPolicy": "Always"}}, []),
        ({"settings": {"tag": "latest"}}, []),
        # Images in lists are found where they are.
        (
            {"containers": [{"image": "busybox:1.37"}, {"image": "busybox:latest"}]},
            ["values.containers[1].image: image busybox:latest floats on tag 'latest'"],
        ),
        # A `<x>Image` next to a {repository, tag} image is an image of its own.
        (
            {"exporter": {"repository": "rocm/device-metrics-exporter", "tag": "v1.5.1", "initImage": "busybox"}},
            ["values.exporter.initImage: image busybox is untagged"],
        ),
        # Every image of a mapping is read, whichever key comes first.
        (
            {"image": "busybox:1.37", "sidecar": {"image": "busybox:latest"}},
            ["values.sidecar.image: image busybox:latest floats on tag 'latest'"],
        ),
    ],
)
def test_images_are_judged_by_tag_and_digest_where_they_are(values: dict[str, Any], found: list[str]) -> None:
    assert image_problems(values) == found


def test_pinned_versions_reports_each_floating_image_with_its_release() -> None:
    values = {"containers": [{"image": "busybox"}]}
    assert check(pinned_versions, release("x", "1.0.0", values)) == [
        "release mp-x: values.containers[0].image: image busybox is untagged; pin an exact tag"
    ]


def test_amd_operator_that_undoes_every_fix_gets_every_message() -> None:
    values = {
        "kmm": {"enabled": True, "watch": True},
        "crds": {"defaultCR": {"upgrade": False}},
        "deviceConfig": {"spec": {"draDriver": {"enable": True}, "devicePlugin": {"enableDevicePlugin": True}}},
    }
    assert check(amd_operator_values, release("gpu-operator-charts", "v1.5.1", values)) == [
        "release mp-gpu-operator-charts: kmm.enabled must be false (the chart enables KMM, which this stack "
        "never uses)",
        "release mp-gpu-operator-charts: kmm.watch must be false (the chart has the operator watch KMM's resources, "
        "whose CRDs only the disabled KMM subchart installs, so the operator cannot start)",
        "release mp-gpu-operator-charts: crds.defaultCR.upgrade must be true (the chart renders its DeviceConfig at "
        "install only, so later values never reach it)",
        "release mp-gpu-operator-charts: deviceConfig.spec.devicePlugin.enableDevicePlugin must be false when the "
        "DRA driver is on (the chart enables the device plugin; the operator rejects both together)",
    ]


@pytest.mark.parametrize(
    ("dra", "plugin", "rejected"), [(True, False, False), (False, None, False), (True, None, True)]
)
def test_amd_device_plugin_is_judged_only_next_to_the_dra_driver(
    dra: bool, plugin: bool | None, rejected: bool
) -> None:
    props = catalog_release("Existing", "amd-gpu-operator")
    spec = props["values"]["deviceConfig"]["spec"]
    spec["draDriver"]["enable"] = dra
    if plugin is None:
        spec["devicePlugin"].pop("enableDevicePlugin")
    else:
        spec["devicePlugin"]["enableDevicePlugin"] = plugin
    found = check(amd_operator_values, props)
    assert (found != []) == rejected and all("enableDevicePlugin must be false" in m for m in found)


@pytest.mark.parametrize(
    ("values", "paths"),
    [
        ({"tolerations": None, "daemonset": {"tolerations": [WILDCARD]}}, ["values.daemonset.tolerations[0]"]),
        ({"tolerations": [], "worker": {"tolerations": [WILDCARD]}}, ["values.worker.tolerations[0]"]),
        ({"a": UNKNOWN_STRING_VALUE, "b": {"tolerations": [WILDCARD]}}, ["values.b.tolerations[0]"]),
        (
            {"extraDaemonSets": [UNKNOWN_STRING_VALUE, {"name": "x"}, {"tolerations": [{"key": "k"}, WILDCARD]}]},
            ["values.extraDaemonSets[2].tolerations[1]"],
        ),
    ],
)
def test_every_wildcard_toleration_is_found_past_unknown_and_empty_values(
    values: dict[str, Any], paths: list[str]
) -> None:
    assert check(no_wildcard_tolerations, release("x", "1.0.0", values)) == [
        f"release mp-x: {p} tolerates every taint (empty key, operator Exists); tolerate the taint keys of the "
        "pools it runs on"
        for p in paths
    ]


def test_keys_after_a_tolerations_key_are_still_searched() -> None:
    # A plain mapping keeps its order (the engine's Struct does not), so the tolerations key comes first.
    values = {"tolerations": [], "worker": {"tolerations": [WILDCARD]}}
    assert wildcard_tolerations(values, "values") == ["values.worker.tolerations[0]"]
