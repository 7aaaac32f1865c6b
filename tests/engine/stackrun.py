"""One stack of the repository installed with the real provider on a local cluster of its own.

The cluster tier's tests (test_real_up.py) and `make demo` (demo.py) run stacks this one way: the
stack's Existing cluster started as a `LocalCluster` whose nodes are its pools', the stack's
charts taken from a mirror (`modelplane:chartMirror`), its kubeconfig set as the secret its
cluster names, and the real CLI, pack and `pulumi-resource-kubernetes` (`Engine.real`). The
cluster's model pods are served by simulated engines at their addresses (servers.py) until `stop`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from infra.facts import ClusterFacts
from tests.engine import charts as mirror
from tests.engine.cluster import LocalCluster
from tests.engine.devices import cluster_nodes, stack_clusters
from tests.engine.harness import Engine
from tests.engine.kube import Etcd
from tests.engine.podproc import PodProcesses, PodProgram
from tests.engine.servers import model_servers
from tests.engine.site import Site
from tooling.plan import plan_stack


class Run:
    """One stack of the repository, installed with the real provider on its own local cluster."""

    def __init__(
        self,
        base: Path,
        cli: Path,
        etcd: Etcd,
        charts: str,
        stack: str,
        programs: Sequence[PodProgram] = (),
        edit: Callable[[dict[str, Any]], None] | None = None,
        held_jobs: Mapping[str, str] | None = None,
    ) -> None:
        """`edit` changes the stack's config before anything starts (the cluster's nodes are its pools');
        `held_jobs` labels the Job pods a program of `programs` completes (`LocalCluster.start`)."""
        self.engine = Engine(base / "engine", cli, real=True)
        self.name = stack
        if edit is not None:
            config = self.engine.config(stack)
            edit(config)
            self.engine.write_config(stack, config)
        facts = stack_clusters(self.engine.stack_file(stack))
        assert len(facts) == 1, "one Existing cluster per stack here"
        self.facts: ClusterFacts = next(iter(facts.values()))
        self.cluster = LocalCluster.start(
            base / "cluster", etcd.url, f"/{secrets.token_hex(8)}", cluster_nodes(self.facts), held_jobs
        )
        # What runs in pods (podproc.py): a model server for every engine pod (servers.py), and
        # the programs a test's claims rest on, such as the Prometheus operator and the Prometheus
        # it runs (`podproc.monitoring`).
        self.pods = PodProcesses(self.cluster.server, base / "pods", [model_servers(), *programs]).start()
        self.site = Site(self.cluster)
        config = self.engine.config(stack)
        config.update(mirror.mirror_config(charts))
        self.engine.write_config(stack, config)
        self.stack = self.engine.stack(stack)
        # What the offline plan says the cluster gets: its releases, by name.
        planned = plan_stack(self.engine.stack_file(stack))
        self.planned_releases = {r["name"] for c in planned["clusters"] for r in c["releases"]}
        cluster = next(c for c in config["modelplane:clusters"] if c["name"] == self.facts.name)
        key = f"modelplane:{(cluster.get('existing') or {}).get('kubeconfigKey', 'kubeconfig')}"
        self.stack.set_config(key, auto.ConfigValue(self.cluster.kubeconfig(), secret=True))

    def up(self, on_output: Callable[[str], Any] | None = None) -> auto.UpResult:
        """`pulumi up` with the pack; `on_output` receives the CLI's output as it prints it."""
        return self.stack.up(policy_packs=[str(self.engine.pack)], on_output=on_output)

    def preview(self) -> dict[str, tuple[str, str]]:
        """What a preview would do: urn -> (op, type), for every step that is not `same`."""
        events: list[auto.EngineEvent] = []
        self.stack.preview(policy_packs=[str(self.engine.pack)], on_event=events.append)
        steps: dict[str, tuple[set[str], str]] = {}
        for e in events:
            if e.resource_pre_event is not None and e.resource_pre_event.metadata.op != auto.OpType.SAME:
                m = e.resource_pre_event.metadata
                steps.setdefault(m.urn, (set(), m.type))[0].add(m.op.value)
        # A replacement shows as several steps of one URN (create-replacement, replace,
        # delete-replaced); it is one `replace`.
        return {urn: ("replace" if "replace" in ops else "/".join(sorted(ops)), t) for urn, (ops, t) in steps.items()}

    def deployments(self) -> list[dict[str, Any]]:
        return list(self.engine.config(self.name).get("modelplane:deployments") or [])

    def edit_deployment(self, name: str, **changes: Any) -> None:
        config = self.engine.config(self.name)
        for dep in config["modelplane:deployments"]:
            if dep["name"] == name:
                dep.update(changes)
        self.engine.write_config(self.name, config)

    def stop(self) -> None:
        self.pods.stop()
        self.cluster.stop()
