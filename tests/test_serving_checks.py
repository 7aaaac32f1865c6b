"""The serving checks called directly on a fleet: the engine's port, memory and cache
(`check_serving`), `services[]` references and routes, pinned images, the CPUs a `dra.cpu`
device hands a claim, and the Kubernetes version a capacity claim needs.

The fleets are validated by the model alone (`Fleet.model_validate`), without the reference
checks `parse_fleet` runs first, so that each check is seen on its own, including on the
unknown references it leaves to `check_references`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra.checks.clusters import check_capacity_claims
from infra.checks.rules import check_images
from infra.checks.services import check_serving
from infra.config.issues import located
from infra.config.model import Device, Fleet, InferenceCluster
from infra.config.roles import claimed_cpus
from infra.serving.vllm_args import port_args
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, GPU_BLOCKS, cpu_class, gpu_class

FILE = "Pulumi.test.yaml"
IMAGE = "vllm/vllm-openai:v0.23.0"


def deployment(name: str = "qwen", cluster: str = "c", pool: str = "gpu", **fields: Any) -> dict[str, Any]:
    dep: dict[str, Any] = {
        "name": name,
        "cluster": cluster,
        "pool": pool,
        "image": IMAGE,
        "memory": "24Gi",
        "devices": [{"name": "gpu" if pool == "gpu" else "cpu"}],
    }
    dep.update(fields)
    return {k: v for k, v in dep.items() if v is not None}


def raw_fleet(source: str = "GKE", *deployments: dict[str, Any], services: Any = ()) -> dict[str, Any]:
    """A `source` cluster `c` with a GPU pool `gpu` and a CPU pool `cpu`, and the given entries."""
    block = {} if source == "Existing" else CLUSTER_BLOCKS[source]
    if source == "Existing":
        classes = [
            {
                "name": "gpu",
                "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}],
            },
            cpu_class("cpu", None),
        ]
    else:
        classes = [gpu_class("gpu", source, GPU_BLOCKS[source]), cpu_class("cpu", source, CPU_BLOCKS[source])]
    return {
        "classes": classes,
        "clusters": [
            {
                "name": "c",
                "source": source,
                source.lower(): block,
                "nodePools": [{"name": "gpu", "className": "gpu"}, {"name": "cpu", "className": "cpu"}],
            }
        ],
        "deployments": list(deployments) or [deployment()],
        "services": list(services),
    }


def serving(raw: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The issues check_serving finds, each of which names the stack file."""
    found = located(check_serving(Fleet.model_validate(copy.deepcopy(raw))), FILE)
    assert [i.file for i in found] == [FILE] * len(found)
    return [(i.path, i.problem, i.fix) for i in found]


def paths(raw: dict[str, Any]) -> list[str]:
    return [path for path, _, _ in serving(raw)]


# --------------------------------------------------------------------------------------------
# port_args


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], []),
        (["--model", "m"], []),
        (["--port", "9000"], [(0, "9000")]),
        (["--model", "m", "--port", "9000"], [(2, "9000")]),
        (["--port=9000", "--model", "m"], [(0, "9000")]),
        (["--model", "m", "--port"], [(2, None)]),
        (["--port="], [(0, None)]),
        # Only the first '=' separates the flag from its value.
        (["--port=a=b"], [(0, "a=b")]),
        (["--port", "8000", "--port=9000"], [(0, "8000"), (2, "9000")]),
        # Other flags that start alike are not the port.
        (["--portal", "x", "--port-range", "1", "port", "9000", "-port=9000"], []),
    ],
    ids=[
        "none",
        "other-flags",
        "first",
        "separate",
        "equals",
        "last-without-value",
        "equals-empty",
        "equals-in-value",
        "twice",
        "look-alikes",
    ],
)
def test_port_args_finds_each_port_flag_with_its_value(args: list[str], expected: list[tuple[int, str | None]]) -> None:
    assert port_args(args) == expected


# --------------------------------------------------------------------------------------------
# check_serving: one port

PORT_FIX_TAIL = " (the container, probes, Service and route all follow port)"


