"""Image references and quantities: one table of cases fed to the config check and to the pack."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from infra.checks.rules import check_images
from infra.config.issues import ConfigError, located
from infra.config.model import Fleet
from infra.formats import parse_image, parse_quantity
from policies.resource_rules import pinned_versions
from tests.conftest import cpu_class, fleet_of
from tests.policy_harness import resource_args, run

DIGEST = "sha256:" + "0123456789abcdef" * 4

# (image, pinned?) : the one table both checks answer.
IMAGES = [
    ("vllm/vllm-openai:v0.23.0", True),
    ("docker.io/rocm/vllm:rocm7.0.0_vllm_0.10.2", True),
    ("localhost:5000/team/engine:1.2.3", True),
    (f"vllm/vllm-openai@{DIGEST}", True),
    # A digest pins the image whatever the tag says: the runtime pulls by digest.
    (f"vllm/vllm-openai:latest@{DIGEST}", True),
    ("vllm/vllm-openai", False),
    ("localhost:5000/engine", False),
    ("vllm/vllm-openai:latest", False),
    ("vllm/vllm-openai:latest-gpu", False),
    ("rocm/k8s-device-plugin:labeller-latest", False),
    ("vllm/vllm-openai:v1-latest-cuda", False),
    # An empty or short digest is no digest (the substring check let these through).
    ("vllm/vllm-openai:latest@sha256:", False),
    ("vllm/vllm-openai:latest@sha256:abc", False),
    ("vllm/vllm-openai:v0.23.0 ", False),
    (" vllm/vllm-openai:v0.23.0", False),
    ("vllm/vllm openai:v0.23.0", False),
    ("vllm/VLLM:v1", False),
    ("vllm/vllm-openai:v0.23.0\n", False),
]


def config_pins(image: str) -> bool:
    raw = {
        "classes": [cpu_class("cpu", "Civo", {"size": "g4p.kube.medium"})],
        "clusters": [
            {
                "name": "k",
                "source": "Civo",
                "civo": {"region": "LON1", "kubernetesVersion": "1.36.0-k3s1"},
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
        "deployments": [{"name": "m", "cluster": "k", "pool": "cpu", "image": "x:1", "devices": [{"name": "cpu"}]}],
    }
    fleet = fleet_of(raw)
    dep = fleet.deployments[0].model_copy(update={"image": image})
    return located(check_images(Fleet(**{**dict(fleet), "deployments": [dep]})), "Pulumi.test.yaml") == []


def pack_pins(image: str) -> bool:
    props = {"name": "mp-x", "chart": "x", "version": "1.0.0", "namespace": "ns", "values": {"image": image}}
    args = resource_args("kubernetes:helm.sh/v3:Release", props, name="r", policy=pinned_versions)
    return run(pinned_versions, args) == []


@pytest.mark.parametrize(("image", "pinned"), IMAGES)
def test_config_check_and_pack_agree_on_every_image(image: str, pinned: bool) -> None:
    assert (config_pins(image), pack_pins(image)) == (pinned, pinned)


def test_image_reference_parts() -> None:
    assert parse_image(f"reg.io:5000/a/b:v1@{DIGEST}") is not None
    parsed = parse_image(f"reg.io:5000/a/b:v1@{DIGEST}")
    assert parsed is not None and (parsed.name, parsed.tag, parsed.digest) == ("reg.io:5000/a/b", "v1", DIGEST)
    assert parse_image("image:latest@sha256:") is None


def test_config_rejects_an_unpinned_image_at_its_path() -> None:
    raw = {
        "classes": [cpu_class("cpu", "Civo", {"size": "g4p.kube.medium"})],
        "clusters": [
            {
                "name": "k",
                "source": "Civo",
                "civo": {"region": "LON1", "kubernetesVersion": "1.36.0-k3s1"},
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
        "deployments": [
            {
                "name": "m",
                "cluster": "k",
                "pool": "cpu",
                "image": "image:latest@sha256:",
                "devices": [{"name": "cpu"}],
            }
        ],
    }
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    assert [(i.path, "not a valid image reference" in i.problem) for i in err.value.issues] == [
        ("deployments[0].image", True)
    ]


# (text, value) : quantities as Kubernetes reads them; None where it rejects the text.
QUANTITIES: list[tuple[Any, Decimal | None]] = [
    ("6", Decimal(6)),
    (6, Decimal(6)),
    (6.0, Decimal(6)),
    ("6000m", Decimal(6)),
    ("1.5Gi", Decimal(1610612736)),
    ("262128Mi", Decimal(262128 * 1024 * 1024)),
    ("1e3", Decimal(1000)),
    ("1E", Decimal(10) ** 18),
    ("500m", Decimal("0.5")),
    ("1K", None),  # Kubernetes spells kilo `k`; `K` is no suffix
    ("six", None),
    (" 6", None),
    ("6\n", None),
    ("1Gb", None),
    ("", None),
    (True, None),
    ("9" * 30, None),  # past 2^63-1, the most a quantity holds
    ("1e99999999", None),
]


@pytest.mark.parametrize(("text", "value"), QUANTITIES)
def test_quantities_parse_as_kubernetes_reads_them(text: Any, value: Decimal | None) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(("text", "value"), [(t, v) for t, v in QUANTITIES if isinstance(t, str)])
def test_config_accepts_a_capacity_exactly_when_the_pack_can_read_it(text: str, value: Decimal | None) -> None:
    # An Existing cluster takes a class without provisioning; a fleet needs one cluster to parse.
    pools = [{"name": "p", "className": "c"}]
    raw = {
        "classes": [cpu_class("c", None, cpus=text)],
        "clusters": [
            {"name": "k", "source": "Existing", "existing": {"kubernetesVersion": "1.36"}, "nodePools": pools}
        ],
    }
    if value is None:
        with pytest.raises(ConfigError) as err:
            fleet_of(raw)
        assert [i.path for i in err.value.issues] == ["classes[0].devices[0].capacity.dra.cpu/cpu.value"]
    else:
        assert fleet_of(raw).classes[0].devices[0].capacity["dra.cpu/cpu"].value == text
