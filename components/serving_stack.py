"""ServingStack: installs on one cluster exactly the catalog components its pools' drivers select.

It turns catalog rows (`components.catalog`) into `kubernetes.helm.v3.Release`s on the cluster's
provider; it decides nothing about which rows (that is `join_components`) or their values (that is
`components.values`). Releases are Helm releases, not rendered charts, because the operators rely
on Helm hooks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import Component, install_order, needed_by_others
from infra.facts import ClusterFacts


@dataclass(frozen=True)
class ServingStackArgs:
    facts: ClusterFacts


def release_args(component: Component, wait: bool) -> dict[str, Any]:
    """The Release arguments for one catalog row; the plan prints exactly these values."""
    repo_opts = None if component.oci else k8s.helm.v3.RepositoryOptsArgs(repo=component.repo)
    chart = f"{component.repo}/{component.chart}" if component.oci else component.chart
    return {
        "name": component.release,
        "chart": chart,
        "version": component.version,
        "repository_opts": repo_opts,
        "namespace": component.namespace,
        "create_namespace": True,
        "values": dict(component.values),
        # Charts others depend on are awaited (helm --wait) so dependents start on a ready base.
        "skip_await": not wait,
        "atomic": False,
    }


class ServingStack(pulumi.ComponentResource):
    release_names: pulumi.Output[list[str]]

    def __init__(self, name: str, args: ServingStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        facts = args.facts
        super().__init__(
            "modelplane:stack:ServingStack",
            name,
            {
                "cluster": facts.name,
                "source": facts.source,
                "draDrivers": list(facts.dra_drivers),
                "supportedDrivers": list(facts.supported_drivers),
                "components": [c.key for c in facts.components],
            },
            opts,
        )
        awaited = needed_by_others(facts.components)
        self.releases: dict[str, k8s.helm.v3.Release] = {}
        for component in install_order(facts.components):
            deps = [self.releases[d] for d in component.depends_on if d in self.releases]
            self.releases[component.key] = k8s.helm.v3.Release(
                f"{name}-{component.key}",
                **release_args(component, component.key in awaited),
                opts=pulumi.ResourceOptions(parent=self, depends_on=deps),
            )
        self.release_names = pulumi.Output.from_input([c.release for c in facts.components])
        self.register_outputs({"releases": self.release_names})
