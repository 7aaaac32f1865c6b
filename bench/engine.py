"""The real engine against the offline plan, on the same fleets, in one run.

For fleets of 10 and 50 clusters (`bench.fleets`, 8 pools each over the six clouds), time a first
`pulumi preview` with the pack through the engine tier (tests/engine/harness.py: the real CLI,
test providers) and `modelplane plan` of the same stack file, each with its peak memory (the
proportional set sizes of its process tree, summed, sampled every 0.1 s). For the engine, also: how many provider processes it
started, how long one takes to boot, and how long the program itself ran; the rest is the
engine's own work and its round trips to the providers and the pack.

The same preview again with `PULUMI_SKIP_CHECKPOINTS=true`, in the same run: the engine's snapshot
manager serializes the whole snapshot after every step, in a preview too, where it then discards
it (pulumi/pulumi v3.274.1, pkg/backend/snapshot.go `defaultServiceLoop` and `saveSnapshot`;
pkg/backend/diy/backend.go installs a `DiscardPersister` for a preview), so its cost grows with the
square of the resources. The variable makes it serialize once, at the end (`unsafeServiceLoop`;
sdk/go/common/env/env.go, `SkipCheckpoints`). A preview persists nothing either way.

`--trace DIR` also writes the engine's OpenTelemetry spans (`--otel-traces`) and its Go CPU and
memory profiles (`--profiling`) of each preview under DIR.

    uv run python -m bench.engine [--sizes 10,50] [--json] [--trace DIR]
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


def tree_memory(root: int) -> int:
    """Memory of `root` and every process below it, in bytes: the sum of their proportional set
    sizes (`Pss` of /proc/<pid>/smaps_rollup), which counts a page shared by n processes as 1/n in
    each. A sum of resident sizes would count every test provider's pages again, since each is
    forked from one process that loaded them (tests/engine/forkserver.py)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += proportional_size(pid)
        stack += [child for child, parent in parents.items() if parent == pid]
    return total


def proportional_size(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakMemory:
    """Samples a process tree's resident memory until stopped; `peak` is the largest sum seen."""

    def __init__(self, root: int) -> None:
        self.root, self.peak, self._stop = root, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_memory(self.root))
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


def traced_cli(cli: Path, folder: Path) -> Path:
    """A CLI root whose `pulumi` is the real one, with `preview` traced and profiled into `folder`."""
    root = folder / "cli"
    (root / "bin").mkdir(parents=True, exist_ok=True)
    wrapper = root / "bin" / "pulumi"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" preview "*) out="$MODELPLANE_BENCH_TRACE/$(date +%s%N)"; mkdir -p "$out"; '
        f'exec "{cli / "bin" / "pulumi"}" "$@" --otel-traces "file://$out/otel.json" --profiling "$out/cli";; esac\n'
        f'exec "{cli / "bin" / "pulumi"}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return root


def timed_preview(
    engine: Engine, name: str, clusters: int, env: dict[str, str]
) -> tuple[float, int, auto.PreviewResult]:
    """A first preview of the fleet as stack `name`: seconds, peak memory of the tree, result."""
    engine.env.update(env)
    engine.write_fleet(name, fleet(clusters))
    stack = engine.stack(name, run)
    stack.set_config("modelplane:kubeconfig", auto.ConfigValue(value="apiVersion: v1\nkind: Config\n", secret=True))
    with PeakMemory(os.getpid()) as memory:
        start = time.perf_counter()
        preview = stack.preview(policy_packs=[str(engine.pack)])
        seconds = time.perf_counter() - start
    return seconds, memory.peak, preview


def measure(clusters: int, cli: Path, trace: Path | None = None) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix=f"engine-bench-{clusters}-"))
    if trace is not None:
        cli = traced_cli(cli, base)
    engine = Engine(base, cli)
    if trace is not None:
        engine.env["MODELPLANE_BENCH_TRACE"] = str(trace / f"fleet{clusters}")
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

    start = time.perf_counter()
    plan = subprocess.Popen(
        [sys.executable, "-m", "tooling.cli", "plan", "--stack-file", str(engine.stack_file(name)), "--json"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with PeakMemory(plan.pid) as plan_memory:
        assert plan.wait() == 0, "the plan failed"
    plan_seconds = time.perf_counter() - start

    engine.reset_ops()
    events: list[auto.EngineEvent] = []
    with PeakMemory(os.getpid()) as engine_memory:
        start = time.perf_counter()
        preview = stack.preview(policy_packs=[str(engine.pack)], on_event=events.append)
        engine_seconds = time.perf_counter() - start
    starts = [e for e in engine.ops().entries if e["op"] == "start"]
    boot = provider_boot_seconds(engine)
    skip_seconds, skip_peak, skip_preview = timed_preview(
        engine, f"{name}-skip-checkpoints", clusters, {"PULUMI_SKIP_CHECKPOINTS": "true"}
    )
    assert skip_preview.change_summary == preview.change_summary, "the previews differ"
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
        "skip_checkpoints_s": round(skip_seconds, 1),
        "skip_checkpoints_peak_mib": skip_peak // 2**20,
        "skip_checkpoints_ratio": round(skip_seconds / plan_seconds, 1),
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| clusters | resources | `modelplane plan` | engine preview with the pack | engine / plan "
        "| provider processes (boot each) | program inside the engine "
        "| the same with `PULUMI_SKIP_CHECKPOINTS=true` | engine / plan with it |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['clusters']} | {r['resources']} | {r['plan_s']} s, {r['plan_peak_mib']} MiB "
            f"| {r['engine_s']} s, {r['engine_peak_mib']} MiB | {r['ratio']} "
            f"| {r['provider_processes']} ({r['provider_boot_s']} s) | {r['program_s']} s "
            f"| {r['skip_checkpoints_s']} s, {r['skip_checkpoints_peak_mib']} MiB | {r['skip_checkpoints_ratio']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engine")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--trace", type=Path, help="write each preview's spans and CLI profiles under this folder")
    args = parser.parse_args(argv)
    cli = cli_root()
    if cli is None:
        print("no Pulumi CLI: run `make engine` first", file=sys.stderr)
        return 1
    rows = [measure(int(n), cli, args.trace.resolve() if args.trace else None) for n in args.sizes.split(",")]
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
