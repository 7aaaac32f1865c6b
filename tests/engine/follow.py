"""An autoscaled deployment's replicas following load, watched from outside: `make demo` draws it,
the cluster tier's scaling test (test_autoscaling.py) checks it.

`Follow` keeps requests in flight at one engine of the deployment (servers.Load) and looks, every
few seconds, at the engine's queue and at the workload's replicas as the HPA set them; `chart`
draws the looks as sparklines on one time axis.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.engine.servers import Load, gauges
from tests.engine.simulator import served_model
from tests.engine.stackrun import Run

# The load: requests kept in flight at one engine, each 200 tokens long (4 s at the simulator's
# 0.02 s a token), well above what one replica runs (the simulator's bound, 4), so the queue
# grows and KEDA's target asks for more replicas.
LOAD_REQUESTS = 10
SAMPLE_SECONDS = 3.0
# How long `follow_load` holds the load once the replicas are at their maximum, so the chart
# shows them there.
HOLD_SECONDS = 12.0
# The longest a phase is watched: a scrape (30 s), the HPA's sync (15 s), pods starting, and on
# the way down the deployment's scale-down window.
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


@dataclass
class Follow:
    """`LOAD_REQUESTS` in flight at the first Ready engine of `deployment` (a group's leader) from
    `start` to `stop`, and a look every `SAMPLE_SECONDS` while `until` waits, each written to `out`."""

    run: Run
    deployment: str
    out: Callable[[str], Any]
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        spec = next(d for d in self.run.deployments() if d["name"] == self.deployment)
        bounds = spec["autoscaling"]
        self.low, self.high = int(bounds["minReplicas"]), int(bounds["maxReplicas"])
        self.namespace, self.kind = spec["namespace"], workload_kind(spec)
        owner = f"{self.kind}/{self.deployment}"
        pods = sorted(
            (p for p in self.run.site.pods() if p.namespace == self.namespace and p.owner == owner and p.ready),
            key=lambda p: p.name,
        )
        self.url = f"http://{pods[0].ip}:{spec['port']}"
        model = served_model(spec["args"])
        self.traffic = Load(self.url, model, LOAD_REQUESTS)
        self.started = time.monotonic()
        self.out(f"\n# load at {self.deployment}, autoscaled on {bounds['metric']} (target {bounds['target']}):")
        self.out(f"# {LOAD_REQUESTS} requests in flight at {pods[0].name}, then none")
        self.out(f"{'time':>6}  {'load':>4}  {'waiting':>7}  replicas (ready)")

    def start(self) -> None:
        self.started = time.monotonic()
        self.traffic.start()

    def stop(self) -> None:
        self.traffic.stop()

    def look(self) -> Sample:
        load = 0 if self.traffic.stopped else LOAD_REQUESTS
        try:
            waiting = gauges(self.url)["vllm:num_requests_waiting"]
        except (OSError, KeyError):
            waiting = 0.0
        replicas, ready = scale_of(self.run, self.namespace, self.kind, self.deployment)
        sample = Sample(time.monotonic() - self.started, load, waiting, replicas, ready)
        self.samples.append(sample)
        self.out(f"{sample.at:>4.0f} s  {load:>4}  {waiting:>7.0f}  {replicas} ({ready})")
        return sample

    def until(self, done: Callable[[Sample], bool]) -> Sample:
        """Look until `done` says so of a look, or `FOLLOW_SECONDS` pass; the last look."""
        deadline = time.monotonic() + FOLLOW_SECONDS
        while not done(sample := self.look()) and time.monotonic() < deadline:
            time.sleep(SAMPLE_SECONDS)
        return sample

    def at(self, count: int) -> Callable[[Sample], bool]:
        return lambda s: s.replicas == count and s.ready == count

    def draw(self) -> list[str]:
        lines = chart(self.deployment, self.samples, self.low, self.high)
        self.out("")
        for line in lines:
            self.out(line)
        return lines


def follow_load(run: Run, deployment: str, out: Callable[[str], Any]) -> list[Sample]:
    """Load an autoscaled `deployment` until its replicas reach their maximum, hold it a while,
    stop, and watch them fall back to their minimum; then draw it all."""
    follow = Follow(run, deployment, out)
    follow.start()
    try:
        follow.until(follow.at(follow.high))
        held = time.monotonic() + HOLD_SECONDS
        follow.until(lambda s: time.monotonic() >= held)
    finally:
        follow.stop()
    follow.until(follow.at(follow.low))
    follow.draw()
    return follow.samples
