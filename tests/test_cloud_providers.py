"""Clusters of one cloud, account and region share one cloud provider (`components.base.CloudProviders`)."""

from __future__ import annotations

from typing import Any

from tests.conftest import CLUSTER_BLOCKS, cpu_class, cpu_cluster_fleet, of_type, run_fleet


def gke_cluster(name: str, project: str, region: str) -> dict[str, Any]:
    block = {**CLUSTER_BLOCKS["GKE"], "project": project, "region": region}
    return {"name": name, "source": "GKE", "gke": block, "nodePools": [{"name": "cpu", "className": "cpu"}]}


def test_clusters_of_one_project_and_region_share_a_provider_and_others_get_their_own() -> None:
    fleet = {
        "classes": [cpu_class("cpu", "GKE", {"machineType": "c3-standard-8"})],
        "clusters": [
            gke_cluster("a", "prod-project", "us-central1"),
            gke_cluster("b", "prod-project", "us-central1"),
            gke_cluster("c", "prod-project", "europe-west4"),
            gke_cluster("d", "lab-project", "us-central1"),
        ],
    }
    result = run_fleet(fleet)
    assert result.error is None, result.error
    providers = {r.urn: r.name for r in of_type(result, "pulumi:providers:gcp")}
    assert sorted(providers.values()) == [
        "gcp-lab-project-us-central1-provider",
        "gcp-prod-project-europe-west4-provider",
        "gcp-prod-project-us-central1-provider",
    ]
    used = {
        r.name.split("-")[0]: providers[r.provider.rsplit("::", 1)[0]]
        for r in of_type(result, "gcp:container/cluster:Cluster")
    }
    assert used == {
        "a": "gcp-prod-project-us-central1-provider",
        "b": "gcp-prod-project-us-central1-provider",
        "c": "gcp-prod-project-europe-west4-provider",
        "d": "gcp-lab-project-us-central1-provider",
    }
    # The Kubernetes provider stays one per cluster: each has its own kubeconfig.
    assert len(of_type(result, "pulumi:providers:kubernetes")) == 4


def test_civo_clusters_in_one_region_share_a_provider() -> None:
    result = run_fleet(cpu_cluster_fleet("Civo", "x", "y"))
    assert result.error is None, result.error
    assert [r.name for r in of_type(result, "pulumi:providers:civo")] == ["civo-lon1-provider"]
