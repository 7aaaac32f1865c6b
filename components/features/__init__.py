"""The serving features of a model deployment, one module each, every one turning the deployment's
facts into its own objects or decorating what the workload built.

- `cache`: the model cache, a volume of the engine's pod (a PersistentVolumeClaim or a node directory),
  or a shared one, a ReadWriteMany claim of the cluster's filled once by a Job (`SharedWeightCache`);
- `multinode`: replicas of several nodes, the workload as a LeaderWorkerSet of one group per replica;
- `monitoring`: the PodMonitor that has the cluster's Prometheus scrape the engines;
- `autoscaling`: the KEDA ScaledObject that sets the workload's replicas from what it scraped;
- `routing`: the cluster's Gateway and one HTTPRoute per published service, components of their own
  that the program composes beside the deployments they publish.

`components.model_deployment` builds the workload (claim template, env Secret, Deployment, Service)
and reads as the list of the features it composes, as modelplane's `compose-model-replica` function
has `routing.apply` decorate what its backend built. A new feature is a module here and one line
where it is composed.

They sit among the components because they register Pulumi resources. What the plan, the placement
audit and the policy pack need of them (the autoscaler's specs, the routes, the pods' placement) is
data in `infra.serving`, below every component; the rules that refuse a bad feature before anything
registers are in `infra.checks`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from infra.config.model import ModelDeploymentSpec
from infra.facts import ClusterFacts


@dataclass(frozen=True)
class DeploymentContext:
    """A model deployment as its features see it: the component that parents their objects, the
    name their own names start with, the deployment's facts, and the metadata its objects share."""

    parent: pulumi.Resource
    name: str
    spec: ModelDeploymentSpec
    cluster: ClusterFacts
    meta: k8s.meta.v1.ObjectMetaArgs
    labels: dict[str, str]

    def child(self, depends_on: list[pulumi.Resource] | None = None) -> pulumi.ResourceOptions:
        """The options of an object of the deployment: its parent, and what it waits for."""
        return pulumi.ResourceOptions(parent=self.parent, depends_on=depends_on)
