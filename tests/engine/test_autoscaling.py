"""Replicas follow the load, for real: KEDA's operator turns each ScaledObject into an HPA, its
metrics server answers the external metrics API behind the API server's aggregation layer, and the
controller manager's HPA controller scales the workload from what the real Prometheus scraped
from the model servers.

On the local cluster of the cluster tier (test_real_up.py), with KEDA v2.20.2 (the keda chart's
appVersion), prometheus-operator v0.90.1 and Prometheus v3.11.3 run for the pods their releases
create (podproc.py), and the model servers (servers.py) at the engines' pods. The load goes to one
engine of each deployment, from a client that keeps a number of requests in flight; every count
asserted is read from the cluster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tests.engine.cluster import wait_for
from tests.engine.demo import LOAD_REQUESTS, chart, follow_load, scale_of
from tests.engine.kube import ApiError
from tests.engine.podproc import keda, monitoring
from tests.engine.servers import Load
from tests.engine.stackrun import Run
from tests.tools import require

STACK = "byo-mixed"
NAMESPACE = "ml-team"
# What a check raises while what it asks does not answer yet.
NOT_YET = (ApiError, OSError, ValueError, KeyError)
# The simulator's bound of running requests (its default `--max-num-seqs`, simulator.py).
MAX_NUM_SEQS = 4
# How long replicas may take to follow: a scrape (the operator's default interval, 30 s), the HPA
# controller's sync (15 s, kube-controller-manager's `--horizontal-pod-autoscaler-sync-period`),
# the new pods' start, and on the way down the scale-down window the ScaledObject sets.
FOLLOW_SECONDS = 240
# The scale-down window the stack under test gives every deployment (byo-mixed's own for qwen-h100).
SCALE_DOWN_SECONDS = 30


@dataclass(frozen=True)
class Case:
    """One autoscaled deployment of the stack under test, the load it is given, and the replica
    count its target implies for that load."""

    deployment: str
    kind: str  # the workload KEDA scales
    requests: int  # kept in flight at one engine
    prompt_words: int
    loaded: int  # replicas the target implies under that load


def scaled_stack(config: dict[str, Any]) -> None:
    """byo-mixed with each of the three metrics on one deployment, one of them a LeaderWorkerSet
    of two-node groups, and nodes for their maximum."""
    (cluster,) = config["modelplane:clusters"]
    counts = {"mi300x": 4, "cpu": 3}  # two groups of two nodes; three one-node CPU replicas
    for pool in cluster["nodePools"]:
        pool["nodeCount"] = counts.get(pool["name"], pool["nodeCount"])
    deployments = {d["name"]: d for d in config["modelplane:deployments"]}
    mi300x = deployments["qwen-mi300x"]
    del mi300x["replicas"]
    mi300x["nodes"] = 2
    # 16 GPUs a group: 8 per node x 2 nodes (vLLM "Parallelism and Scaling", multi-node).
    mi300x["args"] = [*mi300x["args"], "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]
    mi300x["autoscaling"] = {"minReplicas": 1, "maxReplicas": 3, "metric": "RequestsRunning", "target": 2}
    cpu = deployments["qwen-cpu"]
    del cpu["replicas"]
    cpu["autoscaling"] = {"minReplicas": 1, "maxReplicas": 3, "metric": "KVCacheUsage", "target": 0.4}
    for deployment in (mi300x, cpu):
        deployment["autoscaling"]["scaleDownSeconds"] = SCALE_DOWN_SECONDS


# RequestsWaiting, 2 a replica (byo-mixed's qwen-h100): `follow_load`'s 10 requests in flight at
# one engine run 4 and queue 6, and sum(waiting) / 2 asks for 3 replicas, its maximum.
WAITING = Case("qwen-h100", "Deployment", LOAD_REQUESTS, 3, min(3, math.ceil((LOAD_REQUESTS - MAX_NUM_SEQS) / 2)))
OTHERS = (
    # RequestsRunning, 2 a replica: 4 running ask for 2 groups, below the maximum of 3.
    Case("qwen-mi300x", "LeaderWorkerSet", 4, 3, math.ceil(MAX_NUM_SEQS / 2)),
    # KVCacheUsage, a mean of 0.4: 4 prompts of 1,500 words fill the one engine's KV cache (4,096
    # tokens: usage 1.0), and ceil(1 x 1.0 / 0.4) asks for 3, the maximum. With 3 replicas the
    # mean is 1/3, and ceil(3 x (1/3) / 0.4) = 3 holds it there.
    Case("qwen-cpu", "Deployment", 4, 1500, min(3, math.ceil(1.0 / 0.4))),
)


def at(run: Run, case: Case, count: int) -> bool:
    """The workload at `count` replicas, all Ready, every pod's claims allocated."""
    replicas, ready = scale_of(run, NAMESPACE, case.kind, case.deployment)
    if replicas != count or ready != count:
        return False
    claims = {(a.namespace, a.claim) for a in run.site.allocations()}
    pods = [p for p in run.site.pods() if p.namespace == NAMESPACE and p.owner == f"{case.kind}/{case.deployment}"]
    return all(p.ready and p.claims and all((NAMESPACE, c) in claims for c in p.claims) for p in pods)


