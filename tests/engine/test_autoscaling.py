"""The monitoring and scaling chain of the serving stack, for real: the Prometheus operator turns each
deployment's PodMonitor into a scrape job of a real Prometheus, which scrapes every engine at its
pod's address; KEDA's operator turns each ScaledObject into an HPA, its metrics server answers the
external metrics API behind the API server's aggregation layer, and the controller manager's HPA
controller sets the workload's replicas from what Prometheus scraped.

On the local cluster of the cluster tier (test_real_up.py), with KEDA v2.20.2 (the keda chart's
appVersion), prometheus-operator v0.90.1 and Prometheus v3.11.3 (kube-prometheus-stack 84.4.0's
pins) run for the pods their releases create (podproc.py), the model servers (servers.py) at the
engines' pods, and for the Fleet GPUs dashboard the real collector (`otelcol` at 0.161.0, the
image's release) with the configuration the chart renders from our values, scraping simulated
dcgm-exporter and AMD device-metrics-exporter processes (gpu_exporters.py). One `up` serves every claim here: each costs minutes of scrapes and syncs, and
the tier's time is bounded. The load goes to one engine of each deployment, from a client that
keeps a number of requests in flight; every count asserted is read from the cluster, the engines
or Prometheus's own API.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from infra.serving import telemetry
from infra.serving.autoscaling import KEDA_API, PROMETHEUS_OPERATOR_API, SERIES_DEPLOYMENT_LABEL
from infra.serving.dashboards import FLEET_GPUS, panel_queries
from infra.serving.picker import PICKER_LABEL
from tests.engine.cluster import NOT_YET, wait_for
from tests.engine.follow import LOAD_REQUESTS, SAMPLE_SECONDS, Follow, chart, scale_of
from tests.engine.gpu_exporters import gpu_exporters, otel_collector
from tests.engine.podproc import get_json, keda, monitoring, prometheus_address, query
from tests.engine.servers import Load
from tests.engine.simulator import served_model
from tests.engine.site import Pod
from tests.engine.stackrun import Run
from tests.tools import require

STACK = "byo-mixed"
NAMESPACE = "ml-team"
# The simulator's bound of running requests (its default `--max-num-seqs`, simulator.py).
MAX_NUM_SEQS = 4
# The scale-down window the stack under test gives every deployment (byo-mixed's own for qwen-h100).
SCALE_DOWN_SECONDS = 30
# kube-controller-manager's `--horizontal-pod-autoscaler-sync-period` default, which the local
# cluster keeps: the HPA reads its metric and records a recommendation once a sync.
HPA_SYNC_SECONDS = 15
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"  # 0 on a group's leader (lws v0.8.0)


@dataclass(frozen=True)
class Case:
    """One autoscaled deployment of the stack under test, the load it is given, and what that load
    makes of its metric and of its replicas by its target."""

    deployment: str
    kind: str  # the workload KEDA scales
    requests: int  # kept in flight at one engine
    prompt_words: int
    metric: float  # the ScaledObject's query under that load, once the replicas followed
    loaded: int  # replicas the target asks for


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


# byo-mixed's target for qwen-h100's waiting requests, a replica.
WAITING_TARGET = 2
# RequestsWaiting, 2 a replica (byo-mixed's qwen-h100): `Follow`'s 10 requests in flight at one
# engine run 4 and queue 6, and sum(waiting) / 2 asks for 3 replicas, its maximum.
WAITING = Case("qwen-h100", "Deployment", LOAD_REQUESTS, 3, LOAD_REQUESTS - MAX_NUM_SEQS, 3)
OTHERS = (
    # RequestsRunning, 2 a replica: 4 running ask for ceil(4 / 2) = 2 groups, below the maximum of 3.
    Case("qwen-mi300x", "LeaderWorkerSet", 4, 3, MAX_NUM_SEQS, math.ceil(MAX_NUM_SEQS / 2)),
    # KVCacheUsage, a mean of 0.4: 4 prompts of 1,500 words fill the one engine's KV cache (4,096
    # tokens: usage 1.0), and ceil(1 x 1.0 / 0.4) = 3 asks for the maximum. With 3 replicas the
    # mean is 1/3, and ceil(3 x (1/3) / 0.4) = 3 holds it there.
    Case("qwen-cpu", "Deployment", 4, 1500, 1 / 3, min(3, math.ceil(1.0 / 0.4))),
)


def pods_of(run: Run, case: Case) -> list[Pod]:
    return [p for p in run.site.pods() if p.namespace == NAMESPACE and p.owner == f"{case.kind}/{case.deployment}"]


def at(run: Run, case: Case, count: int) -> bool:
    """The workload at `count` replicas, all Ready, every pod's claims allocated."""
    if scale_of(run, NAMESPACE, case.kind, case.deployment) != (count, count):
        return False
    claims = {(a.namespace, a.claim) for a in run.site.allocations()}
    return all(p.ready and p.claims and all((NAMESPACE, c) in claims for c in p.claims) for p in pods_of(run, case))


