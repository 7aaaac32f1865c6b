"""Oracle Cloud machine rows: OCI Compute shapes for OKE node pools, with prices and regions, each with its page.

An OKE node pool takes a shape (`BM.GPU.MI300X.8`); a flexible shape also takes its OCPUs and
memory, and the catalog names it `<shape>/<ocpus>ocpu-<memory>gb` (`clouds.oci.config.machine_name`).
The row type, the shared GPU spellings and the pricing rules are `infra.machines`; docs/machines.md
says how to add a row.

Sources:
- SKYPILOT_OCI: SkyPilot's OCI catalog, built from the JSON behind Oracle's public cost estimator
  (shapes: GPUs, GPU memory, OCPUs, memory) and Oracle's public price list
  (https://www.oracle.com/cloud/price-list/, PAY_AS_YOU_GO in USD): `InstanceType` is the shape
  (`<shape>$_<vcpus>_<memory>` for a flexible one), `Price` the on-demand USD per hour, the same in
  every commercial region ("OCI prices are the same in every commercial region", its generator
  skypilot-org/skypilot sky/catalog/data_fetchers/fetch_oci.py).
- OCI_REGIONS: https://docs.oracle.com/en-us/iaas/Content/General/Concepts/regions.htm, the commercial
  (OC1) regions and how many availability domains each has, as the same generator lists them
  (`REGIONS`, "Source: ... regions.htm").
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from clouds.oci.config import machine_name
from infra.machines import A100_80, H100_80, H200, L40S, SKYPILOT_CATALOG, MachineType, Price, cpu, gpu, offered_in

SOURCE = "OCI"
SKYPILOT_OCI = f"{SKYPILOT_CATALOG}/0588751183820cf2dab5c8a89447e8aac9f73fd5/catalogs/v8/oci/vms.csv"
OCI_REGIONS = "https://docs.oracle.com/en-us/iaas/Content/General/Concepts/regions.htm"
FETCH_OCI = "https://github.com/skypilot-org/skypilot/blob/14cffac437b10b86e3b6c21b82eacc08288bd259/sky/catalog/data_fetchers/fetch_oci.py"

# The commercial regions and their availability domains (OCI_REGIONS, as FETCH_OCI `REGIONS` lists
# them): four regions have three, every other region one.
AD_COUNT: Mapping[str, int] = {
    **{
        region: 1
        for region in (
            "af-casablanca-1",
            "af-johannesburg-1",
            "ap-batam-1",
            "ap-chuncheon-1",
            "ap-hyderabad-1",
            "ap-kulai-2",
            "ap-melbourne-1",
            "ap-mumbai-1",
            "ap-osaka-1",
            "ap-seoul-1",
            "ap-singapore-1",
            "ap-singapore-2",
            "ap-sydney-1",
            "ap-tokyo-1",
            "ca-montreal-1",
            "ca-toronto-1",
            "eu-amsterdam-1",
            "eu-madrid-1",
            "eu-madrid-3",
            "eu-marseille-1",
            "eu-milan-1",
            "eu-paris-1",
            "eu-stockholm-1",
            "eu-turin-1",
            "eu-zurich-1",
            "il-jerusalem-1",
            "me-abudhabi-1",
            "me-dubai-1",
            "me-jeddah-1",
            "me-riyadh-1",
            "mx-monterrey-1",
            "mx-queretaro-1",
            "sa-bogota-1",
            "sa-santiago-1",
            "sa-saopaulo-1",
            "sa-valparaiso-1",
            "sa-vinhedo-1",
            "uk-cardiff-1",
            "us-sanjose-1",
        )
    },
    **{region: 3 for region in ("eu-frankfurt-1", "uk-london-1", "us-ashburn-1", "us-chicago-1", "us-phoenix-1")},
}
REGIONS = tuple(sorted(AD_COUNT))

MI300X = ("amd-mi300x",)
MI355X = ("amd-mi355x",)


def _shape(name: str, vcpus: int, gib: int, vendor: str, model: str, count: int, memory: int) -> MachineType:
    names = {"MI300X": MI300X, "MI355X": MI355X, "H100 80GB": H100_80, "H200 141GB": H200}
    names |= {"A100 80GB": A100_80, "L40S": L40S}
    # Oracle does not publish which regions offer which shape (FETCH_OCI: "Regional availability of
    # shapes is not published by Oracle"; its catalog lists every shape in every commercial region).
    # What is published is the regions: a pool in a region outside them is refused.
    return offered_in(
        MachineType(SOURCE, name, vcpus, gib, gpu(vendor, model, count, memory), names[model], SKYPILOT_OCI),
        REGIONS,
        OCI_REGIONS,
    )


def rows() -> list[MachineType]:
    # vCPUs (two per x86 OCPU), memory, GPUs and GPU memory (`MemoryInfo`, MiB: MI300X 196608,
    # MI355X 294912, H100 81920, H200 144384, A100-80GB 81920, L40S 49152) from SKYPILOT_OCI.
    rows = [
        _shape("BM.GPU.MI300X.8", 224, 2048, "amd", "MI300X", 8, 192),
        _shape("BM.GPU.MI355X.8", 256, 3072, "amd", "MI355X", 8, 288),
        _shape("BM.GPU.H100.8", 224, 2048, "nvidia", "H100 80GB", 8, 80),
        _shape("BM.GPU.H200.8", 224, 3072, "nvidia", "H200 141GB", 8, 141),
        _shape("BM.GPU.A100-v2.8", 256, 2048, "nvidia", "A100 80GB", 8, 80),
        _shape("BM.GPU.L40S.4", 224, 1024, "nvidia", "L40S", 4, 48),
    ]
    # The AMD EPYC flexible shape, at 4 and 8 GB per vCPU (SKYPILOT_OCI `VM.Standard.E5.Flex$_<v>_<m>`).
    for vcpus in (4, 8, 16, 32):
        for per_vcpu in (4, 8):
            name = machine_name("VM.Standard.E5.Flex", vcpus // 2, per_vcpu * vcpus)
            rows.append(offered_in(cpu(SOURCE, name, vcpus, per_vcpu * vcpus, SKYPILOT_OCI), REGIONS, OCI_REGIONS))
    return rows


# On-demand USD per hour, the catalog's `Price` (SKYPILOT_OCI; the same in every region).
_PRICED = {
    "BM.GPU.MI300X.8": "48",
    "BM.GPU.MI355X.8": "68.8",
    "BM.GPU.H100.8": "80",
    "BM.GPU.H200.8": "80",
    "BM.GPU.A100-v2.8": "32",
    "BM.GPU.L40S.4": "14",
    machine_name("VM.Standard.E5.Flex", 2, 16): "0.092",
    machine_name("VM.Standard.E5.Flex", 2, 32): "0.124",
    machine_name("VM.Standard.E5.Flex", 4, 32): "0.184",
    machine_name("VM.Standard.E5.Flex", 4, 64): "0.248",
    machine_name("VM.Standard.E5.Flex", 8, 64): "0.368",
    machine_name("VM.Standard.E5.Flex", 8, 128): "0.496",
    machine_name("VM.Standard.E5.Flex", 16, 128): "0.736",
    machine_name("VM.Standard.E5.Flex", 16, 256): "0.992",
}

PRICES: Mapping[str, Price] = {name: (Decimal(usd), SKYPILOT_OCI) for name, usd in _PRICED.items()}
