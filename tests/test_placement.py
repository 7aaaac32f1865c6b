"""The placement audit: Kubernetes' matching rules, and each device stack reaching its own pools only.

Clusters are built with `infra.facts.derive_cluster` from fleets, and release values come from the
catalog rows the cluster joins, so these tests need no cloud component.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from infra.facts import ClusterFacts, NodeTaint, derive_cluster
from infra.placement import DISCOVERED_LABELS, UNPOOLED, PodPlacement, Toleration, affinity_matches, untolerated
from infra.serving.catalog import node_agents, release_values
from infra.serving.chart import any_label_in
from infra.serving.pods import pod_placement
from infra.serving.values import node_feature_discovery
from tests.conftest import CLUSTER_BLOCKS, cpu_class, fleet_of
from tests.conftest import cloud_fleet as two_pools
from tooling.placement import audit

ROOT = Path(__file__).resolve().parent.parent

PROVISIONED = tuple(CLUSTER_BLOCKS)

NVIDIA_AGENTS = {("mp-dra-driver-nvidia-gpu", "kubelet-plugin"), ("mp-gpu-operator", "operands")}
# The AMD operator's four DaemonSets, written out rather than read from the table under test.
AMD_AGENTS = {
    ("mp-gpu-operator-charts", w) for w in ("dra-driver", "device-plugin", "node-labeller", "metrics-exporter")
}
CPU_AGENT = ("mp-dra-driver-cpu", "kubelet-plugin")
NFD_WORKER = ("mp-node-feature-discovery", "worker")


def cloud_fleet(cloud: str) -> dict[str, Any]:
    """A cluster `c` of `cloud` with a `gpu` and a `cpu` pool, and a deployment on each."""
    return two_pools(
        cloud,
        "c",
        [
            {
                "name": "on-gpu",
                "cluster": "c",
                "pool": "gpu",
                "image": "vllm/vllm-openai:v0.23.0",
                "memory": "32Gi",
                "devices": [{"name": "gpu"}],
            },
            {
                "name": "on-cpu",
                "cluster": "c",
                "pool": "cpu",
                "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
                "devices": [{"name": "cpu"}],
            },
        ],
    )


def existing_fleet(amd: bool = True) -> dict[str, Any]:
    classes = [
        {"name": "h100", "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}]},
        cpu_class("cpu", None),
    ]
    pools = [{"name": "h100", "className": "h100"}, {"name": "cpu", "className": "cpu"}]
    if amd:
        classes.append(
            {"name": "mi325x", "devices": [{"name": "gpu", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com"}]}
        )
        pools.append({"name": "mi325x", "className": "mi325x"})
    return {
        "classes": classes,
        "clusters": [
            {"name": "lab", "source": "Existing", "existing": {"kubernetesVersion": "1.36"}, "nodePools": pools}
        ],
        "deployments": [
            {
                "name": p["name"] + "-engine",
                "cluster": "lab",
                "pool": p["name"],
                "image": "engine:v1",
                "memory": "32Gi",
                "devices": [{"name": d}],
            }
            for p, d in zip(pools, ["gpu", "cpu", "gpu"], strict=False)
        ],
    }


def facts_of(raw: Mapping[str, Any]) -> tuple[ClusterFacts, list[PodPlacement]]:
    fleet = fleet_of(raw)
    facts = derive_cluster(fleet, fleet.clusters[0])
    return facts, [pod_placement(d, facts) for d in fleet.deployments]


def agents(report: Any) -> dict[tuple[str, str], tuple[str, ...]]:
    return {(p.agent.release, p.agent.workload): pools for p, pools in report.workloads}


def checks(report: Any) -> set[tuple[str, str]]:
    return {(v.check, v.subject) for v in report.violations}


# --------------------------------------------------------------------------------------------
# Kubernetes' matching rules

GPU_TAINT = NodeTaint("nvidia.com/gpu", "true", "NoSchedule")


def test_exists_toleration_ignores_the_taint_value() -> None:
    assert Toleration("nvidia.com/gpu", "Exists", effect="NoSchedule").tolerates(NodeTaint("nvidia.com/gpu", "present"))


def test_equal_toleration_requires_the_same_value() -> None:
    assert Toleration("nvidia.com/gpu", "Equal", "true", "NoSchedule").tolerates(GPU_TAINT)
    assert not Toleration("nvidia.com/gpu", "Equal", "true", "NoSchedule").tolerates(
        NodeTaint("nvidia.com/gpu", "present")
    )


def test_operator_defaults_to_equal() -> None:
    tol = Toleration.from_values({"key": "nvidia.com/gpu", "value": "present"})
    assert tol.operator == "Equal"
    assert not tol.tolerates(GPU_TAINT)


def test_empty_effect_matches_every_effect() -> None:
    tol = Toleration("k", "Exists")
    assert all(tol.tolerates(NodeTaint("k", "v", e)) for e in ("NoSchedule", "NoExecute", "PreferNoSchedule"))


def test_effect_must_match_when_set() -> None:
    assert not Toleration("k", "Exists", effect="NoSchedule").tolerates(NodeTaint("k", "v", "NoExecute"))


def test_empty_key_with_exists_matches_every_key() -> None:
    tol = Toleration("", "Exists", effect="NoSchedule")
    assert tol.wildcard
    assert tol.tolerates(GPU_TAINT) and tol.tolerates(NodeTaint("modelplane.ai/cpu", "true"))
    assert not tol.tolerates(NodeTaint("x", "y", "NoExecute"))


def test_key_mismatch_is_not_tolerated() -> None:
    assert not Toleration("amd.com/gpu", "Exists", effect="NoSchedule").tolerates(GPU_TAINT)


def test_prefer_no_schedule_taint_does_not_block() -> None:
    assert untolerated([], [NodeTaint("soft", "x", "PreferNoSchedule")]) == []
    assert untolerated([], [NodeTaint("hard", "x", "NoExecute")]) == [NodeTaint("hard", "x", "NoExecute")]


def _required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


@pytest.mark.parametrize(
    ("expr", "labels", "expected"),
    [
        ({"key": "a", "operator": "In", "values": ["1", "2"]}, {"a": "2"}, True),
        ({"key": "a", "operator": "In", "values": ["1"]}, {}, False),
        ({"key": "a", "operator": "NotIn", "values": ["1"]}, {}, True),
        ({"key": "a", "operator": "NotIn", "values": ["1"]}, {"a": "1"}, False),
        ({"key": "a", "operator": "Exists"}, {"a": ""}, True),
        ({"key": "a", "operator": "DoesNotExist"}, {"a": "x"}, False),
        ({"key": "a", "operator": "Gt", "values": ["3"]}, {"a": "4"}, True),
        # Gt and Lt are strict: a label equal to the bound matches neither.
        ({"key": "a", "operator": "Gt", "values": ["3"]}, {"a": "3"}, False),
        ({"key": "a", "operator": "Gt", "values": ["3"]}, {"a": "2"}, False),
        ({"key": "a", "operator": "Gt", "values": ["3"]}, {"a": "three"}, False),
        ({"key": "a", "operator": "Gt", "values": ["3"]}, {}, False),
        ({"key": "a", "operator": "Gt", "values": ["3", "5"]}, {"a": "9"}, False),
        ({"key": "a", "operator": "Lt", "values": ["3"]}, {"a": "3"}, False),
        ({"key": "a", "operator": "Lt", "values": ["3"]}, {"a": "2"}, True),
        ({"key": "a", "operator": "Lt", "values": ["3"]}, {"a": "4"}, False),
        ({"key": "a", "operator": "In", "values": ["1"]}, {"a": "2"}, False),
        ({"key": "a", "operator": "NotIn", "values": ["1"]}, {"a": "2"}, True),
        ({"key": "a", "operator": "Exists"}, {}, False),
        ({"key": "a", "operator": "DoesNotExist"}, {}, True),
        ({"key": "a", "operator": "Unknown", "values": ["1"]}, {"a": "1"}, False),
    ],
)
def test_node_affinity_operators(expr: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert affinity_matches(_required([expr]), labels) is expected


def test_node_affinity_ors_terms_and_ands_expressions() -> None:
    a = {"key": "a", "operator": "Exists"}
    b = {"key": "b", "operator": "Exists"}
    assert affinity_matches(_required([a, b]), {"a": "1", "b": "1"})
    assert not affinity_matches(_required([a, b]), {"a": "1"})
    assert affinity_matches(_required([a], [b]), {"b": "1"})
    assert not affinity_matches(_required([]), {"a": "1"})  # an empty term matches nothing


def test_node_affinity_term_with_match_fields_never_counts_as_a_match() -> None:
    # matchFields select node names, which a pool does not know: such a term is no match, even when
    # its expressions match, and another term of the same affinity still can match.
    fields = {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
    by_name = {"matchExpressions": [{"key": "a", "operator": "Exists"}], "matchFields": [fields]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [by_name]}}}
    assert not affinity_matches(affinity, {"a": "1"})
    by_label = {"matchExpressions": [{"key": "b", "operator": "Exists"}]}
    either = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [by_name, by_label]}}
    }
    assert affinity_matches(either, {"a": "1", "b": "1"})
    assert not affinity_matches(either, {"a": "1"})


def test_no_required_node_affinity_matches_every_node() -> None:
    assert affinity_matches(None, {})
    assert affinity_matches({"nodeAffinity": {}}, {"a": "1"})


# --------------------------------------------------------------------------------------------
# The audit legs


@pytest.mark.parametrize("cloud", PROVISIONED)
def test_each_cloud_stack_reaches_its_own_pool_and_stays_off_the_others(cloud: str) -> None:
    facts, deployments = facts_of(cloud_fleet(cloud))
    report = audit(facts, release_values(facts), deployments)
    assert report.ok, report.as_json()["violations"]
    placed = agents(report)
    # VKE runs its own GPU Operator and NFD; on Vultr the stack brings only the DRA driver.
    own_operator = cloud != "Vultr"
    for agent in NVIDIA_AGENTS if own_operator else {("mp-dra-driver-nvidia-gpu", "kubelet-plugin")}:
        assert placed[agent] == ("gpu",)
    assert placed[CPU_AGENT] == ("cpu",)
    if own_operator:
        assert "gpu" in placed[NFD_WORKER]
    else:
        assert NFD_WORKER not in placed and ("mp-gpu-operator", "operands") not in placed
    assert not AMD_AGENTS & set(placed)
    assert {d.name: pools for d, pools in report.deployments} == {"on-gpu": ("gpu",), "on-cpu": ("cpu",)}


def test_gke_gpu_taint_value_present_is_tolerated_by_exists() -> None:
    facts, _ = facts_of(cloud_fleet("GKE"))
    assert NodeTaint("nvidia.com/gpu", "present") in facts.pool("gpu").taints
    assert audit(facts, release_values(facts), []).lands_on("mp-dra-driver-nvidia-gpu", "kubelet-plugin") == ("gpu",)


def test_existing_with_amd_pool_places_each_vendor_stack_on_its_pool() -> None:
    facts, deployments = facts_of(existing_fleet(amd=True))
    report = audit(facts, release_values(facts), deployments)
    assert report.ok, report.as_json()["violations"]
    placed = agents(report)
    # The AMD operator's DaemonSets with the device plugin off: each on the MI325X pool alone.
    for workload in ("dra-driver", "node-labeller", "metrics-exporter"):
        assert placed[("mp-gpu-operator-charts", workload)] == ("mi325x",)
    assert ("mp-gpu-operator-charts", "device-plugin") not in placed
    for agent in NVIDIA_AGENTS:
        assert placed[agent] == ("h100",)
    assert placed[CPU_AGENT] == ("cpu",)
    assert {"h100", "mi325x"} <= set(placed[NFD_WORKER])
    # the owner's nodes outside the pools are audited as the system pool
    assert report.nodes[0].pool == UNPOOLED


def test_existing_without_amd_driver_installs_no_amd_agents() -> None:
    """The review's leg: leave gpu.amd.com out and the AMD DaemonSets are absent."""
    facts, deployments = facts_of(existing_fleet(amd=False))
    assert "gpu.amd.com" not in facts.dra_drivers
    releases = release_values(facts)
    assert "mp-gpu-operator-charts" not in releases
    report = audit(facts, releases, deployments)
    assert report.ok
    assert not AMD_AGENTS & set(agents(report))
    assert not any("amd" in str(w["release"]) + str(w["workload"]) for w in report.as_json()["workloads"])


