"""Vultr's blocks in the stack file: `classes[].provisioning.vultr` and `clusters[].vultr`."""

from __future__ import annotations

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock


class VultrMachine(MachineBlock):
    MACHINE_FIELD = "plan"

    plan: str
    accelerator: Accelerator | None = None


class VultrCluster(ProvisionedClusterBlock):
    region: str
    kubernetes_version: str


# The reference's entries for the keys only Vultr has (the shared ones: `tooling.keys.KEYS`).
KEYS = {
    ("VultrMachine", "plan"): KeyDoc("Vultr plan.", "Vultr node pool `plan`", "plan: vcg-l40s-16c-180g-48vram"),
}