def load(run: Run, case: Case) -> Load:
    """`case.requests` kept in flight at the deployment's first engine (a group's leader)."""
    spec = next(d for d in run.deployments() if d["name"] == case.deployment)
    model = spec["args"][spec["args"].index("--served-model-name") + 1]
    pods = [p for p in run.site.pods() if p.namespace == NAMESPACE and p.owner == f"{case.kind}/{case.deployment}"]
    (leader,) = [
        p for p in pods if p.ready and p.ip and p.labels.get("leaderworkerset.sigs.k8s.io/worker-index", "0") == "0"
    ]
    return Load(f"http://{leader.ip}:{spec['port']}", model, case.requests, prompt_words=case.prompt_words).start()


def test_replicas_follow_the_load_for_each_metric_and_workload_kind(run: Any) -> None:
    for name in ("prometheus-operator", "prometheus", "keda", "keda-adapter"):
        require(name, "the scaling chain")
    scaled = run(STACK, [*monitoring(), *keda()], scaled_stack)
    scaled.up()
    for case in (WAITING, *OTHERS):
        assert wait_for(f"{case.deployment} at its minimum", lambda c=case: at(scaled, c, 1), 120, retrying=NOT_YET)

    loads = [load(scaled, case) for case in OTHERS]
    try:
        # The Deployment on waiting requests, as `make demo` shows it: up to its maximum under
        # load, and back to its minimum once the load stops.
        lines: list[str] = []
        samples = follow_load(scaled, WAITING.deployment, lines.append)
        loaded = [s for s in samples if s.load]
        unloaded = [s for s in samples if not s.load]
        shown = "\n".join(lines)
        assert samples == loaded + unloaded, shown
        # From its minimum to the count its target asks, every replica Ready, while loaded ...
        assert loaded[0].replicas == 1 and max(s.replicas for s in loaded) == WAITING.loaded, shown
        assert (loaded[-1].replicas, loaded[-1].ready) == (WAITING.loaded, WAITING.loaded), shown
        # ... and back to its minimum once the load stopped, not before the window passed.
        assert (unloaded[-1].replicas, unloaded[-1].ready) == (1, 1), shown
        assert all(s.replicas == WAITING.loaded for s in unloaded if s.at - unloaded[0].at < SCALE_DOWN_SECONDS), shown
        print(shown)
        assert lines[-5:] == chart(WAITING.deployment, samples, 1, 3)
        # Meanwhile the others, loaded all along, reached what their targets ask.
        for case in OTHERS:
            assert wait_for(
                f"{case.deployment} at {case.loaded} under load",
                lambda c=case: at(scaled, c, c.loaded),
                FOLLOW_SECONDS,
                retrying=NOT_YET,
            )
    finally:
        for traffic in loads:
            traffic.stop()
    for case in OTHERS:
        assert wait_for(
            f"{case.deployment} back at 1", lambda c=case: at(scaled, c, 1), FOLLOW_SECONDS, retrying=NOT_YET
        )
