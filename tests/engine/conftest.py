"""The engine tier: fixtures that run stacks under the real Pulumi CLI (see harness.py).

`make test` builds the CLI first (`make engine`). Where none can be found the tier fails under CI
(`CI=true`), and elsewhere is skipped with a message saying that it did not run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.engine.harness import Engine, cli_root

NOT_RUN = "THE ENGINE TIER DID NOT RUN: no Pulumi CLI (build it with `make engine`)"


@pytest.fixture(scope="session")
def cli() -> Path:
    root = cli_root()
    if root is None:
        if os.environ.get("CI"):
            pytest.fail(NOT_RUN)
        pytest.skip(NOT_RUN)
    return root


@pytest.fixture
def engine(tmp_path: Path, cli: Path) -> Engine:
    return Engine(tmp_path, cli)
