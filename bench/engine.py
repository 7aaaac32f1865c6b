"""The real engine against the offline plan, on the same fleets, in one run.

For fleets of 10 and 50 clusters (`bench.fleets`, 8 pools each over the six clouds), time a first
`pulumi preview` with the pack through the engine tier (tests/engine/harness.py: the real CLI,
test providers) and `modelplane plan` of the same stack file, each with its peak memory (summed
over its process tree, sampled every 0.1 s). For the engine, also: how many provider processes it
started, how long one takes to boot, and how long the program itself ran; the rest is the
engine's own work and its round trips to the providers and the pack.

    uv run python -m bench.engine [--sizes 10,50] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from bench.fleets import fleet
from program.main import run
from tests.engine.harness import ROOT, Engine, cli_root

SIZES = (10, 50)


def tree_rss(root: int) -> int:
    """Resident memory of `root` and every process below it, in bytes (from /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parents[pid] = int(fields[1])
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack += [child for child, parent in parents.items() if parent == pid]
    return total


class PeakMemory:
    """Samples a process tree's resident memory until stopped; `peak` is the largest sum seen."""

    def __init__(self, root: int) -> None:
        self.root, self.peak, self._stop = root, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(self.root))
            self._stop.wait(0.1)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def provider_boot_seconds(engine: Engine) -> float:
    """Wall time from launching one provider plugin to its announcing a port, as the engine waits."""
    launcher = next((engine.home / "plugins").glob("resource-gcp-v*/pulumi-resource-gcp"))
    start = time.perf_counter()
    proc = subprocess.Popen([str(launcher), "127.0.0.1:1"], stdout=subprocess.PIPE, env={**os.environ, **engine.env})
    assert proc.stdout is not None
    proc.stdout.readline()
    elapsed = time.perf_counter() - start
    proc.kill()
    proc.wait()
    return elapsed


def measure(clusters: int, cli: Path) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix=f"engine-bench-{clusters}-"))
    engine = Engine(base, cli)
    name = f"fleet{clusters}"
    engine.write_fleet(name, fleet(clusters))
    program_seconds: list[float] = []

    def timed_program() -> None:
        start = time.perf_counter()
        try:
            run()
        finally:
            program_seconds.append(time.perf_counter() - start)

    stack = engine.stack(name, timed_program)
    stack.set_config("modelplane:kubeconfig", auto.ConfigValue(value="apiVersion: v1\nkind: Config\n", secret=True))

    with PeakMemory(os.getpid()) as plan_memory:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tooling.cli", "plan", "--stack-file", str(engine.stack_file(name)), "--json"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        plan_seconds = time.perf_counter() - start

    engine.reset_ops()
    events: list[auto.EngineEvent] = []
    with PeakMemory(os.getpid()) as engine_memory:
        start = time.perf_counter()
        preview = stack.preview(policy_packs=[str(engine.pack)], on_event=events.append)
        engine_seconds = time.perf_counter() - start
    starts = [e for e in engine.ops().entries if e["op"] == "start"]
    boot = provider_boot_seconds(engine)
    return {
        "clusters": clusters,
        "resources": sum(preview.change_summary.values()),
        "plan_s": round(plan_seconds, 1),
        "plan_peak_mib": plan_memory.peak // 2**20,
        "engine_s": round(engine_seconds, 1),
        "engine_peak_mib": engine_memory.peak // 2**20,
        "ratio": round(engine_seconds / plan_seconds, 1),
        "provider_processes": len(starts),
        "provider_boot_s": round(boot, 2),
        "program_s": round(sum(program_seconds), 1),
        "policy_violations": sum(1 for e in events if e.policy_event is not None),
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| clusters | resources | `modelplane plan` | engine preview with the pack | engine / plan "
        "| provider processes (boot each) | program inside the engine |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['clusters']} | {r['resources']} | {r['plan_s']} s, {r['plan_peak_mib']} MiB "
            f"| {r['engine_s']} s, {r['engine_peak_mib']} MiB | {r['ratio']} "
            f"| {r['provider_processes']} ({r['provider_boot_s']} s) | {r['program_s']} s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engine")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    cli = cli_root()
    if cli is None:
        print("no Pulumi CLI: run `make engine` first", file=sys.stderr)
        return 1
    rows = [measure(int(n), cli) for n in args.sizes.split(",")]
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