@pytest.mark.parametrize(
    ("args", "port", "expected"),
    [
        (
            ["--port", "9000"],
            8000,
            (
                "deployments[0].args[0]",
                "args set '--port 9000' but the deployment's port is 8000",
                "remove it from args and set deployments[0].port: 9000" + PORT_FIX_TAIL,
            ),
        ),
        (
            ["--model", "m", "--port=8000"],
            9000,
            (
                "deployments[0].args[2]",
                "args set '--port 8000' but the deployment's port is 9000",
                "remove it from args and set deployments[0].port: 8000" + PORT_FIX_TAIL,
            ),
        ),
        (
            ["--model", "m", "--port"],
            8000,
            (
                "deployments[0].args[2]",
                "args set '--port' without a value but the deployment's port is 8000",
                "remove it from args and set deployments[0].port" + PORT_FIX_TAIL,
            ),
        ),
        (
            ["--port=http"],
            8000,
            (
                "deployments[0].args[0]",
                "args set '--port http' but the deployment's port is 8000",
                "remove it from args and set deployments[0].port" + PORT_FIX_TAIL,
            ),
        ),
    ],
    ids=["separate", "equals", "without-value", "not-a-number"],
)
def test_args_setting_another_port_are_rejected_with_the_value_and_the_port_to_set(
    args: list[str], port: int, expected: tuple[str, str, str]
) -> None:
    assert serving(raw_fleet("GKE", deployment(args=args, port=port))) == [expected]


def test_args_repeating_the_port_are_accepted_and_every_other_port_flag_is_still_checked() -> None:
    dep = deployment(args=["--port", "8000", "--port=8000", "--port", "9000"])
    assert paths(raw_fleet("GKE", dep)) == ["deployments[0].args[3]"]
    assert serving(raw_fleet("GKE", deployment(args=["--port=9000"], port=9000))) == []


def test_each_deployment_is_checked_at_its_own_index() -> None:
    raw = raw_fleet("GKE", deployment(), deployment("b", args=["--port", "1"]))
    assert paths(raw) == ["deployments[1].args[0]"]


# --------------------------------------------------------------------------------------------
# check_serving: memory


def test_gpu_deployment_without_memory_is_rejected_with_the_shm_it_must_cover() -> None:
    raw = raw_fleet("Civo", deployment(memory=None, shmSize="4Gi"))
    assert serving(raw) == [
        (
            "deployments[0].memory",
            "deployment 'qwen' runs on GPU pool 'gpu' without a memory request",
            "set memory to what the engine holds in host RAM (weights are staged through it, plus shmSize 4Gi), "
            "e.g. memory: 32Gi",
        )
    ]


def test_cpu_deployment_may_leave_memory_unset() -> None:
    assert serving(raw_fleet("Civo", deployment(pool="cpu", memory=None))) == []


@pytest.mark.parametrize(
    ("memory", "shm", "rejected"),
    [
        ("2Gi", "2Gi", True),
        ("2047Mi", "2Gi", True),
        ("2049Mi", "2Gi", False),
        # A bare number of 1 GiB or more is a byte count (under 1 GiB it is refused as missing its unit).
        ("2147483648", "2Gi", True),
        ("2147483649", "2Gi", False),
    ],
)
def test_memory_must_exceed_shm_size(memory: str, shm: str, rejected: bool) -> None:
    expected = [
        (
            "deployments[0].memory",
            f"memory {memory} does not exceed shmSize {shm}, which counts against it",
            "raise memory above shmSize plus what the engine needs",
        )
    ]
    for pool in ("gpu", "cpu"):
        assert serving(raw_fleet("GKE", deployment(pool=pool, memory=memory, shmSize=shm))) == (
            expected if rejected else []
        )


# --------------------------------------------------------------------------------------------
# check_serving: the model cache

RWO = (
    "deployments[0].cache.volume",
    "a PersistentVolumeClaim cache is ReadWriteOnce: one node mounts it, not 2 replicas",
    "use volume: NodeLocal and remove size for several replicas, or replicas: 1",
)


