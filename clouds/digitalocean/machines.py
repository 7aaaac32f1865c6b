"""DigitalOcean machine rows: Droplet sizes for DOKS node pools, prices and regions, each with its page.

A DOKS node pool takes a Droplet size slug (`gpu-mi300x8-1536gb`); the slug names the GPUs, and
the catalog gives their model, memory, vCPUs and RAM. The row type, the shared GPU spellings and
the pricing rules are `infra.machines`; docs/machines.md says how to add a row.

Sources:
- DO_GPU_SIZES: DigitalOcean's GPU Droplet size list,
  https://docs.digitalocean.com/products/droplets/details/features/#gpu-droplets, and for the AMD
  sizes its AMD GPU Droplet guide (https://docs.digitalocean.com/products/amd/how-to/create/:
  "The single GPU Droplet size slug is `gpu-mi300x1-192gb`. The 8 GPU Droplet size slug is
  `gpu-mi300x8-1536gb`"): 1x MI300X with 20 vCPUs and 240 GB, 8x MI300X with 160 vCPUs and 1,920 GB.
- DO_PRICING: https://docs.digitalocean.com/products/droplets/details/pricing/, whose MI300X
  prices DigitalOcean's own cost model for DOKS repeats (opencost/opencost
  pkg/cloud/digitalocean/provider.go, `gpuHourly`: `gpu-mi300x1-192gb` 1.99, `gpu-mi300x8-1536gb`
  15.92; `s` family `s-4vcpu-8gb` 0.07143).
- DO_REGIONS: https://docs.digitalocean.com/products/droplets/details/availability/, the
  datacenters that offer each GPU size.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from infra.machines import H100_80, L40S, MachineType, Unpriced, cpu, gpu, offered_in

SOURCE = "DigitalOcean"
DO_GPU_SIZES = "https://docs.digitalocean.com/products/droplets/details/features/#gpu-droplets"
DO_AMD_SIZES = "https://docs.digitalocean.com/products/amd/how-to/create/"
DO_CPU_SIZES = "https://docs.digitalocean.com/products/droplets/details/pricing/"
DO_PRICING = "https://docs.digitalocean.com/products/droplets/details/pricing/"
OPENCOST_DO = "https://github.com/opencost/opencost/blob/develop/pkg/cloud/digitalocean/provider.go"
DO_REGIONS = "https://docs.digitalocean.com/products/droplets/details/availability/"

MI300X = ("amd-mi300x",)

# Where GPU Droplets run: MI300X sizes in ATL1, NVIDIA sizes in NYC2 and TOR1 (DO_REGIONS).
AMD_REGIONS = ("atl1",)
NVIDIA_REGIONS = ("nyc2", "tor1")


def rows() -> list[MachineType]:
    rows = [
        offered_in(
            MachineType(SOURCE, "gpu-mi300x1-192gb", 20, 240, gpu("amd", "MI300X", 1, 192), MI300X, DO_AMD_SIZES),
            AMD_REGIONS,
            DO_REGIONS,
        ),
        offered_in(
            MachineType(SOURCE, "gpu-mi300x8-1536gb", 160, 1920, gpu("amd", "MI300X", 8, 192), MI300X, DO_AMD_SIZES),
            AMD_REGIONS,
            DO_REGIONS,
        ),
        offered_in(
            MachineType(SOURCE, "gpu-h100x1-80gb", 20, 240, gpu("nvidia", "H100 80GB", 1, 80), H100_80, DO_GPU_SIZES),
            NVIDIA_REGIONS,
            DO_REGIONS,
        ),
        offered_in(
            MachineType(
                SOURCE, "gpu-h100x8-640gb", 160, 1920, gpu("nvidia", "H100 80GB", 8, 80), H100_80, DO_GPU_SIZES
            ),
            NVIDIA_REGIONS,
            DO_REGIONS,
        ),
        offered_in(
            MachineType(SOURCE, "gpu-l40sx1-48gb", 8, 64, gpu("nvidia", "L40S", 1, 48), L40S, DO_GPU_SIZES),
            NVIDIA_REGIONS,
            DO_REGIONS,
        ),
    ]
    # Basic (`s-`) and CPU-Optimized (`c-`) sizes: the slug is the shape; CPU-Optimized sizes have
    # 2 GB per vCPU (DO_CPU_SIZES). Offered in every datacenter, so no region list.
    rows += [cpu(SOURCE, f"s-{n}vcpu-{2 * n}gb", n, 2 * n, DO_CPU_SIZES) for n in (2, 4, 8)]
    rows += [cpu(SOURCE, f"c-{n}", n, 2 * n, DO_CPU_SIZES) for n in (4, 8, 16, 32)]
    return rows


# On-demand USD per hour. The H100 sizes stay unpriced: the readings disagree (3.39 in
# OPENCOST_DO, other public readings of the same API up to 4.89), so none is stated here.
_PRICED = {
    "gpu-mi300x1-192gb": ("1.99", f"{DO_PRICING}, {OPENCOST_DO}"),
    "gpu-mi300x8-1536gb": ("15.92", f"{DO_PRICING}, {OPENCOST_DO}"),
    "gpu-l40sx1-48gb": ("1.57", f"{DO_PRICING}, {OPENCOST_DO}"),
    # The `s` family at 0.07143 per 4 vCPUs and 8 GB, the `c` family at 0.125 per 4 vCPUs, scaled
    # by size as DigitalOcean prices them (OPENCOST_DO `slugFamilySeed`).
    "s-2vcpu-4gb": ("0.03571", OPENCOST_DO),
    "s-4vcpu-8gb": ("0.07143", OPENCOST_DO),
    "s-8vcpu-16gb": ("0.14286", OPENCOST_DO),
    "c-4": ("0.12500", OPENCOST_DO),
    "c-8": ("0.25000", OPENCOST_DO),
    "c-16": ("0.50000", OPENCOST_DO),
    "c-32": ("1.00000", OPENCOST_DO),
}

PRICES: Mapping[str, tuple[Decimal, str]] = {name: (Decimal(usd), src) for name, (usd, src) in _PRICED.items()}

_H100 = Unpriced(
    "source-conflict",
    "the public readings of DigitalOcean's size API disagree on the H100 GPU Droplets (3.39 USD an hour "
    "for one GPU in OpenCost's table, up to 4.89 in others), so no figure is taken",
    OPENCOST_DO,
)
UNPRICED: Mapping[str, Unpriced] = {"gpu-h100x1-80gb": _H100, "gpu-h100x8-640gb": _H100}
