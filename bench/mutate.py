"""`make mutate`: mutation testing of the rule modules, one module at a time.

Each module runs in its own scratch copy of the working tree under `out/mutate/<module>/` with
mutmut (3.x) configured to mutate only that module and to run only the test files that state its
rules. The golden-plan comparison (tests/test_generated.py) is never selected: `make golden`
would accept any changed plan as the new truth, so only intent-level tests count. The CLI tests
run the program in a subprocess, where the mutant is not active, so they are left out too.

Usage: `python -m bench.mutate [MODULE ...] [--max-children N] [--mutants PATTERN ...]` (default:
every module, in the order below). `--mutants` runs only the mutants whose names match a pattern
(fnmatch, as `mutmut results` prints them, e.g. `infra.serving.vllm_args.x_port_args__mutmut_*`), to check that
new tests kill what survived without measuring the whole module again. Prints one line per module (killed, survived, no tests, timeout, kill rate) and the
names of the survivors; `mutmut show NAME` in the module's scratch directory prints a survivor's
diff. Not part of .ci/run: a module takes 1 to 10 minutes on two idle cores (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "out" / "mutate"

# The fleet model and its checks across keys are read by the same tests.
CONFIG_TESTS = [
    "tests/test_config.py",
    "tests/test_serving_checks.py",
    "tests/test_config_checks.py",
    "tests/test_model_service.py",
    "tests/test_reference.py",
    "tests/test_guard.py",
    "tests/test_cloud_values.py",
    "tests/test_formats.py",
    "tests/test_stack_file_bounds.py",
    "tests/test_stack_reader.py",
    "tests/test_config_size.py",
    "tests/test_existing_hardware.py",
    "tests/test_secure_env.py",
    "tests/test_model_deployment.py",
    "tests/test_devices.py",
]

# The device rules and the machine rules, split from one module, are stated by the same tests.
DEVICE_TESTS = [
    "tests/test_devices.py",
    "tests/test_properties.py",
    "tests/test_machine_rules.py",
    "tests/test_machines.py",
    "tests/test_guard.py",
    "tests/test_policies_config.py",
]

# Module -> the test files that state its rules (in priority order: the device rules first).
MODULES: dict[str, list[str]] = {
    "infra/checks/devices.py": DEVICE_TESTS,
    "infra/checks/machines.py": DEVICE_TESTS,
    "infra/serving/catalog.py": [
        "tests/test_catalog.py",
        "tests/test_values.py",
        "tests/test_serving_stack.py",
        "tests/test_policies_releases.py",
    ],
    # The rows, node agents included: the audit and schedulability read them.
    "infra/serving/rows.py": [
        "tests/test_catalog.py",
        "tests/test_placement.py",
        "tests/test_schedulable.py",
        "tests/test_chart_rows.py",
    ],
    "infra/placement.py": ["tests/test_placement.py", "tests/test_model_deployment.py"],
    # The audit over the scheduling model above, run by the offline plan (the recipes' Gateway
    # audit is asserted in test_model_service).
    "tooling/placement.py": ["tests/test_placement.py", "tests/test_model_service.py"],
    "infra/serving/values.py": [
        "tests/test_values.py",
        "tests/test_serving_stack.py",
        "tests/test_policies_releases.py",
    ],
    "policies/*": [
        "tests/test_policies_config.py",
        "tests/test_policies_pools.py",
        "tests/test_policies_releases.py",
        "tests/test_policies_stack.py",
        "tests/test_policies_modes.py",
        "tests/test_analyzer.py",
        "tests/test_formats.py",
        "tests/test_machines.py",
    ],
    "infra/config/*": CONFIG_TESTS,
    # The checks across keys, read by the same tests as the model.
    "infra/checks/*": CONFIG_TESTS,
    # The guard's own rules (zone limits, pool names a cloud shortens, what stops a run) and the
    # schedulability rules it runs.
    "infra/checks/guard.py": [
        "tests/test_guard.py",
        "tests/test_schedulable.py",
        "tests/test_machines.py",
        "tests/test_policies_config.py",
    ],
    "infra/checks/schedulable.py": ["tests/test_schedulable.py", "tests/test_guard.py"],
    # The short config form: a class filled in from its machine or from a stated need.
    "infra/checks/supply.py": ["tests/test_supply.py", "tests/test_config.py", "tests/test_guard.py"],
    # The pack's servicer: the SDK's answers, one parse per resource. Its own row, left out of
    # `policies/*`: its test compares every committed stack and would run for each policy mutant.
    "policies/server.py": ["tests/test_pack_server.py"],
}
# Files a pattern above matches that belong to another row.
ELSEWHERE: dict[str, list[str]] = {
    "policies/*": ["policies/server.py"],
    "infra/checks/*": [
        "infra/checks/devices.py",
        "infra/checks/machines.py",
        "infra/checks/guard.py",
        "infra/checks/schedulable.py",
        "infra/checks/supply.py",
    ],
}

CONFIG = """
[tool.mutmut]
source_paths = ["infra", "clouds", "components", "policies", "program", "tooling"]
only_mutate = {only}
do_not_mutate = {skip}
also_copy = ["stacks", "Pulumi.yaml", "__main__.py", "docs", "bench"]
pytest_add_cli_args = ["-p", "no:xdist", "-p", "no:cacheprovider", "-q"]
pytest_add_cli_args_test_selection = {tests}
"""


def tracked_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [line for line in out.splitlines() if line and (ROOT / line).is_file()]


def scratch_copy(module: str) -> Path:
    """A copy of the working tree whose pyproject.toml configures mutmut for `module` alone."""
    where = OUT / module.replace("/", "_").replace("*", "all")
    shutil.rmtree(where, ignore_errors=True)
    for rel in tracked_files():
        dest = where / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest)
    pyproject = where / "pyproject.toml"
    skip = ["policies/__main__.py", *ELSEWHERE.get(module, [])]
    config = CONFIG.format(only=json.dumps([module]), tests=json.dumps(MODULES[module]), skip=json.dumps(skip))
    pyproject.write_text(pyproject.read_text(encoding="utf-8") + config, encoding="utf-8")
    return where


def run_module(module: str, max_children: int, patterns: Sequence[str] = ()) -> dict[str, object]:
    where = scratch_copy(module)
    mutmut = str(Path(sys.executable).with_name("mutmut"))
    subprocess.run(
        ["nice", "-n", "19", mutmut, "run", "--max-children", str(max_children), *patterns],
        cwd=where,
        check=False,
        stdout=subprocess.DEVNULL,
    )
    listing = subprocess.run(
        [mutmut, "results", "--all", "true"], cwd=where, check=True, capture_output=True, text=True
    ).stdout
    status: dict[str, str] = {}
    for line in listing.splitlines():
        name, _, verdict = line.strip().rpartition(": ")
        if name and (not patterns or any(fnmatch.fnmatch(name, p) for p in patterns)):
            status[name] = verdict
    counts: dict[str, int] = {}
    for verdict in status.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    total = sum(counts.values())
    report = {
        "module": module,
        "mutants": total,
        "counts": counts,
        "kill_rate": round(killed / total, 3) if total else None,
        "survivors": sorted(n for n, v in status.items() if v not in ("killed", "timeout")),
    }
    # Reports sit beside the scratch copies, which each run replaces. A run of named mutants
    # reports on those alone; it never replaces the module's full report.
    (OUT / f"{where.name}{'.selected' if patterns else ''}.json").write_text(
        json.dumps(report, indent=2), encoding="utf-8"
    )
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mutate", description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", metavar="MODULE", help=f"any of {', '.join(MODULES)}")
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--mutants", nargs="+", default=[], metavar="PATTERN", help="run only these mutants")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module {', '.join(unknown)}; choose from {', '.join(MODULES)}")
    for module in args.modules or list(MODULES):
        r = run_module(module, args.max_children, args.mutants)
        counts = r["counts"]
        assert isinstance(counts, dict)
        print(
            f"{module}: {r['mutants']} mutants, killed {counts.get('killed', 0)}, timeout {counts.get('timeout', 0)}, "
            f"survived {counts.get('survived', 0)}, no tests {counts.get('no tests', 0)}, kill rate {r['kill_rate']}",
            flush=True,
        )
        for name in r["survivors"]:  # type: ignore[attr-defined]
            print(f"    {name}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
