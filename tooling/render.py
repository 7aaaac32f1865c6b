"""How `modelplane plan` shows a plan to a reader: the tree of clusters, pools, releases and
deployments, the cost lines, and the table of verdicts.

This module turns a plan document (`tooling.plan.plan_stack`) into text; it reads no stack file
and parses no argument (that is `tooling.cli`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from infra.cost import PRICE_FROM_CLASS
from tooling.changes import REJECTED_SUMMARY, change_lines, rejected_before_registering, summary


def esc(value: object) -> str:
    """User text (names, paths, messages) as rich prints it literally: `[/x]` is text, not markup."""
    return escape(str(value))


def listed(items: Sequence[str]) -> str:
    """A list as a reader writes it (`dra.cpu, gpu.nvidia.com`), `none` when empty; never a repr."""
    return esc(", ".join(items)) if items else "none"


def render_plan(doc: dict[str, Any], console: Console, err: Console) -> None:
    status = "[green]clean[/]" if doc["ok"] else "[red]rejected[/]"
    if "changes" in doc:
        render_changes(doc, console)
    if doc["clusters"]:
        render_tree(doc, console, status)
    else:
        err.print(f"[bold]stack {esc(doc['stack'])}[/] — {status}")
    render_verdicts(doc, err)


def render_tree(doc: dict[str, Any], console: Console, status: str) -> None:
    root = Tree(f"[bold]stack {esc(doc['stack'])}[/] — {status}")
    for cluster in doc["clusters"]:
        where = ", ".join(f"{k} {cluster[k]}" for k in ("region", "kubernetesVersion") if cluster.get(k) is not None)
        node = root.add(
            f"[bold cyan]{esc(cluster['name'])}[/] ({esc(cluster['source'])}{esc(', ' + where) if where else ''}) "
            f"draDrivers: {listed(cluster['draDrivers'])}; supported: {listed(cluster['supportedDrivers'])}"
        )
        if cluster.get("import"):
            node.add(f"[yellow]import[/] {esc(cluster['import'])} (adopted: read, not created)")
        pools = node.add("pools")
        for p in cluster["pools"]:
            accel = f" {p['accelerator']['count']}x {esc(p['accelerator']['type'])}" if p["accelerator"] else ""
            size = f"{p['createdNodes']} node(s)"
            if p["minNodeCount"] is not None:
                if p["createdNodes"] != p["nodeCount"]:  # started per zone (`infra.profiles.pool_nodes`)
                    size += f" (nodeCount {p['nodeCount']} rounded up per zone)"
                size += f", {p['minNodeCount']}..{p['maxNodeCount']}"
                if p["scaleFromZero"] is not None:  # the cloud profile's `scaling.gpu_from_zero`
                    size += ", scales up from zero" if p["scaleFromZero"] else ", cannot scale up from zero"
            elif p["createdNodes"] != p["nodeCount"]:  # counted per zone (`infra.profiles.pool_nodes`)
                size += f": {p['nodeCount']} in each of {p['createdNodes'] // max(p['nodeCount'], 1)} zones"
            machine = esc(f" on {p['machineType']}") if p.get("machineType") else ""
            pool = pools.add(
                f"[bold]{esc(p['name'])}[/] [magenta]{p['role']}[/]{accel}{machine} — {size}"
                f"{esc(pool_cost_text(cluster, p['name']))}"
            )
            if p.get("import"):
                pool.add(f"[yellow]import[/] {esc(p['import'])}")
            if p.get("derived"):
                pool.add(esc(derived_text(p["derived"])))
            if capacity := capacity_text(p):
                pool.add(esc(capacity))
            if p.get("zones"):
                pool.add("zones: " + listed(p["zones"]))
            pool.add(esc("labels: " + ", ".join(f"{k}={v}" for k, v in p["labels"].items())))
            if p["taints"]:
                pool.add(esc("taints: " + ", ".join(f"{t['key']}={t['value']}:{t['effect']}" for t in p["taints"])))
            if p.get("capacityTaints"):
                spot = ", ".join(f"{t['key']}={t['value']}:{t['effect']}" for t in p["capacityTaints"])
                pool.add(esc(f"spot taints (tolerated, not set by the program): {spot}"))
        if cluster.get("cost"):
            node.add(cost_text(cluster["cost"], "cost"))
        for cache in cluster.get("sharedCaches") or []:
            job = f", filled once by Job {cache['job']['name']}" if cache.get("job") else ""
            node.add(
                esc(
                    f"shared cache {cache['namespace']}/{cache['claim']}: {cache['model']}, {cache['size']} "
                    f"{cache['accessMode']} of {cache['storageClassName'] or '(no class)'}{job}, "
                    f"read by {', '.join(cache['deployments'])}"
                )
            )
        for own in cluster.get("preinstalled") or []:
            needed = f", needed by {', '.join(own['dependents'])}" if own["dependents"] else ""
            node.add(esc(f"relies on the cluster's own {own['key']}{needed}: {own['needs']}"))
        releases = node.add(f"releases ({len(cluster['releases'])})")
        for r in cluster["releases"]:
            tags = f" [yellow]{esc(','.join(r['draDrivers']))}[/]" if r["draDrivers"] else ""
            deps = esc(f" after {', '.join(r['dependsOn'])}") if r["dependsOn"] else ""
            releases.add(
                esc(f"{r['name']} {r['chart']}@{r['version']} {source_text(r)} -n {r['namespace']}") + tags + deps
            )
    if doc.get("deployments"):
        deps_node = root.add("deployments")
        for d in doc["deployments"]:
            dep_node = deps_node.add(esc(f"{d.get('name')} -> {d.get('cluster')}/{d.get('pool')}"))
            if d.get("groups"):
                dep_node.add(esc(groups_text(d["groups"])))
            if d.get("floor") or d.get("reclaimable"):
                dep_node.add(esc(floor_text(d)))
            endpoint = d.get("endpoint")
            if endpoint:
                dep_node.add(
                    esc(f"endpoint: {endpoint['url']} (gateway {endpoint['gateway']}, {routing_text(endpoint)})")
                )
            if d.get("picker"):
                dep_node.add(esc(picker_text(d["picker"])))
    if doc.get("fleetServices"):
        fleet_node = root.add("fleet services")
        for svc in doc["fleetServices"]:
            keys = f", callers' keys required ({svc['callerKeys']})" if svc.get("callerKeys") else ""
            node = fleet_node.add(esc(f"{svc['service']} served by {svc['cluster']}: {svc['url']}{keys}"))
            for tier, names in enumerate(svc.get("failover") or []):
                when = "by weight" if tier == 0 else "only while the tiers before it are unhealthy"
                tier_node = node.add(esc(f"tier {tier} ({when})"))
                for b in svc["backends"]:
                    if b["backend"] in names and b["tier"] == tier:
                        tier_node.add(esc(fleet_backend_text(b)))
    if doc.get("cost"):
        root.add(cost_text(doc["cost"], "stack cost"))
    console.print(root)
    console.print(f"{len(doc['resources'])} resources registered")


def render_changes(doc: dict[str, Any], console: Console) -> None:
    """`--against`: the summary line first, then one line per resource that changes."""
    said = REJECTED_SUMMARY if rejected_before_registering(doc) else summary(doc["changes"])
    console.print(f"[bold]stack {esc(doc['stack'])}[/] against {esc(doc['against'])}: {esc(said)}", soft_wrap=True)
    for line in change_lines(doc["changes"]):
        console.print("  " + esc(line), soft_wrap=True)


def routing_text(endpoint: dict[str, Any]) -> str:
    """How a service routes: by its deployment's picker, or by the gateway over Services, with a split's weights."""
    backends = endpoint.get("backends") or []
    routing = "by endpoint picker" if endpoint.get("routing") == "Picker" else "by Service"
    if len(backends) > 1:
        return f"{routing}, split " + ", ".join(f"{b['deployment']} {b['weight']:g}" for b in backends)
    return routing


def fleet_backend_text(backend: dict[str, Any]) -> str:
    """One backend of a fleet service: what it is, its weight and the address the gateway reaches."""
    if backend["kind"] == "External":
        key = ", key set" if backend.get("apiKey") else ""
        what = f"external {backend['url']} (model {backend['model']}{key})"
    else:
        what = f"deployment {backend['cluster']}/{backend['deployment']}"
    via = " over TLS" if backend["kind"] != "Local" else ""
    return f"{what}, weight {backend['weight']:g}, at {backend['address']}{via}"


def picker_text(picker: dict[str, Any]) -> str:
    scorers = ", ".join(f"{name} {weight:g}" for name, weight in (picker.get("scorers") or {}).items())
    queue = f", holds requests up to {picker['queue']}" if picker.get("queue") else ""
    return f"picker: InferencePool {picker['pool']} ({scorers}; {picker['failureMode']}{queue})"


def floor_text(deployment: Mapping[str, Any]) -> str:
    """Where a deployment's replicas stay through a reclaim: its floor and spot pool, or none kept."""
    if deployment.get("floor"):
        budget = deployment.get("disruptionBudget") or {}
        spot = deployment.get("spotReplicas")
        if spot is None:  # autoscaled: the spot pool holds what the load asks above the floor
            most = (deployment.get("groups") or {}).get("count")
            spot = f"up to {most - deployment['floor']}" if isinstance(most, int) else "the rest"
        return (
            f"floor: {deployment['floor']} on {deployment.get('pool')}, {spot} on spot pool "
            f"{deployment.get('spotPool')} (disruption budget minAvailable {budget.get('minAvailable')})"
        )
    return "floor: none, every replica on a spot pool (a reclaim can take them all)"


