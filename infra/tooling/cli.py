"""The `modelplane` command line: the offline plan, the catalog, and generated files.

    modelplane plan (--stack NAME | --stack-file PATH | --all) [--json] [--out DIR]
    modelplane catalog
    modelplane docs      regenerate docs/ files that are generated from code
    modelplane golden    regenerate tests/golden/ plans (review the diff)

Exit codes: 0 clean, 1 an error or a mandatory violation, 2 bad usage. Bad input is reported with
the file, the path inside it and the fix; no traceback reaches the user for it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from components.catalog import CATALOG, CLOUDS, supported_drivers
from components.telemetry import render_telemetry_doc
from infra.tooling.plan import dumps, plan_stack

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def project_root() -> Path:
    """The folder holding Pulumi.yaml: the current one or a parent, else this checkout."""
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "Pulumi.yaml").is_file():
            return folder
    return Path(__file__).resolve().parents[2]


def stacks_dir() -> Path:
    return project_root() / "stacks"


def stack_files() -> list[Path]:
    return sorted(stacks_dir().glob("Pulumi.*.yaml"))


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


def render_plan(doc: dict[str, Any], console: Console) -> None:
    status = "[green]clean[/]" if doc["ok"] else "[red]rejected[/]"
    root = Tree(f"[bold]stack {esc(doc['stack'])}[/] — {status}")
    for cluster in doc["clusters"]:
        node = root.add(
            f"[bold cyan]{esc(cluster['name'])}[/] ({esc(cluster['source'])}) "
            f"draDrivers={esc(cluster['draDrivers'] or '[]')} supported={esc(cluster['supportedDrivers'])}"
        )
        pools = node.add("pools")
        for p in cluster["pools"]:
            accel = f" {p['accelerator']['count']}x {esc(p['accelerator']['type'])}" if p["accelerator"] else ""
            size = f"{p['nodeCount']} node(s)"
            if p["minNodeCount"] is not None:
                size += f", {p['minNodeCount']}..{p['maxNodeCount']}"
            pool = pools.add(f"[bold]{esc(p['name'])}[/] [magenta]{p['role']}[/]{accel} — {size}")
            pool.add(esc("labels: " + ", ".join(f"{k}={v}" for k, v in p["labels"].items())))
            if p["taints"]:
                pool.add(esc("taints: " + ", ".join(f"{t['key']}={t['value']}:{t['effect']}" for t in p["taints"])))
        releases = node.add(f"releases ({len(cluster['releases'])})")
        for r in cluster["releases"]:
            tags = f" [yellow]{esc(','.join(r['draDrivers']))}[/]" if r["draDrivers"] else ""
            deps = esc(f" after {', '.join(r['dependsOn'])}") if r["dependsOn"] else ""
            releases.add(esc(f"{r['name']} {r['chart']}@{r['version']} -n {r['namespace']}") + tags + deps)
    if doc.get("deployments"):
        deps_node = root.add("deployments")
        for d in doc["deployments"]:
            deps_node.add(esc(f"{d.get('name')} -> {d.get('cluster')}/{d.get('pool')}"))
    console.print(root)
    console.print(f"{len(doc['resources'])} resources registered")
    if doc["errors"] or doc["violations"]:
        table = Table(title="verdicts", show_lines=False)
        table.add_column("kind")
        table.add_column("where")
        table.add_column("message", overflow="fold")
        for e in doc["errors"]:
            table.add_row("[red]error[/]", esc(e["path"] or "-"), esc(e["message"]))
        for v in doc["violations"]:
            color = "red" if v["enforcement"] == "mandatory" else "yellow"
            table.add_row(f"[{color}]{esc(v['policy'])}[/] ({v['enforcement']})", esc(v["resource"]), esc(v["message"]))
        console.print(table)
    placement = doc.get("placement")
    if isinstance(placement, dict) and placement.get("violations"):
        console.print(f"[red]placement: {len(placement['violations'])} violation(s)[/]")


def render_catalog(console: Console) -> None:
    console.print(catalog_markdown(), markup=False, highlight=False)


def catalog_markdown() -> str:
    """The component-by-cloud matrix and the supported-drivers table (docs/supported-devices.md)."""
    keys: list[str] = []
    for cloud in CLOUDS:
        for c in CATALOG[cloud]:
            if c.key not in keys:
                keys.append(c.key)
    lines = [
        "# Supported devices",
        "",
        "Generated by `modelplane docs` from `components/catalog.py`; do not edit by hand.",
        "",
        "## Components by cloud",
        "",
        "A component tagged with DRA drivers installs only on clusters whose pools claim one of them;",
        "an untagged one installs everywhere (`join_components` in `components/catalog.py`).",
        "",
        "| component | release | chart | version | " + " | ".join(CLOUDS) + " |",
        "|---|---|---|---|" + "---|" * len(CLOUDS),
    ]
    for key in keys:
        rows = {cloud: next((c for c in CATALOG[cloud] if c.key == key), None) for cloud in CLOUDS}
        first = next(c for c in rows.values() if c is not None)
        cells = []
        for cloud in CLOUDS:
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
    lines += [f"| {cloud} | {', '.join(supported_drivers(cloud))} |" for cloud in CLOUDS]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Commands


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

    docs = [plan_stack(p, display=display_path(p)) for p in paths]
    if args.out:
        write_values(Path(args.out), docs)
    if args.json:
        sys.stdout.write(dumps({"stacks": docs} if args.all else docs[0]))
    else:
        for d in docs:
            render_plan(d, console)
    return EXIT_OK if all(d["ok"] for d in docs) else EXIT_FAIL


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


GENERATED_DOCS = {"docs/supported-devices.md": catalog_markdown, "docs/telemetry.md": render_telemetry_doc}


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
    render_catalog(console)
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="modelplane", description="Offline tools for modelplane-infra stacks.")
    sub = p.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="run the program offline under Pulumi's mock runtime and report")
    which = plan.add_mutually_exclusive_group(required=True)
    which.add_argument("--stack", help="plan stacks/Pulumi.<NAME>.yaml")
    which.add_argument("--stack-file", help="plan the stack file at PATH")
    which.add_argument("--all", action="store_true", help="plan every stack in stacks/")
    plan.add_argument("--json", action="store_true", help="print the plan as one JSON document")
    plan.add_argument("--out", metavar="DIR", help="write each release's values to DIR/<stack>/<cluster>/")
    plan.set_defaults(func=cmd_plan)
    sub.add_parser("catalog", help="print the component-by-cloud matrix and supported drivers").set_defaults(
        func=cmd_catalog
    )
    sub.add_parser("docs", help="regenerate the docs generated from code").set_defaults(func=cmd_docs)
    sub.add_parser("golden", help="regenerate tests/golden plans from stacks/").set_defaults(func=cmd_golden)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Logs (CI, pipes) get a wide tree rather than rich's 80-column default.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
    err = Console(stderr=True, highlight=False)
    code: int = args.func(args, console, err)
    return code


if __name__ == "__main__":
    sys.exit(main())