def engines(run: Run, case: Case) -> dict[str, Pod]:
    """The pods that serve (a group's leader; every pod of a Deployment), by name."""
    return {p.name: p for p in pods_of(run, case) if p.ready and p.ip and p.labels.get(LWS_WORKER_INDEX, "0") == "0"}


def load(run: Run, case: Case) -> Load:
    """`case.requests` kept in flight at the deployment's first engine."""
    spec = next(d for d in run.deployments() if d["name"] == case.deployment)
    model = served_model(spec["args"])
    first = engines(run, case)[min(engines(run, case))]
    return Load(f"http://{first.ip}:{spec['port']}", model, case.requests, prompt_words=case.prompt_words).start()


def check_scraped(run: Run, address: str, case: Case) -> None:
    """The deployment's PodMonitor is a scrape job of the stack's Prometheus with one target per
    engine, at its pod's address and the engine's port, labelled with the deployment as the
    ScaledObject's query selects it, and up."""
    spec = next(d for d in run.deployments() if d["name"] == case.deployment)
    job = f"podMonitor/{NAMESPACE}/{case.deployment}/0"

    def targets() -> list[dict[str, Any]]:
        active = get_json(address, "/api/v1/targets?state=active")["activeTargets"]
        return [t for t in active if t.get("scrapePool") == job]

    found = wait_for(
        f"Prometheus's targets of {job}",
        lambda: (t := targets()) and {x["labels"]["pod"] for x in t} == set(engines(run, case)) and t,
        120,
        retrying=NOT_YET,
    )
    for target in found:
        assert target["labels"][SERIES_DEPLOYMENT_LABEL] == case.deployment
        assert target["labels"]["namespace"] == NAMESPACE
        assert target["scrapeUrl"] == f"http://{engines(run, case)[target['labels']['pod']].ip}:{spec['port']}/metrics"
    wait_for(f"every target of {job} up", lambda: all(t["health"] == "up" for t in targets()), 120, retrying=NOT_YET)


# --------------------------------------------------------------------------------------------
# The Fleet GPUs dashboard

# Panels whose source one vendor does not serve by default: title -> the vendors that answer.
# AMD's side of "Tensor active" is parse-only: its source, `gpu_prof_tensor_active_percent`, is a
# profiler field the AMD exporter reports only with profiler metrics on, which they are not by
# default, and the collector maps it only when told they are (`amd_profiler_metrics`, off).
ONE_VENDOR = {"Tensor active": {"nvidia"}}


