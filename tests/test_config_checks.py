"""The config module's checks called directly: each rule's boundary on both sides and its message word for word."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from infra.config.issues import ConfigError, ConfigIssue, located
from infra.config.names import label_value_problem, qualified_name_problem
from infra.config.stackfile import namespace_key_issues, split_config, stack_name_of
from infra.facts import derive_cluster
from tests.conftest import CLUSTER_BLOCKS, CPU_BLOCKS, cpu_class, fleet_of

FILE = "Pulumi.test.yaml"
SUBDOMAIN_253 = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])


def one_cluster(source: str = "GKE", **cluster: Any) -> dict[str, Any]:
    """A CPU cluster of `source` with one pool; `cluster` overrides its keys."""
    raw: dict[str, Any] = {
        "classes": [cpu_class("cpu", source, copy.deepcopy(CPU_BLOCKS[source]))],
        "clusters": [
            {
                "name": "prod",
                "source": source,
                source.lower(): copy.deepcopy(CLUSTER_BLOCKS[source]),
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
    }
    raw["clusters"][0].update(cluster)
    return raw


def issues(raw: dict[str, Any]) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    return err.value.issues


# --- label values and qualified names (taint keys and values, zones, accelerator types)

LABEL_VALUE_SAYS = "is not a label value (letters, digits, '-', '_', '.'; alphanumeric at both ends)"


@pytest.mark.parametrize("value", ["", "a", "a" * 63, "A-b_c.9"])
def test_a_label_value_of_up_to_63_characters_is_accepted(value: str) -> None:
    assert label_value_problem(value) is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("a" * 64, f"'{'a' * 64}' is longer than the 63 characters a label value holds"),
        ("-a", f"'-a' {LABEL_VALUE_SAYS}"),
        ("a b", f"'a b' {LABEL_VALUE_SAYS}"),
    ],
)
def test_a_label_value_problem_quotes_the_value(value: str, problem: str) -> None:
    assert label_value_problem(value) == problem


QUALIFIED_SAYS = (
    "is not a qualified name ([prefix/]name, the name 1-63 letters, digits, '-', '_', '.', alphanumeric at both ends)"
)
PREFIX_SAYS = "is not a DNS subdomain (lowercase letters, digits, '-' and '.')"


@pytest.mark.parametrize(
    "key", ["dedicated", "example.com/dedicated", "n" * 63, f"example.com/{'n' * 63}", f"{SUBDOMAIN_253}/key"]
)
def test_a_qualified_name_within_its_bounds_is_accepted(key: str) -> None:
    assert qualified_name_problem(key) is None


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        # The name is what follows the last '/': a prefix holding a '/' is no DNS subdomain.
        ("example.com/team/gpu", f"the prefix of 'example.com/team/gpu' {PREFIX_SAYS}"),
        ("Example.com/gpu", f"the prefix of 'Example.com/gpu' {PREFIX_SAYS}"),
        # 254 characters of prefix; the key is quoted cut to 80 characters.
        (f"{SUBDOMAIN_253}x/key", f"the prefix of '{'a' * 63}.{'b' * 14}… (260 characters) {PREFIX_SAYS}"),
        ("n" * 64, f"'{'n' * 64}' {QUALIFIED_SAYS}"),
        ("-gpu", f"'-gpu' {QUALIFIED_SAYS}"),
        ("example.com/", f"'example.com/' {QUALIFIED_SAYS}"),
    ],
)
def test_a_qualified_name_problem_quotes_the_key(key: str, problem: str) -> None:
    assert qualified_name_problem(key) == problem


# --- the stack file's name


@pytest.mark.parametrize(
    ("name", "stack"),
    [("Pulumi.dev.yaml", "dev"), ("Pulumi.dev.yml", "dev"), ("Pulumi.prod.eu.yaml", "prod.eu")],
)
def test_the_stack_is_the_file_name_between_pulumi_and_the_extension(name: str, stack: str) -> None:
    assert stack_name_of(Path("stacks") / name) == stack


@pytest.mark.parametrize(
    "name", ["pulumi.dev.yaml", "PULUMI.dev.yaml", "dev.yaml", "Pulumi.dev.json", "Pulumi.dev.YAML"]
)
def test_a_file_not_named_pulumi_stack_yaml_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as err:
        stack_name_of(Path("stacks") / name)
    assert err.value.issues == [
        ConfigIssue("", "a stack file is named Pulumi.<stack>.yaml", "rename the file", file=f"stacks/{name}")
    ]


# --- the error and the fleet's lookups


def test_a_config_error_reads_one_issue_per_line() -> None:
    first = ConfigIssue("clusters[0].name", "bad name", "rename it", file=FILE)
    second = ConfigIssue("classes[1].devices", "no devices", "add one", file=FILE)
    error = ConfigError([first, second])
    assert error.issues == [first, second]
    assert str(error) == (
        "Pulumi.test.yaml: clusters[0].name: bad name. Fix: rename it\n"
        "Pulumi.test.yaml: classes[1].devices: no devices. Fix: add one"
    )


def test_the_fleet_finds_a_class_and_a_cluster_by_name_and_names_a_missing_one() -> None:
    raw = one_cluster()
    raw["classes"].insert(0, cpu_class("other", "GKE", CPU_BLOCKS["GKE"]))
    raw["clusters"].insert(0, {**raw["clusters"][0], "name": "staging"})
    fleet = fleet_of(raw)
    assert fleet.class_named("cpu") is fleet.classes[1]
    assert fleet.cluster_named("prod") is fleet.clusters[1]
    with pytest.raises(KeyError) as missing_class:
        fleet.class_named("gpu")
    assert missing_class.value.args == ("gpu",)
    with pytest.raises(KeyError) as missing_cluster:
        fleet.cluster_named("dev")
    assert missing_cluster.value.args == ("dev",)


# --- the keys of the `modelplane:` namespace

KNOWN_KEYS = (
    "modelplane:classes, modelplane:clusters, modelplane:deployments, modelplane:services, "
    "modelplane:protect, modelplane:budget, modelplane:chartMirror"
)


def test_plain_fleet_keys_pass_and_every_other_plain_key_is_reported_in_order() -> None:
    # The program hands over every plain key, fleet keys included.
    assert located(
        namespace_key_issues(["classes", "protect", "kubeconfig", "protcet", "kubeconfg", "zzz"], [], {"kubeconfig"}),
        FILE,
    ) == [
        ConfigIssue(
            "config.modelplane:kubeconfig",
            "the kubeconfig key 'kubeconfig' holds a plain value",
            "store it as a secret: pulumi config set --secret modelplane:kubeconfig < path/to/kubeconfig",
            file=FILE,
        ),
        ConfigIssue(
            "config.modelplane:protcet",
            "unknown config key 'modelplane:protcet'",
            "did you mean 'modelplane:protect'? Remove or rename it",
            file=FILE,
        ),
        ConfigIssue(
            "config.modelplane:kubeconfg",
            "unknown config key 'modelplane:kubeconfg'",
            "did you mean 'modelplane:kubeconfig'? Remove or rename it",
            file=FILE,
        ),
        ConfigIssue(
            "config.modelplane:zzz",
            "unknown config key 'modelplane:zzz'",
            f"remove or rename it (known keys: {KNOWN_KEYS})",
            file=FILE,
        ),
    ]


def test_only_deployments_among_the_fleet_keys_may_be_a_secret() -> None:
    assert located(namespace_key_issues([], ["deployments", "kubeconfig", "clusters"], {"kubeconfig"}), FILE) == [
        ConfigIssue(
            "config.modelplane:clusters",
            "'modelplane:clusters' is a secret but holds fleet config",
            "store it as plain config (set it without --secret)",
            file=FILE,
        )
    ]


def split_issues(config: dict[str, Any]) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as err:
        split_config(config, FILE)
    return err.value.issues


CLUSTERS = one_cluster()["clusters"]


def test_config_splits_into_fleet_values_secrets_and_other_namespaces() -> None:
    fleet_raw, secrets, plain = split_config(
        {"modelplane:clusters": CLUSTERS, "protect": True, "deployments": None, "gcp:project": "p"}, FILE
    )
    assert fleet_raw == {"clusters": CLUSTERS, "protect": True}
    assert secrets == {}
    assert plain == {"gcp:project": "p"}


def test_a_key_set_with_and_without_the_namespace_is_reported_and_the_rest_still_checked() -> None:
    assert split_issues({"modelplane:protect": True, "protect": False, "modelplane:protcet": True}) == [
        ConfigIssue(
            "config.protect",
            "'modelplane:protect' is set twice (with and without the 'modelplane:' namespace)",
            "keep one of them",
            file=FILE,
        ),
        ConfigIssue(
            "config.modelplane:protcet",
            "unknown config key 'modelplane:protcet'",
            "did you mean 'modelplane:protect'? Remove or rename it",
            file=FILE,
        ),
    ]


@pytest.mark.parametrize("value", [True, {"secure": "AAABAK"}])
def test_a_modelplane_key_with_a_second_colon_is_refused_plain_or_secret(value: Any) -> None:
    # Pulumi reads `<namespace>:config:<name>` as `<namespace>:<name>` and refuses any other second ':'
    # (pulumi/pulumi sdk/go/common/resource/config/key.go, ParseKey).
    assert split_issues(
        {
            "modelplane:clusters": CLUSTERS,
            "modelplane:protect:x": value,
            "modelplane:config:protect": value,
            "modelplane:config:protect:x": value,
        }
    ) == [
        ConfigIssue(
            "config.modelplane:protect:x",
            "'modelplane:protect:x' holds a second ':'; a config key is <namespace>:<name>",
            "rename the key without the second ':'",
            file=FILE,
        ),
        ConfigIssue(
            "config.modelplane:config:protect",
            "'modelplane:config:protect' holds a second ':'; a config key is <namespace>:<name>",
            "write it as 'modelplane:protect'",
            file=FILE,
        ),
        ConfigIssue(
            "config.modelplane:config:protect:x",
            "'modelplane:config:protect:x' holds a second ':'; a config key is <namespace>:<name>",
            "rename the key without the second ':'",
            file=FILE,
        ),
    ]


def test_a_second_colon_in_another_namespace_is_left_to_its_owner() -> None:
    assert split_config({"modelplane:clusters": CLUSTERS, "gcp:config:project": "p"}, FILE)[2] == {
        "gcp:config:project": "p"
    }


def existing(block: dict[str, Any] | None) -> dict[str, Any]:
    cluster: dict[str, Any] = {"name": "byo", "source": "Existing", "nodePools": [{"name": "cpu", "className": "cpu"}]}
    if block is not None:
        cluster["existing"] = block
    return cluster


@pytest.mark.parametrize(
    ("clusters", "key"),
    [
        ([existing({"kubeconfigKey": "byo-kubeconfig"})], "byo-kubeconfig"),
        ([existing({})], "kubeconfig"),
        ([existing(None)], "kubeconfig"),
    ],
)
def test_the_key_an_existing_cluster_names_for_its_kubeconfig_must_be_secret(
    clusters: list[dict[str, Any]], key: str
) -> None:
    assert split_issues({"modelplane:clusters": clusters, f"modelplane:{key}": "apiVersion: v1"}) == [
        ConfigIssue(
            f"config.modelplane:{key}",
            f"the kubeconfig key '{key}' holds a plain value",
            f"store it as a secret: pulumi config set --secret modelplane:{key} < path/to/kubeconfig",
            file=FILE,
        )
    ]


@pytest.mark.parametrize(
    "clusters",
    [
        [{"name": "prod", "source": "GKE", "gke": CLUSTERS[0]["gke"]}],
        ["byo"],
        [{"name": "byo", "source": "Elsewhere"}],
        [{"name": "byo", "source": "existing"}],
    ],
)
def test_only_an_existing_cluster_names_a_kubeconfig_key(clusters: list[Any]) -> None:
    # The other entries are checked by the fleet's parser, after this split; here they name no key.
    assert split_issues({"modelplane:clusters": clusters, "modelplane:kubeconfig": "apiVersion: v1"}) == [
        ConfigIssue(
            "config.modelplane:kubeconfig",
            "unknown config key 'modelplane:kubeconfig'",
            f"remove or rename it (known keys: {KNOWN_KEYS})",
            file=FILE,
        )
    ]


# --- a cluster's block, its Kubernetes version and the fleet's own checks


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        ("GKE", "add a 'gke' block (project, region, kubernetesVersion)"),
        ("EKS", "add a 'eks' block (region, kubernetesVersion)"),
        ("AKS", "add a 'aks' block (location, kubernetesVersion)"),
        ("Civo", "add a 'civo' block (region, kubernetesVersion)"),
        ("Vultr", "add a 'vultr' block (region, kubernetesVersion)"),
    ],
)
def test_a_missing_cluster_block_names_the_keys_it_takes(source: str, hint: str) -> None:
    raw = one_cluster(source)
    del raw["clusters"][0][source.lower()]
    assert issues(raw) == [
        ConfigIssue(
            f"clusters[0].{source.lower()}",
            f"source is {source} but the '{source.lower()}' block is missing",
            hint,
            file=FILE,
        )
    ]


@pytest.mark.parametrize(
    ("version", "problem", "fix"),
    [
        ("latest", "'latest' is not a Kubernetes version", "write it as the cloud does, e.g. 1.34 or 1.34.1-k3s1"),
        ("1.33", "Kubernetes 1.33 predates DRA's v1 API (GA in 1.34)", "use 1.34 or newer"),
        ("0.40", "Kubernetes 0.40 predates DRA's v1 API (GA in 1.34)", "use 1.34 or newer"),
    ],
)
def test_a_version_before_dra_v1_is_refused_at_its_path(version: str, problem: str, fix: str) -> None:
    raw = one_cluster()
    raw["clusters"][0]["gke"]["kubernetesVersion"] = version
    assert issues(raw) == [ConfigIssue("clusters[0].gke.kubernetesVersion", problem, fix, file=FILE)]


@pytest.mark.parametrize("version", ["1.36", "2.0", "1.40.1-gke.100"])
def test_a_version_from_dra_v1_with_consumable_capacity_loads(version: str) -> None:
    raw = one_cluster()
    raw["clusters"][0]["gke"]["kubernetesVersion"] = version
    assert fleet_of(raw).clusters[0].gke.kubernetes_version == version  # type: ignore[union-attr]


QUOTED = "is a quoted string, not a whole number"


@pytest.mark.parametrize(
    ("where", "path"),
    [
        (lambda raw: raw["clusters"][0]["nodePools"][0], "clusters[0].nodePools[0].nodeCount"),
        (lambda raw: raw["clusters"][0]["nodePools"][0], "clusters[0].nodePools[0].minNodeCount"),
        (lambda raw: raw["classes"][0]["devices"][0], "classes[0].devices[0].count"),
    ],
)
def test_a_quoted_whole_number_is_refused_whether_the_key_is_optional_or_not(where: Any, path: str) -> None:
    raw = one_cluster()
    where(raw)[path.rsplit(".", 1)[1]] = "2"
    assert [(i.path, i.problem) for i in issues(raw)] == [(path, f"'2' {QUOTED}")]


def test_a_quoted_whole_number_attribute_is_refused() -> None:
    raw = one_cluster()
    raw["classes"][0]["devices"][0]["attributes"] = {"cores": {"int": "8"}}
    assert [(i.path, i.problem) for i in issues(raw)] == [
        ("classes[0].devices[0].attributes.cores.int", f"'8' {QUOTED}")
    ]


def test_a_text_key_keeps_a_value_that_reads_as_a_number() -> None:
    raw = one_cluster()
    raw["classes"][0]["devices"][0]["attributes"] = {"generation": {"string": "4"}}
    raw["clusters"] = [
        {
            **existing({"context": "2024", "kubernetesVersion": "1.36"}),
            "nodePools": [{"name": "cpu", "className": "cpu"}],
        }
    ]
    fleet = fleet_of(raw)
    assert fleet.classes[0].devices[0].attributes["generation"].string == "4"
    assert fleet.clusters[0].existing is not None and fleet.clusters[0].existing.context == "2024"


def test_a_fleet_without_clusters_is_refused_before_anything_else() -> None:
    for raw in ({}, {"clusters": [], "classes": "not a list"}):
        assert issues(raw) == [
            ConfigIssue(
                "config.modelplane:clusters",
                "no clusters are declared (modelplane:clusters is missing or empty)",
                "add modelplane:classes and modelplane:clusters (every key: docs/configuration.md); "
                "to remove every cluster on purpose, run `pulumi destroy`",
                file=FILE,
            )
        ]


def test_a_pool_whose_class_claims_no_compute_device_is_refused_with_the_fix() -> None:
    raw = one_cluster()
    raw["classes"].append({"name": "nic", "devices": [{"name": "nic", "claim": "Synthetic", "driver": "dra.net"}]})
    raw["clusters"][0]["nodePools"].append({"name": "nic", "className": "nic"})
    assert issues(raw) == [
        ConfigIssue(
            "clusters[0].nodePools[1].className",
            "class 'nic' claims no CPU or GPU DRA device, so it cannot back a pool",
            "add a DRA device with a GPU driver or dra.cpu to the class, or use another class",
            file=FILE,
        )
    ]


# --- what each cloud's API refuses (its profile), with the path, the message and the fix


def cloud_issues(source: str, edit: Any) -> list[ConfigIssue]:
    raw = one_cluster(source)
    raw["clusters"][0]["nodePools"].append({"name": "cpu2", "className": "cpu"})
    edit(raw["clusters"][0])
    try:
        fleet_of(raw)
    except ConfigError as err:
        return err.issues
    return []


def renamed(name: str) -> Any:
    return lambda cluster: cluster.update(name=name)


def pool_renamed(name: str) -> Any:
    return lambda cluster: cluster["nodePools"][1].update(name=name)


def version(text: str) -> Any:
    return lambda cluster: cluster["eks"].update(kubernetesVersion=text)


def labelled(key: str, value: str = "ml") -> Any:
    return lambda cluster: cluster.update(labels={key: value})


NAME_FIX = "start the name with a lowercase letter"
T129 = "t" * 129
CLOUD_RULES: list[tuple[str, Any, list[ConfigIssue]]] = [
    ("GKE", renamed("prod"), []),
    (
        "GKE",
        renamed("1prod"),
        [ConfigIssue("clusters[0].name", "GKE cluster names start with a letter, not '1prod'", NAME_FIX, file=FILE)],
    ),
    (
        "GKE",
        pool_renamed("2cpu"),
        [
            ConfigIssue(
                "clusters[0].nodePools[1].name",
                "GKE node pool names start with a letter, not '2cpu'",
                NAME_FIX,
                file=FILE,
            )
        ],
    ),
    ("AKS", renamed("a" * 54), []),
    (
        "AKS",
        renamed("a" * 55),
        [
            ConfigIssue(
                "clusters[0].name",
                "the name is the AKS dnsPrefix, which holds at most 54 characters, not 55",
                "shorten the name to 54 characters",
                file=FILE,
            )
        ],
    ),
    ("EKS", version("1.36"), []),
    (
        "EKS",
        version("1.36.2"),
        [
            ConfigIssue(
                "clusters[0].eks.kubernetesVersion",
                "EKS takes a major.minor version, not '1.36.2'",
                "write it as EKS lists it, e.g. 1.34",
                file=FILE,
            )
        ],
    ),
    ("EKS", labelled("t"), []),
    ("EKS", labelled("t" * 128, "v" * 256), []),
    (
        "EKS",
        labelled("AWS:team", "v" * 257),
        [
            ConfigIssue(
                "clusters[0].labels.AWS:team",
                "the tag key 'AWS:team' uses the prefix 'aws:' that AWS reserves",
                "rename the label",
                file=FILE,
            ),
            ConfigIssue(
                "clusters[0].labels.AWS:team",
                "an AWS tag value holds at most 256 characters, not 257",
                "shorten the value",
                file=FILE,
            ),
        ],
    ),
    (
        "EKS",
        labelled(T129),
        [
            ConfigIssue(
                f"clusters[0].labels.{'t' * 79}… (129 characters)",
                "an AWS tag key holds 1-128 characters, not 129",
                "shorten the key",
                file=FILE,
            )
        ],
    ),
    (
        "EKS",
        labelled(""),
        [
            ConfigIssue(
                "clusters[0].labels.", "an AWS tag key holds 1-128 characters, not 0", "shorten the key", file=FILE
            )
        ],
    ),
    # Clouds without the rule take what another refuses.
    ("EKS", renamed("1prod"), []),
    ("GKE", labelled("aws:team", "v" * 257), []),
]


@pytest.mark.parametrize(("source", "edit", "expected"), CLOUD_RULES)
def test_a_cloud_refuses_exactly_what_its_profile_states(source: str, edit: Any, expected: list[ConfigIssue]) -> None:
    assert cloud_issues(source, edit) == expected


# --- references between classes, clusters, pools and deployments, and the pools' bounds


def fleet_for_references() -> dict[str, Any]:
    """Two GKE clusters; `prod` has a GPU pool (two GPUs and a Synthetic NIC per node) and a CPU pool."""
    two_l4 = {"machineType": "g2-standard-24", "accelerator": {"type": "nvidia-l4", "count": 2}}
    return {
        "classes": [
            cpu_class("cpu", "GKE", CPU_BLOCKS["GKE"]),
            {
                "name": "gpu",
                "devices": [
                    {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 2},
                    {"name": "nic", "claim": "Synthetic", "driver": "nic.nvidia.com"},
                ],
                "provisioning": {"provider": "GKE", "gke": two_l4},
            },
        ],
        "clusters": [
            {
                "name": "staging",
                "source": "GKE",
                "gke": dict(CLUSTER_BLOCKS["GKE"]),
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            },
            {
                "name": "prod",
                "source": "GKE",
                "gke": dict(CLUSTER_BLOCKS["GKE"]),
                "nodePools": [{"name": "gpu", "className": "gpu"}, {"name": "cpu", "className": "cpu"}],
            },
        ],
    }


def deployment(pool: str = "gpu", cluster: str = "prod", **extra: Any) -> dict[str, Any]:
    gpu = pool == "gpu"
    dep: dict[str, Any] = {
        "name": f"m-{pool}",
        "cluster": cluster,
        "pool": pool,
        "image": "vllm/vllm-openai:v0.23.0" if gpu else "vllm/vllm-openai-cpu:v0.23.0",
        "devices": [{"name": pool}],
    }
    if gpu:
        dep["memory"] = "32Gi"
    dep.update(extra)
    return dep


def reference_issues(edit: Any) -> list[ConfigIssue]:
    raw = copy.deepcopy(fleet_for_references())
    edit(raw)
    try:
        fleet_of(raw)
    except ConfigError as err:
        return err.issues
    return []


def pool_of(raw: dict[str, Any], ki: int = 1, pi: int = 0) -> dict[str, Any]:
    pool: dict[str, Any] = raw["clusters"][ki]["nodePools"][pi]
    return pool


def test_the_reference_fleet_and_its_deployments_load() -> None:
    def deploy(raw: dict[str, Any]) -> None:
        raw["deployments"] = [deployment(), deployment("cpu"), deployment("cpu", "staging")]
        raw["deployments"][0]["devices"] = [{"name": "gpu", "count": 2}]  # as many as a node has

    assert reference_issues(deploy) == []


def set_deployments(*deps: dict[str, Any]) -> Any:
    return lambda raw: raw.update(deployments=list(deps))


def both(*edits: Any) -> Any:
    def edit(raw: dict[str, Any]) -> None:
        for e in edits:
            e(raw)

    return edit


def issue(path: str, problem: str, fix: str) -> ConfigIssue:
    return ConfigIssue(path, problem, fix, file=FILE)


MINMAX = "make minNodeCount <= nodeCount <= maxNodeCount"
REFERENCES: dict[str, tuple[Any, list[ConfigIssue]]] = {
    "device-named-twice-in-a-second-class": (
        lambda raw: raw["classes"][1]["devices"].append({"name": "nic", "claim": "Synthetic", "driver": "x.com"}),
        [issue("classes[1].devices[2].name", "device name 'nic' is declared twice", "give each device a unique name")],
    ),
    "class-and-cluster-named-twice": (
        lambda raw: (raw["classes"].append(raw["classes"][0]), raw["clusters"].append(raw["clusters"][0])),
        [
            issue("classes[2].name", "class name 'cpu' is declared twice", "give each class a unique name"),
            issue("clusters[2].name", "cluster name 'staging' is declared twice", "give each cluster a unique name"),
        ],
    ),
    "provisioning-without-its-block": (
        lambda raw: raw["classes"][1].update(provisioning={"provider": "EKS", "gke": {"machineType": "g2"}}),
        [
            issue(
                "classes[1].provisioning.eks",
                "provider is EKS but the 'eks' block is missing",
                "add a 'eks' block with the machine for EKS",
            ),
            issue(
                "classes[1].provisioning.gke",
                "a 'gke' block is set but provider is EKS",
                "remove the 'gke' block or set provider to match it",
            ),
        ],
    ),
    "cluster-with-another-sources-block": (
        lambda raw: raw["clusters"][1].update(aks={"location": "eastus", "kubernetesVersion": "1.36"}),
        [
            issue(
                "clusters[1].aks",
                "a 'aks' block is set but source is GKE",
                "remove the 'aks' block or set source to match it",
            )
        ],
    ),
    "existing-cluster-without-its-block": (
        lambda raw: raw["clusters"][1].update(source="Existing", gke=None),
        [
            issue(
                "clusters[1].existing",
                "source is Existing but the 'existing' block is missing",
                "add 'existing: {kubeconfigKey: kubeconfig}' and set that key with "
                "`pulumi config set --secret modelplane:kubeconfig < path/to/kubeconfig`",
            )
        ],
    ),
    "pool-named-twice": (
        lambda raw: pool_of(raw, 1, 1).update(name="gpu"),
        [
            issue(
                "clusters[1].nodePools[1].name",
                "pool name 'gpu' is declared twice in cluster 'prod'",
                "give each pool a unique name other than 'system'",
            )
        ],
    ),
    "pool-named-system": (
        lambda raw: pool_of(raw, 1, 1).update(name="system"),
        [
            issue(
                "clusters[1].nodePools[1].name",
                "pool name 'system' is reserved for the system pool every cluster gets",
                "give each pool a unique name other than 'system'",
            )
        ],
    ),
    "two-pools-named-system": (
        lambda raw: (pool_of(raw, 1, 0).update(name="system"), pool_of(raw, 1, 1).update(name="system")),
        [
            issue(
                "clusters[1].nodePools[1].name",
                "pool name 'system' is declared twice in cluster 'prod'",
                "give each pool a unique name other than 'system'",
            )
        ],
    ),
    "unknown-class-with-no-close-name": (
        lambda raw: pool_of(raw, 1, 1).update(className="zzz"),
        [
            issue(
                "clusters[1].nodePools[1].className",
                "unknown class 'zzz'",
                "declare it under modelplane:classes or use one of: cpu, gpu",
            )
        ],
    ),
    "unknown-class-when-none-is-declared": (
        lambda raw: (raw.update(classes=[]), raw["clusters"].pop(1)),
        [
            issue(
                "clusters[0].nodePools[0].className",
                "unknown class 'cpu'",
                "declare it under modelplane:classes or use one of: (none declared)",
            )
        ],
    ),
    "max-without-min": (
        lambda raw: pool_of(raw).update(maxNodeCount=3),
        [
            issue(
                "clusters[1].nodePools[0].minNodeCount",
                "autoscaling needs both minNodeCount and maxNodeCount",
                "set minNodeCount too, or remove the other bound",
            )
        ],
    ),
    "min-without-max": (
        lambda raw: pool_of(raw).update(minNodeCount=1),
        [
            issue(
                "clusters[1].nodePools[0].maxNodeCount",
                "autoscaling needs both minNodeCount and maxNodeCount",
                "set maxNodeCount too, or remove the other bound",
            )
        ],
    ),
    "min-equal-to-max": (lambda raw: pool_of(raw).update(minNodeCount=3, maxNodeCount=3, nodeCount=3), []),
    # GKE starts initial_node_count in every zone (pulumi-gcp container.NodePool): nodeCount 1 over
    # a regional pool's three zones is three nodes at the start, above a total maximum of 2.
    "start-above-max-over-the-regions-zones": (
        lambda raw: pool_of(raw).update(minNodeCount=1, maxNodeCount=2, nodeCount=1),
        [
            issue(
                "clusters[1].nodePools[0].maxNodeCount",
                "GKE starts 1 node(s) in each of the pool's 3 zones (the region's default zones), 3 in all, "
                "above maxNodeCount 2",
                "raise maxNodeCount to 3, or list fewer zones under zones (one zone starts nodeCount nodes)",
            )
        ],
    ),
    "start-above-max-over-listed-zones": (
        lambda raw: pool_of(raw).update(
            minNodeCount=1, maxNodeCount=3, nodeCount=3, zones=["us-central1-a", "us-central1-b"]
        ),
        [
            issue(
                "clusters[1].nodePools[0].maxNodeCount",
                "GKE starts 2 node(s) in each of the pool's 2 zones (its zones), 4 in all, above maxNodeCount 3",
                "raise maxNodeCount to 4, or list fewer zones under zones (one zone starts nodeCount nodes)",
            )
        ],
    ),
    "node-count-at-either-bound": (
        lambda raw: (
            pool_of(raw, 1, 0).update(minNodeCount=1, maxNodeCount=3, nodeCount=1),
            pool_of(raw, 1, 1).update(minNodeCount=1, maxNodeCount=3, nodeCount=3),
        ),
        [],
    ),
    "min-above-max": (
        lambda raw: pool_of(raw).update(minNodeCount=3, maxNodeCount=2, nodeCount=2),
        [issue("clusters[1].nodePools[0].minNodeCount", "minNodeCount 3 is greater than maxNodeCount 2", MINMAX)],
    ),
    "node-count-below-min": (
        lambda raw: pool_of(raw).update(minNodeCount=2, maxNodeCount=3, nodeCount=1),
        [issue("clusters[1].nodePools[0].nodeCount", "nodeCount 1 is outside 2..3", MINMAX)],
    ),
    "node-count-above-max": (
        lambda raw: pool_of(raw).update(minNodeCount=2, maxNodeCount=3, nodeCount=4),
        [issue("clusters[1].nodePools[0].nodeCount", "nodeCount 4 is outside 2..3", MINMAX)],
    ),
    "unknown-cluster-then-unknown-pool": (
        set_deployments(deployment(cluster="dev"), deployment("big")),
        [
            issue("deployments[0].cluster", "unknown cluster 'dev'", "use one of: staging, prod"),
            issue("deployments[1].pool", "cluster 'prod' has no pool 'big'", "use one of: gpu, cpu"),
        ],
    ),
    "unknown-pool-then-unknown-device": (
        set_deployments(deployment("big"), deployment(devices=[{"name": "gpu"}, {"name": "tpu"}])),
        [
            issue("deployments[0].pool", "cluster 'prod' has no pool 'big'", "use one of: gpu, cpu"),
            issue("deployments[1].devices[1].name", "class 'gpu' has no device 'tpu'", "use one of: gpu, nic"),
        ],
    ),
    "pool-of-an-unknown-class-then-too-many-devices": (
        both(
            lambda raw: pool_of(raw, 1, 1).update(className="zzz"),
            set_deployments(deployment("cpu"), deployment(devices=[{"name": "gpu", "count": 3}])),
        ),
        [
            issue(
                "clusters[1].nodePools[1].className",
                "unknown class 'zzz'",
                "declare it under modelplane:classes or use one of: cpu, gpu",
            ),
            issue(
                "deployments[1].devices[0].count",
                "count 3 is more than the 2 'gpu' devices class 'gpu' has per node",
                "request at most 2",
            ),
        ],
    ),
    "synthetic-device-claimed": (
        set_deployments(deployment(devices=[{"name": "nic"}])),
        [
            issue(
                "deployments[0].devices[0].name",
                "device 'nic' of class 'gpu' is Synthetic and cannot be claimed",
                "claim a DRA device of the class",
            )
        ],
    ),
    "pool-that-never-has-nodes": (
        both(lambda raw: pool_of(raw, 1, 1).update(nodeCount=0), set_deployments(deployment("cpu"))),
        [
            issue(
                "deployments[0].pool",
                "pool 'cpu' of cluster 'prod' has nodeCount 0 and no autoscaling, so the 1 replica(s) can never be "
                "scheduled",
                "give the pool nodeCount >= 1, or minNodeCount and maxNodeCount >= 1 (clusters[1].nodePools[1]), "
                "or set replicas: 0",
            )
        ],
    ),
    "no-replicas-on-a-pool-without-nodes": (
        both(lambda raw: pool_of(raw, 1, 1).update(nodeCount=0), set_deployments(deployment("cpu", replicas=0))),
        [],
    ),
    "a-pool-without-nodes-that-autoscales": (
        both(
            lambda raw: pool_of(raw, 1, 1).update(nodeCount=0, minNodeCount=0, maxNodeCount=2),
            set_deployments(deployment("cpu")),
        ),
        [],
    ),
    "cpu-capacity-claim-before-1-36": (
        lambda raw: raw["clusters"][1]["gke"].update(kubernetesVersion="1.35"),
        [
            issue(
                "clusters[1].gke.kubernetesVersion",
                "pool 'cpu' (class 'cpu') claims capacity dra.cpu/cpu, which needs the DRAConsumableCapacity feature "
                "gate: off before Kubernetes 1.36, so on 1.35 the claim never schedules",
                "use Kubernetes 1.36 or newer on this cluster, where the gate is on by default",
            )
        ],
    ),
    "cpu-claim-without-whole-cpus": (
        both(
            lambda raw: raw["classes"][0]["devices"][0]["capacity"]["dra.cpu/cpu"].update(value="1500m"),
            set_deployments(deployment("cpu")),
        ),
        [
            issue(
                "deployments[0].devices[0].name",
                "device 'cpu' of class 'cpu' claims dra.cpu without a whole number of CPUs in capacity 'dra.cpu/cpu'",
                'set classes[0].devices[0].capacity.dra.cpu/cpu.value to the CPUs a pod takes, such as "6"',
            )
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(REFERENCES))
def test_a_broken_reference_or_bound_is_reported_word_for_word(case: str) -> None:
    edit, expected = REFERENCES[case]
    assert reference_issues(edit) == expected


def test_both_fixes_for_a_start_above_max_plan_clean() -> None:
    """Each way out the start-above-max fix names passes the next plan, and the cost counts the start."""

    def start_above_max(raw: dict[str, Any]) -> None:
        pool_of(raw).update(minNodeCount=1, maxNodeCount=2, nodeCount=1)

    [found] = reference_issues(start_above_max)
    assert found.fix.startswith("raise maxNodeCount to 3")
    for fix in ({"maxNodeCount": 3}, {"zones": ["us-central1-a"]}):
        assert reference_issues(lambda raw, fix=fix: (start_above_max(raw), pool_of(raw).update(fix))) == []
    raw = copy.deepcopy(fleet_for_references())
    start_above_max(raw)
    pool_of(raw).update(maxNodeCount=3)
    fleet = fleet_of(raw)
    pool = next(p for p in derive_cluster(fleet, fleet.clusters[1]).pools if p.name == pool_of(raw)["name"])
    assert (pool.created_nodes, pool.nodes) == (3, 3)


CIVO_FIX = "remove minNodeCount and maxNodeCount and set nodeCount to the nodes the pool needs"


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({}, []),
        (
            {"minNodeCount": 1, "maxNodeCount": 2},
            [
                issue(
                    "clusters[0].nodePools[0].minNodeCount",
                    "Civo pools do not autoscale (nothing scales them between minNodeCount and maxNodeCount)",
                    CIVO_FIX,
                )
            ],
        ),
        (
            {"maxNodeCount": 2},
            [
                issue(
                    "clusters[0].nodePools[0].minNodeCount",
                    "autoscaling needs both minNodeCount and maxNodeCount",
                    "set minNodeCount too, or remove the other bound",
                )
            ],
        ),
        (
            {"minNodeCount": 1},
            [
                issue(
                    "clusters[0].nodePools[0].maxNodeCount",
                    "autoscaling needs both minNodeCount and maxNodeCount",
                    "set maxNodeCount too, or remove the other bound",
                )
            ],
        ),
    ],
)
def test_a_civo_pool_takes_no_autoscaling_bounds(bounds: dict[str, int], expected: list[ConfigIssue]) -> None:
    assert cloud_issues("Civo", lambda cluster: cluster["nodePools"][0].update(bounds)) == expected


def test_image_and_serving_issues_name_the_stack_file() -> None:
    # Both checks run with the reference checks; an issue from each carries the file it was found in.
    found = reference_issues(
        set_deployments(deployment(image="vllm/vllm-openai"), deployment(memory=None, name="m-gpu-2"))
    )
    assert [(i.file, i.path) for i in found] == [(FILE, "deployments[0].image"), (FILE, "deployments[1].memory")]


@pytest.mark.parametrize(
    ("value", "flag"), [({"secure": "v1:AAABAK"}, "--secret --path"), ("debug", "--path"), (5000, "--path")]
)
@pytest.mark.parametrize("key", ["deployments[2].env.HF_TOKEN", "budget.monthlyUsd"])
def test_a_key_set_without_path_is_refused_with_the_command_that_sets_it_inside_the_fleet_key(
    key: str, value: Any, flag: str
) -> None:
    # `pulumi config set 'modelplane:deployments[2].env.HF_TOKEN' ...` without --path stores a
    # key of that name beside `modelplane:deployments`, which nothing reads.
    head = key.split("[")[0].split(".")[0]
    assert split_issues({"modelplane:clusters": CLUSTERS, f"modelplane:{key}": value}) == [
        ConfigIssue(
            f"config.modelplane:{key}",
            f"'modelplane:{key}' is a config key of its own, not a value inside 'modelplane:{head}' (it was set "
            "without --path), so nothing reads it",
            f"remove it and set the value again with --path: pulumi config rm 'modelplane:{key}' && "
            f"pulumi config set {flag} 'modelplane:{key}' <value>",
            file=FILE,
        )
    ]


def test_a_key_that_only_starts_like_a_fleet_key_is_not_taken_for_a_path() -> None:
    [issue] = split_issues({"modelplane:clusters": CLUSTERS, "modelplane:deploymentsx": 1})
    assert issue.problem == "unknown config key 'modelplane:deploymentsx'"