def groups_text(groups: Mapping[str, Any]) -> str:
    """A deployment's replicas as the tree shows them: pods on one node each, or groups of nodes.

    `replicas: 2 pods, each claiming 1 gpu.nvidia.com`, or for replicas of several nodes
    `groups: 1 x 2 nodes, 2 pods each claiming 8 gpu.nvidia.com (16 gpu.nvidia.com per group); fabric ...`;
    an autoscaled count is a range, `1..4`.
    """
    most, fewest = groups["count"], groups["minCount"]
    count = f"{fewest}..{most}" if fewest != most else f"{most}"
    claims = " + ".join(
        f"{d['count']} {d['deviceClassName']}" + "".join(f" ({k} {v})" for k, v in (d.get("capacity") or {}).items())
        for d in groups["devicesPerPod"]
    )
    if groups["nodes"] == 1:
        pods = "pod" if most == 1 else "pods"
        return f"replicas: {count} {pods}" + (f", each claiming {claims}" if claims else "")
    per_group = ", ".join(f"{n} {cls}" for cls, n in groups["devicesPerGroup"].items())
    return (
        f"groups: {count} x {groups['nodes']} nodes, {groups['podsPerGroup']} pods"
        + (f" each claiming {claims} ({per_group} per group)" if claims else "")
        + f"; fabric {groups['fabric'] or 'none'}"
    )