@pytest.mark.parametrize(
    ("cache", "replicas", "expected"),
    [
        ({"size": "50Gi"}, 2, [RWO]),
        ({"size": "50Gi", "volume": "PersistentVolumeClaim"}, 2, [RWO]),
        ({"size": "50Gi"}, 1, []),
        ({"size": "50Gi"}, 0, []),
        ({"volume": "NodeLocal"}, 2, []),
        (None, 2, []),
    ],
    ids=[
        "claim-two-replicas",
        "claim-named-two-replicas",
        "claim-one-replica",
        "claim-no-replica",
        "node-local",
        "no-cache",
    ],
)
def test_claim_cache_serves_one_replica(cache: dict[str, Any] | None, replicas: int, expected: list[Any]) -> None:
    assert serving(raw_fleet("GKE", deployment(cache=cache, replicas=replicas))) == expected


def test_claim_cache_with_three_replicas_names_them() -> None:
    [(_, problem, _)] = serving(raw_fleet("GKE", deployment(cache={"size": "1Gi"}, replicas=3)))
    assert problem == "a PersistentVolumeClaim cache is ReadWriteOnce: one node mounts it, not 3 replicas"


@pytest.mark.parametrize(
    ("source", "cache", "rejected"),
    [
        ("EKS", {"size": "50Gi"}, True),
        ("EKS", {"size": "50Gi", "storageClassName": "gp3"}, False),
        ("EKS", {"volume": "NodeLocal"}, False),
        ("GKE", {"size": "50Gi"}, False),
        ("AKS", {"size": "50Gi"}, False),
        ("Civo", {"size": "50Gi"}, False),
        ("Vultr", {"size": "50Gi"}, False),
        # The cluster's default StorageClass serves the claim.
        ("Existing", {"size": "50Gi"}, False),
    ],
)
def test_claim_cache_needs_a_storage_class_only_where_the_cloud_has_none(
    source: str, cache: dict[str, Any], rejected: bool
) -> None:
    expected = [
        (
            "deployments[0].cache.storageClassName",
            "EKS cluster 'c' has no StorageClass this program provides",
            "set storageClassName to a class the cluster has (install its CSI driver first), or use volume: "
            "NodeLocal and remove size",
        )
    ]
    assert serving(raw_fleet(source, deployment(cache=cache))) == (expected if rejected else [])
    if rejected:
        # The fix as written: NodeLocal, and no claim key left for the next plan to stop on.
        assert serving(raw_fleet(source, deployment(cache={"volume": "NodeLocal"}))) == []


@pytest.mark.parametrize(
    ("model", "size", "least", "suggest"),
    [
        # No width in the id: the floor is 4 bits a weight, the fix the 16-bit size with a fifth to spare.
        ("meta-llama/Llama-3.1-8B-Instruct", "2Gi", "3.7 GiB", "20Gi"),
        ("Qwen/Qwen2.5-0.5B-Instruct", "200Mi", "0.2 GiB", "10Gi"),
        # An 8-bit id: 8 bits a weight.
        ("Qwen/Qwen3-30B-A3B-FP8", "20Gi", "27.9 GiB", "40Gi"),
        # A 4-bit id: 4 bits a weight, also in the fix.
        ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "30Gi", "32.6 GiB", "40Gi"),
    ],
)
def test_a_claim_cache_smaller_than_the_models_weights_is_refused_and_its_fix_passes(
    model: str, size: str, least: str, suggest: str
) -> None:
    raw = raw_fleet("GKE", deployment(pool="cpu", args=["--model", model], cache={"size": size}))
    [(path, problem, fix)] = serving(raw)
    assert path == "deployments[0].cache.size"
    assert problem.startswith(
        f"cache size {size} is less than the {least} the weights of model '{model}' take even at "
    )
    assert fix == f"set size above the model's checkpoint with room to spare, e.g. size: {suggest}"
    raw["deployments"][0]["cache"]["size"] = suggest
    assert serving(raw) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--model", "meta-llama/Llama-3.1-8B-Instruct"],  # 3.7 GiB at 4 bits: 4Gi holds it
        ["--model", "my-org/finetuned-model"],  # no parameter count
        ["--model", "mistralai/Mixtral-8x7B-Instruct-v0.1"],  # experts x size: the total is not read
        ["--model", "TheBloke/Llama-2-70B-GGUF"],  # GGUF goes below 4 bits a weight
        [],  # no model named
    ],
)
def test_a_cache_that_may_hold_the_weights_or_whose_model_is_unknown_passes(args: list[str]) -> None:
    assert serving(raw_fleet("GKE", deployment(pool="cpu", args=args, cache={"size": "4Gi"}))) == []


