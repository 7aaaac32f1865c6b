"""Oracle Cloud's blocks in the stack file: `classes[].provisioning.oci` and `clusters[].oci`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StrictInt, model_validator

from infra.config.base import Accelerator, KeyDoc, MachineBlock, ProvisionedClusterBlock

# A flexible shape takes its OCPUs and memory from the pool (pulumi-oci 5.5.0 `NodePool`
# `node_shape_config`: "The shape configuration of the nodes", `ocpus`, `memory_in_gbs`); the
# catalog names such a machine `<shape>/<ocpus>ocpu-<memory>gb`, a fixed shape by its name.
FLEX_SUFFIX = ".Flex"
MACHINE_SEPARATOR = "/"

# AMD Instinct shapes (`BM.GPU.MI300X.8`): OKE's node pool images carry no AMD GPU driver, so an
# AMD pool names an image that does (`clouds/oci/__init__.py`, the profile, says where that is read).
AMD_SHAPE_PREFIX = "BM.GPU.MI"

# The boot volume OKE gives a node when none is set is 50 GB, its minimum (pulumi-oci 5.5.0
# `NodePoolNodeSourceDetailsArgs.boot_volume_size_in_gbs`; docs.oracle.com "Creating a Managed Node
# Pool": "the default boot volume size of 50 GB"); a GPU node's images and weights need more.
DEFAULT_BOOT_GB = 100


def machine_name(shape: str, ocpus: int | None = None, memory_in_gbs: int | None = None) -> str:
    if ocpus is None or memory_in_gbs is None:
        return shape
    return f"{shape}{MACHINE_SEPARATOR}{ocpus}ocpu-{memory_in_gbs}gb"


def machine_parts(name: str) -> tuple[str, int | None, int | None]:
    """(shape, ocpus, memory in GB) of a catalog name made by `machine_name`."""
    shape, _, config = name.partition(MACHINE_SEPARATOR)
    if not config:
        return shape, None, None
    ocpus, _, memory = config.removesuffix("gb").partition("ocpu-")
    return shape, int(ocpus), int(memory)


class OciMachine(MachineBlock):
    # The OCI Compute shape of the pool's nodes, as OKE node pools name it (pulumi-oci 5.5.0
    # `NodePool(node_shape=...)`).
    MACHINE_FIELD = "shape"

    shape: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^/]+$")]
    # A flexible shape's OCPUs and memory (`node_shape_config`); a fixed shape takes neither.
    ocpus: Annotated[StrictInt, Field(ge=1, le=256)] | None = None
    memory_in_gbs: Annotated[StrictInt, Field(ge=1, le=4096)] | None = None
    # The boot volume of each node (`node_source_details.boot_volume_size_in_gbs`; 50 is OKE's minimum).
    disk_size_gb: Annotated[StrictInt, Field(ge=50)] = DEFAULT_BOOT_GB
    # The image OCID of the pool's nodes; unset: the newest OKE image for the cluster's version.
    image_id: Annotated[str, Field(min_length=1, pattern=r"^ocid1\.image\.")] | None = None
    accelerator: Accelerator | None = None

    @property
    def machine_name(self) -> str:
        return machine_name(self.shape, self.ocpus, self.memory_in_gbs)

    @classmethod
    def for_machine(cls, name: str, accelerator: Accelerator | None) -> MachineBlock:
        shape, ocpus, memory = machine_parts(name)
        return cls.model_validate({"shape": shape, "ocpus": ocpus, "memoryInGbs": memory, "accelerator": accelerator})

    @model_validator(mode="after")
    def _shape_config(self) -> Any:
        flexible = self.shape.endswith(FLEX_SUFFIX)
        given = (self.ocpus is not None, self.memory_in_gbs is not None)
        if flexible and given != (True, True):
            raise ValueError(
                f"the flexible shape {self.shape} needs its OCPUs and memory; set both ocpus and memoryInGbs "
                "(such as ocpus: 2 and memoryInGbs: 16)"
            )
        if not flexible and any(given):
            raise ValueError(
                f"{self.shape} is a fixed shape, whose OCPUs and memory are its own; remove ocpus and memoryInGbs"
            )
        if self.shape.startswith(AMD_SHAPE_PREFIX) and self.image_id is None:
            raise ValueError(
                f"OKE's node images carry no AMD GPU driver, so {self.shape} nodes need an image that does; set "
                "imageId to the OCID of an image with the amdgpu driver (ROCm) for the cluster's Kubernetes version"
            )
        return self


class OciCluster(ProvisionedClusterBlock):
    # The compartment every resource of the cluster is created in (`compartment_id`).
    compartment_id: Annotated[str, Field(min_length=1, pattern=r"^ocid1\.(compartment|tenancy)\.")]
    region: str
    kubernetes_version: str
    # The region exists though the region catalog does not list it yet (`check_region`).
    uncatalogued_region: bool = False


# The reference's entries for the keys only Oracle Cloud has (the shared ones: `tooling.keys.KEYS`).
KEYS = {
    ("OciMachine", "shape"): KeyDoc(
        "OCI Compute shape of the pool's nodes.",
        "OKE node pool `nodeShape`",
        "shape: BM.GPU.MI300X.8",
    ),
    ("OciMachine", "ocpus"): KeyDoc(
        "OCPUs of each node of a flexible shape (one OCPU is two vCPUs on x86); fixed shapes take none.",
        "OKE node pool `nodeShapeConfig.ocpus`; the catalog names the machine `<shape>/<ocpus>ocpu-<memory>gb`",
        "ocpus: 4",
    ),
    ("OciMachine", "memoryInGbs"): KeyDoc(
        "Memory in GB of each node of a flexible shape; fixed shapes take none.",
        "OKE node pool `nodeShapeConfig.memoryInGbs`",
        "memoryInGbs: 32",
    ),
    ("OciMachine", "imageId"): KeyDoc(
        "OCID of the nodes' image; unset: the newest OKE image for the cluster's version (a GPU image on "
        "NVIDIA shapes). AMD shapes need one with the amdgpu driver.",
        "OKE node pool `nodeSourceDetails.imageId`",
        "imageId: ocid1.image.oc1.us-chicago-1.aaaaexample",
    ),
    ("OciCluster", "compartmentId"): KeyDoc(
        "OCID of the compartment the cluster's network, cluster and node pools are created in.",
        "`compartmentId` of every resource, and of the availability domain and node image look-ups",
        "compartmentId: ocid1.compartment.oc1..aaaaexample",
    ),
}
