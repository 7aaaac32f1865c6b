"""`make demo`: `pulumi up` on an Existing example stack, for real, on a cluster this machine runs.

    python -m tests.engine.demo [--stack byo-mixed]

It starts etcd and a local cluster (stackrun.py, cluster.py) whose nodes are the stack's pools,
serves the stand-in charts (charts.py) as the stack's chart mirror, runs `pulumi up` with the real
CLI, the policy pack and the real `pulumi-resource-kubernetes` against a local backend, prints the
CLI's output and then, read from the cluster, where each driver and each model landed, and stops
everything it started. What is real and what is simulated: docs/demo.md. It runs the cluster
tier's own code (test_real_up.py checks the same runs), so it lives beside it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from pulumi import automation as auto

from tests.engine import charts as mirror
from tests.engine.devices import existing_stacks
from tests.engine.follow import follow_load
from tests.engine.kube import Etcd
from tests.engine.podproc import endpoint_picker, keda, monitoring
from tests.engine.stackrun import Run
from tests.tools import ToolMissingError, engine_tools, tool

DEFAULT_STACK = "byo-mixed"


def main(argv: list[str] | None = None) -> int:
    stacks = existing_stacks()
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default=DEFAULT_STACK, help=f"an Existing example stack: {', '.join(stacks)}")
    args = parser.parse_args(argv)
    if args.stack not in stacks:
        print(
            f"stacks/Pulumi.{args.stack}.yaml: not an Existing example stack; choose one of: {', '.join(stacks)}",
            file=sys.stderr,
        )
        return 2
    try:
        # Every tool of `make engine`, which `make demo` builds first.
        for name in engine_tools():
            tool(name)
        cli = tool("pulumi").parent.parent
    except ToolMissingError as missing:
        print(f"make demo: {missing}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="modelplane-demo-") as scratch:
        base = Path(scratch)
        etcd = Etcd.start(base / "etcd")
        try:
            with mirror.served_charts(base / "charts") as charts:
                # The monitoring and scaling chain (podproc.py): an autoscaled deployment's replicas
                # follow the load `follow_load` gives it.
                return demo(Run(base, cli, etcd, charts, args.stack, [*monitoring(), *keda(), endpoint_picker()]))
        finally:
            etcd.stop()


def demo(run: Run) -> int:
    """Run `pulumi up`, print where everything landed, and stop the cluster."""
    try:
        nodes = run.site.node_pools()
        print(f"# cluster {run.facts.name}: {len(nodes)} simulated nodes, pools {sorted(set(nodes.values()))}")
        print(f"# pulumi up --stack {run.name} (real CLI, pack, kubernetes provider; local backend)\n")
        started = time.monotonic()
        try:
            result = run.up(on_output=lambda line: print(line, end="" if line.endswith("\n") else "\n"))
        except auto.CommandError as failed:
            print(f"\npulumi up failed:\n{failed}", file=sys.stderr)
            return 1
        took = time.monotonic() - started
        changes = ", ".join(f"{n} {op}" for op, n in sorted((result.summary.resource_changes or {}).items()))
        print(f"\n# up took {took:.0f} s: {changes}\n")
        print("# releases, read from their Helm release secrets")
        for release in sorted(run.site.releases().values(), key=lambda r: r.name):
            chart = f"{release.chart}-{release.version}"
            print(f"{release.namespace:<24} {release.name:<36} {chart:<40} {release.status}")
        print("\n# where each driver and each model landed, read from the cluster")
        print(run.site.table())
        scaled = [d for d in run.deployments() if d.get("autoscaling")]
        if scaled:
            follow_load(run, scaled[0]["name"], print)
        return 0
    finally:
        run.stop()


if __name__ == "__main__":
    sys.exit(main())
