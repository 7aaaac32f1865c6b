"""Nebius's blocks in the stack file: `classes[].provisioning.nebius` and `clusters[].nebius`."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, StrictInt, ValidationInfo, field_validator

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock

# A Nebius machine is a platform and a preset of it (`gpu-h100-sxm` with `8gpu-128vcpu-1600gb`:
# node group `template.resources`, pulumi-nebius 0.6.73 `Mk8sV1NodeGroupTemplateResourcesArgs`).
# The machine catalog names the pair `<platform>/<preset>`; neither part holds a '/'.
MACHINE_SEPARATOR = "/"

# The NVIDIA driver stack mk8s preinstalls on a GPU pool's nodes when the class names none:
# modelplaneai/modelplane apis/inferenceclasses/definition.yaml (`driversPreset`, default
# `cuda13.0`, "the only preset mk8s implements on the default Kubernetes version").
DEFAULT_DRIVERS_PRESET = "cuda13.0"

# Only 8-GPU VMs join a GPU cluster's InfiniBand fabric (nebius/nebius-solutions-library
# k8s-training/README.md: "Only nodes with 8 GPU can be added to gpu cluster with infiniband
# connection"); a preset names its GPUs first (`8gpu-128vcpu-1600gb`).
INFINIBAND_PRESET = re.compile(r"^8gpu-")


def machine_name(platform: str, preset: str) -> str:
    return f"{platform}{MACHINE_SEPARATOR}{preset}"


def machine_parts(name: str) -> tuple[str, str]:
    """(platform, preset) of a catalog name made by `machine_name`."""
    platform, _, preset = name.partition(MACHINE_SEPARATOR)
    return platform, preset


class NebiusMachine(MachineBlock):
    # The preset is the field that differs between a platform's machines; the catalog's name for
    # the machine is `<platform>/<preset>` (`machine_name`).
    MACHINE_FIELD = "preset"

    platform: Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[^/]+$")]
    preset: Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[^/]+$")]
    # modelplaneai/modelplane apis/inferenceclasses/definition.yaml: default 100, minimum 10.
    disk_size_gb: Annotated[StrictInt, Field(ge=10)] = 100
    drivers_preset: Annotated[str, Field(min_length=1, max_length=63)] = DEFAULT_DRIVERS_PRESET
    # The InfiniBand fabric a GPU cluster joins the pool's nodes to (`fabric-3`); unset: no fabric.
    infiniband_fabric: Annotated[str, Field(min_length=1, max_length=63)] | None = None
    accelerator: Accelerator | None = None

    @property
    def machine_name(self) -> str:
        return machine_name(self.platform, self.preset)

    @property
    def fabric(self) -> str | None:
        return f"InfiniBand {self.infiniband_fabric}" if self.infiniband_fabric else None

    @classmethod
    def for_machine(cls, name: str, accelerator: Accelerator | None) -> MachineBlock:
        platform, preset = machine_parts(name)
        return cls.model_validate({"platform": platform, "preset": preset, "accelerator": accelerator})

    @field_validator("infiniband_fabric")
    @classmethod
    def _fabric_needs_eight_gpus(cls, v: str | None, info: ValidationInfo) -> str | None:
        preset = info.data.get("preset")
        if v is not None and isinstance(preset, str) and not INFINIBAND_PRESET.match(preset):
            raise ValueError(
                f"an InfiniBand fabric needs an 8-GPU preset, not '{preset}': Nebius joins only 8-GPU "
                "VMs to a GPU cluster; pick an 8gpu-... preset or drop infinibandFabric"
            )
        return v


class NebiusCluster(ProvisionedClusterBlock):
    # The project every resource of the cluster is created in (`parent_id`).
    project_id: Annotated[str, Field(min_length=1, max_length=63)]
    region: str
    kubernetes_version: str


# The reference's entries for the keys only Nebius has (the shared ones: `tooling.keys.KEYS`).
KEYS = {
    ("NebiusMachine", "platform"): KeyDoc(
        "Nebius compute platform of the pool's nodes.",
        "node group `template.resources.platform`",
        "platform: gpu-h100-sxm",
    ),
    ("NebiusMachine", "preset"): KeyDoc(
        "Preset of the platform: the GPUs, vCPUs and memory of each node.",
        "node group `template.resources.preset`; the catalog names the machine `<platform>/<preset>`",
        "preset: 8gpu-128vcpu-1600gb",
    ),
    ("NebiusMachine", "driversPreset"): KeyDoc(
        "NVIDIA driver stack mk8s preinstalls on a GPU pool's nodes (default cuda13.0); ignored for CPU pools.",
        "node group `template.gpuSettings.driversPreset`",
        "driversPreset: cuda13.0",
    ),
    ("NebiusMachine", "infinibandFabric"): KeyDoc(
        "InfiniBand fabric the pool's nodes join through a GPU cluster; 8-GPU presets only.",
        "`compute_v1_gpu_cluster` `infinibandFabric`, node group `template.gpuCluster`",
        "infinibandFabric: fabric-3",
    ),
    ("NebiusCluster", "region"): KeyDoc(
        "The project's region: a Nebius project lives in one region, and the cluster runs there.",
        "the plan (machine rules, cost); the provider takes the project, not the region",
        "region: eu-north1",
    ),
    ("NebiusCluster", "projectId"): KeyDoc(
        "Nebius project the cluster's resources are created in.",
        "`parentId` of the network, subnet, cluster and GPU clusters, and the provider's `parentId`",
        "projectId: project-e00example",
    ),
}