def _with_values(facts: ClusterFacts, release: str, edit: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    releases: dict[str, Mapping[str, Any]] = {k: copy.deepcopy(dict(v)) for k, v in release_values(facts).items()}
    releases[release] = {**releases[release], **edit}
    return releases


def test_cpu_driver_without_node_selector_is_caught_on_the_system_pool() -> None:
    facts, _ = facts_of(cloud_fleet("Civo"))
    releases = _with_values(facts, "mp-dra-driver-cpu", {"nodeSelector": {}})
    releases["mp-dra-driver-cpu"] = {k: v for k, v in releases["mp-dra-driver-cpu"].items() if k != "nodeSelector"}
    report = audit(facts, releases, [])
    assert ("driver-on-system-pool", "mp-dra-driver-cpu/kubelet-plugin") in checks(report)
    assert not report.ok


def test_cpu_driver_with_the_charts_accept_all_toleration_is_caught() -> None:
    facts, _ = facts_of(cloud_fleet("EKS"))
    releases = _with_values(
        facts, "mp-dra-driver-cpu", {"tolerations": [{"operator": "Exists", "effect": "NoSchedule"}]}
    )
    report = audit(facts, releases, [])
    assert ("wildcard-toleration", "mp-dra-driver-cpu/kubelet-plugin") in checks(report)


def test_nvidia_plugin_tolerating_the_wrong_value_misses_the_gke_pool() -> None:
    facts, _ = facts_of(cloud_fleet("GKE"))
    wrong = {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]}
    releases = _with_values(facts, "mp-dra-driver-nvidia-gpu", {"kubeletPlugin": wrong})
    report = audit(facts, releases, [])
    assert ("agent-reach", "mp-dra-driver-nvidia-gpu/kubelet-plugin") in checks(report)
    assert "nvidia.com/gpu=present:NoSchedule" in report.as_json()["violations"][0]["message"]


