"""A stack created when every cluster had its own cloud provider moves onto shared ones, replacing nothing.

`fixtures/two-gke-clusters-per-cluster-providers.json` is the state of `FLEET` after `up` by the
program as it was before `components.base.CloudProviders` (commit bd29317: a `gcp.Provider` named
`<cluster>-gcp` under each cluster), exported with `pulumi stack export` from the engine tier, its
project renamed from `prod` to `prod-project` in every input and output (and the node service
accounts' ids, which hash the project: `clouds.gke.component.node_account_id`) once project IDs
were held to Google's rule (at least 6 characters), and gke-b's endpoint made an address of its
own (203.0.113.11: the test provider of that time gave both clusters 203.0.113.10, so both
clusters' objects reached one API server, where the dashboards' ConfigMaps of the two collide). The
engine decides whether a resource whose provider reference changed is replaced by asking the new
provider's `DiffConfig` (pkg/resource/deploy/step_generator.go at v3.274.1, `providerChanged`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from infra.serving.dashboards import DASHBOARDS
from tests.conftest import CLUSTER_BLOCKS
from tests.engine.harness import Engine, resources

FIXTURE = Path(__file__).parent / "fixtures" / "two-gke-clusters-per-cluster-providers.json"


def cluster(name: str) -> dict[str, Any]:
    block = {**CLUSTER_BLOCKS["GKE"], "project": "prod-project", "region": "us-central1"}
    return {"name": name, "source": "GKE", "gke": block, "nodePools": [{"name": "cpu", "className": "cpu"}]}


FLEET = {
    "protect": True,
    "classes": [
        {
            "name": "cpu",
            "devices": [
                {
                    "name": "cpu",
                    "driver": "dra.cpu",
                    "deviceClassName": "dra.cpu",
                    "capacity": {"dra.cpu/cpu": {"value": "6"}},
                }
            ],
            "provisioning": {"provider": "GKE", "gke": {"machineType": "c3-standard-8"}},
        }
    ],
    "clusters": [cluster("gke-a"), cluster("gke-b")],
}


def is_dashboard(urn: str) -> bool:
    """A dashboard's ConfigMap (`components.serving_stack`, named after the dashboard's uid)."""
    return "kubernetes:core/v1:ConfigMap::" in urn and urn.endswith(tuple(f"-{d.uid}" for d in DASHBOARDS))


def test_a_stack_with_a_provider_per_cluster_moves_to_one_shared_provider_without_a_replacement(
    engine: Engine,
) -> None:
    before = json.loads(FIXTURE.read_text())
    engine.write_fleet("shared", FLEET)
    path = engine.stack_file("shared")
    doc = yaml.safe_load(path.read_text())
    # The state's secrets are encrypted under this salt and the tier's passphrase.
    doc["encryptionsalt"] = before["deployment"]["secrets_providers"]["state"]["salt"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    stack = engine.stack("shared")
    stack.import_stack(auto.Deployment(version=before["version"], deployment=before["deployment"]))
    old_providers = {r["urn"] for r in resources(before["deployment"]) if r["type"] == "pulumi:providers:gcp"}
    assert len(old_providers) == 2

    preview = stack.preview()
    assert "replace" not in preview.change_summary, preview.change_summary
    # The shared provider, and what the serving stacks install that the fixture's program predates:
    # the dashboards (one ConfigMap per dashboard and cluster: infra.serving.dashboards) and the
    # PodMonitor of the telemetry collector (one per cluster: components/serving_stack.py).
    assert preview.change_summary.get("create") == 1 + (len(DASHBOARDS) + 1) * 2
    assert preview.change_summary.get("delete") == 2  # the two per-cluster providers, nothing else

    stack.up()
    # The one cloud change is the system pools' autoscaling bounds, updated in place: a regional
    # system pool is now 1..2 nodes in each of its 3 zones (infra.facts.system_pool), where the
    # fixture's program gave it 1..2 in all. The provider move itself changes no cloud resource.
    # (The serving stack's own objects move with what the program installs since the fixture: the
    # dashboards, kube-prometheus-stack's values.)
    changes = engine.ops().changes()
    assert not [c for c in changes if c["op"] != "create" and is_dashboard(c["urn"])]
    changed = [c for c in changes if "::gcp:" in c["urn"] or "$gcp:" in c["urn"]]
    assert sorted((c["op"], c["urn"].rsplit("::", 1)[1]) for c in changed) == [
        ("update", "gke-a-system"),
        ("update", "gke-b-system"),
    ], changed
    after = engine.export(stack)
    (shared,) = [r for r in resources(after) if r["type"] == "pulumi:providers:gcp"]
    assert shared["urn"].endswith("::gcp-prod-project-us-central1-provider")
    cloud = [r for r in resources(after) if r["type"].startswith("gcp:")]
    assert cloud and all(r["provider"].startswith(shared["urn"] + "::") for r in cloud)
    assert {r["urn"] for r in cloud} == {
        r["urn"] for r in resources(before["deployment"]) if r["type"].startswith("gcp:")
    }
    assert set(stack.preview().change_summary) == {"same"}