def derived_text(derived: dict[str, Any]) -> str:
    """What a pool's class left out, the values it took, and the catalog row (or accelerator) they came from."""
    row = derived.get("catalogRow")
    if row is None:
        origin = f"the class's accelerator {derived.get('accelerator')}"
    else:
        gpu = row.get("gpu")
        shape = f"{gpu['count']}x {gpu['vendor']} {gpu['model']}, " if gpu else ""
        origin = (
            f"catalog row {row['cloud']} {row['machineType']} ({shape}{row['vcpus']} vCPUs, "
            f"{row['memoryGib']} GiB; read {row['readOn']} from {row['source']})"
        )
    said = []
    for key, value in derived["values"].items():
        if key == "devices":
            said.append("devices " + "; ".join(device_text(d) for d in value))
        elif isinstance(value, dict):
            said.append(f"{key} {value['count']}x {value['type']}")
        else:
            said.append(f"{key} {value}")
    text = f"derived: {', '.join(said)} from {origin}"
    chosen = derived.get("chosenFrom")
    if chosen:
        others = ", ".join(f"{c['machineType']} ${c['priceUsdHour']}/h" for c in chosen[1:]) or "no other"
        text += (
            f"; chose {chosen[0]['machineType']} (${chosen[0]['priceUsdHour']}/h), the cheapest that fits (others: "
            f"{others}); name it in the class to keep it whatever the catalog says"
        )
    return text


def device_text(device: dict[str, Any]) -> str:
    """`gpu: 1x gpu.nvidia.com` or `cpu: dra.cpu, dra.cpu/cpu 6` (a device as the tree names it)."""
    capacity = "".join(f", {k} {v['value']}" for k, v in (device.get("capacity") or {}).items())
    return f"{device['name']}: {device['count']}x {device['deviceClassName']}{capacity}"


def render_verdicts(doc: dict[str, Any], err: Console) -> None:
    """Errors and policy verdicts go to stderr, so the tree on stdout stays the plan alone."""
    if doc["errors"] or doc["violations"]:
        table = Table(title="verdicts", show_lines=False)
        table.add_column("kind")
        table.add_column("where", overflow="fold")  # a path is never cut short
        table.add_column("message", overflow="fold")
        for e in doc["errors"]:
            table.add_row("[red]error[/]", esc(e["path"] or "-"), esc(e["message"]))
        for v in doc["violations"]:
            color = "red" if v["enforcement"] == "mandatory" else "yellow"
            table.add_row(f"[{color}]{esc(v['policy'])}[/] ({v['enforcement']})", esc(v["resource"]), esc(v["message"]))
        err.print(table)
    placement = doc.get("placement")
    if isinstance(placement, dict) and placement.get("violations"):
        err.print(f"[red]placement: {len(placement['violations'])} violation(s)[/]")


