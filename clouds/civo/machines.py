"""Civo machine rows: shapes and on-demand prices, each with the public page it was read from.

The row type, the shared GPU spellings and the pricing rules are `infra.machines`; docs/machines.md
says how to add a row.
"""

from __future__ import annotations

from collections.abc import Mapping

from infra.machines import L40S, MachineType, Unpriced, cpu, gpu

CIVO_SIZES = "https://www.civo.com/api/instances#listing-available-sizes"
CIVO_PRICING = "https://www.civo.com/pricing"


def rows() -> list[MachineType]:
    # Civo's size list (`GET /v2/sizes`, `civo sizes ls`): cpu_cores and ram_mb per size.
    rows = [
        cpu("Civo", name, vcpus, mem, CIVO_SIZES)
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
    rows.append(MachineType("Civo", "an.g1.l40s.kube.x1", 12, 96, gpu("nvidia", "L40S", 1, 48), L40S, CIVO_SIZES))
    return rows


# Civo publishes its node prices on CIVO_PRICING, but no copy of that page, nor any other public
# listing of them, could be read for this catalog (searched 2026-12-03); the size list carries no price.
_UNREAD = Unpriced(
    "price-page-unread", "Civo's size list carries no price, and its price page could not be read", CIVO_PRICING
)
UNPRICED: Mapping[str, Unpriced] = {row.name: _UNREAD for row in rows()}
