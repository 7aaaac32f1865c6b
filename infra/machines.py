"""The machine catalog: what each cloud's machine types carry and cost, as data.

A row is one machine type of one cloud: vCPUs, memory, its GPUs (vendor, model, count, memory per
GPU), the accelerator type strings a class may name for it, and the on-demand hourly price in USD
in the one region the catalog prices that cloud in. Every row names the public page it was read
from and the day it was read. Adding a machine is adding a row (docs/machines.md says how).

Facts only: a value we could not read on a public page is not here. A machine whose price we could
not read has `price_usd_hour=None` (the plan shows its cost as unknown, never as zero), and a
machine whose shape we could not read has no row (the plan reports it as `unknown-machine-type`).

What this module is not: the rules that compare a pool with its machine live in `infra.devices`;
the cost arithmetic lives in `infra.cost`. This module imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal

CURRENCY = "USD"

# An average month: 8760 hours a year / 12. The plan's monthly costs use it, and a price published
# only per month (Vultr) is turned into an hourly one with it.
HOURS_PER_MONTH = Decimal(730)

# The region each cloud's prices are read for. A cluster elsewhere is priced at these rates and
# says so (`regionPriced` in the plan): prices differ by region, the catalog holds one.
PRICE_REGION: Mapping[str, str] = {
    "GKE": "us-central1",
    "EKS": "us-east-1",
    "AKS": "eastus",
    "Civo": "LON1",
    "Vultr": "ewr",
}

# The day the pages below were read; `catalog_date()` is the newest of the rows' dates.
READ_ON = "2026-12-01"

# Sources, one per page read.
GCP_ACCELERATOR_MACHINES = "https://cloud.google.com/compute/docs/accelerator-optimized-machines"
GCP_GPUS = "https://cloud.google.com/compute/docs/gpus"
GCP_GENERAL_PURPOSE = "https://cloud.google.com/compute/docs/general-purpose-machines"
AWS_ACCELERATED = "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html"
AWS_CAPACITY_BLOCKS = "https://aws.amazon.com/ec2/capacityblocks/pricing/"
AWS_GENERAL_PURPOSE = "https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html"
AWS_COMPUTE_OPTIMIZED = "https://docs.aws.amazon.com/ec2/latest/instancetypes/co.html"
# Azure VM sizes as Microsoft's Aspire AKS hosting package lists them (vCPUs, RAM, GPU count per size).
_ASPIRE_AKS = "https://aspire.dev/reference/api/csharp/aspire.hosting.azure.kubernetes"
AZURE_NC_A100_V4 = f"{_ASPIRE_AKS}/standardncadsa100v4/"
AZURE_NC_H100_V5 = f"{_ASPIRE_AKS}/standardncadsh100v5/"
AZURE_ND_A100_V4 = f"{_ASPIRE_AKS}/standardndasv4a100/"
AZURE_ND_AMSR_A100_V4 = f"{_ASPIRE_AKS}/standardndamsv4a100/"
AZURE_DSV5 = f"{_ASPIRE_AKS}/standarddsv5/"
CIVO_SIZES = "https://www.civo.com/api/instances#listing-available-sizes"
VULTR_PLANS = "https://www.vultr.com/api/#tag/plans/operation/list-plans"


@dataclass(frozen=True)
class Gpu:
    """The GPUs one machine carries: `count` of one model, each with `memory_gib`."""

    vendor: str  # the accelerator-type prefix: `nvidia`, `amd`
    model: str  # as the vendor names it: `L4`, `H100 80GB`
    count: int
    memory_gib: int


@dataclass(frozen=True)
class MachineType:
    cloud: str
    name: str
    vcpus: int
    memory_gib: float
    gpu: Gpu | None
    # The accelerator `type` strings a class may set for this machine. On GKE they are the
    # accelerator types the API takes (`guestAccelerators[].type`); elsewhere the cloud takes no
    # accelerator argument (the machine type brings its GPUs) and the type only names the GPU in
    # the `modelplane.ai/gpu` label, so the accepted names are the model's common spellings.
    accelerator_types: tuple[str, ...]
    source: str
    read_on: str = READ_ON
    price_usd_hour: Decimal | None = None
    price_source: str | None = None


def _gpu(vendor: str, model: str, count: int, memory_gib: int) -> Gpu:
    return Gpu(vendor, model, count, memory_gib)


# The label spellings accepted outside GKE for each GPU model (the GKE type first, where GKE has it).
L4 = ("nvidia-l4",)
A10G = ("nvidia-a10g",)
L40S = ("nvidia-l40s",)
A100_40 = ("nvidia-tesla-a100", "nvidia-a100", "nvidia-a100-40gb")
A100_80 = ("nvidia-a100-80gb", "nvidia-a100")
H100_80 = ("nvidia-h100-80gb", "nvidia-h100")
H100_NVL = ("nvidia-h100-nvl", "nvidia-h100")
H200 = ("nvidia-h200-141gb", "nvidia-h200")


def _cpu(cloud: str, name: str, vcpus: int, memory_gib: float, source: str) -> MachineType:
    return MachineType(cloud, name, vcpus, memory_gib, None, (), source)


def _gke() -> list[MachineType]:
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
                "GKE", name, vcpus, mem, _gpu("nvidia", "L4", gpus, 24), ("nvidia-l4",), GCP_ACCELERATOR_MACHINES
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
            MachineType(
                "GKE", name, vcpus, mem, _gpu("nvidia", "A100 40GB", gpus, 40), ("nvidia-tesla-a100",), GCP_GPUS
            )
        )
    for name, vcpus, mem, gpus in (
        ("a2-ultragpu-1g", 12, 170, 1),
        ("a2-ultragpu-2g", 24, 340, 2),
        ("a2-ultragpu-4g", 48, 680, 4),
        ("a2-ultragpu-8g", 96, 1360, 8),
    ):
        rows.append(
            MachineType("GKE", name, vcpus, mem, _gpu("nvidia", "A100 80GB", gpus, 80), ("nvidia-a100-80gb",), GCP_GPUS)
        )
    # A3 High: 8x H100 80 GB, 208 vCPUs, 1872 GB, `nvidia-h100-80gb` [GCP_GPUS]; A3 Mega names its
    # GPUs `nvidia-h100-mega-80gb`; A3 Ultra carries H200 (`nvidia-h200-141gb`).
    rows += [
        MachineType(
            "GKE", "a3-highgpu-8g", 208, 1872, _gpu("nvidia", "H100 80GB", 8, 80), ("nvidia-h100-80gb",), GCP_GPUS
        ),
        MachineType(
            "GKE",
            "a3-megagpu-8g",
            208,
            1872,
            _gpu("nvidia", "H100 80GB", 8, 80),
            ("nvidia-h100-mega-80gb",),
            GCP_ACCELERATOR_MACHINES,
        ),
        MachineType(
            "GKE",
            "a3-ultragpu-8g",
            224,
            2952,
            _gpu("nvidia", "H200 141GB", 8, 141),
            ("nvidia-h200-141gb",),
            GCP_ACCELERATOR_MACHINES,
        ),
    ]
    # General purpose: standard shapes have 4 GB per vCPU [GCP_GENERAL_PURPOSE].
    for family, sizes in (("n2", (4, 8, 16, 32)), ("c3", (4, 8, 22, 44)), ("e2", (4, 8))):
        rows += [_cpu("GKE", f"{family}-standard-{n}", n, 4 * n, GCP_GENERAL_PURPOSE) for n in sizes]
    return rows


def _eks() -> list[MachineType]:
    rows: list[MachineType] = [
        # 8x A100 40 GB, 96 vCPUs, 1152 GiB; 8x H100 80 GB (640 GB HBM3), 192 vCPUs, 2048 GiB;
        # 8x H200 (1128 GB HBM3), 192 vCPUs, 2048 GiB [AWS_CAPACITY_BLOCKS].
        MachineType("EKS", "p4d.24xlarge", 96, 1152, _gpu("nvidia", "A100 40GB", 8, 40), A100_40, AWS_CAPACITY_BLOCKS),
        MachineType("EKS", "p5.48xlarge", 192, 2048, _gpu("nvidia", "H100 80GB", 8, 80), H100_80, AWS_CAPACITY_BLOCKS),
        MachineType("EKS", "p5e.48xlarge", 192, 2048, _gpu("nvidia", "H200 141GB", 8, 141), H200, AWS_CAPACITY_BLOCKS),
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
                    _gpu("nvidia", model, gpus, gib),
                    names,
                    AWS_ACCELERATED,
                )
            )
    # M: 4 GiB per vCPU; C: 2 GiB per vCPU [AWS_GENERAL_PURPOSE, AWS_COMPUTE_OPTIMIZED].
    for size, vcpus in (("xlarge", 4), ("2xlarge", 8), ("4xlarge", 16)):
        rows.append(_cpu("EKS", f"m7i.{size}", vcpus, 4 * vcpus, AWS_GENERAL_PURPOSE))
        rows.append(_cpu("EKS", f"c7i.{size}", vcpus, 2 * vcpus, AWS_COMPUTE_OPTIMIZED))
    rows.append(_cpu("EKS", "m6i.xlarge", 4, 16, AWS_GENERAL_PURPOSE))
    return rows


def _aks() -> list[MachineType]:
    rows = [
        # NC A100 v4: A100 80 GB PCIe, 24 vCPUs and 220 GiB per GPU [AZURE_NC_A100_V4].
        MachineType(
            "AKS", "Standard_NC24ads_A100_v4", 24, 220, _gpu("nvidia", "A100 80GB", 1, 80), A100_80, AZURE_NC_A100_V4
        ),
        MachineType(
            "AKS", "Standard_NC48ads_A100_v4", 48, 440, _gpu("nvidia", "A100 80GB", 2, 80), A100_80, AZURE_NC_A100_V4
        ),
        MachineType(
            "AKS", "Standard_NC96ads_A100_v4", 96, 880, _gpu("nvidia", "A100 80GB", 4, 80), A100_80, AZURE_NC_A100_V4
        ),
        # NC H100 v5: H100 NVL 94 GB [AZURE_NC_H100_V5].
        MachineType(
            "AKS", "Standard_NC40ads_H100_v5", 40, 320, _gpu("nvidia", "H100 NVL", 1, 94), H100_NVL, AZURE_NC_H100_V5
        ),
        MachineType(
            "AKS", "Standard_NC80adis_H100_v5", 80, 640, _gpu("nvidia", "H100 NVL", 2, 94), H100_NVL, AZURE_NC_H100_V5
        ),
        # ND A100 v4: 8x A100 40 GB; NDm A100 v4: 8x A100 80 GB [AZURE_ND_A100_V4, AZURE_ND_AMSR_A100_V4].
        MachineType(
            "AKS", "Standard_ND96asr_v4", 96, 900, _gpu("nvidia", "A100 40GB", 8, 40), A100_40, AZURE_ND_A100_V4
        ),
        MachineType(
            "AKS",
            "Standard_ND96amsr_A100_v4",
            96,
            1800,
            _gpu("nvidia", "A100 80GB", 8, 80),
            A100_80,
            AZURE_ND_AMSR_A100_V4,
        ),
    ]
    # Dsv5: 4 GiB per vCPU [AZURE_DSV5].
    rows += [_cpu("AKS", f"Standard_D{n}s_v5", n, 4 * n, AZURE_DSV5) for n in (2, 4, 8, 16, 32)]
    return rows


def _civo() -> list[MachineType]:
    # Civo's size list (`GET /v2/sizes`, `civo sizes ls`): cpu_cores and ram_mb per size.
    rows = [
        _cpu("Civo", name, vcpus, mem, CIVO_SIZES)
        for name, vcpus, mem in (
            ("g4s.kube.medium", 2, 4),
            ("g4s.kube.large", 4, 8),
            ("g4p.kube.small", 4, 16),
            ("g4p.kube.medium", 8, 32),
            ("g4p.kube.large", 16, 64),
            ("g4p.kube.xlarge", 32, 128),
        )
    ]
    # `an.g1.l40s.kube.x1`: 12 cores, 98304 MB, gpu_count 1, gpu_type nvidia.com/AD102GL_L40S.
    rows.append(MachineType("Civo", "an.g1.l40s.kube.x1", 12, 96, _gpu("nvidia", "L40S", 1, 48), L40S, CIVO_SIZES))
    return rows


def _vultr() -> list[MachineType]:
    # Vultr's plan list (`GET /v2/plans`: vcpu_count, ram, gpu_type, gpu_vram_gb); plan ids spell
    # the shape (`vc2-8c-32gb`, `vcg-l40s-16c-180g-48vram`).
    rows = [
        _cpu("Vultr", f"vc2-{c}c-{g}gb", c, g, VULTR_PLANS)
        for c, g in ((2, 4), (4, 8), (6, 16), (8, 32), (16, 64), (24, 96))
    ]
    rows += [
        MachineType("Vultr", "vcg-l40s-16c-180g-48vram", 16, 180, _gpu("nvidia", "L40S", 1, 48), L40S, VULTR_PLANS),
        MachineType(
            "Vultr", "vcg-a100-12c-120g-80vram", 12, 120, _gpu("nvidia", "A100 80GB", 1, 80), A100_80, VULTR_PLANS
        ),
    ]
    return rows


# --------------------------------------------------------------------------------------------
# On-demand prices (USD per hour, Linux, the PRICE_REGION of each cloud)
#
# Read in SkyPilot's public catalogs, which hold each cloud's list prices per region and zone
# (columns `InstanceType, ..., Region, AvailabilityZone, Price, SpotPrice`; `Price` is on-demand).
_SKYPILOT = "https://github.com/skypilot-org/skypilot-catalog/blob"
# GCP: a GPU machine is listed as two rows, the machine without its GPUs (`g2-standard-8`, ...) and
# its GPUs (empty InstanceType, `AcceleratorName` L4/A100/H100-MEGA/H200 x `AcceleratorCount`);
# the machine's price is the sum of the two us-central1 rows, written out below.
SKYPILOT_GCP = f"{_SKYPILOT}/017e2502fb63c7a28757acd94002b2d6099d3e3d/catalogs/v7/gcp/vms.csv"
SKYPILOT_AWS = f"{_SKYPILOT}/001367d22a0033fac286a8c71aeac7109e431bcb/catalogs/v7/aws/vms.csv"
SKYPILOT_AZURE = f"{_SKYPILOT}/098741e70562f65d7af1cceb81e33b284f742604/catalogs/v6/azure/vms.csv"
# Vultr publishes a monthly cost per plan (the same in every location but Sao Paulo's `-sc1` plans);
# this file is the `GET /v2/plans` list as of 2025-12-18 (vc2 plans offered in `ewr`). The hourly
# price is the monthly cost / HOURS_PER_MONTH, to 1/1000000 of a dollar.
VULTR_PLAN_LIST = (
    "https://github.com/gmartindelc/mail-server-poc/blob/d095a9fc4e5dbe3ed3797e7112a5b7d771d93bc3/terraform/PLAN_IDS.md"
)


_GCP_GPU = f"{SKYPILOT_GCP} (machine row + GPU row)"
_VULTR = f"{VULTR_PLAN_LIST} (monthly cost of 2025-12-18 / 730 hours)"


def _monthly(usd: int) -> Decimal:
    return (Decimal(usd) / HOURS_PER_MONTH).quantize(Decimal("0.000001"))


_D = Decimal
PRICES: Mapping[tuple[str, str], tuple[Decimal, str]] = {
    # GKE, us-central1 (machine row + GPU row where the machine has GPUs).
    ("GKE", "e2-standard-4"): (_D("0.13402"), SKYPILOT_GCP),
    ("GKE", "c3-standard-4"): (_D("0.20161"), SKYPILOT_GCP),
    ("GKE", "c3-standard-8"): (_D("0.40322"), SKYPILOT_GCP),
    ("GKE", "c3-standard-44"): (_D("2.21769"), SKYPILOT_GCP),
    ("GKE", "g2-standard-8"): (_D("0.29358") + _D("0.56004"), _GCP_GPU),  # + 1x L4
    ("GKE", "g2-standard-48"): (_D("1.7615") + _D("2.24016"), _GCP_GPU),  # + 4x L4
    ("GKE", "a2-highgpu-1g"): (_D("0.73948") + _D("2.93391"), _GCP_GPU),  # + 1x A100
    ("GKE", "a2-highgpu-2g"): (_D("1.47895") + _D("5.86782"), _GCP_GPU),  # + 2x A100
    ("GKE", "a2-highgpu-4g"): (_D("2.95791") + _D("11.73563"), _GCP_GPU),  # + 4x A100
    ("GKE", "a2-highgpu-8g"): (_D("5.91582") + _D("23.47126"), _GCP_GPU),  # + 8x A100
    ("GKE", "a2-megagpu-16g"): (_D("8.79698") + _D("46.94253"), _GCP_GPU),  # + 16x A100
    ("GKE", "a3-megagpu-8g"): (_D("9.46006") + _D("82.75421"), _GCP_GPU),  # + 8x H100-MEGA
    ("GKE", "a3-ultragpu-8g"): (_D("12.266") + _D("74.49392"), _GCP_GPU),  # + 8x H200
    # EKS, us-east-1.
    ("EKS", "g6.xlarge"): (_D("0.8048"), SKYPILOT_AWS),
    ("EKS", "g6e.xlarge"): (_D("1.861"), SKYPILOT_AWS),
    ("EKS", "m6i.xlarge"): (_D("0.192"), SKYPILOT_AWS),
    ("EKS", "m7i.2xlarge"): (_D("0.4032"), SKYPILOT_AWS),
    ("EKS", "m7i.4xlarge"): (_D("0.8064"), SKYPILOT_AWS),
    ("EKS", "p5.48xlarge"): (_D("98.32"), SKYPILOT_AWS),
    # AKS, eastus.
    ("AKS", "Standard_NC24ads_A100_v4"): (_D("3.673"), SKYPILOT_AZURE),
    ("AKS", "Standard_NC48ads_A100_v4"): (_D("7.346"), SKYPILOT_AZURE),
    ("AKS", "Standard_NC96ads_A100_v4"): (_D("14.692"), SKYPILOT_AZURE),
    ("AKS", "Standard_NC40ads_H100_v5"): (_D("6.98"), SKYPILOT_AZURE),
    ("AKS", "Standard_NC80adis_H100_v5"): (_D("13.96"), SKYPILOT_AZURE),
    ("AKS", "Standard_ND96asr_v4"): (_D("27.197"), SKYPILOT_AZURE),
    ("AKS", "Standard_ND96amsr_A100_v4"): (_D("32.77"), SKYPILOT_AZURE),
    ("AKS", "Standard_D4s_v5"): (_D("0.192"), SKYPILOT_AZURE),
    ("AKS", "Standard_D8s_v5"): (_D("0.384"), SKYPILOT_AZURE),
    # Vultr, ewr: monthly cost / HOURS_PER_MONTH.
    ("Vultr", "vc2-2c-4gb"): (_monthly(20), _VULTR),
    ("Vultr", "vc2-4c-8gb"): (_monthly(40), _VULTR),
    ("Vultr", "vc2-6c-16gb"): (_monthly(80), _VULTR),
    ("Vultr", "vc2-8c-32gb"): (_monthly(160), _VULTR),
    ("Vultr", "vc2-16c-64gb"): (_monthly(320), _VULTR),
    ("Vultr", "vc2-24c-96gb"): (_monthly(640), _VULTR),
}


def _priced(row: MachineType) -> MachineType:
    price = PRICES.get((row.cloud, row.name))
    if price is None:
        return row
    return replace(row, price_usd_hour=price[0], price_source=price[1])


MACHINES: tuple[MachineType, ...] = tuple(_priced(m) for m in (*_gke(), *_eks(), *_aks(), *_civo(), *_vultr()))

_BY_KEY: dict[tuple[str, str], MachineType] = {(m.cloud, m.name): m for m in MACHINES}
assert len(_BY_KEY) == len(MACHINES), "one row per (cloud, machine type)"
assert set(PRICES) <= set(_BY_KEY), "a price for a machine with no row"


def machine(cloud: str, name: str) -> MachineType | None:
    """The catalog row for `name` on `cloud`, or None when the catalog does not know it."""
    return _BY_KEY.get((cloud, name))


def machines_of(cloud: str) -> list[MachineType]:
    return [m for m in MACHINES if m.cloud == cloud]


# --------------------------------------------------------------------------------------------
# Control plane fees (per cluster and hour, on top of the nodes)


@dataclass(frozen=True)
class ControlPlaneFee:
    cloud: str
    usd_hour: Decimal | None  # None: no fee could be read
    note: str
    source: str
    read_on: str = READ_ON


CONTROL_PLANE_FEES: Mapping[str, ControlPlaneFee] = {
    "GKE": ControlPlaneFee(
        "GKE",
        Decimal("0.10"),
        "cluster management fee per cluster, any mode or topology; the free-tier credit is not applied",
        "https://cloud.google.com/kubernetes-engine/pricing",
    ),
    "EKS": ControlPlaneFee(
        "EKS",
        Decimal("0.10"),
        "per cluster on a Kubernetes version in standard support ($0.60 in extended support)",
        "https://aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-pricing/",
    ),
    "AKS": ControlPlaneFee(
        "AKS",
        Decimal("0"),
        "Free tier: the cluster sets no SKU tier, and Free is the default; cluster management is free",
        "https://learn.microsoft.com/dotnet/api/azure.resourcemanager.containerservice.models.managedclusterskutier",
    ),
    "Civo": ControlPlaneFee("Civo", None, "no control plane price could be read", "https://www.civo.com/pricing"),
    "Vultr": ControlPlaneFee("Vultr", None, "no control plane price could be read", "https://www.vultr.com/pricing/"),
}


def catalog_date() -> str:
    """The newest read date of any row: how fresh the catalog's facts are."""
    dates = [m.read_on for m in MACHINES] + [f.read_on for f in CONTROL_PLANE_FEES.values()]
    return max(dates)


