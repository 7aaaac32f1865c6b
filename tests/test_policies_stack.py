"""device-stack-filtered and cpu-claim-resources: stack policies that join resources through the graph."""

from __future__ import annotations

from typing import Any

from pulumi_policy import PolicyResource

from components.base import policy_inputs
from components.catalog import Component, cluster_components
from components.serving_stack import planned_release
from infra.facts import ClusterFacts, derive_cluster
from policies.stack_rules import cpu_claim_resources, device_stack_filtered
from tests.conftest import cpu_class, fleet_of
from tests.policy_harness import run, stack_args, stack_resource

RELEASE = "kubernetes:helm.sh/v3:Release"

BYO = {
    "classes": [
        {"name": "mi325x", "devices": [{"name": "gpu", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com"}]},
        cpu_class("cpu", None),
    ],
    "clusters": [
        {
            "name": "byo",
            "source": "Existing",
            "existing": {},
            "nodePools": [{"name": "amd", "className": "mi325x"}, {"name": "cpu", "className": "cpu"}],
        }
    ],
}


def byo_facts() -> tuple[ClusterFacts, dict[str, Any]]:
    fleet = fleet_of(BYO)
    specs = {c.name: c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet.classes}
    return derive_cluster(fleet, fleet.cluster_named("byo")), specs


def release_props(c: Component) -> dict[str, Any]:
    return {"name": c.release, "chart": c.chart, "version": c.version, "namespace": c.namespace, "values": {}}


def stack_of(
    components: list[Component], dra_drivers: list[str] | None = None, owner_gpu_operator: bool = False
) -> list[PolicyResource]:
    """A cluster component, its ServingStack and one Release per component, parented as the program does,
    each with the outputs `AnalyzeStack` gets: the components' registered facts, the Releases' state."""
    facts, specs = byo_facts()
    cluster = stack_resource("modelplane:existing:ExistingCluster", policy_inputs(facts, specs), name="byo")
    stack = stack_resource(
        "modelplane:stack:ServingStack",
        {
            "cluster": "byo",
            "source": "Existing",
            "draDrivers": list(facts.dra_drivers) if dra_drivers is None else dra_drivers,
            "supportedDrivers": list(facts.supported_drivers),
            "components": [c.key for c in components],
            "ownerGpuOperator": owner_gpu_operator,
            "releases": [planned_release(c, False) for c in components],
        },
        name="byo-stack",
        parent=cluster,
    )
    releases = [stack_resource(RELEASE, release_props(c), name=f"byo-stack-{c.key}", parent=stack) for c in components]
    return [cluster, stack, *releases]


def test_stack_with_exactly_the_joined_components_passes() -> None:
    facts, _ = byo_facts()
    assert run(device_stack_filtered, stack_args(stack_of(cluster_components(facts)))) == []


def test_stack_without_the_operator_its_owner_runs_passes() -> None:
    facts, _ = byo_facts()
    without = [c for c in cluster_components(facts) if c.key != "amd-gpu-operator"]
    assert run(device_stack_filtered, stack_args(stack_of(without, owner_gpu_operator=True))) == []


def test_second_gpu_operator_next_to_the_owners_is_rejected() -> None:
    facts, _ = byo_facts()
    found = run(device_stack_filtered, stack_args(stack_of(cluster_components(facts), owner_gpu_operator=True)))
    assert found == [
        "cluster 'byo': release mp-gpu-operator-charts installs a second GPU operator next to the one the "
        "cluster's owner runs (ownerGpuOperator)"
    ]


def test_release_for_an_unclaimed_driver_is_rejected() -> None:
    from components.catalog import CATALOG

    facts, _ = byo_facts()
    nvidia_only = [c for c in CATALOG["Existing"] if c.key == "dra-driver-nvidia-gpu"]
    found = run(device_stack_filtered, stack_args(stack_of([*cluster_components(facts), *nvidia_only])))
    assert found == [
        "cluster 'byo': release mp-dra-driver-nvidia-gpu is for gpu.nvidia.com, which no pool claims "
        "(claimed: dra.cpu, gpu.amd.com)"
    ]


def test_claimed_driver_without_its_components_is_rejected() -> None:
    facts, _ = byo_facts()
    without_cpu_driver = [c for c in cluster_components(facts) if c.key != "dra-driver-cpu"]
    found = run(device_stack_filtered, stack_args(stack_of(without_cpu_driver)))
    assert found == ["cluster 'byo': pools claim dra.cpu but release mp-dra-driver-cpu is not installed"]


def test_stack_drivers_that_differ_from_the_pools_claims_are_rejected() -> None:
    facts, _ = byo_facts()
    cpu_only = [c for c in cluster_components(facts) if "gpu.amd.com" not in c.dra_drivers]
    found = run(device_stack_filtered, stack_args(stack_of(cpu_only, dra_drivers=["dra.cpu"])))
    assert len(found) == 1 and "but the cluster's pools claim [dra.cpu, gpu.amd.com]" in found[0]


# cpu-claim-resources


def template(cpus: Any, name: str = "qwen-cpu", namespace: str = "models") -> PolicyResource:
    return stack_resource(
        "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate",
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "cpu",
                                "exactly": {
                                    "deviceClassName": "dra.cpu",
                                    "capacity": {"requests": {"dra.cpu/cpu": cpus}},
                                },
                            }
                        ]
                    }
                }
            },
        },
        name=f"{name}-claim",
    )


def workload(requests: Any, limits: Any, claim_template: str = "qwen-cpu") -> PolicyResource:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai-cpu:v0.11.0",
        "resources": {"requests": {"cpu": requests}, "limits": {"cpu": limits}, "claims": [{"name": "cpu"}]},
    }
    return stack_resource(
        "kubernetes:apps/v1:Deployment",
        {
            "metadata": {"name": "qwen", "namespace": "models"},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [container],
                        "resourceClaims": [{"name": "cpu", "resourceClaimTemplateName": claim_template}],
                    }
                }
            },
        },
        name="qwen",
    )


def test_workload_requesting_and_limiting_the_claimed_cpus_passes() -> None:
    assert run(cpu_claim_resources, stack_args([template("6"), workload("6", "6000m")])) == []


def test_cpu_counts_arriving_as_floats_still_match() -> None:
    assert run(cpu_claim_resources, stack_args([template(6), workload(6, 6)])) == []


def test_workload_whose_requests_differ_from_its_claim_is_rejected() -> None:
    found = run(cpu_claim_resources, stack_args([template("6"), workload("4", "6")]))
    assert found == [
        "workload models/qwen, container vllm: requests.cpu is '4' but claim 'cpu' takes 6 CPUs from dra.cpu; "
        "request and limit exactly 6"
    ]


def test_workload_without_a_cpu_limit_is_rejected() -> None:
    found = run(cpu_claim_resources, stack_args([template("6"), workload("6", None)]))
    assert len(found) == 1 and "limits.cpu is nothing" in found[0]


def test_workload_whose_claim_is_not_dra_cpu_is_ignored() -> None:
    assert run(cpu_claim_resources, stack_args([template("6", name="other"), workload("1", "1")])) == []
