"""The test providers hold the program to what the real providers take, or the tier proves nothing.

`Check` must reject what a provider's schema does not declare, with the property path, and `Diff`
must ask for the replacement the real provider would make.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pulumi
import pytest
from pulumi import automation as auto
from pulumi.provider.experimental import provider as p

from tests.engine import provider as test_provider
from tests.engine import schema
from tests.engine.harness import Engine
from tests.engine.provider import DYNAMIC_BRIDGE, bridged_package

# The CLI enforces the keys Pulumi.yaml declares without a default, whatever the program does.
NO_FLEET = {"modelplane:classes": [], "modelplane:clusters": []}


def test_check_names_an_undeclared_nested_key_with_its_path() -> None:
    failures = schema.check(
        "gcp:container/nodePool:NodePool",
        {"cluster": "c", "nodeConfig": {"machineType": "g2-standard-8", "labelz": {"a": "b"}}},
    )
    assert [(f.path, f.reason) for f in failures] == [
        ("nodeConfig.labelz", "NodePoolNodeConfigArgs declares no property 'labelz'")
    ]


def test_check_rejects_a_wrong_scalar_type_and_a_missing_required_input() -> None:
    failures = schema.check("civo:index/kubernetesNodePool:KubernetesNodePool", {"nodeCount": "three"})
    assert ("nodeCount", "expected an integer, got 'three'") in [(f.path, f.reason) for f in failures]
    assert ("clusterId", "missing required property 'clusterId'") in [(f.path, f.reason) for f in failures]


def test_check_takes_unknowns_and_the_json_encoded_settings_of_a_provider() -> None:
    pool = {"clusterId": schema.UNKNOWN, "size": "g4s.kube.small", "nodeCount": 1}
    assert schema.check("civo:index/kubernetesNodePool:KubernetesNodePool", pool) == []
    assert schema.check("pulumi:providers:kubernetes", {"enableServerSideApply": "true"}) == []
    assert schema.check("pulumi:providers:kubernetes", {"enableServerSideApply": "yes"}) != []


def test_check_reads_the_resource_args_where_a_nested_type_has_the_same_name() -> None:
    # azure-native's `network.SubnetArgs` is a VNet's subnet block; the resource takes SubnetInitArgs.
    cls = schema.args_class("azure-native:network:Subnet")
    assert cls is not None and cls.__name__ == "SubnetInitArgs"
    assert schema.check("azure-native:network:Subnet", {"resourceGroupName": "rg", "virtualNetworkName": "v"}) == []


def test_the_engine_stops_on_a_property_the_provider_does_not_take(engine: Engine) -> None:
    def program() -> None:
        pulumi.CustomResource("civo:index/network:Network", "net", {"label": "net", "regoin": "LON1"})

    engine.write_config("check", NO_FLEET)
    stack = engine.stack("check", program)
    with pytest.raises(auto.CommandError) as err:
        stack.preview()
    assert "regoin" in str(err.value) and "declares no property" in str(err.value)


def test_a_change_the_cloud_cannot_make_in_place_is_previewed_as_a_replacement(engine: Engine) -> None:
    # A Civo network's region is ForceNew (`tooling.replacements`).
    region = {"value": "LON1"}

    def program() -> None:
        pulumi.CustomResource("civo:index/network:Network", "net", {"label": "net", "region": region["value"]})

    engine.write_config("diff", NO_FLEET)
    stack = engine.stack("diff", program)
    stack.up()
    region["value"] = "FRA1"
    events: list[auto.EngineEvent] = []
    preview = stack.preview(on_event=events.append)
    assert preview.change_summary.get("replace") == 1
    steps = [e.resource_pre_event.metadata for e in events if e.resource_pre_event]
    net = next(m for m in steps if m.urn.endswith("::net"))
    assert net.keys == ["region"]


def test_a_change_the_provider_accepts_and_cannot_make_fails_the_update(engine: Engine) -> None:
    # The Civo provider diffs a node pool's size as an update and its update call fails on it
    # (`tooling.replacements`, `refused`); the plan's `--against` reports it as an error.
    size = {"value": "g4s.kube.small"}

    def program() -> None:
        pulumi.CustomResource(
            "civo:index/kubernetesNodePool:KubernetesNodePool",
            "pool",
            {"clusterId": "c", "size": size["value"], "nodeCount": 1},
        )

    engine.write_config("refused", NO_FLEET)
    stack = engine.stack("refused", program)
    stack.up()
    size["value"] = "g4s.kube.medium"
    preview = stack.preview()
    assert preview.change_summary.get("update") == 1 and not preview.change_summary.get("replace")
    with pytest.raises(auto.CommandError) as err:
        stack.up()
    assert "updating size of" in str(err.value) and "not available at this moment" in str(err.value)


@pytest.mark.parametrize(("region", "replaced"), [("LON1", False), ("NYC1", True)])
def test_moving_a_resource_to_another_provider_replaces_it_only_when_the_provider_works_elsewhere(
    engine: Engine, region: str, replaced: bool
) -> None:
    import pulumi_civo as civo

    which = {"provider": "a", "region": "LON1"}

    def program() -> None:
        provider = civo.Provider(which["provider"], region=which["region"])
        civo.Network("net", label="net", opts=pulumi.ResourceOptions(provider=provider))

    engine.write_config("move", NO_FLEET)
    stack = engine.stack("move", program)
    stack.up()
    which.update(provider="b", region=region)
    preview = stack.preview()
    assert ("replace" in preview.change_summary) is replaced, preview.change_summary


def nebius_parameter() -> p.ParametersValue:
    """The parameterization pulumi-nebius embeds (its pulumi-plugin.json), as the engine sends it."""
    import pulumi_nebius

    plugin = json.loads((Path(pulumi_nebius.__file__).parent / "pulumi-plugin.json").read_text())
    param = plugin["parameterization"]
    return p.ParametersValue(param["name"], param["version"], base64.b64decode(param["value"]))


@pytest.fixture
def ops_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MODELPLANE_TEST_PROVIDER_DIR", str(tmp_path))
    return tmp_path


def test_the_bridge_answers_parameterize_with_the_terraform_providers_name_and_version(ops_dir: Path) -> None:
    assert bridged_package(nebius_parameter().value) == ("nebius", "0.6.73")
    provider = test_provider.TestProvider(DYNAMIC_BRIDGE)
    response = asyncio.run(provider.parameterize(p.ParameterizeRequest(nebius_parameter())))
    assert (response.name, response.version) == ("nebius", "0.6.73")


def test_the_bridge_refuses_a_second_parameterization_and_a_local_provider(ops_dir: Path) -> None:
    provider = test_provider.TestProvider(DYNAMIC_BRIDGE)
    asyncio.run(provider.parameterize(p.ParameterizeRequest(nebius_parameter())))
    with pytest.raises(RuntimeError, match=r"already parameterized to \(nebius, 0.6.73\)"):
        asyncio.run(provider.parameterize(p.ParameterizeRequest(nebius_parameter())))
    with pytest.raises(ValueError, match="remote"):
        bridged_package(b'{"local": {"path": "/x/terraform-provider-nebius"}}')


def test_a_provider_that_is_not_the_bridge_does_not_parameterize() -> None:
    with pytest.raises(NotImplementedError):
        asyncio.run(test_provider.TestProvider("gcp").parameterize(p.ParameterizeRequest(nebius_parameter())))


def test_the_engine_loads_the_bridge_plugin_parameterized_and_checks_the_packages_schema(engine: Engine) -> None:
    import pulumi_nebius as nebius

    def program() -> None:
        provider = nebius.Provider("nb", parent_id="project-e00test")
        nebius.VpcV1Network("net", name="net", opts=pulumi.ResourceOptions(provider=provider))
        pulumi.CustomResource(
            "nebius:index/vpcV1Network:VpcV1Network",
            "typo",
            {"nmae": "net"},
            opts=pulumi.ResourceOptions(provider=provider),
        )

    engine.write_config("bridge", NO_FLEET)
    stack = engine.stack("bridge", program)
    with pytest.raises(auto.CommandError) as err:
        stack.preview()
    assert "nmae" in str(err.value) and "declares no property" in str(err.value)
    assert "terraform-provider@nebius@0.6.73" in engine.ops().of("parameterize")
