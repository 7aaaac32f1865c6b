"""The `modelplane` command line: the offline plan, the catalog, the stack-file schema, generated files.

    modelplane plan (--stack NAME | --stack-file PATH | --all) [--json] [--out DIR] [--mode preview|update]
                    [--against OLD.json]
    modelplane catalog [--json]
    modelplane schema    print the JSON Schema of stack files
    modelplane from-modelplane FILE... [-o Pulumi.<stack>.yaml] [--gke-project ID] [--nebius-project-id ID]
                    [--nebius-region REGION] [--keep-paths]
    modelplane --version

Maintainer commands, left out of `--help`: `modelplane docs` regenerates the docs generated from
code (and the schema), `modelplane golden` the golden plans of the example stacks (review the diff).

Exit codes: 0 clean, 1 an error or a mandatory violation, 2 bad usage. Bad input is reported with
the file, the path inside it and the fix; no traceback reaches the user for it.

This module parses arguments and runs the commands; how a plan is shown is `tooling.render`, and
which docs are generated from code is `tooling.generated`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape

from infra.cost import combine_totals
from tooling.analyzer import check_pack_config
from tooling.catalog_doc import catalog_json, catalog_markdown
from tooling.changes import AgainstError, change_errors, check_against, compare, plan_of, read_plans
from tooling.generated import generated_docs
from tooling.plan import MODES, dumps, plan_stack
from tooling.reference import schema_json
from tooling.render import cost_text, render_plan, verdict_lines

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
        console.print(catalog_markdown(), markup=False, highlight=False)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace, console: Console, err: Console) -> int:
    sys.stdout.write(schema_json())
    return EXIT_OK


def cmd_from_modelplane(args: argparse.Namespace, console: Console, err: Console) -> int:
    from tooling.from_modelplane import ConvertError, Options, convert, read_files, stack_text, summary
    from tooling.from_modelplane.platform import CLUSTER_FLAGS

    given = {key: getattr(args, flag[2:].replace("-", "_")) for key, flag in CLUSTER_FLAGS.items()}
    options = Options(cluster_values={k: v for k, v in given.items() if v}, keep_paths=args.keep_paths)
    try:
        conv = convert(read_files(Path(f) for f in args.files), options)
    except ConvertError as problem:
        for line in problem.problems:
            err.print(escape(line), soft_wrap=True)
        return EXIT_FAIL
    text = stack_text(conv, [Path(f).name for f in args.files])
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        err.print(escape(f"wrote {args.out}: {summary(conv)}"), soft_wrap=True)
    else:
        sys.stdout.write(text)
        err.print(escape(summary(conv)), soft_wrap=True)
    for note in conv.notes:
        err.print(escape(note.line()[2:]), soft_wrap=True)
    return EXIT_OK


def package_version() -> str:
    try:
        return version("modelplane-infra")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="modelplane", description="Offline tools for modelplane-infra stacks.")
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{plan,catalog,schema,from-modelplane}")
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
    convert = sub.add_parser(
        "from-modelplane",
        help="write a stack file from modelplane XRs, noting each field it could not map",
        description="Read modelplane XRs (InferenceClass, InferenceCluster, ModelDeployment, ModelCache, "
        "ModelService, ModelEndpoint) and write a stack file, with a comment line for every field not mapped.",
    )
    convert.add_argument("files", nargs="+", metavar="FILE", help="YAML manifests, several documents each")
    convert.add_argument(
        "-o", "--out", metavar="Pulumi.<stack>.yaml", help="write the stack file here (default: stdout)"
    )
    convert.add_argument(
        "--gke-project", metavar="ID", help="the GCP project of GKE clusters (modelplane's ProviderConfig holds it)"
    )
    convert.add_argument("--nebius-project-id", metavar="ID", help="the Nebius project of Nebius clusters")
    convert.add_argument("--nebius-region", metavar="REGION", help="the region of that Nebius project")
    convert.add_argument(
        "--keep-paths",
        action="store_true",
        help="route each service at modelplane's /<namespace>/<service> path instead of ours, /<service>",
    )
    convert.set_defaults(func=cmd_from_modelplane)
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