def gpu_panels_answer(mixed: Run, address: str) -> None:
    """The stack's Prometheus scrapes the collector's exporter through the PodMonitor the stack
    creates for it, and every GPU panel returns data for the NVIDIA node and the AMD nodes, as the
    real collector (`otelcol`) renames the simulated exporters' series (gpu_exporters.py)."""
    (monitor,) = mixed.cluster.list(PROMETHEUS_OPERATOR_API, "PodMonitor", telemetry.NAMESPACE)
    job = f"podMonitor/{telemetry.NAMESPACE}/{monitor['metadata']['name']}/0"

    def collector_up() -> bool:
        active = get_json(address, "/api/v1/targets?state=active")["activeTargets"]
        mine = [t for t in active if t.get("scrapePool") == job]
        return bool(mine) and all(t["health"] == "up" for t in mine)

    assert wait_for(f"Prometheus scraping the collector ({job})", collector_up, 150, retrying=NOT_YET)

    # Each vendor's GPU nodes: where its exporter's pods run.
    nodes = {
        vendor: {p.node for p in mixed.site.pods() if p.owner.startswith("DaemonSet/") and exporter in p.owner}
        for vendor, exporter in (("nvidia", "dcgm-exporter"), ("amd", "metrics-exporter"))
    }
    assert all(nodes.values()), nodes
    for panel in FLEET_GPUS.panels:
        (target,) = panel.targets
        want = set().union(*(nodes[v] for v in ONE_VENDOR.get(panel.title, {"nvidia", "amd"})))

        def answered(expr: str = target.expr) -> set[str]:
            return {r["metric"].get("node", "") for r in query(address, expr)}

        def all_nodes(want: set[str] = want) -> bool:
            return want <= answered()

        wait_for(f"{panel.title}: {target.expr} for {sorted(want)}", all_nodes, 150, retrying=NOT_YET)
        # A panel of one vendor answers for no other node.
        assert answered() == want, (panel.title, answered())

    # A GPU's series keeps the workload the exporter credits it to (honorLabels), and one no
    # workload holds is not credited to the collector's pod.
    in_use = query(address, 'modelplane_gpu_temperature_celsius{pod!=""}')
    assert in_use, "no GPU series carries the pod of the workload using it"
    assert all(r["metric"]["namespace"] != telemetry.NAMESPACE for r in in_use), in_use


# --------------------------------------------------------------------------------------------
# One up