# --------------------------------------------------------------------------------------------
# check_serving: unknown references are left to check_references, and the next deployment is checked


@pytest.mark.parametrize(
    "unknown",
    [{"cluster": "nope"}, {"pool": "nope"}],
    ids=["cluster", "pool"],
)
def test_deployment_with_an_unknown_reference_skips_the_pool_rules_and_the_next_is_checked(
    unknown: dict[str, str],
) -> None:
    first = {**deployment(memory=None, cache={"size": "1Gi"}, replicas=2), **unknown}
    raw = raw_fleet("EKS", first, deployment("b", memory=None))
    assert paths(raw) == ["deployments[1].memory"]


def test_pool_of_an_unknown_class_skips_the_pool_rules_and_the_next_deployment_is_checked() -> None:
    raw = raw_fleet("GKE", deployment(memory=None), deployment("b", pool="cpu", memory="1Gi"))
    raw["clusters"][0]["nodePools"][0]["className"] = "nope"
    assert paths(raw) == ["deployments[1].memory"]


# --------------------------------------------------------------------------------------------
# _check_services (through check_serving)


def services_fleet(*services: dict[str, Any], deployments: Any = None) -> dict[str, Any]:
    """Clusters `c` and `d` (GKE), deployment `qwen` on `c` and the given deployments and services."""
    raw = raw_fleet("GKE", *(deployments or [deployment()]), services=services)
    raw["clusters"].append({**copy.deepcopy(raw["clusters"][0]), "name": "d"})
    return raw


def test_service_names_are_unique() -> None:
    raw = services_fleet(
        {"name": "a", "deployment": "qwen", "path": "/1"},
        {"name": "b", "deployment": "qwen", "path": "/2"},
        {"name": "a", "deployment": "qwen", "path": "/3"},
    )
    assert serving(raw) == [
        ("services[2].name", "service name 'a' is declared twice", "give each service a unique name")
    ]


@pytest.mark.parametrize(
    ("service", "deployments", "expected"),
    [
        (
            {"name": "s", "deployment": "llama"},
            [deployment("qwen"), deployment("phi"), deployment("qwen", cluster="d")],
            ("services[0].deployment", "no deployment 'llama'", "use one of: phi, qwen"),
        ),
        (
            {"name": "s", "deployment": "qwen", "cluster": "d"},
            [deployment("qwen")],
            ("services[0].deployment", "no deployment 'qwen' on cluster 'd'", "use one of: qwen"),
        ),
    ],
    ids=["unknown-name", "not-on-that-cluster"],
)
def test_service_of_an_unknown_deployment_names_the_deployments_there_are(
    service: dict[str, Any], deployments: list[dict[str, Any]], expected: tuple[str, str, str]
) -> None:
    assert serving(services_fleet(service, deployments=deployments)) == [expected]


def test_service_without_any_deployment_says_none_are_declared() -> None:
    raw = services_fleet({"name": "s", "deployment": "qwen"})
    raw["deployments"] = []
    assert serving(raw) == [("services[0].deployment", "no deployment 'qwen'", "use one of: (none declared)")]


