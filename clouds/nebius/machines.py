"""Nebius machine rows: shapes and on-demand prices, each with the public page it was read from.

A Nebius machine is a platform and one of its presets, named `<platform>/<preset>` here
(`clouds.nebius.config.machine_name`). The row type, the shared GPU spellings and the pricing rules
are `infra.machines`; docs/machines.md says how to add a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from clouds.nebius.config import machine_name
from infra.machines import H100_80, H200, L40S, SKYPILOT_CATALOG, MachineType, Price, Unpriced, cpu, gpu

# SkyPilot's Nebius catalog: `InstanceType` is `<platform>_<preset>`, with the vCPUs, memory, GPUs
# (model, count, memory in MiB) and the on-demand `Price` per region.
SKYPILOT_NEBIUS = f"{SKYPILOT_CATALOG}/0082b0435f3912ae4c566856b272455cc78f4f61/catalogs/v8/nebius/vms.csv"
# Nebius's own statement of one of those prices: 1x H200 (preset 1gpu-16vcpu-200gb) is $3.50 an hour.
NEBIUS_BILLING = "https://docs.nebius.com/signup-billing/billing-changes-oct-2025"

B200 = ("nvidia-b200",)


def _gpu_row(platform: str, preset: str, vcpus: int, gib: int, model: str, count: int, memory: int) -> MachineType:
    names = {"H100 80GB": H100_80, "H200 141GB": H200, "L40S": L40S, "B200 180GB": B200}[model]
    return MachineType(
        "Nebius",
        machine_name(platform, preset),
        vcpus,
        gib,
        gpu("nvidia", model, count, memory),
        names,
        SKYPILOT_NEBIUS,
    )


def rows() -> list[MachineType]:
    # GPU memory from the catalog's `MemoryInfo` (MiB): H100 81920 (80 GiB), H200 144384 (141 GiB),
    # L40S 49152 (48 GiB), B200 184320 (180 GiB) [SKYPILOT_NEBIUS].
    rows = [
        _gpu_row("gpu-h100-sxm", "1gpu-16vcpu-200gb", 16, 200, "H100 80GB", 1, 80),
        _gpu_row("gpu-h100-sxm", "8gpu-128vcpu-1600gb", 128, 1600, "H100 80GB", 8, 80),
        _gpu_row("gpu-h200-sxm", "1gpu-16vcpu-200gb", 16, 200, "H200 141GB", 1, 141),
        _gpu_row("gpu-h200-sxm", "8gpu-128vcpu-1600gb", 128, 1600, "H200 141GB", 8, 141),
        _gpu_row("gpu-b200-sxm", "8gpu-160vcpu-1792gb", 160, 1792, "B200 180GB", 8, 180),
        _gpu_row("gpu-l40s-a", "1gpu-8vcpu-32gb", 8, 32, "L40S", 1, 48),
        _gpu_row("gpu-l40s-a", "1gpu-16vcpu-64gb", 16, 64, "L40S", 1, 48),
        _gpu_row("gpu-l40s-a", "1gpu-32vcpu-128gb", 32, 128, "L40S", 1, 48),
        _gpu_row("gpu-l40s-d", "1gpu-16vcpu-96gb", 16, 96, "L40S", 1, 48),
        _gpu_row("gpu-l40s-d", "2gpu-64vcpu-384gb", 64, 384, "L40S", 2, 48),
        _gpu_row("gpu-l40s-d", "4gpu-128vcpu-768gb", 128, 768, "L40S", 4, 48),
    ]
    # CPU platforms: 4 GiB per vCPU on cpu-d3 and cpu-e2 [SKYPILOT_NEBIUS].
    for platform in ("cpu-d3", "cpu-e2"):
        for vcpus in (4, 8, 16, 32):
            rows.append(
                cpu("Nebius", machine_name(platform, f"{vcpus}vcpu-{4 * vcpus}gb"), vcpus, 4 * vcpus, SKYPILOT_NEBIUS)
            )
    return rows


# On-demand USD per hour in eu-north1, the catalog's `Price` column [SKYPILOT_NEBIUS], read on
# _FIRST_READ; the B200 row is priced only in us-central1 there, so it is unpriced here.
_FIRST_READ = "2026-12-01"
_PRICED = {
    ("gpu-h100-sxm", "1gpu-16vcpu-200gb"): "2.95",
    ("gpu-h100-sxm", "8gpu-128vcpu-1600gb"): "23.60",
    ("gpu-h200-sxm", "1gpu-16vcpu-200gb"): "3.50",
    ("gpu-h200-sxm", "8gpu-128vcpu-1600gb"): "28.00",
    ("gpu-l40s-a", "1gpu-8vcpu-32gb"): "1.5484",
    ("gpu-l40s-a", "1gpu-16vcpu-64gb"): "1.7468",
    ("gpu-l40s-a", "1gpu-32vcpu-128gb"): "2.1436",
    ("gpu-l40s-d", "1gpu-16vcpu-96gb"): "1.8172",
    ("gpu-l40s-d", "2gpu-64vcpu-384gb"): "4.5688",
    ("gpu-l40s-d", "4gpu-128vcpu-768gb"): "9.1376",
    ("cpu-d3", "4vcpu-16gb"): "0.0992",
    ("cpu-d3", "8vcpu-32gb"): "0.1984",
    ("cpu-d3", "16vcpu-64gb"): "0.3968",
    ("cpu-d3", "32vcpu-128gb"): "0.7936",
    ("cpu-e2", "4vcpu-16gb"): "0.0992",
    ("cpu-e2", "8vcpu-32gb"): "0.1984",
    ("cpu-e2", "16vcpu-64gb"): "0.3968",
    ("cpu-e2", "32vcpu-128gb"): "0.7936",
}


def _source(platform: str, preset: str) -> str:
    if (platform, preset) == ("gpu-h200-sxm", "1gpu-16vcpu-200gb"):
        return f"{SKYPILOT_NEBIUS}, {NEBIUS_BILLING}"
    return SKYPILOT_NEBIUS


PRICES: Mapping[str, Price] = {
    machine_name(platform, preset): (Decimal(usd), _source(platform, preset), _FIRST_READ)
    for (platform, preset), usd in _PRICED.items()
}

UNPRICED: Mapping[str, Unpriced] = {
    machine_name("gpu-b200-sxm", "8gpu-160vcpu-1792gb"): Unpriced(
        "not-offered-in-price-region", "the catalog offers B200 in us-central1 only, not in eu-north1", SKYPILOT_NEBIUS
    ),
}

# Preemptible USD per hour in eu-north1, the catalog's `SpotPrice` column [SKYPILOT_NEBIUS], read
# 2026-12-05 (`infra.machines.SPOT_READ_ON`). The catalog publishes one only for these four; its
# L40S, B200 and CPU rows have none, so a Spot pool of those is unpriced.
SPOT_PRICES: Mapping[str, Price] = {
    machine_name("gpu-h100-sxm", "1gpu-16vcpu-200gb"): (Decimal("1.25"), SKYPILOT_NEBIUS),
    machine_name("gpu-h100-sxm", "8gpu-128vcpu-1600gb"): (Decimal("10.00"), SKYPILOT_NEBIUS),
    machine_name("gpu-h200-sxm", "1gpu-16vcpu-200gb"): (Decimal("1.45"), SKYPILOT_NEBIUS),
    machine_name("gpu-h200-sxm", "8gpu-128vcpu-1600gb"): (Decimal("11.60"), SKYPILOT_NEBIUS),
}
