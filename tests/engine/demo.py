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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from tests.engine import charts as mirror
from tests.engine.devices import existing_stacks
from tests.engine.kube import Etcd
from tests.engine.podproc import keda, monitoring
from tests.engine.servers import Load, gauges
from tests.engine.stackrun import Run
from tests.tools import ToolMissingError, tool

# What the run needs from `make engine` (engine/build.sh), in the order a missing one is named.
TOOLS = (
    "pulumi",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "lws",
    "prometheus-operator",
    "prometheus",
    "keda",
    "keda-adapter",
)
PROVIDER = "pulumi-resource-kubernetes"
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
        cli = tool("pulumi").parent.parent
        for name in (*TOOLS[1:], PROVIDER):
            tool(name)
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
                return demo(Run(base, cli, etcd, charts, args.stack, [*monitoring(), *keda()]))
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


# --------------------------------------------------------------------------------------------
# Replicas following load

# The load `follow_load` gives: requests kept in flight at one engine, each 200 tokens long (4 s
# at the simulator's 0.02 s a token), well above what one replica runs (the simulator's bound, 4),
# so the queue grows and KEDA's target asks for more replicas.
LOAD_REQUESTS = 10
SAMPLE_SECONDS = 3.0
FOLLOW_SECONDS = 300.0
BARS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Sample:
    """One look at a deployment under load: seconds since the load started, requests kept in
    flight, requests waiting at the loaded engine, and the workload's replicas (set and Ready)."""

    at: float
    load: int
    waiting: float
    replicas: int
    ready: int


def sparkline(values: Sequence[float], low: float, high: float) -> str:
    """One bar per value, from the lowest bar at `low` to the highest at `high`."""
    span = (high - low) or 1.0
    return "".join(BARS[round((min(max(v, low), high) - low) / span * (len(BARS) - 1))] for v in values)


def chart(name: str, samples: Sequence[Sample], low: int, high: int) -> list[str]:
    """The samples as three sparklines on one time axis: the load, the queue and the replicas."""
    most = max(LOAD_REQUESTS, *(s.load for s in samples))
    queue = max(1.0, *(s.waiting for s in samples))
    end = f"{samples[-1].at:.0f} s"
    return [
        f"# {name}: the load, its queue and its replicas, every {SAMPLE_SECONDS:.0f} s",
        f"load      {sparkline([s.load for s in samples], 0, most)}  0 to {most} requests in flight",
        f"waiting   {sparkline([s.waiting for s in samples], 0, queue)}  0 to {queue:g} at the loaded engine",
        f"replicas  {sparkline([s.replicas for s in samples], low, high)}  {low} to {high}",
        f"          0 s{end:>{max(len(samples) - 3, len(end))}}",
    ]


def workload_kind(spec: Mapping[str, Any]) -> str:
    """What KEDA scales for a deployment: its LeaderWorkerSet when a replica spans nodes."""
    return "LeaderWorkerSet" if spec.get("nodes", 1) > 1 else "Deployment"


def scale_of(run: Run, namespace: str, kind: str, name: str) -> tuple[int, int]:
    """A workload's replicas as its scale subresource has them (what the HPA sets), and how many are
    Ready (a LeaderWorkerSet counts groups)."""
    api = "leaderworkerset.x-k8s.io/v1" if kind == "LeaderWorkerSet" else "apps/v1"
    (obj,) = [w for w in run.cluster.list(api, kind, namespace) if w["metadata"]["name"] == name]
    return int(obj["spec"]["replicas"]), int((obj.get("status") or {}).get("readyReplicas") or 0)


def follow_load(run: Run, deployment: str, out: Callable[[str], Any]) -> list[Sample]:
    """Load one engine of an autoscaled `deployment` until its replicas reach their maximum, stop,
    and watch them fall back to their minimum, writing each look and then the chart to `out`."""
    spec = next(d for d in run.deployments() if d["name"] == deployment)
    bounds = spec["autoscaling"]
    low, high = int(bounds["minReplicas"]), int(bounds["maxReplicas"])
    namespace, kind = spec["namespace"], workload_kind(spec)
    pods = sorted(
        (p for p in run.site.pods() if p.namespace == namespace and p.owner == f"{kind}/{deployment}" and p.ready),
        key=lambda p: p.name,
    )
    url = f"http://{pods[0].ip}:{spec['port']}"
    model = spec["args"][spec["args"].index("--served-model-name") + 1]
    out(f"\n# load at {deployment} ({bounds['metric']}, target {bounds['target']}): {LOAD_REQUESTS} requests in")
    out(f"# flight at {pods[0].name} until it runs {high} replicas, then none until it is back to {low}")
    out(f"{'time':>6}  {'load':>4}  {'waiting':>7}  replicas (ready)")
    samples: list[Sample] = []
    started = time.monotonic()

    def look(load: int) -> Sample:
        try:
            waiting = gauges(url)["vllm:num_requests_waiting"]
        except (OSError, KeyError):
            waiting = 0.0
        replicas, ready = scale_of(run, namespace, kind, deployment)
        sample = Sample(time.monotonic() - started, load, waiting, replicas, ready)
        samples.append(sample)
        out(f"{sample.at:>4.0f} s  {load:>4}  {waiting:>7.0f}  {replicas} ({ready})")
        return sample

    def until(done: Callable[[Sample], bool], load: int) -> None:
        deadline = time.monotonic() + FOLLOW_SECONDS
        while not done(look(load)) and time.monotonic() < deadline:
            time.sleep(SAMPLE_SECONDS)

    traffic = Load(url, model, LOAD_REQUESTS).start()
    try:
        until(lambda s: s.replicas == high and s.ready == high, LOAD_REQUESTS)
    finally:
        traffic.stop()
    until(lambda s: s.replicas == low and s.ready == low, 0)
    out("")
    for line in chart(deployment, samples, low, high):
        out(line)
    return samples


if __name__ == "__main__":
    sys.exit(main())