def test_nfd_worker_without_gpu_tolerations_misses_the_gpu_pool() -> None:
    facts, _ = facts_of(cloud_fleet("AKS"))
    releases = _with_values(facts, "mp-node-feature-discovery", {"worker": {"tolerations": []}})
    assert ("agent-reach", "mp-node-feature-discovery/worker") in checks(audit(facts, releases, []))


def test_amd_driver_tolerating_the_cpu_taint_lands_on_the_cpu_pool() -> None:
    facts, _ = facts_of(existing_fleet(amd=True))
    releases = {k: copy.deepcopy(dict(v)) for k, v in release_values(facts).items()}
    spec = releases["mp-gpu-operator-charts"]["deviceConfig"]["spec"]
    spec["selector"] = {}
    spec["draDriver"]["tolerations"] = [{"key": "modelplane.ai/cpu", "operator": "Exists", "effect": "NoSchedule"}]
    found = checks(audit(facts, releases, []))
    assert ("agent-off-pool", "mp-gpu-operator-charts/dra-driver") in found
    assert ("agent-reach", "mp-gpu-operator-charts/dra-driver") in found  # and it lost the AMD taint


def test_deployment_that_can_land_off_its_pool_is_caught() -> None:
    facts, deployments = facts_of(cloud_fleet("Vultr"))
    loose = PodPlacement("loose", "gpu", {}, deployments[0].tolerations)
    report = audit(facts, release_values(facts), [loose])
    assert ("deployment-placement", "deployment/loose") in checks(report)
    assert set(dict(((d.name, p) for d, p in report.deployments))["loose"]) == {"system", "gpu", "cpu"}