def test_service_of_a_deployment_on_two_clusters_must_name_its_cluster() -> None:
    deps = [deployment("qwen"), deployment("qwen", cluster="d")]
    assert serving(services_fleet({"name": "s", "deployment": "qwen"}, deployments=deps)) == [
        (
            "services[0].cluster",
            "deployment 'qwen' runs on clusters c, d",
            "set cluster to the one whose gateway publishes this service",
        )
    ]
    assert serving(services_fleet({"name": "s", "deployment": "qwen", "cluster": "d"}, deployments=deps)) == []


def test_tls_needs_a_host() -> None:
    tls = {"issuerRef": {"name": "le"}}
    assert serving(services_fleet({"name": "s", "deployment": "qwen", "tls": tls})) == [
        (
            "services[0].tls",
            "TLS needs a host to issue the certificate for",
            "set services[0].host to the DNS name clients use, or remove tls",
        )
    ]
    assert serving(services_fleet({"name": "s", "deployment": "qwen", "tls": tls, "host": "s.example.com"})) == []


@pytest.mark.parametrize(
    ("first", "second", "problem"),
    [
        (
            {"path": "/chat"},
            {"path": "/chat"},
            "services[0] already routes (any host)/chat on cluster 'c'",
        ),
        # Without a path, a service is routed at /<name>, or at / when it has a host.
        ({"path": "/b"}, {}, "services[0] already routes (any host)/b on cluster 'c'"),
        (
            {"host": "q.example.com"},
            {"host": "q.example.com", "path": "/"},
            "services[0] already routes q.example.com/ on cluster 'c'",
        ),
    ],
    ids=["same-path", "default-path", "same-host"],
)
def test_two_services_on_one_route_of_a_cluster_are_rejected(
    first: dict[str, Any], second: dict[str, Any], problem: str
) -> None:
    raw = services_fleet({"name": "a", "deployment": "qwen", **first}, {"name": "b", "deployment": "qwen", **second})
    assert serving(raw) == [("services[1].path", problem, "give each service on a cluster its own host or path")]


def test_a_route_taken_twice_names_the_service_that_took_it_first() -> None:
    raw = services_fleet(
        *({"name": name, "deployment": "qwen", "path": "/chat"} for name in ("a", "b", "e")),
    )
    assert [(p, problem) for p, problem, _ in serving(raw)] == [
        ("services[1].path", "services[0] already routes (any host)/chat on cluster 'c'"),
        ("services[2].path", "services[0] already routes (any host)/chat on cluster 'c'"),
    ]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"path": "/a"}, {"path": "/b"}),
        ({"host": "a.example.com"}, {"host": "b.example.com"}),
        ({"host": "a.example.com", "path": "/x"}, {"path": "/x"}),
        ({"path": "/x"}, {"path": "/x", "deployment": "phi", "cluster": "d"}),
    ],
    ids=["paths", "hosts", "host-and-none", "clusters"],
)
def test_services_on_distinct_routes_are_accepted(first: dict[str, Any], second: dict[str, Any]) -> None:
    deps = [deployment("qwen"), deployment("phi", cluster="d")]
    raw = services_fleet(
        {"name": "a", "deployment": "qwen", **first}, {"name": "b", "deployment": "qwen", **second}, deployments=deps
    )
    assert serving(raw) == []


def test_every_service_is_checked_after_one_that_is_rejected() -> None:
    deps = [deployment("qwen"), deployment("qwen", cluster="d")]
    raw = services_fleet(
        {"name": "a", "deployment": "llama"},
        # Its TLS is not checked against a deployment it could not pick.
        {"name": "b", "deployment": "qwen", "tls": {"issuerRef": {"name": "le"}}},
        {"name": "e", "deployment": "qwen", "cluster": "c", "tls": {"issuerRef": {"name": "le"}}},
        deployments=deps,
    )
    assert paths(raw) == ["services[0].deployment", "services[1].cluster", "services[2].tls"]


# --------------------------------------------------------------------------------------------
# check_images

IMAGE_FIX = "pin an exact version tag or a digest, e.g. vllm/vllm-openai:v0.23.0"


