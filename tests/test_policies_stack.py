"""device-stack-filtered and cpu-claim-resources: stack policies that join resources through the graph."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from components.base import policy_inputs
from components.serving_stack import planned_release
from infra.facts import ClusterFacts, derive_cluster
from infra.serving.catalog import cluster_charts
from infra.serving.chart import Chart
from policies.props import plain, undecided
from policies.stack_rules import claimed_cpus, cpu_claim_resources, device_stack_filtered, unknown_error
from tests.conftest import cpu_class, fleet_of
from tests.policy_harness import (
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_OBJECT_VALUE,
    located,
    run,
    stack_args,
    stack_resource,
    verdict,
)

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
            "existing": {"kubernetesVersion": "1.36"},
            "nodePools": [{"name": "amd", "className": "mi325x"}, {"name": "cpu", "className": "cpu"}],
        }
    ],
}


def byo_facts() -> tuple[ClusterFacts, dict[str, Any]]:
    fleet = fleet_of(BYO)
    specs = {c.name: c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in fleet.classes}
    return derive_cluster(fleet, fleet.cluster_named("byo")), specs


def release_props(c: Chart) -> dict[str, Any]:
    return {"name": c.release, "chart": c.chart, "version": c.version, "namespace": c.namespace, "values": {}}


def stack_of(
    components: list[Chart],
    dra_drivers: list[str] | None = None,
    owner_gpu_operator: bool = False,
    preinstalled: tuple[str, ...] = (),
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
            "preinstalled": list(preinstalled),
            "releases": [planned_release(c, False) for c in components],
        },
        name="byo-stack",
        parent=cluster,
    )
    releases = [stack_resource(RELEASE, release_props(c), name=f"byo-stack-{c.key}", parent=stack) for c in components]
    return [cluster, stack, *releases]


def test_stack_with_exactly_the_joined_components_passes() -> None:
    facts, _ = byo_facts()
    assert run(device_stack_filtered, stack_args(stack_of(cluster_charts(facts)))) == []


def test_stack_without_the_operator_its_owner_runs_passes() -> None:
    facts, _ = byo_facts()
    # The owner's AMD operator brings its own NFD on this AMD-only cluster (`owner_operator_keys`).
    without = [c for c in cluster_charts(facts) if c.key not in ("amd-gpu-operator", "node-feature-discovery")]
    assert run(device_stack_filtered, stack_args(stack_of(without, owner_gpu_operator=True))) == []


def test_second_nfd_next_to_the_owners_amd_operator_is_rejected() -> None:
    facts, _ = byo_facts()
    with_nfd = [c for c in cluster_charts(facts) if c.key != "amd-gpu-operator"]
    assert run(device_stack_filtered, stack_args(stack_of(with_nfd, owner_gpu_operator=True))) == [
        "cluster 'byo': release mp-node-feature-discovery installs a second copy of node-feature-discovery, which "
        "the GPU operator the cluster's owner runs brings (ownerGpuOperator)"
    ]


def test_a_preinstalled_component_left_out_passes_and_a_second_copy_is_rejected() -> None:
    facts, _ = byo_facts()
    # node-feature-discovery is tagged: without the cluster's own copy, leaving it out is a missing release.
    without = [c for c in cluster_charts(facts) if c.key not in ("cert-manager", "node-feature-discovery")]
    assert (
        run(
            device_stack_filtered,
            stack_args(stack_of(without, preinstalled=("cert-manager", "node-feature-discovery"))),
        )
        == []
    )
    assert (
        "release mp-node-feature-discovery is not installed"
        in run(device_stack_filtered, stack_args(stack_of(without)))[0]
    )
    found = run(device_stack_filtered, stack_args(stack_of(cluster_charts(facts), preinstalled=("cert-manager",))))
    assert found == [
        "cluster 'byo': release mp-cert-manager installs a second copy of cert-manager, which the cluster already "
        "runs (existing.preinstalled)"
    ]


def test_second_gpu_operator_next_to_the_owners_is_rejected() -> None:
    facts, _ = byo_facts()
    charts = [c for c in cluster_charts(facts) if c.key != "node-feature-discovery"]
    found = run(device_stack_filtered, stack_args(stack_of(charts, owner_gpu_operator=True)))
    assert found == [
        "cluster 'byo': release mp-gpu-operator-charts installs a second GPU operator next to the one the "
        "cluster's owner runs (ownerGpuOperator)"
    ]


def test_release_for_an_unclaimed_driver_is_rejected() -> None:
    from infra.serving.catalog import CATALOG

    facts, _ = byo_facts()
    nvidia_only = [c for c in CATALOG["Existing"] if c.key == "dra-driver-nvidia-gpu"]
    found = run(device_stack_filtered, stack_args(stack_of([*cluster_charts(facts), *nvidia_only])))
    assert found == [
        "cluster 'byo': release mp-dra-driver-nvidia-gpu is for gpu.nvidia.com, which no pool claims "
        "(claimed: dra.cpu, gpu.amd.com)"
    ]


def test_claimed_driver_without_its_components_is_rejected() -> None:
    facts, _ = byo_facts()
    without_cpu_driver = [c for c in cluster_charts(facts) if c.key != "dra-driver-cpu"]
    found = run(device_stack_filtered, stack_args(stack_of(without_cpu_driver)))
    assert found == ["cluster 'byo': pools claim dra.cpu but release mp-dra-driver-cpu is not installed"]


def test_stack_drivers_that_differ_from_the_pools_claims_are_rejected() -> None:
    facts, _ = byo_facts()
    cpu_only = [c for c in cluster_charts(facts) if "gpu.amd.com" not in c.dra_drivers]
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


def two_containers(
    engine_cpu: str, sidecar_claims: list[dict[str, str]], sidecar_first: bool = False
) -> PolicyResource:
    engine = {
        "name": "vllm",
        "image": "vllm/vllm-openai-cpu:v0.11.0",
        "resources": {"requests": {"cpu": engine_cpu}, "limits": {"cpu": "6"}, "claims": [{"name": "cpu"}]},
    }
    sidecar = {
        "name": "metrics",
        "image": "prom/statsd-exporter:v0.28.0",
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "100m"}, "claims": sidecar_claims},
    }
    containers = [sidecar, engine] if sidecar_first else [engine, sidecar]
    pod = {"containers": containers, "resourceClaims": [{"name": "cpu", "resourceClaimTemplateName": "qwen-cpu"}]}
    return stack_resource(
        "kubernetes:apps/v1:Deployment",
        {"metadata": {"name": "qwen", "namespace": "models"}, "spec": {"template": {"spec": pod}}},
        name="qwen",
    )


def test_container_that_does_not_use_the_cpu_claim_keeps_its_own_cpu() -> None:
    pod = two_containers("6", sidecar_claims=[])
    assert run(cpu_claim_resources, stack_args([template("6"), pod])) == []


def test_every_container_that_uses_the_cpu_claim_must_match_it() -> None:
    pod = two_containers("6", sidecar_claims=[{"name": "cpu"}])
    assert run(cpu_claim_resources, stack_args([template("6"), pod])) == [
        "workload models/qwen, container metrics: requests.cpu is '100m' but claim 'cpu' takes 6 CPUs from dra.cpu; "
        "request and limit exactly 6",
        "workload models/qwen, container metrics: limits.cpu is '100m' but claim 'cpu' takes 6 CPUs from dra.cpu; "
        "request and limit exactly 6",
    ]


def test_claim_user_is_found_whichever_container_comes_first() -> None:
    pod = two_containers("4", sidecar_claims=[], sidecar_first=True)
    assert run(cpu_claim_resources, stack_args([template("6"), pod])) == [
        "workload models/qwen, container vllm: requests.cpu is '4' but claim 'cpu' takes 6 CPUs from dra.cpu; "
        "request and limit exactly 6"
    ]


def test_workload_without_a_cpu_limit_names_the_missing_limit() -> None:
    found = run(cpu_claim_resources, stack_args([template("6"), workload("6", None)]))
    assert found == [
        "workload models/qwen, container vllm: limits.cpu is nothing but claim 'cpu' takes 6 CPUs from dra.cpu; "
        "request and limit exactly 6"
    ]


@pytest.mark.parametrize(("claimed", "given"), [("6", "5999m"), ("6", "7"), ("500m", "1"), ("1.5", "1")])
def test_cpu_quantities_one_step_off_the_claim_are_rejected(claimed: str, given: str) -> None:
    assert len(run(cpu_claim_resources, stack_args([template(claimed), workload(given, claimed)]))) == 1


@pytest.mark.parametrize(("claimed", "given"), [("6", "6000m"), ("500m", "0.5"), ("1.5", "1500m"), ("2", 2.0)])
def test_cpu_quantities_equal_to_the_claim_in_another_spelling_pass(claimed: str, given: Any) -> None:
    assert run(cpu_claim_resources, stack_args([template(claimed), workload(given, given)])) == []


def gpu_template(name: str = "qwen-cpu") -> PolicyResource:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.amd.com", "count": 1.0}}
    return stack_resource(
        "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate",
        {"metadata": {"name": name, "namespace": "models"}, "spec": {"spec": {"devices": {"requests": [request]}}}},
        name=f"{name}-claim",
    )


def test_only_claims_on_dra_cpu_capacity_bind_a_workloads_cpu() -> None:
    # A GPU claim template takes no CPUs: its workload keeps whatever CPU it asks for, or none.
    assert run(cpu_claim_resources, stack_args([gpu_template(), workload(None, None)])) == []
    assert run(cpu_claim_resources, stack_args([gpu_template(), workload("2", "4")])) == []


def test_stack_violations_are_reported_on_the_serving_stack() -> None:
    facts, _ = byo_facts()
    resources = stack_of([c for c in cluster_charts(facts) if c.key != "dra-driver-cpu"])
    assert located(device_stack_filtered, stack_args(resources)) == [
        ("cluster 'byo': pools claim dra.cpu but release mp-dra-driver-cpu is not installed", resources[1].urn)
    ]


def test_unknown_stack_plan_in_a_preview_names_the_stack() -> None:
    facts, specs = byo_facts()
    cluster = stack_resource("modelplane:existing:ExistingCluster", policy_inputs(facts, specs), name="byo")
    stack = stack_resource(
        "modelplane:stack:ServingStack",
        {"cluster": "byo", "source": "Existing", "draDrivers": ["dra.cpu"], "releases": UNKNOWN_ARRAY_VALUE},
        name="byo-stack",
        parent=cluster,
    )
    found = verdict(device_stack_filtered, stack_args([cluster, stack]))
    assert isinstance(found, str) and found.startswith(
        "undecided: the releases of byo-stack is not known in this preview"
    )


def cpu_request(cpus: Any, count: float | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": cpus}}}
    if count is not None:
        exactly["count"] = count
    return {"name": "cpu", "exactly": exactly}


GPU_REQUEST = {"name": "gpu", "exactly": {"deviceClassName": "gpu.amd.com", "count": 1.0}}


@pytest.mark.parametrize(
    ("requests", "cpus"),
    [
        ([cpu_request("3", count=2)], Decimal(6)),
        ([GPU_REQUEST, cpu_request("6")], Decimal(6)),
        ([cpu_request("2"), cpu_request("500m", count=3)], Decimal("3.5")),
        ([cpu_request("0")], Decimal(0)),
        ([GPU_REQUEST], None),
        ([], None),
    ],
)
def test_cpus_claimed_are_each_dra_cpu_request_times_its_count(requests: list[Any], cpus: Decimal | None) -> None:
    props = {"metadata": {"name": "t"}, "spec": {"spec": {"devices": {"requests": requests}}}}
    assert claimed_cpus(stack_resource("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate", props, name="t")) == cpus


def test_workload_without_a_namespace_is_named_in_the_default_namespace() -> None:
    claim = template("10", namespace="")
    pod = workload("8", "10")
    pod_props = {"metadata": {"name": "qwen"}, "spec": dict(pod.props["spec"])}
    unnamespaced = stack_resource("kubernetes:apps/v1:Deployment", plain(pod_props), name="qwen")
    assert located(cpu_claim_resources, stack_args([claim, unnamespaced])) == [
        (
            "workload default/qwen, container vllm: requests.cpu is '8' but claim 'cpu' takes 10 CPUs from dra.cpu; "
            "request and limit exactly 10",
            unnamespaced.urn,
        )
    ]


def test_every_workload_that_misreads_its_claim_is_reported() -> None:
    first = workload("4", "6")
    second = stack_resource(
        "kubernetes:apps/v1:Deployment",
        {**plain(first.props), "metadata": {"name": "qwen-b", "namespace": "models"}},
        name="qwen-b",
    )
    assert [m.split(":")[0] for m in run(cpu_claim_resources, stack_args([template("6"), first, second]))] == [
        "workload models/qwen, container vllm",
        "workload models/qwen-b, container vllm",
    ]


@pytest.mark.parametrize(
    ("resource", "what"),
    [
        (
            stack_resource(
                "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate",
                {"metadata": {"name": "qwen-cpu", "namespace": "models"}, "spec": {"spec": UNKNOWN_OBJECT_VALUE}},
                name="qwen-cpu-claim",
            ),
            "the CPUs claimed by qwen-cpu-claim",
        ),
        (
            stack_resource(
                "kubernetes:apps/v1:Deployment",
                {"metadata": {"name": "qwen", "namespace": "models"}, "spec": {"template": UNKNOWN_OBJECT_VALUE}},
                name="qwen",
            ),
            "the containers and claims of qwen",
        ),
    ],
)
def test_unknown_claim_or_workload_in_a_preview_names_it(resource: PolicyResource, what: str) -> None:
    found = verdict(cpu_claim_resources, stack_args([template("6"), resource]))
    assert isinstance(found, str) and found.startswith(f"undecided: {what} is not known in this preview"), found


def test_own_unknown_error_keeps_its_message_inside_an_undecided_read() -> None:
    with pytest.raises(UnknownValueError) as err, undecided("the releases of byo-stack"):
        raise unknown_error("what qwen claims is not known in this preview")
    assert err.value.message == "what qwen claims is not known in this preview"


def lone_stack(props: dict[str, Any], keys: list[str]) -> list[PolicyResource]:
    """A ServingStack with no cluster component above it, and a Release for each key."""
    stack = stack_resource("modelplane:stack:ServingStack", {"cluster": "byo", **props}, name="byo-stack")
    return [stack, *(stack_resource(RELEASE, {}, name=f"byo-stack-{k}", parent=stack) for k in keys)]


def existing(*keys: str) -> list[Chart]:
    from infra.serving.catalog import CATALOG

    return [c for c in CATALOG["Existing"] if c.key in keys]


@pytest.mark.parametrize(
    ("props", "keys", "found"),
    [
        (
            {"source": "Existing"},
            [],
            [
                "stack byo-stack registers no output 'draDrivers', 'releases', which this policy reads "
                "(components.serving_stack); it cannot check the stack's releases"
            ],
        ),
        (
            {
                "source": "Existing",
                "draDrivers": [],
                "releases": [{"key": "x"}, {"chart": "y"}, {"key": "leader-worker-set"}],
            },
            [],
            [
                "cluster 'byo': release 'x' is not in the Existing catalog",
                "cluster 'byo': release '' is not in the Existing catalog",
                "cluster 'byo': release mp-lws is planned but no Release registers it",
            ],
        ),
        (
            {
                "source": "Existing",
                "draDrivers": [],
                "releases": [planned_release(c, False) for c in existing("node-feature-discovery")],
            },
            ["node-feature-discovery"],
            [
                "cluster 'byo': release mp-node-feature-discovery is for gpu.nvidia.com, gpu.amd.com, which no pool "
                "claims (claimed: none)"
            ],
        ),
    ],
)
def test_stack_filter_messages_name_the_stack_and_the_release(
    props: dict[str, Any], keys: list[str], found: list[str]
) -> None:
    assert run(device_stack_filtered, stack_args(lone_stack(props, keys))) == found


def test_claimed_gpu_drivers_without_their_shared_component_are_named_together() -> None:
    from infra.serving.catalog import CATALOG, join_charts

    joined = join_charts(CATALOG["Existing"], ["gpu.amd.com", "gpu.nvidia.com"], False)
    planned = [c for c in joined if c.key != "node-feature-discovery"]
    props = {
        "source": "Existing",
        "draDrivers": ["gpu.amd.com", "gpu.nvidia.com"],
        "releases": [planned_release(c, False) for c in planned],
    }
    assert run(device_stack_filtered, stack_args(lone_stack(props, [c.key for c in planned]))) == [
        "cluster 'byo': pools claim gpu.nvidia.com, gpu.amd.com but release mp-node-feature-discovery is not installed"
    ]


def test_stack_under_a_resource_that_is_no_cluster_component_is_not_joined_to_pools() -> None:
    parent = stack_resource("pulumi:pulumi:Stack", {}, name="modelplane-dev")
    stack = stack_resource(
        "modelplane:stack:ServingStack",
        {"cluster": "byo", "source": "Existing", "draDrivers": [], "releases": []},
        name="byo-stack",
        parent=parent,
    )
    assert run(device_stack_filtered, stack_args([parent, stack])) == []


def test_cluster_component_without_pools_and_stack_drivers_unlike_its_pools_are_named() -> None:
    facts, specs = byo_facts()
    no_pools = {k: v for k, v in policy_inputs(facts, specs).items() if k != "pools"}
    cluster = stack_resource("modelplane:existing:ExistingCluster", no_pools, name="byo")
    stack = stack_resource(
        "modelplane:stack:ServingStack",
        {"cluster": "byo", "source": "Existing", "draDrivers": [], "releases": []},
        name="byo-stack",
        parent=cluster,
    )
    assert run(device_stack_filtered, stack_args([cluster, stack])) == [
        "cluster component byo registers no output 'pools', which this policy reads"
    ]
    three = stack_of(list(cluster_charts(facts)), dra_drivers=["dra.cpu", "gpu.amd.com", "gpu.nvidia.com"])
    assert (
        "cluster 'byo': the stack installs for drivers [dra.cpu, gpu.amd.com, gpu.nvidia.com] but the cluster's "
        "pools claim [dra.cpu, gpu.amd.com]"
    ) in run(device_stack_filtered, stack_args(three))


def test_cpu_claim_after_a_claim_on_another_driver_is_still_checked() -> None:
    pod = workload("4", "6")
    props = plain(pod.props)
    props["spec"]["template"]["spec"]["resourceClaims"].insert(0, {"name": "gpu", "resourceClaimTemplateName": "gpu"})
    deployment = stack_resource("kubernetes:apps/v1:Deployment", props, name="qwen")
    assert run(cpu_claim_resources, stack_args([gpu_template("gpu"), template("6"), deployment])) == [
        "workload models/qwen, container vllm: requests.cpu is '4' but claim 'cpu' takes 6 CPUs from dra.cpu; "
        "request and limit exactly 6"
    ]
