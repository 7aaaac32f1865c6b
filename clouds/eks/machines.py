"""EKS machine rows: shapes and on-demand prices, each with the public page it was read from.

The row type, the shared GPU spellings and the pricing rules are `infra.machines`; docs/machines.md
says how to add a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from infra.machines import (
    A10G,
    A100_40,
    H100_80,
    H200,
    L4,
    L40S,
    SKYPILOT_CATALOG,
    MachineType,
    Price,
    Unpriced,
    cpu,
    gpu,
)

AWS_ACCELERATED = "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html"
AWS_CAPACITY_BLOCKS = "https://aws.amazon.com/ec2/capacityblocks/pricing/"
AWS_GENERAL_PURPOSE = "https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html"
AWS_COMPUTE_OPTIMIZED = "https://docs.aws.amazon.com/ec2/latest/instancetypes/co.html"
SKYPILOT_AWS_V8 = f"{SKYPILOT_CATALOG}/e385a0d348eda9cefd9806423e7725944dc249e4/catalogs/v8/aws/vms.csv"


def rows() -> list[MachineType]:
    rows: list[MachineType] = [
        # 8x A100 40 GB, 96 vCPUs, 1152 GiB; 8x H100 80 GB (640 GB HBM3), 192 vCPUs, 2048 GiB;
        # 8x H200 (1128 GB HBM3), 192 vCPUs, 2048 GiB [AWS_CAPACITY_BLOCKS].
        MachineType("EKS", "p4d.24xlarge", 96, 1152, gpu("nvidia", "A100 40GB", 8, 40), A100_40, AWS_CAPACITY_BLOCKS),
        MachineType("EKS", "p5.48xlarge", 192, 2048, gpu("nvidia", "H100 80GB", 8, 80), H100_80, AWS_CAPACITY_BLOCKS),
        MachineType("EKS", "p5e.48xlarge", 192, 2048, gpu("nvidia", "H200 141GB", 8, 141), H200, AWS_CAPACITY_BLOCKS),
    ]
    # G5 (A10G 24 GB), G6 (L4 24 GB), G6e (L40S 48 GB) [AWS_ACCELERATED].
    for family, model, gib, names, mem_per_vcpu in (
        ("g5", "A10G", 24, A10G, 4),
        ("g6", "L4", 24, L4, 4),
        ("g6e", "L40S", 48, L40S, 8),
    ):
        for size, vcpus, gpus in (("xlarge", 4, 1), ("2xlarge", 8, 1), ("12xlarge", 48, 4), ("48xlarge", 192, 8)):
            rows.append(
                MachineType(
                    "EKS",
                    f"{family}.{size}",
                    vcpus,
                    vcpus * mem_per_vcpu,
                    gpu("nvidia", model, gpus, gib),
                    names,
                    AWS_ACCELERATED,
                )
            )
    # M: 4 GiB per vCPU; C: 2 GiB per vCPU [AWS_GENERAL_PURPOSE, AWS_COMPUTE_OPTIMIZED].
    for size, vcpus in (("xlarge", 4), ("2xlarge", 8), ("4xlarge", 16)):
        rows.append(cpu("EKS", f"m7i.{size}", vcpus, 4 * vcpus, AWS_GENERAL_PURPOSE))
        rows.append(cpu("EKS", f"c7i.{size}", vcpus, 2 * vcpus, AWS_COMPUTE_OPTIMIZED))
    rows.append(cpu("EKS", "m6i.xlarge", 4, 16, AWS_GENERAL_PURPOSE))
    return rows


# On-demand USD per hour, Linux, us-east-1: the catalog's `Price` column [SKYPILOT_AWS_V8], read
# 2026-12-03. It has AWS's June 2025 cut of P4d and P5 on-demand prices: p5.48xlarge is 55.04
# there, 98.32 in the same repository's catalogs/v7/aws/vms.csv at 001367d22a00 (before the cut).
PRICES: Mapping[str, tuple[Decimal, str]] = {
    "p4d.24xlarge": (Decimal("21.957642"), SKYPILOT_AWS_V8),
    "p5.48xlarge": (Decimal("55.04"), SKYPILOT_AWS_V8),
    "g5.xlarge": (Decimal("1.006"), SKYPILOT_AWS_V8),
    "g5.2xlarge": (Decimal("1.212"), SKYPILOT_AWS_V8),
    "g5.12xlarge": (Decimal("5.672"), SKYPILOT_AWS_V8),
    "g5.48xlarge": (Decimal("16.288"), SKYPILOT_AWS_V8),
    "g6.xlarge": (Decimal("0.8048"), SKYPILOT_AWS_V8),
    "g6.2xlarge": (Decimal("0.9776"), SKYPILOT_AWS_V8),
    "g6.12xlarge": (Decimal("4.6016"), SKYPILOT_AWS_V8),
    "g6.48xlarge": (Decimal("13.3504"), SKYPILOT_AWS_V8),
    "g6e.xlarge": (Decimal("1.861"), SKYPILOT_AWS_V8),
    "g6e.2xlarge": (Decimal("2.24208"), SKYPILOT_AWS_V8),
    "g6e.12xlarge": (Decimal("10.49264"), SKYPILOT_AWS_V8),
    "g6e.48xlarge": (Decimal("30.13118"), SKYPILOT_AWS_V8),
    "m6i.xlarge": (Decimal("0.192"), SKYPILOT_AWS_V8),
    "m7i.xlarge": (Decimal("0.2016"), SKYPILOT_AWS_V8),
    "m7i.2xlarge": (Decimal("0.4032"), SKYPILOT_AWS_V8),
    "m7i.4xlarge": (Decimal("0.8064"), SKYPILOT_AWS_V8),
    "c7i.xlarge": (Decimal("0.1785"), SKYPILOT_AWS_V8),
    "c7i.2xlarge": (Decimal("0.357"), SKYPILOT_AWS_V8),
    "c7i.4xlarge": (Decimal("0.714"), SKYPILOT_AWS_V8),
}

UNPRICED: Mapping[str, Unpriced] = {
    # The capacity blocks page prices p5e.48xlarge as a reservation only; the catalog has no
    # on-demand price for it in any region.
    "p5e.48xlarge": Unpriced(
        "capacity-blocks-only",
        "P5e is sold as EC2 Capacity Blocks for ML; the price list read has no on-demand price for it in any region",
        AWS_CAPACITY_BLOCKS,
    ),
}

# Spot USD per hour, Linux, us-east-1: the catalog's `SpotPrice` column [SKYPILOT_AWS_V8], read
# 2026-12-05 (`infra.machines.SPOT_READ_ON`). AWS prices spot per zone; the figure is the highest of
# the region's zones in the catalog (use1-az1 to -az6), so a pool is never counted
# cheaper than the zone it lands in. Only the rows below were read; every other EKS machine has no
# spot price here and a Spot pool of it is unpriced.
SPOT_PRICES: Mapping[str, Price] = {
    "c7i.2xlarge": (Decimal("0.1531"), SKYPILOT_AWS_V8),
    "c7i.4xlarge": (Decimal("0.3179"), SKYPILOT_AWS_V8),
    "m7i.2xlarge": (Decimal("0.1819"), SKYPILOT_AWS_V8),
    "m7i.4xlarge": (Decimal("0.5341"), SKYPILOT_AWS_V8),
    "g6.12xlarge": (Decimal("2.0357"), SKYPILOT_AWS_V8),
    # The zones differ widely: 14.246 (use1-az5) to 55.04 in use1-az1 and -az4, the on-demand price.
    "p5.48xlarge": (Decimal("55.04"), SKYPILOT_AWS_V8),
}
# p5e.48xlarge has no us-east-1 row in the catalog (spot only in other regions): none here.
