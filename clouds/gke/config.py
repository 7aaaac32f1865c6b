"""GKE's blocks in the stack file: `classes[].provisioning.gke` and `clusters[].gke`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock


class GkeMachine(MachineBlock):
    MACHINE_FIELD = "machine_type"

    machine_type: str
    disk_size_gb: Annotated[StrictInt, Field(ge=10)] = 100
    accelerator: Accelerator | None = None


class GkeCluster(ProvisionedClusterBlock):
    project: str
    region: str
    kubernetes_version: str


# The reference's entries for the keys only GKE has (the shared ones: `tooling.keys.KEYS`).
KEYS = {
    ("GkeMachine", "machineType"): KeyDoc(
        "Compute Engine machine type.", "GKE node pool `machineType`", "machineType: g2-standard-8"
    ),
    ("GkeCluster", "project"): KeyDoc("The Google Cloud project.", "the cluster's GCP provider", "project: my-project"),
}
