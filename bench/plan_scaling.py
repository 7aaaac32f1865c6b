"""How the plan's cost grows with the fleet, against the floor of the runtime it runs on.

For fleets of 1, 10, 50 and 200 clusters (8 pools each, over the six clouds), each size in its own
process (so peak memory is that size's own), time separately:
- config: parsing and validating the fleet, the device rules and the derived facts;
- program: running the real program under Pulumi's mock runtime;
- policies: the policy pack over every registered resource, started and called as the engine does;
- floor: registering the same number of bare custom resources under the same mock runtime;
- inputs floor: registering as many custom resources carrying the very inputs the program
  registered (resolved), which separates what the inputs cost the SDK from what the program adds.
Imports are paid once before timing (a warm-up run) and reported as startup.
Reports per-resource cost, the ratio to the floor, peak memory and whether growth is linear.

    uv run python -m bench.plan_scaling [--sizes 1,10,50,200] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Any

import pulumi

from bench.fleets import CLOUDS, fleet
from infra.checks.devices import check_fleet
from infra.config.stackfile import parse_fleet
from infra.facts import derive_fleet
from program.main import run
from tooling.analyzer import run_policy_pack
from tooling.mockrun import run_under_mocks
from tooling.stackconfig import runtime_config

SIZES = (1, 10, 50, 200)


def bare_program(count: int) -> Any:
    def program() -> None:
        for i in range(count):
            pulumi.CustomResource("bench:index:Bare", f"r{i}", {"index": i})

    return program


def same_inputs_program(inputs: list[dict[str, Any]]) -> Any:
    def program() -> None:
        for i, props in enumerate(inputs):
            pulumi.CustomResource("bench:index:Inputs", f"r{i}", props)

    return program


def measure(clusters: int, policies: bool) -> dict[str, Any]:
    ts = time.perf_counter()
    run_under_mocks(run, "warmup", *runtime_config(fleet(len(CLOUDS)), {"kubeconfig": "opaque"}))
    startup = time.perf_counter() - ts
    raw = fleet(clusters)
    t0 = time.perf_counter()
    parsed = parse_fleet(raw, "Pulumi.bench.yaml")
    assert not check_fleet(parsed), "generated fleets are valid"
    derive_fleet(parsed)
    t1 = time.perf_counter()
    config, secrets = runtime_config(raw, {"kubeconfig": "opaque"})
    result = run_under_mocks(run, "bench", config, secrets)
    t2 = time.perf_counter()
    if result.error is not None:
        raise SystemExit(f"program failed for {clusters} clusters: {result.error}")
    resources = len(result.resources)
    pack_seconds = None
    violations = None
    if policies:
        t3 = time.perf_counter()
        found = run_policy_pack(result.resources, "bench")
        pack_seconds = time.perf_counter() - t3
        violations = len([v for v in found if v.enforcement == "mandatory"])
    t4 = time.perf_counter()
    floor = run_under_mocks(bare_program(resources), "bench", {})
    t5 = time.perf_counter()
    assert floor.error is None and len(floor.resources) == resources
    t6 = time.perf_counter()
    inputs_floor = run_under_mocks(same_inputs_program([dict(r.inputs) for r in result.resources]), "bench", {})
    t7 = time.perf_counter()
    assert inputs_floor.error is None
    return {
        "startup_s": startup,
        "inputs_floor_s": t7 - t6,
        "clusters": clusters,
        "resources": resources,
        "config_s": t1 - t0,
        "program_s": t2 - t1,
        "policies_s": pack_seconds,
        "mandatory_violations": violations,
        "floor_s": t5 - t4,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def per_cloud(clusters: int = 10) -> list[dict[str, Any]]:
    """Program cost per resource for `clusters` clusters of one cloud at a time (after a warm-up)."""
    run_under_mocks(run, "warmup", *runtime_config(fleet(len(CLOUDS)), {"kubeconfig": "opaque"}))
    rows = []
    for i, cloud in enumerate(CLOUDS):
        raw = fleet(len(CLOUDS))
        base = raw["clusters"][i]
        raw["clusters"] = [dict(base, name=f"c{n:04d}") for n in range(clusters)]
        t = time.perf_counter()
        result = run_under_mocks(run, "bench", *runtime_config(raw, {"kubeconfig": "opaque"}))
        seconds = time.perf_counter() - t
        assert result.error is None, result.error
        rows.append(
            {
                "cloud": cloud,
                "resources": len(result.resources),
                "program_s": seconds,
                "ms_per_resource": 1000 * seconds / len(result.resources),
            }
        )
    return rows


def per_cloud_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| cloud | resources | program s | ms/resource |", "|---|---|---|---|"]
    lines += [f"| {r['cloud']} | {r['resources']} | {r['program_s']:.2f} | {r['ms_per_resource']:.2f} |" for r in rows]
    return "\n".join(lines)


def in_subprocess(clusters: int, policies: bool) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.plan_scaling", "--one", str(clusters)]
    if not policies:
        cmd.append("--no-policies")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    for r in rows:
        total = r["config_s"] + r["program_s"] + (r["policies_s"] or 0.0)
        r["total_s"] = total
        r["per_resource_ms"] = 1000 * total / r["resources"]
        r["floor_per_resource_ms"] = 1000 * r["floor_s"] / r["resources"]
        r["ratio_to_floor"] = r["per_resource_ms"] / r["floor_per_resource_ms"]
        r["inputs_floor_per_resource_ms"] = 1000 * r["inputs_floor_s"] / r["resources"]
        r["ratio_to_inputs_floor"] = 1000 * r["program_s"] / r["resources"] / r["inputs_floor_per_resource_ms"]
    by = {r["clusters"]: r for r in rows}
    growth = by[200]["per_resource_ms"] / by[10]["per_resource_ms"] if 200 in by and 10 in by else None
    return {"rows": rows, "per_resource_200_over_10": growth, "linear": growth is not None and growth <= 1.2}


def markdown(summary: dict[str, Any]) -> str:
    lines = [
        "| clusters | resources | warm-up s | config s | program s | policies s | total s | floor s | inputs floor s "
        "| ms/resource | floor ms/resource | ratio to floor | program / inputs floor | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary["rows"]:
        pol = f"{r['policies_s']:.2f}" if r["policies_s"] is not None else "—"
        lines.append(
            f"| {r['clusters']} | {r['resources']} | {r['startup_s']:.2f} | {r['config_s']:.2f} | {r['program_s']:.2f} "
            f"| {pol} | {r['total_s']:.2f} | {r['floor_s']:.2f} | {r['inputs_floor_s']:.2f} | {r['per_resource_ms']:.2f} "
            f"| {r['floor_per_resource_ms']:.2f} | {r['ratio_to_floor']:.2f} | {r['ratio_to_inputs_floor']:.2f} "
            f"| {r['peak_rss_mib']:.0f} |"
        )
    g = summary["per_resource_200_over_10"]
    if g is not None:
        lines.append("")
        lines.append(
            f"Per-resource cost at 200 clusters / at 10: {g:.2f} ({'linear' if summary['linear'] else 'super-linear'})."
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    p.add_argument("--json", action="store_true")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--no-policies", action="store_true")
    p.add_argument("--per-cloud", action="store_true", help="program cost per resource, one cloud at a time")
    args = p.parse_args(argv)
    if args.per_cloud:
        print(per_cloud_markdown(per_cloud()))
        return 0
    if args.one is not None:
        print(json.dumps(measure(args.one, not args.no_policies)))
        return 0
    rows = [in_subprocess(int(n), not args.no_policies) for n in args.sizes.split(",")]
    summary = summarize(rows)
    print(json.dumps(summary, indent=2) if args.json else markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
