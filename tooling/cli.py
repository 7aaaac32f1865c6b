"""The `modelplane` command line: the offline plan, the catalog, the stack-file schema, generated files.

    modelplane plan (--stack NAME | --stack-file PATH | --all) [--json] [--out DIR] [--mode preview|update]
                    [--against OLD.json]
    modelplane catalog [--json]
    modelplane schema    print the JSON Schema of stack files
    modelplane --version

Maintainer commands, left out of `--help`: `modelplane docs` regenerates the docs generated from
code (and the schema), `modelplane golden` the golden plans of the example stacks (review the diff).

Exit codes: 0 clean, 1 an error or a mandatory violation, 2 bad usage. Bad input is reported with
the file, the path inside it and the fix; no traceback reaches the user for it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from clouds import SOURCES
from infra.cost import PRICE_FROM_CLASS, combine_totals
from infra.serving.catalog import CATALOG, supported_drivers
from tooling.analyzer import check_pack_config
from tooling.changes import (
    AgainstError,
    change_errors,
    change_lines,
    check_against,
    compare,
    plan_of,
    read_plans,
    summary,
)
from tooling.machines_doc import render_machines_doc
from tooling.plan import MODES, dumps, plan_stack
from tooling.policies_doc import render_policies_doc
from tooling.reference import SCHEMA_PATH, configuration_markdown, schema_json
from tooling.telemetry_doc import render_telemetry_doc

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def project_root() -> Path:
    """The folder holding Pulumi.yaml: the current one or a parent, else this checkout."""
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "Pulumi.yaml").is_file():
            return folder
    return Path(__file__).resolve().parents[1]


def stacks_dir() -> Path:
    return project_root() / "stacks"


def stack_files() -> list[Path]:
    return sorted(stacks_dir().glob("Pulumi.*.yaml"))


def golden_dir() -> Path:
    return project_root() / "tests" / "golden"


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(project_root()))
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------------------------
# Human output


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
        pools = node.add("pools")
        for p in cluster["pools"]:
            accel = f" {p['accelerator']['count']}x {esc(p['accelerator']['type'])}" if p["accelerator"] else ""
            size = f"{p['createdNodes']} node(s)"
            if p["minNodeCount"] is not None:
                if p["createdNodes"] != p["nodeCount"]:  # started per zone (`infra.profiles.pool_nodes`)
                    size += f" (nodeCount {p['nodeCount']} rounded up per zone)"
                size += f", {p['minNodeCount']}..{p['maxNodeCount']}"
                if p["scaleFromZero"] is not None:  # the cloud profile's `gpu_scale_from_zero`
                    size += ", scales up from zero" if p["scaleFromZero"] else ", cannot scale up from zero"
            elif p["createdNodes"] != p["nodeCount"]:  # counted per zone (`infra.profiles.pool_nodes`)
                size += f": {p['nodeCount']} in each of {p['createdNodes'] // max(p['nodeCount'], 1)} zones"
            machine = esc(f" on {p['machineType']}") if p.get("machineType") else ""
            pool = pools.add(
                f"[bold]{esc(p['name'])}[/] [magenta]{p['role']}[/]{accel}{machine} — {size}"
                f"{esc(pool_cost_text(cluster, p['name']))}"
            )
            if p.get("derived"):
                pool.add(esc(derived_text(p["derived"])))
            if p.get("zones"):
                pool.add("zones: " + listed(p["zones"]))
            pool.add(esc("labels: " + ", ".join(f"{k}={v}" for k, v in p["labels"].items())))
            if p["taints"]:
                pool.add(esc("taints: " + ", ".join(f"{t['key']}={t['value']}:{t['effect']}" for t in p["taints"])))
        if cluster.get("cost"):
            node.add(cost_text(cluster["cost"], "cost"))
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
            endpoint = d.get("endpoint")
            if endpoint:
                dep_node.add(esc(f"endpoint: {endpoint['url']} (gateway {endpoint['gateway']})"))
    if doc.get("cost"):
        root.add(cost_text(doc["cost"], "stack cost"))
    console.print(root)
    console.print(f"{len(doc['resources'])} resources registered")


def render_changes(doc: dict[str, Any], console: Console) -> None:
    """`--against`: the summary line first, then one line per resource that changes."""
    console.print(
        f"[bold]stack {esc(doc['stack'])}[/] against {esc(doc['against'])}: {summary(doc['changes'])}", soft_wrap=True
    )
    for line in change_lines(doc["changes"]):
        console.print("  " + esc(line), soft_wrap=True)


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


def render_catalog(console: Console) -> None:
    console.print(catalog_markdown(), markup=False, highlight=False)


def catalog_markdown() -> str:
    """The component-by-cloud matrix and the supported-drivers table (docs/supported-devices.md)."""
    keys: list[str] = []
    for cloud in SOURCES:
        for c in CATALOG[cloud]:
            if c.key not in keys:
                keys.append(c.key)
    lines = [
        "# Supported devices",
        "",
        "Generated by `modelplane docs` from `infra/serving/catalog.py`; do not edit by hand.",
        "",
        "## Components by cloud",
        "",
        "A component tagged with DRA drivers installs only on clusters whose pools claim one of them;",
        "an untagged one installs everywhere (`join_components` in `infra/serving/catalog.py`).",
        "",
        "| component | release | chart | version | " + " | ".join(SOURCES) + " |",
        "|---|---|---|---|" + "---|" * len(SOURCES),
    ]
    for key in keys:
        rows = {cloud: next((c for c in CATALOG[cloud] if c.key == key), None) for cloud in SOURCES}
        first = next(c for c in rows.values() if c is not None)
        cells = []
        for cloud in SOURCES:
            row = rows[cloud]
            cells.append("—" if row is None else (", ".join(row.dra_drivers) if row.dra_drivers else "always"))
        lines.append(f"| {key} | {first.release} | {first.chart} | {first.version} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Supported DRA drivers",
        "",
        "Derived from the tags above plus drivers a cloud installs outside the stack",
        "(`EXTERNAL_DRIVERS`: EKS installs `aws-dranet` for `dra.net`). A provisioned cluster whose",
        "pool claims another driver is rejected (`unsupported-devices`); an Existing cluster never is.",
        "",
        "| cloud | drivers |",
        "|---|---|",
    ]
    lines += [f"| {cloud} | {', '.join(supported_drivers(cloud))} |" for cloud in SOURCES]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Commands


def read_pack_config(path: Path) -> dict[str, Any]:
    """A pack config file as `pulumi preview --policy-pack-config` takes it: a JSON object mapping
    policy names (or `all`) to an enforcement level, or to `{"enforcementLevel": ..., <property>: ...}`."""
    from policies.pack import POLICIES_BY_NAME

    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as problem:
        raise ValueError(f"cannot read the pack config ({problem})") from None
    if not isinstance(config, dict):
        raise ValueError("the pack config is not a JSON object of policy names")
    check_pack_config(config, set(POLICIES_BY_NAME))
    return config


def cmd_plan(args: argparse.Namespace, console: Console, err: Console) -> int:
    if args.all:
        paths = stack_files()
        if not paths:
            err.print(f"no stack files (Pulumi.<stack>.yaml) in {display_path(stacks_dir())}")
            return EXIT_USAGE
    elif args.stack:
        path = stacks_dir() / f"Pulumi.{args.stack}.yaml"
        if not path.is_file():
            known = ", ".join(p.name[len("Pulumi.") : -len(".yaml")] for p in stack_files())
            err.print(f"no stack named '{args.stack}' in {display_path(stacks_dir())}; known stacks: {known}")
            return EXIT_USAGE
        paths = [path]
    else:
        path = Path(args.stack_file)
        if not path.is_file():
            err.print(f"no such stack file: {args.stack_file}")
            return EXIT_USAGE
        paths = [path]

    pack_config: dict[str, Any] = {}
    if args.policy_pack_config:
        try:
            pack_config = read_pack_config(Path(args.policy_pack_config))
        except ValueError as problem:
            err.print(escape(f"{args.policy_pack_config}: {problem}"), soft_wrap=True)
            return EXIT_USAGE
    docs = [plan_stack(p, display=display_path(p), mode=args.mode, pack_config=pack_config) for p in paths]
    if args.against:
        try:
            against(docs, Path(args.against), every=args.all)
        except AgainstError as problem:
            err.print(escape(f"--against {args.against}: {problem}"), soft_wrap=True)
            return EXIT_USAGE
    if args.out:
        write_values(Path(args.out), docs)
    # `--all` adds the fleet-wide total of every stack that planned (`infra.cost`).
    total = combine_totals([d["cost"] for d in docs if d.get("cost")]) if args.all else None
    if args.json:
        sys.stdout.write(dumps({"stacks": docs, "cost": total} if args.all else docs[0]))
        # The document stays on stdout for tools; a log (CI) still shows why a plan failed.
        for path, d in zip(paths, docs, strict=True):
            sys.stderr.writelines(line + "\n" for line in verdict_lines(d, display_path(path)))
    else:
        for d in docs:
            render_plan(d, console, err)
        if total is not None:
            console.print(cost_text(total, f"all {len(docs)} stacks"))
    return EXIT_OK if all(d["ok"] for d in docs) else EXIT_FAIL


def against(docs: Sequence[dict[str, Any]], old_path: Path, every: bool) -> None:
    """Add each plan's `changes` against its earlier plan in `old_path`; what `up` would refuse is an error.

    With `--all`, a stack the earlier document does not hold is new: every resource is a create.
    """
    olds = read_plans(old_path)
    for doc in docs:
        old = plan_of(olds, doc["stack"])
        if old is None:
            if not every:
                held = ", ".join(sorted(p["stack"] for p in olds))
                raise AgainstError(
                    f"it holds no plan of stack '{doc['stack']}' (it holds: {held}); pass an earlier plan of it"
                )
            old = {**doc, "resources": []}
        check_against(old, doc)
        doc["against"] = display_path(old_path)
        doc["changes"] = compare(old, doc)
        refused = change_errors(doc["changes"])
        if refused:
            doc["errors"] += refused
            doc["ok"] = False


def write_values(out: Path, docs: Sequence[dict[str, Any]]) -> None:
    """One values file per release: <out>/<stack>/<cluster>/<release>.yaml."""
    for d in docs:
        for cluster in d["clusters"]:
            folder = out / d["stack"] / cluster["name"]
            folder.mkdir(parents=True, exist_ok=True)
            for r in cluster["releases"]:
                header = f"# {r['name']}: {r['chart']} {r['version']} from {r['repo']} in {r['namespace']}\n"
                text = yaml.safe_dump(r["values"], sort_keys=True, default_flow_style=False)
                (folder / f"{r['name']}.yaml").write_text(header + text, encoding="utf-8")


GENERATED_DOCS = {
    "docs/supported-devices.md": catalog_markdown,
    "docs/telemetry.md": render_telemetry_doc,
    "docs/machines.md": render_machines_doc,
    "docs/configuration.md": configuration_markdown,
    "docs/policies.md": render_policies_doc,
    SCHEMA_PATH: schema_json,
}


def generated_docs() -> dict[str, str]:
    """Every generated doc, path -> text."""
    return {path: render() for path, render in GENERATED_DOCS.items()}


def cmd_docs(args: argparse.Namespace, console: Console, err: Console) -> int:
    root = project_root()
    for path, text in generated_docs().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
        console.print(f"wrote {path}")
    return EXIT_OK


def cmd_golden(args: argparse.Namespace, console: Console, err: Console) -> int:
    root = project_root()
    folder = root / "tests" / "golden"
    folder.mkdir(parents=True, exist_ok=True)
    for path in stack_files():
        doc = plan_stack(path, display=display_path(path))
        (folder / f"{doc['stack']}.json").write_text(dumps(doc), encoding="utf-8")
        console.print(f"wrote tests/golden/{doc['stack']}.json ({'clean' if doc['ok'] else 'REJECTED'})")
    return EXIT_OK


def cmd_catalog(args: argparse.Namespace, console: Console, err: Console) -> int:
    if args.json:
        sys.stdout.write(dumps(catalog_json()))
    else:
        render_catalog(console)
    return EXIT_OK


def catalog_json() -> dict[str, Any]:
    """`{"clouds": {cloud: {"supportedDrivers": [...], "components": [...]}}}`, per cloud in catalog order."""
    return {
        "clouds": {
            cloud: {
                "supportedDrivers": supported_drivers(cloud),
                "components": [
                    {
                        "key": c.key,
                        "release": c.release,
                        "chart": c.chart,
                        "repo": c.repo,
                        "version": c.version,
                        "namespace": c.namespace,
                        "draDrivers": sorted(c.dra_drivers),
                        "dependsOn": list(c.depends_on),
                    }
                    for c in CATALOG[cloud]
                ],
            }
            for cloud in SOURCES
        }
    }


def cmd_schema(args: argparse.Namespace, console: Console, err: Console) -> int:
    sys.stdout.write(schema_json())
    return EXIT_OK


def package_version() -> str:
    try:
        return version("modelplane-infra")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="modelplane", description="Offline tools for modelplane-infra stacks.")
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{plan,catalog,schema}")
    plan = sub.add_parser("plan", help="run the program offline under Pulumi's mock runtime and report")
    which = plan.add_mutually_exclusive_group(required=True)
    which.add_argument("--stack", help="plan stacks/Pulumi.<NAME>.yaml")
    which.add_argument("--stack-file", help="plan the stack file at PATH")
    which.add_argument("--all", action="store_true", help="plan every stack in stacks/")
    plan.add_argument("--json", action="store_true", help="print the plan as one JSON document")
    plan.add_argument("--out", metavar="DIR", help="write each release's values to DIR/<stack>/<cluster>/")
    plan.add_argument(
        "--policy-pack-config",
        metavar="FILE",
        help="the pack's config, as `pulumi preview --policy-pack-config` takes it (policy -> level)",
    )
    plan.add_argument(
        "--mode",
        choices=MODES,
        default="preview",
        help="preview: a first preview of a new stack (default); update: an update of a stack that exists",
    )
    plan.add_argument(
        "--against",
        metavar="OLD.json",
        help="an earlier `plan --json` of the same stack(s): say per resource what `up` would create, update, "
        "replace or delete, and refuse a protected delete or replace",
    )
    plan.set_defaults(func=cmd_plan)
    catalog = sub.add_parser("catalog", help="print the component-by-cloud matrix and supported drivers")
    catalog.add_argument("--json", action="store_true", help="print the catalog as one JSON document")
    catalog.set_defaults(func=cmd_catalog)
    sub.add_parser("schema", help="print the JSON Schema of stack files").set_defaults(func=cmd_schema)
    # No `help=`: argparse then lists neither command under the usage's subcommands.
    sub.add_parser("docs").set_defaults(func=cmd_docs)
    sub.add_parser("golden").set_defaults(func=cmd_golden)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Logs (CI, pipes) get a wide tree rather than rich's 80-column default.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
    err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 140)
    code: int = args.func(args, console, err)
    return code


if __name__ == "__main__":
    sys.exit(main())
