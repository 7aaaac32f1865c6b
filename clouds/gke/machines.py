"""GKE machine rows: shapes and on-demand prices, each with the public page it was read from.

The row type, the shared GPU spellings and the pricing rules are `infra.machines`; docs/machines.md
says how to add a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from infra.machines import SKYPILOT_CATALOG, MachineType, Price, Unpriced, cpu, gpu

GCP_ACCELERATOR_MACHINES = "https://cloud.google.com/compute/docs/accelerator-optimized-machines"
GCP_GPUS = "https://cloud.google.com/compute/docs/gpus"
GCP_GENERAL_PURPOSE = "https://cloud.google.com/compute/docs/general-purpose-machines"
# GCP: a GPU machine is listed as two rows, the machine without its GPUs (`g2-standard-8`, ...) and
# its GPUs (empty InstanceType, `AcceleratorName` L4/A100/H100-MEGA/H200 x `AcceleratorCount`);
# the machine's price is the sum of the two us-central1 rows, written out below.
SKYPILOT_GCP = f"{SKYPILOT_CATALOG}/017e2502fb63c7a28757acd94002b2d6099d3e3d/catalogs/v7/gcp/vms.csv"
_GCP_GPU = f"{SKYPILOT_GCP} (machine row + GPU row)"


def rows() -> list[MachineType]:
    rows: list[MachineType] = []
    # G2: NVIDIA L4 (24 GB), GKE type `nvidia-l4` [GCP_ACCELERATOR_MACHINES, GCP_GPUS].
    for name, vcpus, mem, gpus in (
        ("g2-standard-4", 4, 16, 1),
        ("g2-standard-8", 8, 32, 1),
        ("g2-standard-12", 12, 48, 1),
        ("g2-standard-16", 16, 64, 1),
        ("g2-standard-24", 24, 96, 2),
        ("g2-standard-32", 32, 128, 1),
        ("g2-standard-48", 48, 192, 4),
        ("g2-standard-96", 96, 384, 8),
    ):
        rows.append(
            MachineType(
                "GKE", name, vcpus, mem, gpu("nvidia", "L4", gpus, 24), ("nvidia-l4",), GCP_ACCELERATOR_MACHINES
            )
        )
    # A2 Standard: A100 40 GB, type `nvidia-tesla-a100`; A2 Ultra: A100 80 GB, `nvidia-a100-80gb`.
    for name, vcpus, mem, gpus in (
        ("a2-highgpu-1g", 12, 85, 1),
        ("a2-highgpu-2g", 24, 170, 2),
        ("a2-highgpu-4g", 48, 340, 4),
        ("a2-highgpu-8g", 96, 680, 8),
        ("a2-megagpu-16g", 96, 1360, 16),
    ):
        rows.append(
            MachineType("GKE", name, vcpus, mem, gpu("nvidia", "A100 40GB", gpus, 40), ("nvidia-tesla-a100",), GCP_GPUS)
        )
    for name, vcpus, mem, gpus in (
        ("a2-ultragpu-1g", 12, 170, 1),
        ("a2-ultragpu-2g", 24, 340, 2),
        ("a2-ultragpu-4g", 48, 680, 4),
        ("a2-ultragpu-8g", 96, 1360, 8),
    ):
        rows.append(
            MachineType("GKE", name, vcpus, mem, gpu("nvidia", "A100 80GB", gpus, 80), ("nvidia-a100-80gb",), GCP_GPUS)
        )
    # A3 High: 8x H100 80 GB, 208 vCPUs, 1872 GB, `nvidia-h100-80gb` [GCP_GPUS]; A3 Mega names its
    # GPUs `nvidia-h100-mega-80gb`; A3 Ultra carries H200 (`nvidia-h200-141gb`).
    rows += [
        MachineType(
            "GKE", "a3-highgpu-8g", 208, 1872, gpu("nvidia", "H100 80GB", 8, 80), ("nvidia-h100-80gb",), GCP_GPUS
        ),
        MachineType(
            "GKE",
            "a3-megagpu-8g",
            208,
            1872,
            gpu("nvidia", "H100 80GB", 8, 80),
            ("nvidia-h100-mega-80gb",),
            GCP_ACCELERATOR_MACHINES,
        ),
        MachineType(
            "GKE",
            "a3-ultragpu-8g",
            224,
            2952,
            gpu("nvidia", "H200 141GB", 8, 141),
            ("nvidia-h200-141gb",),
            GCP_ACCELERATOR_MACHINES,
        ),
    ]
    # General purpose: standard shapes have 4 GB per vCPU [GCP_GENERAL_PURPOSE].
    for family, sizes in (("n2", (4, 8, 16, 32)), ("c3", (4, 8, 22, 44)), ("e2", (4, 8))):
        rows += [cpu("GKE", f"{family}-standard-{n}", n, 4 * n, GCP_GENERAL_PURPOSE) for n in sizes]
    return rows


# On-demand USD per hour in us-central1 [SKYPILOT_GCP], read 2026-12-03: the machine row plus the
# GPU row (AcceleratorName x AcceleratorCount) of the same zone.
L4 = {1: Decimal("0.56004"), 2: Decimal("1.12008"), 4: Decimal("2.24016"), 8: Decimal("4.48032")}
A100 = {
    1: Decimal("2.93391"),
    2: Decimal("5.86782"),
    4: Decimal("11.73563"),
    8: Decimal("23.47126"),
    16: Decimal("46.94253"),
}

PRICES: Mapping[str, tuple[Decimal, str]] = {
    "e2-standard-4": (Decimal("0.13402"), SKYPILOT_GCP),
    "e2-standard-8": (Decimal("0.26805"), SKYPILOT_GCP),
    "n2-standard-4": (Decimal("0.19424"), SKYPILOT_GCP),
    "n2-standard-8": (Decimal("0.38847"), SKYPILOT_GCP),
    "n2-standard-16": (Decimal("0.77694"), SKYPILOT_GCP),
    "n2-standard-32": (Decimal("1.55389"), SKYPILOT_GCP),
    "c3-standard-4": (Decimal("0.20161"), SKYPILOT_GCP),
    "c3-standard-8": (Decimal("0.40322"), SKYPILOT_GCP),
    "c3-standard-22": (Decimal("1.10884"), SKYPILOT_GCP),
    "c3-standard-44": (Decimal("2.21769"), SKYPILOT_GCP),
    "g2-standard-4": (Decimal("0.14679") + L4[1], _GCP_GPU),
    "g2-standard-8": (Decimal("0.29358") + L4[1], _GCP_GPU),
    "g2-standard-12": (Decimal("0.44038") + L4[1], _GCP_GPU),
    "g2-standard-16": (Decimal("0.58717") + L4[1], _GCP_GPU),
    "g2-standard-24": (Decimal("0.88075") + L4[2], _GCP_GPU),
    "g2-standard-32": (Decimal("1.17434") + L4[1], _GCP_GPU),
    "g2-standard-48": (Decimal("1.7615") + L4[4], _GCP_GPU),
    "g2-standard-96": (Decimal("3.52301") + L4[8], _GCP_GPU),
    "a2-highgpu-1g": (Decimal("0.73948") + A100[1], _GCP_GPU),
    "a2-highgpu-2g": (Decimal("1.47895") + A100[2], _GCP_GPU),
    "a2-highgpu-4g": (Decimal("2.95791") + A100[4], _GCP_GPU),
    "a2-highgpu-8g": (Decimal("5.91582") + A100[8], _GCP_GPU),
    "a2-megagpu-16g": (Decimal("8.79698") + A100[16], _GCP_GPU),
    "a3-megagpu-8g": (Decimal("9.46006") + Decimal("82.75421"), _GCP_GPU),  # + 8x H100-MEGA
    "a3-ultragpu-8g": (Decimal("12.266") + Decimal("74.49392"), _GCP_GPU),  # + 8x H200
}

# The same catalog has a GPU row for these, but its us-central1 figure cannot be the on-demand rate:
# it is under half the same GPU's row in a region whose machine rows are priced exactly alike (read
# 2026-12-03). The figure is left out rather than guessed.
_A100_80 = Unpriced(
    "source-conflict",
    "the us-central1 A100 80GB row, 1.8462 USD per GPU-hour, is under half us-east5's 4.4242, though the "
    "a2-ultragpu machine rows of the two regions are equal (1.09962 USD an hour for a2-ultragpu-1g)",
    SKYPILOT_GCP,
)
UNPRICED: Mapping[str, Unpriced] = {
    "a2-ultragpu-1g": _A100_80,
    "a2-ultragpu-2g": _A100_80,
    "a2-ultragpu-4g": _A100_80,
    "a2-ultragpu-8g": _A100_80,
    "a3-highgpu-8g": Unpriced(
        "source-conflict",
        "the us-central1 row for 8 H100 GPUs, 33.60609 USD an hour, is under half us-east4's 78.37241 and "
        "under half the same region's 8x H100-MEGA row, 82.75421, for the same machine part (9.46006)",
        SKYPILOT_GCP,
    ),
}

# Spot USD per hour in us-central1, the catalog's `SpotPrice` column [SKYPILOT_GCP], read 2026-12-05
# (`infra.machines.SPOT_READ_ON`); the same in each of the region's zones. Only these rows were
# read; the GPU machines need their GPU row's spot price too, which was not read.
SPOT_PRICES: Mapping[str, Price] = {
    "c3-standard-4": (Decimal("0.03151"), SKYPILOT_GCP),
    "c3-standard-8": (Decimal("0.06302"), SKYPILOT_GCP),
    "c3-standard-44": (Decimal("0.34663"), SKYPILOT_GCP),
}