def test_deployment_tolerations_alone_never_place_it() -> None:
    """The per-driver list is harmless: without the pool selector the pod could go anywhere."""
    facts, deployments = facts_of(existing_fleet(amd=True))
    lands = [(dep.name, pools) for dep in deployments for _, pools in audit(facts, {}, [dep]).deployments]
    assert lands == [("h100-engine", ("h100",)), ("cpu-engine", ("cpu",)), ("mi325x-engine", ("mi325x",))]


@pytest.mark.parametrize("source", ["Vultr", "Existing"])
def test_gateway_proxies_land_on_system_nodes_only(source: str) -> None:
    from infra.serving.pods import gateway_proxy_placement

    facts, deployments = facts_of(cloud_fleet("Vultr") if source == "Vultr" else existing_fleet(amd=True))
    report = audit(facts, release_values(facts), deployments, [gateway_proxy_placement(facts)])
    assert report.ok, report.violations
    expected = ("system",) if source == "Vultr" else ("(unpooled)",)
    assert [pools for _, pools in report.gateways] == [expected]


def test_audit_report_json_lists_gateways_only_when_there_are_some() -> None:
    from infra.serving.pods import gateway_proxy_placement

    facts, deployments = facts_of(cloud_fleet("Vultr"))
    with_gateway = audit(facts, release_values(facts), deployments, [gateway_proxy_placement(facts)]).as_json()
    assert with_gateway["gateways"] == [{"name": "envoy-gateway-system/modelplane", "pools": ["system"]}]
    assert "gateways" not in audit(facts, release_values(facts), deployments).as_json()


def test_gateway_proxies_that_tolerate_pool_taints_are_caught() -> None:
    facts, deployments = facts_of(cloud_fleet("Vultr"))
    tolerations = (*deployments[0].tolerations, *deployments[1].tolerations)
    loose = PodPlacement("envoy-gateway-system/modelplane", "", {}, tolerations)
    report = audit(facts, release_values(facts), [], [loose])
    assert [v.as_json() for v in report.violations] == [
        {
            "check": "gateway-placement",
            "subject": "gateway/envoy-gateway-system/modelplane",
            "message": "the proxies of gateway envoy-gateway-system/modelplane can land on 'gpu', 'cpu'; "
            "they belong on system nodes",
        }
    ]


