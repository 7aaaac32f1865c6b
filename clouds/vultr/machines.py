"""Vultr machine rows: shapes and on-demand prices, each with the public page it was read from.

The row type, the shared GPU spellings and the pricing rules are `infra.machines`; docs/machines.md
says how to add a row.
"""

from __future__ import annotations

from collections.abc import Mapping

from infra.machines import A100_80, L40S, MachineType, Price, Unpriced, cpu, gpu, monthly

VULTR_PLANS = "https://www.vultr.com/api/#tag/plans/operation/list-plans"
VULTR_PRICING = "https://www.vultr.com/pricing/"
# Vultr publishes a monthly cost per plan (the same in every location but Sao Paulo's `-sc1` plans);
# this file is the `GET /v2/plans` list as of 2025-12-18 (vc2 plans offered in `ewr`). The hourly
# price is the monthly cost / HOURS_PER_MONTH, to 1/1000000 of a dollar.
VULTR_PLAN_LIST = (
    "https://github.com/gmartindelc/mail-server-poc/blob/d095a9fc4e5dbe3ed3797e7112a5b7d771d93bc3/terraform/PLAN_IDS.md"
)

_VULTR = f"{VULTR_PLAN_LIST} (monthly cost of 2025-12-18 / 730 hours)"


def rows() -> list[MachineType]:
    # Vultr's plan list (`GET /v2/plans`: vcpu_count, ram, gpu_type, gpu_vram_gb); plan ids spell
    # the shape (`vc2-8c-32gb`, `vcg-l40s-16c-180g-48vram`).
    rows = [
        cpu("Vultr", f"vc2-{c}c-{g}gb", c, g, VULTR_PLANS)
        for c, g in ((2, 4), (4, 8), (6, 16), (8, 32), (16, 64), (24, 96))
    ]
    rows += [
        MachineType("Vultr", "vcg-l40s-16c-180g-48vram", 16, 180, gpu("nvidia", "L40S", 1, 48), L40S, VULTR_PLANS),
        MachineType(
            "Vultr", "vcg-a100-12c-120g-80vram", 12, 120, gpu("nvidia", "A100 80GB", 1, 80), A100_80, VULTR_PLANS
        ),
    ]
    return rows


_FIRST_READ = "2026-12-01"  # the day the plan list was read

PRICES: Mapping[str, Price] = {
    "vc2-2c-4gb": (monthly(20), _VULTR, _FIRST_READ),
    "vc2-4c-8gb": (monthly(40), _VULTR, _FIRST_READ),
    "vc2-6c-16gb": (monthly(80), _VULTR, _FIRST_READ),
    "vc2-8c-32gb": (monthly(160), _VULTR, _FIRST_READ),
    "vc2-16c-64gb": (monthly(320), _VULTR, _FIRST_READ),
    "vc2-24c-96gb": (monthly(640), _VULTR, _FIRST_READ),
}

# Vultr prices its GPU plans on VULTR_PRICING and in `GET /v2/plans`, but the plan list read above
# holds only vc2 plans and no copy of either could be read for these (searched 2026-12-03). A
# reseller's table of them was found, at its own prices, and is not Vultr's.
_UNREAD = Unpriced("price-page-unread", "the copy of the plan list that could be read has no vcg plans", VULTR_PRICING)
UNPRICED: Mapping[str, Unpriced] = {
    "vcg-l40s-16c-180g-48vram": _UNREAD,
    "vcg-a100-12c-120g-80vram": _UNREAD,
}
