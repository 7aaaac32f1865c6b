"""EKS's blocks in the stack file: `classes[].provisioning.eks` and `clusters[].eks`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock


class EksMachine(MachineBlock):
    MACHINE_FIELD = "instance_type"

    instance_type: str
    disk_size_gb: Annotated[StrictInt, Field(ge=10)] = 100
    accelerator: Accelerator | None = None


class EksCluster(ProvisionedClusterBlock):
    region: str
    kubernetes_version: str
    # The region exists though the region catalog does not list it yet (`check_region`).
    uncatalogued_region: bool = False


# The reference's entries for the keys only EKS has (the shared ones: `tooling.keys.KEYS`).
KEYS = {
    ("EksMachine", "instanceType"): KeyDoc(
        "EC2 instance type.", "EKS node group `instanceTypes`", "instanceType: g6.xlarge"
    ),
}