@pytest.mark.parametrize(
    ("image", "problem"),
    [
        ("vllm/vllm-openai", "image 'vllm/vllm-openai' is not pinned: it is untagged"),
        ("vllm/vllm-openai:latest", "image 'vllm/vllm-openai:latest' is not pinned: it floats on tag 'latest'"),
        (
            "vllm/vllm openai:v1",
            "image 'vllm/vllm openai:v1' is not a valid image reference (name[:tag][@sha256:<64 hex digits>])",
        ),
    ],
    ids=["untagged", "floating", "invalid"],
)
def test_unpinned_image_is_rejected_at_its_deployment_with_why(image: str, problem: str) -> None:
    fleet = Fleet.model_validate(raw_fleet("GKE", deployment(), deployment("b", image=image)))
    assert [(i.file, i.path, i.problem, i.fix) for i in located(check_images(fleet), FILE)] == [
        (FILE, "deployments[1].image", problem, IMAGE_FIX)
    ]


# --------------------------------------------------------------------------------------------
# claimed_cpus


@pytest.mark.parametrize(
    ("capacity", "cpus"),
    [
        ({"dra.cpu/cpu": {"value": "6"}}, 6),
        ({"dra.cpu/cpu": {"value": "1"}}, 1),
        ({"dra.cpu/cpu": {"value": "6000m"}}, 6),
        ({"dra.cpu/cpu": {"value": "2.0"}}, 2),
        ({"dra.cpu/cpu": {"value": "500m"}}, None),
        ({"dra.cpu/cpu": {"value": "1500m"}}, None),
        ({"dra.cpu/cpu": {"value": "0"}}, None),
        ({"dra.cpu/cpu": {"value": "-2"}}, None),
        ({}, None),
        ({"memory": {"value": "6"}}, None),
    ],
    ids=["six", "one", "millis", "decimal-whole", "half", "one-and-a-half", "zero", "negative", "none", "other"],
)
def test_claimed_cpus_are_the_whole_cpus_of_the_capacity(capacity: dict[str, Any], cpus: int | None) -> None:
    device = Device.model_validate(
        {"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "capacity": capacity}
    )
    assert claimed_cpus(device) == cpus


# --------------------------------------------------------------------------------------------
# check_capacity_claims


def capacity_cluster(*pools: tuple[str, str]) -> tuple[Fleet, InferenceCluster]:
    raw = raw_fleet("Civo")
    raw["classes"].append(
        {
            # claims dra.cpu without the consumable capacity: nothing to gate
            "name": "plain-cpu",
            "devices": [{"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu"}],
            "provisioning": {"provider": "Civo", "civo": CPU_BLOCKS["Civo"]},
        }
    )
    raw["classes"].append(
        {
            # names the capacity on a Synthetic device, which claims nothing through DRA
            "name": "synthetic-cpu",
            "devices": [
                {"name": "cpu", "claim": "Synthetic", "driver": "dra.cpu", "capacity": {"dra.cpu/cpu": {"value": "6"}}}
            ],
            "provisioning": {"provider": "Civo", "civo": CPU_BLOCKS["Civo"]},
        }
    )
    raw["classes"].append(
        {
            # the same capacity name under another driver
            "name": "other-driver",
            "devices": [
                {
                    "name": "gpu",
                    "driver": "gpu.nvidia.com",
                    "deviceClassName": "gpu.nvidia.com",
                    "capacity": {"dra.cpu/cpu": {"value": "6"}},
                }
            ],
            "provisioning": {"provider": "Civo", "civo": GPU_BLOCKS["Civo"]},
        }
    )
    raw["clusters"][0]["nodePools"] = [{"name": name, "className": cls} for name, cls in pools]
    fleet = Fleet.model_validate(raw)
    return fleet, fleet.clusters[0]


VERSION_PATH = "clusters[0].civo.kubernetesVersion"


@pytest.mark.parametrize(
    ("version", "rejected"),
    [
        ("1.35", True),
        ("1.35.4-k3s1", True),
        ("v1.34.1+2", True),
        ("1.36", False),
        ("1.36.0-k3s1", False),
        ("v2.0", False),
        ("1.40", False),
        ("not-a-version", False),
    ],
)
def test_capacity_claim_needs_kubernetes_1_36(version: str, rejected: bool) -> None:
    fleet, cluster = capacity_cluster(("cpu", "cpu"), ("gpu", "gpu"), ("more", "cpu"))
    expected = [
        (
            FILE,
            VERSION_PATH,
            "pool 'cpu' (class 'cpu'), 'more' (class 'cpu') claims capacity dra.cpu/cpu, which needs the "
            f"DRAConsumableCapacity feature gate: off before Kubernetes 1.36, so on {version} the claim never schedules",
            "use Kubernetes 1.36 or newer on this cluster, where the gate is on by default",
        )
    ]
    found = located(check_capacity_claims(fleet, cluster, VERSION_PATH, version), FILE)
    assert [(i.file, i.path, i.problem, i.fix) for i in found] == (expected if rejected else [])


@pytest.mark.parametrize("cls", ["plain-cpu", "synthetic-cpu", "other-driver", "gpu", "unknown"])
def test_pools_without_a_dra_cpu_capacity_claim_need_no_feature_gate(cls: str) -> None:
    fleet, cluster = capacity_cluster(("p", cls))
    assert located(check_capacity_claims(fleet, cluster, VERSION_PATH, "1.35"), FILE) == []


def test_a_class_with_a_capacity_claim_on_any_of_its_devices_is_gated() -> None:
    fleet, cluster = capacity_cluster(("p", "cpu"))
    cpu = fleet.classes[1]
    plain = fleet.classes[2].devices[0].model_copy(update={"name": "plain"})
    both = cpu.model_copy(update={"devices": [plain, *cpu.devices]})
    fleet = fleet.model_copy(update={"classes": [fleet.classes[0], both]})
    [issue] = located(check_capacity_claims(fleet, cluster, VERSION_PATH, "1.35"), FILE)
    assert issue.problem.startswith("pool 'p' (class 'cpu') claims capacity dra.cpu/cpu")


# --------------------------------------------------------------------------------------------
# check_serving: parallelism against the GPUs a replica claims


def eight_gpu_fleet(args: list[str], claimed: int = 8) -> dict[str, Any]:
    """An Existing pool of 8-GPU nodes, and a deployment claiming `claimed` of them with `args`."""
    raw = raw_fleet("Existing", deployment(args=args, devices=[{"name": "gpu", "count": claimed}]))
    raw["classes"][0]["devices"][0]["count"] = 8
    return raw


@pytest.mark.parametrize(
    ("args", "at", "asked", "split", "fix"),
    [
        (["--model", "m", "--tensor-parallel-size", "16"], 2, 16, "tensor 16 x pipeline 1 x data 1", "8"),
        (["-tp", "4"], 0, 4, "tensor 4 x pipeline 1 x data 1", "8"),
        (["--tensor-parallel-size=2", "--pipeline-parallel-size=2"], 0, 4, "tensor 2 x pipeline 2 x data 1", "4"),
        (["-pp", "2", "-tp", "8"], 0, 16, "tensor 8 x pipeline 2 x data 1", "4"),
    ],
)
def test_parallelism_that_differs_from_the_replicas_gpus_is_refused_with_both_numbers(
    args: list[str], at: int, asked: int, split: str, fix: str
) -> None:
    assert serving(eight_gpu_fleet(args)) == [
        (
            f"deployments[0].args[{at}]",
            f"args ask for {asked} GPUs ({split} parallel) but one replica claims 8 GPU devices",
            f"set --tensor-parallel-size {fix}, or claim {asked} GPU devices in deployments[0].devices",
        )
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["--tensor-parallel-size", "8"],
        ["-tp=4", "-pp=2"],
        ["--tensor-parallel-size", "2", "--data-parallel-size", "4"],
        ["--max-model-len", "8192"],  # no parallelism flag: not read
    ],
)
def test_parallelism_equal_to_the_replicas_gpus_passes(args: list[str]) -> None:
    assert serving(eight_gpu_fleet(args)) == []


