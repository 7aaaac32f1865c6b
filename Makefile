# Two commands for a fresh machine with Python 3.11+, Go 1.26.6+ and make:
#   make plan   plans every example stack offline (no cloud account, no Pulumi CLI)
#   make test   runs every test and check (pytest, ruff, mypy), the engine tier included: it builds
#               the Pulumi CLI, kube-apiserver, etcd and a collector once per machine first (make engine)
PYTHON ?= python3
UV_VERSION := 0.13.8
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
RUN := $(UV) run --frozen

.PHONY: plan test demo lint typecheck pytest engine golden docs bench bench-check mutate sync clean

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv==$(UV_VERSION)

# Bytecode is compiled once at install: machines and CI runners that set PYTHONDONTWRITEBYTECODE
# would otherwise compile the cloud SDKs again in every process (uv does not by default).
sync: $(UV)
	$(UV) sync --frozen --quiet --compile-bytecode

plan: sync
	$(RUN) modelplane plan --all

test: sync lint typecheck engine pytest

# Optional: `pulumi up` for real on a local cluster (docs/demo.md); STACK names another Existing stack.
STACK ?= byo-mixed
demo: sync engine
	$(RUN) python -m tests.engine.demo --stack $(STACK)

lint: sync
	$(RUN) ruff check .
	$(RUN) ruff format --check .

typecheck: sync
	$(RUN) mypy

# Work stealing: the engine tier's tests take 10 to 40 s each and are collected together, so a
# worker handed its share up front could sit idle while the other ran them; an idle worker now
# takes tests from the busy one (pytest-xdist's worksteal; the same suite took 8 min 43 s with
# the default scheduling and 6 min 38 s with this, on two cores).
# Three workers on two cores: the engine tier's tests wait on the CLI, API servers and plugins
# they start, so two workers left the cores a quarter idle (docs/benchmarks.md, "make test").
# Each worker's first share starts with a third of the local-cluster tests and of the rest of the
# engine tier (tests/conftest.py, `pytest_collection_modifyitems`), so the run does not end on one.
PYTEST_WORKERS ?= 3
pytest: sync
	$(RUN) pytest -n $(PYTEST_WORKERS) --dist worksteal

# The outside tools the tests run: the Pulumi CLI, and the kube-apiserver and etcd the engine
# tier's kubernetes test provider sends objects to (tests/engine/), an OpenTelemetry collector
# that validates the telemetry config (tests/test_telemetry.py), and for the cluster tier
# (tests/engine/test_real_up.py, make demo) kube-controller-manager, kube-scheduler, KWOK, the
# LeaderWorkerSet controller, the real pulumi-kubernetes provider, and the monitoring chain's
# prometheus-operator and Prometheus (tests/engine/test_monitoring.py), and the scaling chain's KEDA
# operator and metrics server (tests/engine/test_autoscaling.py), the endpoint picker
# (tests/engine/test_endpoint_picker.py), and Envoy Gateway's translator egctl
# (tests/engine/test_fleet_translate.py). Built from the Go module proxy into a cache outside the
# repository, once per version per machine (engine/build.sh says where; docs/benchmarks.md how long
# the first time on two cores; nothing once built).
ENGINE_TOOLS := pulumi etcd kube-apiserver otelcol kube-controller-manager kube-scheduler kwok lws pulumi-resource-kubernetes prometheus-operator prometheus keda keda-adapter epp egctl

# One build at a time: two at once (Go's build and module caches are safe for concurrent go
# commands, `go help cache`) took 11 to 14 % longer on two cores (docs/benchmarks.md, "Building
# the outside tools"), since each Go build already compiles on every core.
engine:
	for t in $(ENGINE_TOOLS); do bash engine/build.sh $$t >/dev/null || exit 1; done

# Regenerate the golden plans and generated docs; review the diff before committing.
golden: sync
	$(RUN) modelplane golden

docs: sync
	$(RUN) modelplane docs

bench: sync
	$(RUN) python -m bench

# The plan's cost ratios at 50 clusters against bench/baseline.json; fails when one grows by more
# than half (bench/check.py). .ci/run runs it.
bench-check: sync
	$(RUN) python -m bench.check

# Mutation testing of the rule modules against the intent-level tests (not the golden plans);
# 1 to 10 minutes per module on two idle cores, so not part of .ci/run.
# One module: make mutate MODULES=infra/checks/devices.py
mutate: sync
	nice -n 19 $(RUN) python -m bench.mutate $(MODULES)

clean:
	rm -rf .tools .venv .mypy_cache .ruff_cache .pytest_cache