def test_gateway_proxies_that_fit_no_node_are_caught() -> None:
    facts, _ = facts_of(cloud_fleet("Vultr"))
    nowhere = PodPlacement("envoy-gateway-system/modelplane", "", {}, (), _required([NO_NODE_HAS_X]))
    report = audit(facts, release_values(facts), [], [nowhere])
    assert [pools for _, pools in report.gateways] == [()]
    assert [v.message for v in report.violations] == [
        "the proxies of gateway envoy-gateway-system/modelplane can land on no node; they belong on system nodes"
    ]


def test_wildcard_allowlist_holds_only_the_node_exporter_with_its_reason() -> None:
    known = {(a.release, a.workload) for a in node_agents()}
    allowlist = {(a.release, a.workload): a.tolerates_every_taint for a in node_agents() if a.tolerates_every_taint}
    assert set(allowlist) == {("mp-kube-prometheus-stack", "node-exporter")}
    assert set(allowlist) <= known
    assert all(len(reason) > 20 for reason in allowlist.values())


def test_audit_report_json_names_pools_and_violations() -> None:
    facts, deployments = facts_of(cloud_fleet("Civo"))
    doc = audit(facts, release_values(facts), deployments).as_json()
    assert doc["ok"] is True and doc["cluster"] == "c"
    assert [n["pool"] for n in doc["nodes"]] == ["system", "gpu", "cpu"]
    assert {"release", "workload", "nodeSelector", "tolerations", "pools"} <= set(doc["workloads"][0])


@pytest.mark.parametrize("path", sorted((ROOT / "stacks").glob("Pulumi.*.yaml")), ids=lambda p: p.name)
def test_committed_stack_places_every_agent_and_deployment_cleanly(path: Path) -> None:
    from infra.config.stackfile import load_stack_file
    from infra.facts import derive_fleet

    loaded = load_stack_file(path)
    for facts in derive_fleet(loaded.fleet):
        deployments = [pod_placement(d, facts) for d in loaded.fleet.deployments if d.cluster == facts.name]
        report = audit(facts, release_values(facts), deployments)
        assert report.ok, report.as_json()["violations"]


def test_plan_reports_placement_json() -> None:
    from tooling.plan import plan_stack

    doc = plan_stack(ROOT / "stacks" / "Pulumi.recipe-qwen-cpu-civo.yaml")
    assert doc["ok"] and [c["cluster"] for c in doc["placement"]] == ["civo-cpu"]
    assert doc["placement"][0]["deployments"] == [{"name": "qwen", "pool": "cpu", "pools": ["cpu"], "gangs": None}]
    # The recipe publishes its engine through the Gateway, so the Gateway's proxies are audited too.
    assert doc["placement"][0]["gateways"] == [{"name": "envoy-gateway-system/modelplane", "pools": ["system"]}]


def test_plan_audits_no_gateway_on_a_cluster_that_publishes_no_service() -> None:
    from tooling.plan import plan_stack

    doc = plan_stack(ROOT / "stacks" / "Pulumi.civo-dev.yaml")
    assert doc["ok"] and [c["cluster"] for c in doc["placement"]] == ["civo-lon1"]
    assert "gateways" not in doc["placement"][0]


def test_plan_fails_when_an_agent_cannot_reach_its_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    import infra.placement
    from tooling.plan import plan_stack

    # Without the hardware labels neither the NVIDIA plugin's default affinity nor the GPU
    # operator's operand selector matches the GPU pool.
    monkeypatch.setattr(infra.placement, "DISCOVERED_LABELS", {})
    doc = plan_stack(ROOT / "stacks" / "Pulumi.civo-dev.yaml")
    assert not doc["ok"]
    assert [v for v in doc["violations"] if v["policy"] == "placement"] == [
        {
            "policy": "placement",
            "enforcement": "mandatory",
            "message": "cluster 'civo-lon1': mp-dra-driver-nvidia-gpu/kubelet-plugin cannot reach pool 'l40s': "
            "its required node affinity matches none of the pool's labels [agent-reach]",
            "resource": "civo-lon1/mp-dra-driver-nvidia-gpu/kubelet-plugin",
        },
        {
            "policy": "placement",
            "enforcement": "mandatory",
            "message": "cluster 'civo-lon1': mp-gpu-operator/operands cannot reach pool 'l40s': "
            "nodeSelector {'nvidia.com/gpu.present': 'true'} does not match the pool's labels [agent-reach]",
            "resource": "civo-lon1/mp-gpu-operator/operands",
        },
    ]


