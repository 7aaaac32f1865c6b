"""The outside tools some tests run, built by `engine/build.sh` (`make engine`) once per machine.

Where a tool is missing the test fails under CI (`CI=true`), and elsewhere is skipped with a
message saying what did not run and how to build it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


class ToolMissingError(RuntimeError):
    """A binary `engine/build.sh` has not built on this machine."""


def tool(name: str) -> Path:
    """The path of `bin/<name>` from `engine/build.sh --locate <name>`."""
    out = subprocess.run(
        ["bash", str(ROOT / "engine" / "build.sh"), "--locate", name], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not out:
        raise ToolMissingError(f"no {name} (build it with `make engine`)")
    return Path(out) / "bin" / name


def engine_tools() -> list[str]:
    """The tools `make engine` builds, in its order: the Makefile's `ENGINE_TOOLS`."""
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith("ENGINE_TOOLS :="):
            return line.split(":=", 1)[1].split()
    raise RuntimeError("the Makefile names no ENGINE_TOOLS")


# What a skip for a missing tool says; tests/conftest.py repeats it last, where it is read.
NOT_RUN = "DID NOT RUN"


def require(name: str, what: str) -> Path:
    """The tool, or a failure under CI and a skip elsewhere, saying that `what` did not run."""
    try:
        return tool(name)
    except ToolMissingError as missing:
        message = f"{what.upper()} {NOT_RUN}: {missing}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