def test_a_parallelism_flag_without_a_whole_number_is_refused() -> None:
    assert paths(eight_gpu_fleet(["--tensor-parallel-size", "eight"])) == ["deployments[0].args[0]"]
    assert paths(eight_gpu_fleet(["-tp"])) == ["deployments[0].args[0]"]


def test_the_fix_for_too_much_parallelism_passes_the_next_check() -> None:
    raw = eight_gpu_fleet(["-tp", "16"], claimed=2)
    [(_, _, fix)] = serving(raw)
    assert fix.startswith("set --tensor-parallel-size 2,")
    raw["deployments"][0]["args"] = ["--tensor-parallel-size", "2"]
    assert serving(raw) == []


# --------------------------------------------------------------------------------------------
# check_serving: weights against the GPU memory a replica claims


@pytest.mark.parametrize(
    ("model", "extra", "problem"),
    [
        (
            "meta-llama/Llama-3.1-70B-Instruct",
            [],
            "model 'meta-llama/Llama-3.1-70B-Instruct' has about 70B parameters, 130.4 GiB of 16-bit weights, more "
            "than the 21.6 GiB vLLM may use of the 1 x 24 GiB GPUs one replica claims (gpu-memory-utilization 0.9), "
            "before any KV cache",
        ),
        (
            "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4",
            [],
            "model 'hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4' has about 70B parameters, 32.6 GiB of 4-bit "
            "weights, more than the 21.6 GiB vLLM may use of the 1 x 24 GiB GPUs one replica claims "
            "(gpu-memory-utilization 0.9), before any KV cache",
        ),
        (
            "Qwen/Qwen2.5-14B-Instruct",
            ["--gpu-memory-utilization", "0.5"],
            "model 'Qwen/Qwen2.5-14B-Instruct' has about 14B parameters, 26.1 GiB of 16-bit weights, more than the "
            "12.0 GiB vLLM may use of the 1 x 24 GiB GPUs one replica claims (gpu-memory-utilization 0.5), before "
            "any KV cache",
        ),
    ],
)
def test_a_model_whose_weights_cannot_fit_the_claimed_gpus_is_refused_at_its_model_arg(
    model: str, extra: list[str], problem: str
) -> None:
    # GKE's example GPU pool: one 24 GiB L4 (g2-standard-8) per replica.
    assert serving(raw_fleet("GKE", deployment(args=["--model", model, *extra]))) == [
        (
            "deployments[0].args[0]",
            problem,
            "claim more GPUs per replica (and set --tensor-parallel-size to match), use a quantized build of the "
            "model (FP8, AWQ, GPTQ), or a pool with larger GPUs",
        )
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["--model", "meta-llama/Llama-3.1-8B-Instruct"],  # 14.9 GiB in 16-bit
        ["--model=Qwen/Qwen2.5-14B-Instruct", "--quantization", "fp8"],  # 13.0 GiB in 8-bit
        ["--model", "mistralai/Mixtral-8x7B-Instruct-v0.1"],  # experts x size: the total is not read
        ["--model", "my-org/finetuned-model"],  # no parameter count
    ],
)
def test_a_model_that_may_fit_or_whose_size_is_unknown_passes(args: list[str]) -> None:
    assert serving(raw_fleet("GKE", deployment(args=args))) == []


def test_on_existing_the_gpu_memory_comes_from_the_devices_memory_capacity() -> None:
    raw = eight_gpu_fleet(["--model", "meta-llama/Llama-3.1-70B-Instruct", "-tp", "8"])
    assert serving(raw) == []  # no memory written: not checked
    raw["classes"][0]["devices"][0]["capacity"] = {"memory": {"value": "16Gi"}}
    [(path, problem, _)] = serving(raw)
    assert path == "deployments[0].args[0]"
    assert "the 115.2 GiB vLLM may use of the 8 x 16 GiB GPUs" in problem
    raw["classes"][0]["devices"][0]["capacity"] = {"memory": {"value": "80Gi"}}
    assert serving(raw) == []