def _gke_with(release: str, section: str | None, key: str, value: Any) -> Any:
    facts, _ = facts_of(cloud_fleet("GKE"))
    releases = {k: copy.deepcopy(dict(v)) for k, v in release_values(facts).items()}
    target = releases[release] if section is None else releases[release][section]
    target[key] = value
    return audit(facts, releases, [])


def test_each_reason_an_agent_misses_its_pool_is_named() -> None:
    exact = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    report = _gke_with("mp-dra-driver-nvidia-gpu", "kubeletPlugin", "tolerations", exact)
    assert [v.as_json() for v in report.violations] == [
        {
            "check": "agent-reach",
            "subject": "mp-dra-driver-nvidia-gpu/kubelet-plugin",
            "message": "mp-dra-driver-nvidia-gpu/kubelet-plugin cannot reach pool 'gpu': "
            "it does not tolerate nvidia.com/gpu=present:NoSchedule",
        }
    ]
    report = _gke_with("mp-dra-driver-cpu", None, "nodeSelector", {"modelplane.ai/pool": "nowhere"})
    assert [v.message for v in report.violations] == [
        "mp-dra-driver-cpu/kubelet-plugin cannot reach pool 'cpu': "
        "nodeSelector {'modelplane.ai/pool': 'nowhere'} does not match the pool's labels"
    ]
    elsewhere = _required([{"key": "x", "operator": "Exists"}])
    report = _gke_with("mp-dra-driver-nvidia-gpu", "kubeletPlugin", "affinity", elsewhere)
    assert [v.message for v in report.violations] == [
        "mp-dra-driver-nvidia-gpu/kubelet-plugin cannot reach pool 'gpu': "
        "its required node affinity matches none of the pool's labels"
    ]


@pytest.mark.parametrize("cleared", [None, {}])
def test_clearing_the_charts_default_affinity_lets_the_nvidia_plugin_onto_the_system_pool(cleared: Any) -> None:
    # dra-driver-nvidia-gpu 0.4.x confines its kubelet plugin by a default node affinity on the
    # NVIDIA node labels; values that null it leave only the tolerations, and the untainted
    # system pool admits it.
    report = _gke_with("mp-dra-driver-nvidia-gpu", "kubeletPlugin", "affinity", cleared)
    assert report.lands_on("mp-dra-driver-nvidia-gpu", "kubelet-plugin") == ("system", "gpu")
    assert [v.as_json() for v in report.violations] == [
        {
            "check": "driver-on-system-pool",
            "subject": "mp-dra-driver-nvidia-gpu/kubelet-plugin",
            "message": "mp-dra-driver-nvidia-gpu/kubelet-plugin lands on System pool 'system', which it does not "
            "serve; give it a nodeSelector or affinity for its own pools and tolerate only their taints",
        }
    ]


def test_chart_default_affinity_has_one_term_per_label_so_any_one_admits_a_node() -> None:
    affinity = any_label_in(("a", "1"), ("b", "2"))
    assert affinity == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]},
                    {"matchExpressions": [{"key": "b", "operator": "In", "values": ["2"]}]},
                ]
            }
        }
    }
    assert affinity_matches(affinity, {"b": "2"}) and not affinity_matches(affinity, {"b": "1"})


def test_a_release_that_does_not_run_an_agent_has_no_placement() -> None:
    facts, _ = facts_of(cloud_fleet("GKE"))
    report = audit(facts, release_values(facts), [])
    with pytest.raises(KeyError) as err:
        report.lands_on("mp-gpu-operator-charts", "dra-driver")
    assert err.value.args == (("mp-gpu-operator-charts", "dra-driver"),)


def test_toleration_read_from_values_keeps_every_field_and_defaults_the_operator() -> None:
    full = {"key": "k", "operator": "Exists", "value": "v", "effect": "NoExecute"}
    assert Toleration.from_values(full) == Toleration("k", "Exists", "v", "NoExecute")
    assert Toleration.from_values(full).as_json() == full
    assert Toleration.from_values({"key": "k"}) == Toleration("k", "Equal", "", "")
    assert Toleration.from_values({"key": "k"}).as_json() == {"key": "k", "operator": "Equal"}


