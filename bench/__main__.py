"""`make bench`: every benchmark, printed as the tables docs/benchmarks.md holds."""

from __future__ import annotations

import platform
import subprocess
import sys

from bench import engine, footprint, plan_scaling


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import os

    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"
    )


def main() -> int:
    print(f"Machine: {machine()}\n")
    print("## Plan scaling\n")
    plan_scaling.main([])
    print("\n### Program cost by cloud (10 clusters of one cloud, 8 pools each)\n")
    plan_scaling.main(["--per-cloud"])
    print("\n## Committed stacks: `modelplane plan --all`\n")
    import time

    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tooling.cli", "plan", "--all", "--json"], capture_output=True, check=False)
    print(f"Wall time: {time.perf_counter() - t:.1f} s\n")
    print("## Installed footprint\n")
    footprint.main()
    print("\n## The engine against the plan\n")
    engine.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
