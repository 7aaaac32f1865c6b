"""Existing (bring-your-own) clusters: nothing is provisioned.

The kubeconfig comes from the secret config key the cluster names (`existing.kubeconfigKey`).
Pools describe nodes the cluster's owner has already labelled and tainted as `infra.facts` says
(README, "Existing clusters"); no pool resource exists to create or protect.
"""

from __future__ import annotations

import pulumi

from clouds import existing
from components.base import ClusterArgs, ClusterComponent, ComponentError


class ExistingCluster(ClusterComponent):
    CLOUD = existing.CLOUD

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, args, opts)
        if args.kubeconfig is None:
            raise ComponentError("cluster", name, "an Existing cluster needs its kubeconfig")
        owner = args.facts.spec.owner_block
        context = owner.context if owner is not None else None
        self.context = context
        self.connect(pulumi.Output.from_input(args.kubeconfig), context=context)
        self.finish()
