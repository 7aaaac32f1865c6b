"""The offline plan's mock runtime names and computes what the engine would (the engine tier found both).

The SDK's mock monitor builds a child's URN from its parent's own type only, and prefixes the
stack's direct children with `pulumi:pulumi:Stack`; the engine uses the parent's whole type chain
and no prefix. IAM computes a policy's ARN, which the EKS autoscaler's role attachment takes.
"""

from __future__ import annotations

from tests.conftest import cpu_cluster_fleet, run_fleet


def test_urns_carry_the_parent_type_chain_as_the_engine_writes_them() -> None:
    result = run_fleet(cpu_cluster_fleet("Civo", "lon"))
    assert result.error is None, result.error
    urns = {r.name: r.urn for r in result.resources}
    assert urns["lon"] == "urn:pulumi:test::modelplane::modelplane:civo:CivoCluster::lon"
    assert urns["lon-stack-cert-manager"] == (
        "urn:pulumi:test::modelplane::modelplane:civo:CivoCluster$modelplane:stack:ServingStack"
        "$kubernetes:helm.sh/v3:Release::lon-stack-cert-manager"
    )


def test_an_update_attaches_the_autoscaler_policy_by_the_arn_iam_computed() -> None:
    fleet = cpu_cluster_fleet("EKS", "east")
    result = run_fleet(fleet)
    assert result.error is None, result.error
    attachment = next(r for r in result.resources if r.name == "east-autoscaler-role-policy")
    assert attachment.inputs["policyArn"] == "arn:aws:iam::000000000000:policy/east-autoscaler"