def test_audit_report_json_lists_nodes_and_placements_exactly() -> None:
    facts, deployments = facts_of(cloud_fleet("Civo"))
    doc = audit(facts, release_values(facts), deployments).as_json()
    assert doc["nodes"][1] == {
        "pool": "gpu",
        "role": "GPU",
        "labels": {
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "kubernetes.io/os": "linux",
            "modelplane.ai/gpu": "nvidia-l40s",
            "modelplane.ai/pool": "gpu",
            # Civo's driver manager evicts the DRA kubelet plugin through this label on upgrades.
            "nvidia.com/dra-kubelet-plugin": "true",
            "nvidia.com/gpu.present": "true",
        },
        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
    }
    assert [w for w in doc["workloads"] if w["release"] == "mp-dra-driver-cpu"] == [
        {
            "release": "mp-dra-driver-cpu",
            "workload": "kubelet-plugin",
            "nodeSelector": {"modelplane.ai/cpu": "true"},
            "tolerations": [{"key": "modelplane.ai/cpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            "pools": ["cpu"],
        }
    ]


def test_deployment_off_its_pool_names_where_it_can_land() -> None:
    facts, deployments = facts_of(cloud_fleet("Civo"))
    anywhere = PodPlacement(
        "on-gpu", "gpu", {}, (*deployments[0].tolerations, Toleration("modelplane.ai/cpu", "Exists"))
    )
    nowhere = PodPlacement(
        "on-gpu", "gpu", deployments[0].node_selector, deployments[0].tolerations, _required([NO_NODE_HAS_X])
    )
    assert [v.as_json() for v in audit(facts, {}, [anywhere]).violations] == [
        {
            "check": "deployment-placement",
            "subject": "deployment/on-gpu",
            "message": "deployment 'on-gpu' targets pool 'gpu' but can land on 'system', 'gpu', 'cpu'",
        }
    ]
    assert [v.message for v in audit(facts, {}, [nowhere]).violations] == [
        "deployment 'on-gpu' targets pool 'gpu' but can land on no pool"
    ]


NO_NODE_HAS_X = {"key": "x", "operator": "Exists"}


@pytest.mark.parametrize(
    ("toleration", "shown"),
    [({"operator": "Exists", "effect": "NoSchedule"}, " with effect NoSchedule"), ({"operator": "Exists"}, "")],
)
def test_wildcard_toleration_is_reported_with_its_effect(toleration: dict[str, str], shown: str) -> None:
    facts, _ = facts_of(cloud_fleet("Civo"))
    releases = _with_values(facts, "mp-dra-driver-cpu", {"tolerations": [toleration]})
    assert [v.as_json() for v in audit(facts, releases, []).violations] == [
        {
            "check": "wildcard-toleration",
            "subject": "mp-dra-driver-cpu/kubelet-plugin",
            "message": f"mp-dra-driver-cpu/kubelet-plugin tolerates every taint{shown} (empty key, operator Exists); "
            "scope its tolerations to the taints of the pools it serves",
        }
    ]


def test_existing_clusters_other_nodes_are_an_untainted_system_pool() -> None:
    facts, _ = facts_of(existing_fleet(amd=False))
    assert audit(facts, release_values(facts), []).as_json()["nodes"][0] == {
        "pool": "(unpooled)",
        "role": "System",
        "labels": {"kubernetes.io/os": "linux"},
        "taints": [],
    }


def test_empty_operator_means_equal_and_an_unknown_operator_tolerates_nothing() -> None:
    assert Toleration("nvidia.com/gpu", "", "true").tolerates(GPU_TAINT)
    assert not Toleration("nvidia.com/gpu", "", "present").tolerates(GPU_TAINT)
    assert not Toleration("nvidia.com/gpu", "Gt", "true").tolerates(GPU_TAINT)


def test_values_without_tolerations_get_the_charts_default_and_an_empty_list_gets_none() -> None:
    # dra-driver-nvidia-gpu 0.4.x tolerates the NVIDIA taint by default; an explicit empty list
    # tolerates nothing, so the plugin no longer reaches the tainted GPU pool.
    facts, _ = facts_of(cloud_fleet("EKS"))
    releases = {k: copy.deepcopy(dict(v)) for k, v in release_values(facts).items()}
    del releases["mp-dra-driver-nvidia-gpu"]["kubeletPlugin"]["tolerations"]
    assert audit(facts, releases, []).lands_on("mp-dra-driver-nvidia-gpu", "kubelet-plugin") == ("gpu",)
    releases["mp-dra-driver-nvidia-gpu"]["kubeletPlugin"]["tolerations"] = []
    assert audit(facts, releases, []).lands_on("mp-dra-driver-nvidia-gpu", "kubelet-plugin") == ()


def test_an_agent_missing_a_pool_for_two_taints_names_both() -> None:
    # A pool whose nodes carry a second blocking taint besides the vendor's (one the cluster owner adds).
    facts, _ = facts_of(cloud_fleet("GKE"))
    extra = NodeTaint("example.com/dedicated", "ml", "NoExecute")
    pools = tuple(dataclasses.replace(p, taints=(*p.taints, extra)) if p.name == "gpu" else p for p in facts.pools)
    facts = dataclasses.replace(facts, pools=pools)
    releases = {k: copy.deepcopy(dict(v)) for k, v in release_values(facts).items()}
    releases["mp-dra-driver-nvidia-gpu"]["kubeletPlugin"]["tolerations"] = []
    reach = [v.message for v in audit(facts, releases, []).violations if v.check == "agent-reach"]
    assert reach == [
        "mp-dra-driver-nvidia-gpu/kubelet-plugin cannot reach pool 'gpu': it does not tolerate "
        "nvidia.com/gpu=present:NoSchedule, example.com/dedicated=ml:NoExecute",
        "mp-gpu-operator/operands cannot reach pool 'gpu': it does not tolerate example.com/dedicated=ml:NoExecute",
        "mp-node-feature-discovery/worker cannot reach pool 'gpu': it does not tolerate "
        "example.com/dedicated=ml:NoExecute",
    ]


# ROCm/gpu-operator helm-charts-k8s/values.yaml @v1.5.1, deviceConfig.spec: the DRA driver is off
# by default (draDriver.enable: false); the device plugin (devicePlugin.enableDevicePlugin), the node
# labeller (devicePlugin.enableNodeLabeller) and the metrics exporter (metricsExporter.enable) are on.
@pytest.mark.parametrize(
    ("workload", "flag", "lands"),
    [
        ("dra-driver", ("draDriver", "enable"), None),
        ("device-plugin", ("devicePlugin", "enableDevicePlugin"), ("mi325x",)),
        ("node-labeller", ("devicePlugin", "enableNodeLabeller"), ("mi325x",)),
        ("metrics-exporter", ("metricsExporter", "enable"), ("mi325x",)),
    ],
)
def test_an_amd_agent_whose_values_omit_its_enable_flag_follows_the_charts_default(
    workload: str, flag: tuple[str, str], lands: tuple[str, ...] | None
) -> None:
    facts, _ = facts_of(existing_fleet(amd=True))
    releases = {k: copy.deepcopy(dict(v)) for k, v in release_values(facts).items()}
    section, key = flag
    del releases["mp-gpu-operator-charts"]["deviceConfig"]["spec"][section][key]
    placed = agents(audit(facts, releases, []))
    assert placed.get(("mp-gpu-operator-charts", workload)) == lands


def test_an_agent_for_every_node_does_not_end_the_audit_of_the_agents_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # The node exporter (serves every node) first: the CPU driver after it is still checked.
    import tooling.placement

    reordered = sorted(node_agents(), key=lambda a: a.serves is not None)
    assert (reordered[0].release, reordered[0].workload) == ("mp-kube-prometheus-stack", "node-exporter")
    monkeypatch.setattr(tooling.placement, "node_agents", lambda: reordered)
    facts, _ = facts_of(cloud_fleet("Civo"))
    releases = {k: copy.deepcopy(dict(v)) for k, v in release_values(facts).items()}
    del releases["mp-dra-driver-cpu"]["nodeSelector"]
    assert checks(audit(facts, releases, [])) == {("driver-on-system-pool", "mp-dra-driver-cpu/kubelet-plugin")}


def test_the_pci_label_the_audit_puts_on_nvidia_nodes_is_the_one_the_installed_nfd_publishes() -> None:
    # NFD names a PCI label after the configured fields joined by "_" (kubernetes-sigs/
    # node-feature-discovery v0.19.0 source/pci/pci.go; fields default to class and vendor), for
    # the device classes its whitelist holds. An H100 is class 0302, vendor 10de.
    pci = node_feature_discovery("GKE")["worker"]["config"]["sources"]["pci"]
    device = {"class": "0302", "vendor": "10de"}
    assert any(device["class"].startswith(c) for c in pci["deviceClassWhitelist"])
    label = "feature.node.kubernetes.io/pci-" + "_".join(device[f] for f in pci["deviceLabelFields"]) + ".present"
    pci_labels = {k for k in DISCOVERED_LABELS["nvidia"] if "/pci-" in k}
    assert pci_labels == {label}
    # AMD Instinct accelerators are of no class the whitelist labels; the AMD operator's rule marks them.
    assert not any("/pci-" in k for k in DISCOVERED_LABELS["amd"])
