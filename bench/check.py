"""`make bench-check`: the offline plan's cost ratios at 50 clusters against a committed baseline.

One run of `bench.plan_scaling` at 50 clusters (its own process, so start-up is that process's),
each cost divided by the floor measured in the same run (bare resources under the same mock
runtime), so the machine cancels out. It fails when a ratio grows by more than half over
`bench/baseline.json`, printing the table either way, so a slowdown is caught in the change that
makes it. Ratios only, never absolute times.

    uv run python -m bench.check            # compare
    uv run python -m bench.check --record   # write the baseline from this run (review the diff)

Record the baseline where CI runs it: a fresh clone right after `make test` (a new virtualenv and
cold file cache make start-up dearer than on a warm checkout, about 2.1 against 1.6 times the floor).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.plan_scaling import in_subprocess

BASELINE = Path(__file__).with_name("baseline.json")
CLUSTERS = 50
# A ratio may grow by half before the check fails: runs on one machine vary by about 10%.
TOLERANCE = 1.5


def ratios(row: dict[str, Any]) -> dict[str, float]:
    floor = row["floor_s"]
    total = row["config_s"] + row["program_s"] + row["policies_s"]
    return {
        "start-up / floor": row["startup_s"] / floor,
        "program / floor": row["program_s"] / floor,
        "pack / floor": row["policies_s"] / floor,
        "total / floor": total / floor,
    }


def compare(measured: dict[str, float], baseline: dict[str, float]) -> tuple[str, list[str]]:
    lines = ["| ratio | baseline | now | limit | |", "|---|---|---|---|---|"]
    failed = []
    for name, now in measured.items():
        base = baseline[name]
        limit = base * TOLERANCE
        ok = now <= limit
        if not ok:
            failed.append(name)
        lines.append(f"| {name} | {base:.2f} | {now:.2f} | {limit:.2f} | {'ok' if ok else 'SLOWER'} |")
    return "\n".join(lines), failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.check")
    parser.add_argument("--record", action="store_true", help="write this run's ratios as the baseline")
    args = parser.parse_args(argv)
    row = in_subprocess(CLUSTERS, policies=True)
    measured = ratios(row)
    if args.record:
        BASELINE.write_text(json.dumps({k: round(v, 2) for k, v in measured.items()}, indent=2) + "\n")
        print(f"wrote {BASELINE.name}: {json.dumps(measured)}")
        return 0
    table, failed = compare(measured, json.loads(BASELINE.read_text()))
    print(f"{CLUSTERS} clusters, {row['resources']} resources, floor {row['floor_s']:.1f} s\n\n{table}")
    if failed:
        print(
            f"\nbench-check: {', '.join(failed)} grew by more than {TOLERANCE - 1:.0%} over bench/baseline.json; "
            "find the change that made the plan slower (`python -m bench.plan_scaling --one 50`), or record a "
            "new baseline with `python -m bench.check --record` if the cost is intended",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