# --------------------------------------------------------------------------------------------
# docs/machines.md


def _price(value: Decimal | None) -> str:
    return "unknown" if value is None else f"${value}"


def render_machines_doc() -> str:
    """docs/machines.md: every row of the catalog with its source and date, and how to add one."""
    lines = [
        "# Machine catalog",
        "",
        "Generated by `modelplane docs` from `infra/machines.py`; do not edit by hand.",
        "",
        "The offline plan checks every provisioned pool against the row of its machine type",
        "(`infra.devices.check_machine`) and prices it (`infra.cost`):",
        "",
        "- `machine-accelerator-mismatch`: the machine carries the GPUs the class claims (vendor, count),",
        "  and no GPU for a CPU class;",
        "- `accelerator-type-unknown`: the class's `accelerator.type` is one listed below for the machine;",
        "- `cpu-claim-exceeds-machine`: a CPU class claims at most the machine's vCPUs less those",
        "  dra-driver-cpu reserves (`driverConfig.reservedCPUs` in `components/values.py`);",
        "- `zone-outside-region`: a pool's zones are zones of its cluster's region (AKS: `1`, `2`, `3`;",
        "  Civo and Vultr have no zones);",
        "- `unknown-machine-type` (advisory): a machine type with no row here is reported, never passed",
        "  in silence;",
        "- `cost-over-budget` (advisory; mandatory through pack config): the stack's monthly cost with",
        "  autoscaled pools at `maxNodeCount` is within `modelplane:budget.monthlyUsd`.",
        "",
        "Cost per pool is the hourly price x `nodeCount` (and x `maxNodeCount` when autoscaled), per",
        "cluster plus the system pool and the control plane fee, over a 730-hour month. A price shown",
        "as unknown could not be read on a public page: the plan leaves it out of the totals and lists",
        "the machine under `unpriced`, never counts it as free.",
        "",
        "## Control plane fees",
        "",
        "| cloud | USD per cluster-hour | note | source | read |",
        "|---|---|---|---|---|",
    ]
    for fee in CONTROL_PLANE_FEES.values():
        lines.append(f"| {fee.cloud} | {_price(fee.usd_hour)} | {fee.note} | {fee.source} | {fee.read_on} |")
    for cloud, region in PRICE_REGION.items():
        lines += [
            "",
            f"## {cloud} (prices for {region})",
            "",
            "| machine type | vCPUs | memory GiB | GPUs | GPU memory GiB | accelerator types | USD/hour | source | read |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for m in machines_of(cloud):
            gpus = f"{m.gpu.count}x {m.gpu.vendor} {m.gpu.model}" if m.gpu else "—"
            gib = str(m.gpu.memory_gib) if m.gpu else "—"
            types = ", ".join(f"`{t}`" for t in m.accelerator_types) or "—"
            memory = f"{m.memory_gib:g}"
            source = (
                m.source if m.price_source is None or m.price_source == m.source else f"{m.source}, {m.price_source}"
            )
            lines.append(
                f"| `{m.name}` | {m.vcpus} | {memory} | {gpus} | {gib} | {types} | {_price(m.price_usd_hour)} | {source} | {m.read_on} |"
            )
    lines += [
        "",
        "## Adding a machine",
        "",
        "1. Read the machine's shape on its cloud's public page: vCPUs, memory, and for a GPU machine the",
        "   GPU vendor, model, count and memory per GPU; for GKE also the accelerator type the API takes",
        "   (https://cloud.google.com/compute/docs/gpus).",
        "2. Add a row to the cloud's list in `infra/machines.py` with `source` set to that page and",
        "   `read_on` to the day you read it. Add `price_usd_hour` (on-demand, Linux, for the region in",
        "   `PRICE_REGION`) and `price_source` only when you read the price on the cloud's price page;",
        "   otherwise leave the price unknown.",
        "3. Run `make docs` (`modelplane docs`) and commit this file with the row; the test suite fails",
        "   while it is stale.",
    ]
    return "\n".join(lines) + "\n"