def test_the_engines_and_gpus_are_scraped_and_replicas_follow_the_load_on_each_metric_and_workload_kind(
    run: Any,
) -> None:
    for name in ("prometheus-operator", "prometheus", "keda", "keda-adapter", "otelcol"):
        require(name, "the monitoring and scaling chain")
    # The collector and the GPU exporters too: the Fleet GPUs dashboard is checked on the same `up`.
    programs = [*monitoring(), *keda(), otel_collector(), *gpu_exporters()]
    scaled = run(STACK, programs, scaled_stack)
    scaled.up()
    cases = (WAITING, *OTHERS)
    for case in cases:
        assert wait_for(f"{case.deployment} at its minimum", lambda c=case: at(scaled, c, 1), 120, retrying=NOT_YET)

    # Every deployment's PodMonitor (components/features/monitoring.py) is a job finding its engines.
    address = wait_for(
        "the stack's Prometheus", lambda: prometheus_address(scaled.cluster.server), 120, retrying=NOT_YET
    )
    monitors = scaled.cluster.list(PROMETHEUS_OPERATOR_API, "PodMonitor", NAMESPACE)
    # Beside each deployment's, its endpoint picker's (components/features/picker.py).
    engine_monitors = [m for m in monitors if PICKER_LABEL not in (m["metadata"].get("labels") or {})]
    assert sorted(m["metadata"]["name"] for m in engine_monitors) == sorted(c.deployment for c in cases)
    for case in cases:
        check_scraped(scaled, address, case)

    # Load: the Deployment on waiting requests as `make demo` follows it, the others beside it.
    lines: list[str] = []
    follow = Follow(scaled, WAITING.deployment, lines.append)
    others = [load(scaled, case) for case in OTHERS]
    follow.start()
    try:
        # Each to the count its target asks, every new pod's claims allocated ...
        follow.until(lambda s: follow.at(WAITING.loaded)(s) and all(at(scaled, c, c.loaded) for c in OTHERS))
        for case in cases:
            assert at(scaled, case, case.loaded), "\n".join(lines)
            # ... from what the ScaledObject's own query, asked of the real Prometheus, reads.
            (scaled_object,) = [
                o
                for o in scaled.cluster.list(KEDA_API, "ScaledObject", NAMESPACE)
                if o["metadata"]["name"] == case.deployment
            ]
            promql = scaled_object["spec"]["triggers"][0]["metadata"]["query"]
            # The HPA KEDA made for it carries the deployment's scale-down window. (The samples
            # below cannot tell a window of 30 s from none: a 30 s scrape lags as long.)
            (hpa,) = [
                h
                for h in scaled.cluster.list("autoscaling/v2", "HorizontalPodAutoscaler", NAMESPACE)
                if h["spec"]["scaleTargetRef"]["name"] == case.deployment
            ]
            window = hpa["spec"].get("behavior", {}).get("scaleDown", {}).get("stabilizationWindowSeconds")
            assert window == SCALE_DOWN_SECONDS, (case.deployment, hpa["spec"].get("behavior"))

            def asked(q: str = promql) -> float | None:
                result = query(address, q)
                return float(result[0]["value"][1]) if result else None

            assert wait_for(
                f"{promql} at {case.metric:g}",
                lambda a=asked, c=case: math.isclose(a() or 0.0, c.metric, rel_tol=0.01),
                90,
                retrying=NOT_YET,
            )
    finally:
        follow.stop()
        for traffic in others:
            traffic.stop()
    # ... and back to their minimum once the load stopped, not before the window passed.
    follow.until(lambda s: follow.at(1)(s) and all(at(scaled, c, 1) for c in OTHERS))
    drawn = follow.draw()
    shown = "\n".join(lines)
    loaded = [s for s in follow.samples if s.load]
    unloaded = [s for s in follow.samples if not s.load]
    assert follow.samples == loaded + unloaded, shown
    assert loaded[0].replicas == 1 and (loaded[-1].replicas, loaded[-1].ready) == (3, 3), shown
    assert (unloaded[-1].replicas, unloaded[-1].ready) == (1, 1), shown
    # Not before the window passed (a window of 0 can pass this too, held up by the scrape; the
    # HPA's own window is read above). The HPA keeps the highest recommendation of its syncs within the
    # window (stabilizationWindowSeconds, autoscaling/v2), one sync every HPA_SYNC_SECONDS. While
    # the loaded engine's queue asks for the maximum (more than 2 a replica for 2 replicas), so does
    # the Prometheus series KEDA reads, whose last scrape is no newer than the engine; the last sync
    # at or before the last such sample read it, at most a sync earlier, so the replicas hold for
    # the window less a sync after that sample (less one sample's period, as a look is not instant).
    asking = [s.at for s in follow.samples if s.waiting > WAITING_TARGET * (WAITING.loaded - 1)]
    held = SCALE_DOWN_SECONDS - HPA_SYNC_SECONDS - SAMPLE_SECONDS
    assert all(s.replicas == 3 for s in unloaded if s.at - asking[-1] < held), shown
    for case in OTHERS:
        assert at(scaled, case, 1), shown
    assert drawn == chart(WAITING.deployment, follow.samples, 1, 3) and drawn[3].startswith("replicas  ▁")

    # Every dashboard panel's query is one the real Prometheus parses; every panel over vLLM's
    # series returns data from the engines (kube-state-metrics' have no exporter here, and are only
    # parsed), and every GPU panel from the collector's exporter.
    for dashboard, panel, expr in panel_queries():
        concrete = expr.replace("$namespace", NAMESPACE).replace("$deployment", WAITING.deployment)
        query(address, concrete)  # raises on a query Prometheus refuses
        if "vllm:" in concrete:
            wait_for(f"{dashboard} / {panel}: {concrete}", lambda q=concrete: query(address, q), 90, retrying=NOT_YET)
    gpu_panels_answer(scaled, address)
