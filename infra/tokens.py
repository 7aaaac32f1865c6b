"""The engine type tokens the program registers and the tooling and policies look for, each once.

The program's own component tokens are chosen once and never changed: a changed token changes
every URN below it, which Pulumi carries out as replacing what it holds. The cluster components'
tokens are each cloud's (`clouds.spec.Cloud.component_token`). Kubernetes tokens are those
pulumi-kubernetes registers (`pulumi_kubernetes.helm.v3.Release` and so on; `tests/test_layers.py`
checks them against the SDK), spelled here so the policy pack never loads the SDK to read them.
"""

from __future__ import annotations

SERVING_STACK = "modelplane:stack:ServingStack"
MODEL_DEPLOYMENT = "modelplane:deploy:ModelDeployment"
SHARED_CACHE = "modelplane:deploy:SharedCache"
GATEWAY = "modelplane:serve:Gateway"
MODEL_SERVICE = "modelplane:serve:ModelService"
FLEET_SERVICE = "modelplane:serve:FleetService"
FLEET_EXPORT = "modelplane:serve:FleetExport"
BUDGET = "modelplane:cost:Budget"

RELEASE = "kubernetes:helm.sh/v3:Release"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RESOURCE_CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
JOB = "kubernetes:batch/v1:Job"
PERSISTENT_VOLUME_CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
