"""AKS machine rows: shapes and on-demand prices, each with the public page it was read from.

The row type, the shared GPU spellings and the pricing rules are `infra.machines`; docs/machines.md
says how to add a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from infra.machines import A100_40, A100_80, H100_NVL, SKYPILOT_CATALOG, MachineType, Price, cpu, gpu

# Azure VM sizes as Microsoft's Aspire AKS hosting package lists them (vCPUs, RAM, GPU count per size).
_ASPIRE_AKS = "https://aspire.dev/reference/api/csharp/aspire.hosting.azure.kubernetes"
AZURE_NC_A100_V4 = f"{_ASPIRE_AKS}/standardncadsa100v4/"
AZURE_NC_H100_V5 = f"{_ASPIRE_AKS}/standardncadsh100v5/"
AZURE_ND_A100_V4 = f"{_ASPIRE_AKS}/standardndasv4a100/"
AZURE_ND_AMSR_A100_V4 = f"{_ASPIRE_AKS}/standardndamsv4a100/"
AZURE_DSV5 = f"{_ASPIRE_AKS}/standarddsv5/"
SKYPILOT_AZURE = f"{SKYPILOT_CATALOG}/098741e70562f65d7af1cceb81e33b284f742604/catalogs/v6/azure/vms.csv"


def rows() -> list[MachineType]:
    rows = [
        # NC A100 v4: A100 80 GB PCIe, 24 vCPUs and 220 GiB per GPU [AZURE_NC_A100_V4].
        MachineType(
            "AKS", "Standard_NC24ads_A100_v4", 24, 220, gpu("nvidia", "A100 80GB", 1, 80), A100_80, AZURE_NC_A100_V4
        ),
        MachineType(
            "AKS", "Standard_NC48ads_A100_v4", 48, 440, gpu("nvidia", "A100 80GB", 2, 80), A100_80, AZURE_NC_A100_V4
        ),
        MachineType(
            "AKS", "Standard_NC96ads_A100_v4", 96, 880, gpu("nvidia", "A100 80GB", 4, 80), A100_80, AZURE_NC_A100_V4
        ),
        # NC H100 v5: H100 NVL 94 GB [AZURE_NC_H100_V5].
        MachineType(
            "AKS", "Standard_NC40ads_H100_v5", 40, 320, gpu("nvidia", "H100 NVL", 1, 94), H100_NVL, AZURE_NC_H100_V5
        ),
        MachineType(
            "AKS", "Standard_NC80adis_H100_v5", 80, 640, gpu("nvidia", "H100 NVL", 2, 94), H100_NVL, AZURE_NC_H100_V5
        ),
        # ND A100 v4: 8x A100 40 GB; NDm A100 v4: 8x A100 80 GB [AZURE_ND_A100_V4, AZURE_ND_AMSR_A100_V4].
        MachineType(
            "AKS", "Standard_ND96asr_v4", 96, 900, gpu("nvidia", "A100 40GB", 8, 40), A100_40, AZURE_ND_A100_V4
        ),
        MachineType(
            "AKS",
            "Standard_ND96amsr_A100_v4",
            96,
            1800,
            gpu("nvidia", "A100 80GB", 8, 80),
            A100_80,
            AZURE_ND_AMSR_A100_V4,
        ),
    ]
    # Dsv5: 4 GiB per vCPU [AZURE_DSV5].
    rows += [cpu("AKS", f"Standard_D{n}s_v5", n, 4 * n, AZURE_DSV5) for n in (2, 4, 8, 16, 32)]
    return rows


# On-demand USD per hour in eastus, the catalog's `Price` column [SKYPILOT_AZURE]: the GPU sizes as
# read on _FIRST_READ, the Dsv5 sizes as read on 2026-12-03.
_FIRST_READ = "2026-12-01"

PRICES: Mapping[str, Price] = {
    "Standard_NC24ads_A100_v4": (Decimal("3.673"), SKYPILOT_AZURE, _FIRST_READ),
    "Standard_NC48ads_A100_v4": (Decimal("7.346"), SKYPILOT_AZURE, _FIRST_READ),
    "Standard_NC96ads_A100_v4": (Decimal("14.692"), SKYPILOT_AZURE, _FIRST_READ),
    "Standard_NC40ads_H100_v5": (Decimal("6.98"), SKYPILOT_AZURE, _FIRST_READ),
    "Standard_NC80adis_H100_v5": (Decimal("13.96"), SKYPILOT_AZURE, _FIRST_READ),
    "Standard_ND96asr_v4": (Decimal("27.197"), SKYPILOT_AZURE, _FIRST_READ),
    "Standard_ND96amsr_A100_v4": (Decimal("32.77"), SKYPILOT_AZURE, _FIRST_READ),
    "Standard_D2s_v5": (Decimal("0.096"), SKYPILOT_AZURE),
    "Standard_D4s_v5": (Decimal("0.192"), SKYPILOT_AZURE),
    "Standard_D8s_v5": (Decimal("0.384"), SKYPILOT_AZURE),
    "Standard_D16s_v5": (Decimal("0.768"), SKYPILOT_AZURE),
    "Standard_D32s_v5": (Decimal("1.536"), SKYPILOT_AZURE),
}

# Spot USD per hour in eastus, the catalog's `SpotPrice` column [SKYPILOT_AZURE], read 2026-12-05
# (`infra.machines.SPOT_READ_ON`); Azure prices spot per region, so there is one figure. For the
# H100 v5 sizes the column equals the on-demand price in every region it lists: taken as written,
# which never counts such a pool cheaper than on demand. Dsv5 sizes other than D8s_v5 were not read.
SPOT_PRICES: Mapping[str, Price] = {
    "Standard_NC24ads_A100_v4": (Decimal("0.444433"), SKYPILOT_AZURE),
    "Standard_NC48ads_A100_v4": (Decimal("0.888866"), SKYPILOT_AZURE),
    "Standard_NC96ads_A100_v4": (Decimal("1.777732"), SKYPILOT_AZURE),
    "Standard_NC40ads_H100_v5": (Decimal("6.98"), SKYPILOT_AZURE),
    "Standard_NC80adis_H100_v5": (Decimal("13.96"), SKYPILOT_AZURE),
    "Standard_ND96asr_v4": (Decimal("2.99167"), SKYPILOT_AZURE),
    "Standard_ND96amsr_A100_v4": (Decimal("3.6047"), SKYPILOT_AZURE),
    "Standard_D8s_v5": (Decimal("0.04224"), SKYPILOT_AZURE),
}
