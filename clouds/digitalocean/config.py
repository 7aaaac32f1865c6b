"""DigitalOcean's blocks in the stack file: `classes[].provisioning.digitalocean` and `clusters[].digitalocean`."""

from __future__ import annotations

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock


class DigitalOceanMachine(MachineBlock):
    # The Droplet size slug of the pool's nodes, as DOKS node pools name it (pulumi-digitalocean
    # 4.84.1 `KubernetesNodePool(size=...)`).
    MACHINE_FIELD = "size"

    size: str
    accelerator: Accelerator | None = None


class DigitalOceanCluster(ProvisionedClusterBlock):
    region: str
    kubernetes_version: str


# The reference's entries for the keys only DigitalOcean has (the shared ones: `tooling.keys.KEYS`).
KEYS = {
    ("DigitalOceanMachine", "size"): KeyDoc(
        "Droplet size slug of the pool's nodes.",
        "DOKS node pool `size`",
        "size: gpu-mi300x8-1536gb",
    ),
}
