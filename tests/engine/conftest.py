"""The engine tier: fixtures that run stacks under the real Pulumi CLI (see harness.py), with a
real kube-apiserver per cluster behind the kubernetes test provider (see kube.py).

`make test` builds the CLI, kube-apiserver and etcd first (`make engine`). Where one cannot be
found the tier fails under CI (`CI=true`), and elsewhere is skipped with a message saying that it
did not run (tests/tools.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.engine import charts as mirror
from tests.engine.harness import Engine
from tests.engine.kube import Etcd, ServerPool
from tests.engine.podproc import PodProgram
from tests.engine.stackrun import Run
from tests.tools import require


@pytest.fixture(scope="session")
def cli() -> Path:
    """The directory holding bin/pulumi; kube-apiserver and etcd must be there too."""
    for name in ("kube-apiserver", "etcd"):
        require(name, "the engine tier")
    return require("pulumi", "the engine tier").parent.parent


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory, cli: Path) -> Iterator[Etcd]:
    """One etcd per test process; each test's API servers keep their objects under a prefix of their own."""
    store = Etcd.start(tmp_path_factory.mktemp("etcd"))
    yield store
    store.stop()


@pytest.fixture
def kube(tmp_path: Path, etcd: Etcd) -> Iterator[ServerPool]:
    """The API servers of this test's clusters, started as the kubernetes test provider needs them."""
    pool = ServerPool(tmp_path / "kube", etcd.url)
    yield pool
    pool.close()


@pytest.fixture
def engine(tmp_path: Path, cli: Path, kube: ServerPool) -> Engine:
    return Engine(tmp_path, cli, kube)


# The cluster tier (test_real_up.py, test_data_plane.py): committed stacks on local clusters.


@pytest.fixture(scope="module")
def real_tools() -> Path:
    for name in ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "lws"):
        require(name, "the cluster tier")
    require("pulumi-resource-kubernetes", "the cluster tier")
    return require("pulumi", "the cluster tier").parent.parent


@pytest.fixture(scope="module")
def store(etcd: Etcd, real_tools: Path) -> Etcd:
    """The process's etcd: each local cluster keeps its objects under a prefix of its own."""
    return etcd


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mirror.served_charts(tmp_path_factory.mktemp("charts")) as url:
        yield url


@pytest.fixture
def run(tmp_path: Path, real_tools: Path, store: Etcd, charts: str) -> Iterator[Any]:
    started: list[Run] = []

    def start(
        stack: str,
        programs: Sequence[PodProgram] = (),
        edit: Callable[[dict[str, Any]], None] | None = None,
        held_jobs: Mapping[str, str] | None = None,
    ) -> Run:
        started.append(Run(tmp_path, real_tools, store, charts, stack, programs, edit, held_jobs))
        return started[-1]

    yield start
    for r in started:
        r.stop()
