"""AKS's blocks in the stack file: `classes[].provisioning.aks` and `clusters[].aks`."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, StrictInt

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock

# An ND-series size whose additive features include `r`, RDMA capable: its nodes carry InfiniBand
# (https://learn.microsoft.com/azure/virtual-machines/vm-naming-conventions, "r - RDMA capable").
RDMA_ND_SIZE = re.compile(r"^Standard_ND\d+[a-z]*r[a-z]*_", re.IGNORECASE)


class AksMachine(MachineBlock):
    MACHINE_FIELD = "vm_size"

    vm_size: str
    disk_size_gb: Annotated[StrictInt, Field(ge=10)] = 100
    accelerator: Accelerator | None = None

    @property
    def fabric(self) -> str | None:
        return "InfiniBand" if RDMA_ND_SIZE.match(self.vm_size) else None


class AksCluster(ProvisionedClusterBlock):
    PLACE_FIELD = "location"

    location: str
    kubernetes_version: str


# The reference's entries for the keys only AKS has (the shared ones: `tooling.keys.KEYS`).
KEYS = {
    ("AksMachine", "vmSize"): KeyDoc("Azure VM size.", "AKS agent pool `vmSize`", "vmSize: Standard_NC24ads_A100_v4"),
    ("AksCluster", "location"): KeyDoc("The Azure location.", "the cluster's Azure provider", "location: eastus"),
}
