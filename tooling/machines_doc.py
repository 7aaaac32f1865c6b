"""docs/machines.md: every row of the machine catalog with its source and date, and how to add one."""

from __future__ import annotations

import re
from decimal import Decimal

from clouds import CLOUDS
from infra.config.clusters import CapacityType
from infra.machines import UNPRICED_REASONS


def _price(value: Decimal | None) -> str:
    return "unknown" if value is None else f"${value}"


def _price_sources() -> list[str]:
    """One line per cloud: the price lists its rows were read from, and the days they were read."""
    out = []
    for cloud in (c for c in CLOUDS if c.price_region is not None):
        sources = sorted({u for m in cloud.machines for u in re.findall(r"https://[^\s,()]+", m.price_source or "")})
        days = sorted({m.price_read_on for m in cloud.machines if m.price_read_on})
        if sources:
            out.append(f"- {cloud.source} ({cloud.price_region}): {', '.join(sources)}, read {', '.join(days)}")
        else:
            out.append(f"- {cloud.source} ({cloud.price_region}): no price list could be read (see its rows)")
    return out


def _capacity_section() -> list[str]:
    """`## Capacity`: what each cloud's pools can be bought as, from its profile (`infra.profiles.Capacities`)."""
    kinds = [k for k in CapacityType if k is not CapacityType.ON_DEMAND]
    lines = [
        "## Capacity",
        "",
        "A pool's nodes are bought on demand unless its `capacity` says otherwise: `Spot` (spot or",
        "preemptible: cheaper, and the cloud may take a node back at any time), `Reservation` (a",
        "reservation the owner holds, named by `reservation`) or `CapacityBlock` (a block of instances",
        "bought for a fixed time in one zone: `reservation`, `blockNodes`, `blockZone`). Each cloud buys a",
        "type in its own terms; a type a cloud does not offer is refused with what it offers instead",
        "(`infra/checks/capacity.py`). Civo, Vultr and DigitalOcean node pools take no capacity type.",
        "",
        "| cloud | " + " | ".join(str(k) for k in kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]
    for cloud in (c for c in CLOUDS if c.profile.provisioned):
        offered = cloud.profile.capacity.offered
        cells = [f"{offered[k].term}: {offered[k].source}" if k in offered else "—" for k in kinds]
        lines.append(f"| {cloud.source} | " + " | ".join(cells) + " |")
    lines += ["", "Where a cloud offers less, what it documents:", ""]
    lines += [
        f"- {cloud.source}: {cloud.profile.capacity.lacks}"
        for cloud in CLOUDS
        if cloud.profile.provisioned and cloud.profile.capacity.lacks
    ]
    lines += ["", "One pool per cloud (under `clusters[].nodePools`):", "", "```yaml"]
    for cloud in (c for c in CLOUDS if c.profile.capacity.example):
        lines += [f"# {cloud.source}", f"- {cloud.profile.capacity.example}"]
    lines += [
        "# Existing: the owner's spot nodes, and the taint they carry (docs/existing-clusters.md)",
        "- {name: gpu-spot, className: h100, nodeCount: 2, capacity: {type: Spot, nodeTaint: "
        '{key: example.com/spot, value: "true", effect: NoSchedule}}}',
        "```",
        "",
        "Rules, each refused at its path with the fix: a key of another type (`maxPrice` on a",
        "reservation); `maxPrice` where the cloud takes no ceiling (AKS only takes one; elsewhere a spot",
        "pool pays the spot price); a reservation without its ID, an EKS ID that is not `cr-...`, or an",
        "AKS one that is not a capacity reservation group's ARM ID;",
        "a capacity block pool that could have more nodes than `blockNodes` (`nodeCount`, or",
        "`maxNodeCount` when autoscaled) or whose `zones` are not exactly `[blockZone]`; a Nebius",
        "preemptible or reserved pool without GPUs; an OCI preemptible pool on a bare-metal shape. A GPU",
        "pool at `minNodeCount: 0` is refused where the cloud's autoscaler cannot bring it back, spot or",
        "not (docs/serving.md).",
        "",
        "An EKS capacity block's instances launch only while the block is active, and EC2 terminates",
        "them 30 minutes before its end time; scale the pool to zero before then, and to update its",
        "node group EKS asks for a desired size of 0",
        "(https://docs.aws.amazon.com/autoscaling/ec2/userguide/launch-template-capacity-blocks.html;",
        "https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html).",
        "",
        "An AKS cluster with a `Reservation` pool uses a user-assigned identity the program creates, given",
        "the role AKS asks for, `Contributor` on the resource group that holds each capacity reservation",
        "group; a system-assigned identity does not work for it, and AKS may take up to 60 minutes to see",
        "a new role assignment (https://learn.microsoft.com/azure/aks/use-capacity-reservation-groups).",
        "A cluster without one keeps its system-assigned identity. Adding the first reserved pool to a",
        "running cluster therefore switches the cluster's identity, and removing the last one switches it",
        "back: AKS updates a running cluster's identity in place",
        "(https://learn.microsoft.com/azure/aks/user-assigned-managed-identity), so `plan --against` shows",
        "an update, not a replacement; roles granted by hand to the old identity do not pass to the new",
        "one. Whoever runs `pulumi up` then needs to create role assignments on that resource group, which",
        "`Contributor` alone cannot (docs/getting-started.md).",
        "",
        "Moving a pool between capacities (`modelplane plan --against`): GKE replaces the pool",
        "(`nodeConfig.spot`, `nodeConfig.reservationAffinity`); EKS replaces the node group for a new",
        "`capacityType` (spot, capacity block) and rolls its nodes to a new launch template version for a",
        "reservation; AKS refuses a change of a pool's Spot priority, eviction policy, ceiling or capacity",
        "reservation group, so a new pool name is the route; Nebius and OCI update the pool in place (`tooling/replacements.py`",
        "names each provider source).",
        "",
        "### Deployments on reclaimable capacity",
        "",
        "A `Spot` pool is reclaimable: the cloud may take its nodes back at any time. A deployment can keep",
        "`floor` replicas on its on-demand or reserved `pool` and run the rest on a `spotPool`; each",
        "deployment gets a PodDisruptionBudget that keeps its floor; every replica on reclaimable capacity",
        "is an advisory, and a multi-node group there needs `acceptReclaim: true` (docs/serving.md,",
        '"Capacity: a floor on spot"). AKS taints its spot nodes itself',
        "(`kubernetes.azure.com/scalesetpriority=spot:NoSchedule`): every component the stack puts on them",
        "and every model placed there tolerates it.",
        "",
        'What each capacity costs, and the spot prices read: "Capacity prices" below.',
        "",
    ]
    return lines


def _spot_rows() -> list[str]:
    """One table row per machine with a spot price: the price, the on-demand one, source and day."""
    return [
        f"| {m.cloud} | `{m.name}` | {_price(m.spot_usd_hour)} | {_price(m.price_usd_hour)} | {m.spot_source} "
        f"| {m.spot_read_on} |"
        for c in CLOUDS
        for m in c.machines
        if m.spot_usd_hour is not None
    ]


def render_machines_doc() -> str:
    """docs/machines.md: every row of the catalog with its source and date, and how to add one."""
    lines = [
        "# Machine catalog",
        "",
        "Generated by `modelplane docs` from each cloud's `clouds/<cloud>/machines.py` and profile; do not edit by "
        "hand.",
        "",
        "The offline plan checks every provisioned pool against the row of its machine type",
        "(`infra.checks.machines.check_machine`) and prices it (`infra.cost`):",
        "",
        "- `machine-accelerator-mismatch`: the machine carries the GPUs the class claims (vendor, count),",
        "  and no GPU for a CPU class;",
        "- `accelerator-type-unknown`: the class's `accelerator.type` is one listed below for the machine;",
        "- `cpu-claim-exceeds-machine`: a CPU class claims at most the machine's vCPUs less those",
        "  dra-driver-cpu reserves (`driverConfig.reservedCPUs` in `infra/serving/values.py`);",
        "- `zone-outside-region`: a pool's zones are zones of its cluster's region (AKS: `1`, `2`, `3`;",
        "  Civo and Vultr have no zones); on GKE and EKS, one of the region's zones in the zone catalog",
        "  (`clouds/gke/zones.py`, `clouds/eks/zones.py`, each with its source), unless the pool sets",
        "  `uncataloguedZones: true` for a zone the catalog does not list yet;",
        "- `machine-outside-region`: a machine whose row lists the regions its cloud offers it in runs",
        "  only in one of them (Oracle publishes no shape's regions, only each tenancy's shapes through",
        "  its ListShapes call, so OCI rows list every commercial region: `clouds/oci/machines.py`);",
        "- `unknown-machine-type`: a machine type with no row here stops the run, unless the class's",
        "  provisioning block sets `uncatalogued: true` to take it unchecked and unpriced;",
        "- `cost-over-budget` (advisory; mandatory through pack config): the stack's monthly cost with",
        "  autoscaled pools at `maxNodeCount` is within `modelplane:budget.monthlyUsd`.",
        "",
        "Cost per pool is the hourly price x `nodeCount` (and x `minNodeCount` and x `maxNodeCount` when",
        "autoscaled: the plan shows both ends), per cluster plus the system pool and the control plane",
        "fee, over a 730-hour month. Every row has an",
        "on-demand price with the price list it was read from and the day, or says why it has none, as",
        "one of these reasons:",
        "",
        *(f"- `{key}`: {text}" for key, text in UNPRICED_REASONS.items()),
        "",
        "The first three are facts about the cloud; the last two say a price exists but could not be",
        "taken, and `tests/test_machines.py` holds the rows in them to a fixed list.",
        "",
        "The plan leaves a machine without a price out of the totals, lists it under `unpriced` with its",
        "reason (`unpricedReason` per pool, `unpricedReasons` per cluster in the JSON; the tree prints it",
        "on the pool's line), and never counts it as free.",
        "",
        "## Where the prices come from",
        "",
        "Each price is the on-demand rate for Linux in the one region the catalog prices its cloud in",
        "(the heading of each table below), read from a public price list at a fixed commit, so the",
        "figure can be checked and re-read. The `price source` and `price read` columns give the file and",
        "the day for every row. The price lists read:",
        "",
        *_price_sources(),
        "",
        "GCP bills a GPU machine as its machine part plus its GPUs: the price is the machine row plus the",
        "GPU row (GPU type x count) of the same region. A price changes only by re-reading its list and",
        "changing its row, its source and its date in `clouds/<cloud>/machines.py`.",
        "",
        "## The price you pay",
        "",
        "A contract rate, a discount, or a machine the catalog cannot price: a class states what one node",
        "costs its owner an hour, in USD, in its provisioning block:",
        "",
        "```yaml",
        "modelplane:classes:",
        "  - name: h100",
        "    provisioning:",
        "      provider: GKE",
        "      gke: {machineType: a3-highgpu-8g, hourlyPrice: 60}",
        "```",
        "",
        "or `pulumi config set --path 'modelplane:classes[0].provisioning.gke.hourlyPrice' 60`. The cost",
        "prices the class's pools at that figure instead of the catalog's, the plan marks it as the class's",
        'own (`priceFrom: class` in the JSON, "the class\'s own price" in the tree; catalog prices are',
        "`priceFrom: catalog`), and `cost-over-budget` counts it, so a budget can be mandatory with any",
        "machine. A value that is not a number above 0 is an error at its path (docs/configuration.md).",
        "",
        *_capacity_section(),
        "## Capacity prices",
        "",
        "A pool's `capacity` (docs/configuration.md) says how its nodes are bought, and the cost counts",
        "each pool at that capacity's price (`infra/cost.py`); the plan gives each pool its `capacity`,",
        "its `priceBasis` and its `reclaimRisk` (JSON) and a `capacity:` line (tree):",
        "",
        "- `OnDemand` (the default): the row's on-demand price above, or the class's `hourlyPrice`.",
        "- `Spot`: the row's spot price, in the same price region, from a public price list that",
        "  publishes one (below, with the day it was read). Spot prices move with demand, so the plan",
        '  says "at the spot price read on <day>", not a fixed rate. Where a cloud prices spot per zone',
        "  (AWS), the figure is the highest of the region's zones, so a pool is never counted cheaper",
        "  than the zone it lands in. A machine with no spot price here leaves a Spot pool unpriced",
        "  (`no-spot-price`), never priced at its on-demand rate or a guess. With a spot ceiling",
        "  (`capacity.maxPrice`, AKS) the pool costs at most the ceiling: the maximum (and the budget)",
        "  counts the ceiling, and a pool whose machine has no spot price here is priced at it.",
        "- `Reservation` and `CapacityBlock`: the price the owner pays, stated as `capacity.hourlyPrice`",
        "  (USD per node-hour); no public list knows it. Without it the pool is unpriced",
        "  (`no-capacity-price`).",
        "",
        "Spot nodes can be taken back by the cloud at short notice: the plan marks such pools",
        '"reclaimable at short notice". `cost-over-budget` counts every pool at its capacity\'s price, so a',
        "stack over its budget on demand can be within it on spot, and an unpriced Spot or reserved pool",
        "means the budget cannot be checked, as for any unpriced pool.",
        "",
        "Spot prices read (USD per hour; every row not listed has none here):",
        "",
        "| cloud | machine type | spot USD/hour | on-demand USD/hour | source | read |",
        "|---|---|---|---|---|---|",
        *_spot_rows(),
        "",
        "No spot price has been read for the other rows: SkyPilot's GCP and Azure catalogs carry a",
        "`SpotPrice` column not yet read for the other GKE rows and Dsv5 sizes; its OCI",
        "catalog gives the bare-metal GPU shapes none (its flexible VM shapes have one, not read here);",
        "no public spot price list was found for Civo, Vultr or DigitalOcean.",
        "",
        "## Control plane fees",
        "",
        "| cloud | USD per cluster-hour | note | source | read |",
        "|---|---|---|---|---|",
    ]
    for fee in (c.control_plane_fee for c in CLOUDS if c.control_plane_fee is not None):
        lines.append(f"| {fee.cloud} | {_price(fee.usd_hour)} | {fee.note} | {fee.source} | {fee.read_on} |")
    for cloud in (c for c in CLOUDS if c.price_region is not None):
        lines += [
            "",
            f"## {cloud.source} (prices for {cloud.price_region})",
            "",
            "| machine type | vCPUs | memory GiB | GPUs | GPU memory GiB | accelerator types | source | read "
            "| USD/hour | price source | price read |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for m in cloud.machines:
            gpus = f"{m.gpu.count}x {m.gpu.vendor} {m.gpu.model}" if m.gpu else "—"
            gib = str(m.gpu.memory_gib) if m.gpu else "—"
            types = ", ".join(f"`{t}`" for t in m.accelerator_types) or "—"
            memory = f"{m.memory_gib:g}"
            if m.unpriced is not None:
                price = f"none (`{m.unpriced.reason}`: {m.unpriced.detail})"
                price_source, price_read = m.unpriced.source, m.unpriced.read_on
            else:
                price, price_source, price_read = _price(m.price_usd_hour), str(m.price_source), str(m.price_read_on)
            lines.append(
                f"| `{m.name}` | {m.vcpus} | {memory} | {gpus} | {gib} | {types} | {m.source} | {m.read_on} "
                f"| {price} | {price_source} | {price_read} |"
            )
    lines += [
        "",
        "## Adding a machine",
        "",
        "1. Read the machine's shape on its cloud's public page: vCPUs, memory, and for a GPU machine the",
        "   GPU vendor, model, count and memory per GPU; for GKE also the accelerator type the API takes",
        "   (https://cloud.google.com/compute/docs/gpus).",
        "2. Add a row to `rows()` in the cloud's `clouds/<cloud>/machines.py` with `source` set to that",
        "   page and `read_on` to the day you read it.",
        "   Add its price to that module's `PRICES` (on-demand, Linux, for the cloud's `price_region` in",
        "   `clouds/<cloud>/__init__.py`) with the price list you read it on and the day, or, when there",
        "   is no such price, add it to `UNPRICED` with one of the reasons above and what you read: a row",
        "   with neither does not load, and `tests/test_machines.py` lists every unpriced row.",
        "3. Run `make docs` (`modelplane docs`) and commit this file with the row; the test suite fails",
        "   while it is stale.",
    ]
    return "\n".join(lines) + "\n"