def verdict_lines(doc: dict[str, Any], file: str) -> list[str]:
    """Each error and policy verdict of a plan as one line: `<file>: <path or resource>: <kind>: <message>`.

    The message carries the fix. A line is never wrapped or cut, so a log keeps it whole and a
    tool can read it line by line.
    """
    lines = [f"{file}: {e['path'] or '-'}: error: {e['message']}" for e in doc["errors"]]
    lines += [
        f"{file}: {v['resource'] or '-'}: {v['policy']} ({v['enforcement']}): {v['message']}" for v in doc["violations"]
    ]
    return [" ".join(line.split()) for line in lines]


def usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}"


def capacity_text(pool: dict[str, Any]) -> str | None:
    """`capacity: <type> [<reservation>]; <price basis>; <reclaim risk>` for a pool with a price basis
    or bought otherwise than on demand; None for an on-demand pool with no price (Existing)."""
    capacity = pool.get("capacity") or {}
    kind = capacity.get("type", "OnDemand")
    if kind == "OnDemand" and not pool.get("priceBasis"):
        return None
    reservation = f" {capacity['reservation']}" if capacity.get("reservation") else ""
    parts = [f"capacity: {kind}{reservation}"]
    parts.append(pool.get("priceBasis") or "price unknown (see the cost)")
    if pool.get("reclaimRisk"):
        parts.append(pool["reclaimRisk"])
    return "; ".join(parts)


def pool_cost_text(cluster: dict[str, Any], pool: str) -> str:
    """` — $x/month` for a priced fixed pool, ` — $min..$max/month` for an autoscaled one (at
    minNodeCount..maxNodeCount, and at nodeCount where that is neither), ` — price unknown: <why>` otherwise.

    The machine itself is on the pool's line already (`on <machine>`).
    """
    costs = {c["name"]: c for c in (cluster.get("cost") or {}).get("pools", [])}
    cost = costs.get(pool)
    if not cost:
        return ""
    if cost["monthly"] is None:
        reason = cost.get("unpricedReason")
        return f" — price unknown: {reason['text']}" if reason else " — price unknown"
    own = " (the class's own price)" if cost.get("priceFrom") == PRICE_FROM_CLASS else ""
    if cost["monthlyAtMax"] is None:
        return f" — {usd(cost['unitHourly'])}/h{own}, {usd(cost['monthly'])}/month"
    text = f" — {usd(cost['unitHourly'])}/h{own}, {usd(cost['monthlyAtMin'])}..{usd(cost['monthlyAtMax'])}/month"
    if cost["monthly"] not in (cost["monthlyAtMin"], cost["monthlyAtMax"]):
        text += f" ({usd(cost['monthly'])} at nodeCount)"
    return text


def source_text(release: Mapping[str, Any]) -> str:
    """Where a release's chart comes from: its public repository, or the mirror and the pin it stands in for."""
    source = release["chartSource"]
    if source["from"] != "mirror":
        return f"from {release['repo']}"
    pin = f", pinned {source['pinnedVersion']}" if source["pinnedVersion"] != release["version"] else ""
    return f"from mirror {release['repo']} (instead of {source['publicRepo']}{pin})"


def cost_text(cost: dict[str, Any], label: str) -> str:
    """A cluster's or a stack's cost line: monthly with autoscaled pools at minNodeCount..maxNodeCount
    (and at nodeCount), and what is unpriced."""
    text = f"[green]{label}[/]: {usd(cost['monthlyAtMin'])}"
    if cost["monthlyAtMax"] != cost["monthlyAtMin"]:
        text += f"..{usd(cost['monthlyAtMax'])}"
    text += f" {cost['currency']}/month"
    if cost["monthly"] not in (cost["monthlyAtMin"], cost["monthlyAtMax"]):
        text += f" ({usd(cost['monthly'])} at nodeCount)"
    if cost.get("regionPriced"):
        text += f" at {cost['regionPriced']} prices"
    text += f" (catalog {cost['catalogDate']})"
    if cost["unpriced"]:
        text += f" [yellow]+ unpriced: {esc(', '.join(cost['unpriced']))}[/]"
    budget = cost.get("budget")
    if budget:
        over = {
            True: "[red]over budget[/]",
            False: "within budget",
            None: "[yellow]not checked: the unpriced part is unknown[/]",
        }[budget["overBudget"]]
        text += f"; budget {usd(budget['monthly'])}/month, {over}"
    return text
