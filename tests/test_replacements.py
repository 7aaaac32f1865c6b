"""Every resource type the committed stacks create has its replace-forcing inputs recorded, with a source."""

from __future__ import annotations

import json
from pathlib import Path

from tooling.replacements import forcing

ROOT = Path(__file__).resolve().parent.parent


def registered_types() -> set[str]:
    """The type tokens of every resource the golden plans of the committed stacks register."""
    return {
        r["type"]
        for path in (ROOT / "tests" / "golden").glob("*.json")
        for r in json.loads(path.read_text())["resources"]
    }


def test_every_type_the_stacks_create_has_its_forcing_inputs_and_their_source() -> None:
    types = registered_types()
    assert len(types) > 50
    missing = sorted(t for t in types if forcing(t) is None)
    assert missing == [], f"read the provider of each and add its row to tooling/replacements.py: {missing}"
    for t in types:
        rule = forcing(t)
        assert rule is not None and rule.source, t
        assert not rule.refused or rule.refused_why, t
        assert not (rule.refused or rule.refused_smaller) or (rule.refused_why and rule.refused_fix), t


def test_a_type_nobody_read_has_no_rule() -> None:
    assert forcing("aws:s3/bucket:Bucket") is None


def test_the_machine_of_a_pool_forces_a_new_pool_only_where_its_provider_says_so() -> None:
    def forced(t: str, path: str) -> bool:
        rule = forcing(t)
        return rule is not None and path in rule.paths

    assert forced("aws:eks/nodeGroup:NodeGroup", "instanceTypes")
    assert forced("azure-native:containerservice:AgentPool", "vmSize")
    # google-beta's node_config.machine_type has no ForceNew: GKE updates the pool in place.
    assert not forced("gcp:container/nodePool:NodePool", "nodeConfig.machineType")
    assert forced("gcp:container/nodePool:NodePool", "nodeConfig.guestAccelerators")
    # Civo and Vultr neither replace nor change it: their update refuses or drops it.
    civo = forcing("civo:index/kubernetesNodePool:KubernetesNodePool")
    vultr = forcing("vultr:index/kubernetesNodePools:KubernetesNodePools")
    assert civo is not None and civo.refused == ("size",)
    assert vultr is not None and "plan" in vultr.refused
    # Kubernetes objects: renamed or moved to another namespace is a new object.
    assert forcing("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate") is not None
    assert forced("kubernetes:core/v1:Service", "metadata.namespace")
    assert forced("kubernetes:helm.sh/v3:Release", "name")
