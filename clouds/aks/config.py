"""AKS's blocks in the stack file: `classes[].provisioning.aks` and `clusters[].aks`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock


class AksMachine(MachineBlock):
    MACHINE_FIELD = "vm_size"

    vm_size: str
    disk_size_gb: Annotated[StrictInt, Field(ge=10)] = 100
    accelerator: Accelerator | None = None


class AksCluster(ProvisionedClusterBlock):
    PLACE_FIELD = "location"

    location: str
    kubernetes_version: str


# The reference's entries for the keys only AKS has (the shared ones: `tooling.reference`).
KEYS = {
    ("AksMachine", "vmSize"): KeyDoc("Azure VM size.", "AKS agent pool `vmSize`", "vmSize: Standard_NC24ads_A100_v4"),
    ("AksCluster", "location"): KeyDoc("The Azure location.", "the cluster's Azure provider", "location: eastus"),
}
