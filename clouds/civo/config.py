"""Civo's blocks in the stack file: `classes[].provisioning.civo` and `clusters[].civo`."""

from __future__ import annotations

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock


class CivoMachine(MachineBlock):
    MACHINE_FIELD = "size"

    size: str
    accelerator: Accelerator | None = None


class CivoCluster(ProvisionedClusterBlock):
    region: str
    kubernetes_version: str


# The reference's entries for the keys only Civo has (the shared ones: `tooling.keys.KEYS`).
KEYS = {
    ("CivoMachine", "size"): KeyDoc("Civo node size.", "Civo node pool `size`", "size: g4p.kube.medium"),
}
