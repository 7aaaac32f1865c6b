"""The configuration reference's entries: what each key of the stack file means, what reads it, an example.

Every field of every model needs one (`tooling.reference.undocumented`); a cloud's own keys come from
its package (`clouds.spec.Cloud.keys`), the ones every cloud shares in form are derived here.
"""

from __future__ import annotations

from clouds import CLOUDS
from infra.checks.clusters import MIN_KUBERNETES
from infra.config.base import MAX_HOURLY_PRICE, KeyDoc
from infra.config.issues import fields_of
from tooling.serving_keys import SERVING_KEYS

# One key's entry: what it means, the rule or component that reads it, and a YAML example.
Key = KeyDoc


def cloud_keys() -> dict[tuple[str, str], Key]:
    """The entries of every cloud's blocks: its own (`Cloud.keys`), and those every cloud shares in form."""
    keys: dict[tuple[str, str], Key] = {}
    version_floor = ".".join(map(str, MIN_KUBERNETES))
    for c in CLOUDS:
        block = c.cluster_block.__name__
        fields = fields_of(c.cluster_block)
        example = ", ".join(
            f"{f}: {c.examples.get(f, '...')}" for f in fields if f not in ("uncataloguedRegion", "adopt")
        )
        keys[("InferenceCluster", c.key)] = Key(
            f"{c.source} cluster settings; set when `source` is `{c.source}`."
            if c.provisioned
            else f"A cluster you run; set when `source` is `{c.source}`. Nothing is provisioned.",
            f"`clouds/{c.key}/component.py`",
            f"{c.key}: {{{example}}}" if c.provisioned else f"{c.key}: {{kubeconfigKey: kubeconfig}}",
        )
        if "region" in fields:
            keys[(block, "region")] = Key(
                "The cloud region.", "the cluster's provider", f"region: {c.examples['region']}"
            )
        if "uncataloguedRegion" in fields:
            keys[(block, "uncataloguedRegion")] = Key(
                f"The region exists though the region catalog (`{c.profile.zones.regions_from}`) does not list it "
                "yet; it is then taken as written.",
                "`check_region` (`infra/checks/clusters.py`)",
                "uncataloguedRegion: true",
            )
        if "adopt" in fields:
            ids = c.adoption
            keys[(block, "adopt")] = (
                Key(
                    "A running cluster to take into the stack with the engine's import instead of creating it: `id` "
                    f"is its import ID, {ids.cluster_shape}. No network or system pool is created for it; a pool "
                    "whose running state differs from the stack file is refused (docs/adopting.md).",
                    f"the import option of the cluster in `clouds/{c.key}/component.py`; `infra/checks/adoption.py`",
                    f"adopt: {c.examples.get('adopt', '...')}",
                )
                if ids is not None
                else Key(
                    f"Refused on {c.source}: the program knows no import IDs for its clusters yet (docs/adopting.md).",
                    "`infra/checks/adoption.py`",
                    "",
                )
            )
        if "kubernetesVersion" in fields:
            keys[(block, "kubernetesVersion")] = Key(
                "Kubernetes version as the cloud spells it; quote it (YAML reads 1.30 as 1.3). "
                f"{version_floor} or newer (DRA v1); 1.36+ when a claim consumes capacity (`dra.cpu`).",
                "the cluster resource; the version floor in `infra/checks/clusters.py`",
                f"kubernetesVersion: {c.examples.get('kubernetesVersion', chr(34) + '1.36' + chr(34))}",
            )
        if c.machine_block is not None:
            machine = c.machine_block.__name__
            keys[("Provisioning", c.key)] = Key(
                f"The {c.source} machine; set when `provider` is `{c.source}`.",
                "the cloud's node pool",
                f"{c.key}: {{...}}",
            )
            keys[(machine, "accelerator")] = Key(
                "The GPU on the machine. Leave it out to take it from the machine catalog (the machine's GPU type "
                "and count); a machine without GPUs gets none: standard image, `modelplane.ai/cpu` label and taint. "
                "Written, it must match the machine's row.",
                "`accelerator-driver-mismatch`, `machine-accelerator-mismatch`, `accelerator-type-unknown`; the "
                "pool's GPU label and vendor taint (`infra/checks/supply.py` supplies it)",
                "accelerator: {type: nvidia-l4, count: 1}",
            )
            keys[(machine, "uncatalogued")] = Key(
                "Take a machine type the machine catalog does not know, unchecked and unpriced. Without it such a "
                "machine stops the run (a typo would otherwise reach the cloud); with it the plan lists the pool "
                "as unpriced and never calls the stack within budget, unless the class states its `hourlyPrice`.",
                "`unknown-machine-type`; the cost and `cost-over-budget`",
                "uncatalogued: true",
            )
            keys[(machine, "hourlyPrice")] = Key(
                f"What one node of the class costs you an hour, in USD (above 0, at most {MAX_HOURLY_PRICE}): your contract "
                "rate, or a price for a machine the catalog has none for. The cost prices the class's pools at it "
                "instead of the catalog's public price, the plan marks it `priceFrom: class`, and "
                "`cost-over-budget` counts it, so a budget can be mandatory with any machine (docs/machines.md).",
                "the cost (`infra/cost.py`) and `cost-over-budget`",
                "hourlyPrice: 12.5",
            )
            if "diskSizeGb" in fields_of(c.machine_block):
                keys[(machine, "diskSizeGb")] = Key(
                    "Boot disk size in GB.", "the cloud's node pool disk", "diskSizeGb: 200"
                )
        keys.update(c.keys)
    return keys


def cloud_sections(kind: str) -> list[tuple[str, str]]:
    """The reference's sections for every cloud's machine blocks (`machine`) or cluster blocks (`cluster`)."""
    if kind == "machine":
        return [
            (c.machine_block.__name__, f"modelplane:classes[].provisioning.{c.key}")
            for c in CLOUDS
            if c.machine_block is not None
        ]
    return [(c.cluster_block.__name__, f"modelplane:clusters[].{c.key}") for c in CLOUDS]


# (model, key as written in YAML) -> what it is for. Every field of every model needs one.
KEYS: dict[tuple[str, str], Key] = {
    ("Fleet", "classes"): Key(
        "Hardware classes: the devices a node offers and, on provisioned clouds, the machine that has them.",
        "pools name a class (`clusters[].nodePools[].className`); device rules in `infra/checks/devices.py`",
        "modelplane:classes: [{name: l4-gke, devices: [...], provisioning: {...}}]",
    ),
    ("Fleet", "clusters"): Key(
        "Clusters, each on one cloud or an Existing cluster you run. At least one is required.",
        "one cluster component per entry (`clouds/<cloud>/component.py`, listed in `clouds/__init__.py`)",
        "modelplane:clusters: [{name: gke-prod, source: GKE, gke: {...}, nodePools: [...]}]",
    ),
    ("Fleet", "deployments"): Key(
        "Model servers placed on a pool of a cluster.",
        "`ModelDeployment` (`components/model_deployment.py`)",
        "modelplane:deployments: [{name: qwen, cluster: gke-prod, pool: gpu, image: ..., devices: [...]}]",
    ),
    ("Fleet", "services"): Key(
        "Publish a deployment through its cluster's Envoy Gateway: a Gateway per cluster with a service, "
        "an HTTPRoute per service, the endpoint as the stack output `endpoints` (docs/serving.md).",
        "`ModelService` and `ClusterGateway` (`components/features/routing.py`); `infra.checks.services.check_serving`",
        "modelplane:services: [{name: qwen, deployment: qwen, path: /qwen}]",
    ),
    ("Fleet", "budget"): Key(
        "What the stack may cost a month, in USD, with autoscaled pools at `maxNodeCount` (docs/machines.md).",
        "policy `cost-over-budget` (`infra/cost.py`); advisory unless the pack config makes it mandatory",
        "modelplane:budget: {monthlyUsd: 5000}",
    ),
    ("Fleet", "chartMirror"): Key(
        "Take every serving-stack chart from one Helm repository instead of its public one, as an air-gapped "
        "network needs (docs/air-gapped.md): an `http(s)://` chart repository URL, or an `oci://` registry "
        "prefix under which each chart is `<prefix>/<chart>`. Or a mapping of `url` and `components`, "
        "which overrides it per component. The plan shows where each release's chart comes from.",
        "the serving stack's releases (`infra/serving/mirror.py`); policy `mirror-chart-version`",
        "modelplane:chartMirror: oci://registry.example.internal/charts",
    ),
    ("Fleet", "protect"): Key(
        "Protect everything registered for each cluster but its providers (network, cluster, node pools, serving "
        "stack, deployments, routes): `pulumi destroy` and `pulumi up` refuse to delete or replace them. "
        '`pulumi config set modelplane:protect true` writes the string `"true"`, which is accepted; so are `True` and `False`, as Pulumi reads booleans, and nothing else (`yes`, `on`, `1`). The stack file is read as the Pulumi CLI reads it, with YAML 1.2 booleans (`true`, `True`, `TRUE` and the `false` forms), so a bare `protect: yes` or `protect: on` is the text it spells, and refused.',
        "policy `protect-clusters`; the cluster component's `protect` option, which its children inherit",
        "modelplane:protect: true",
    ),
    # Classes
    ("InferenceClass", "name"): Key(
        "The class name pools refer to.", "`clusters[].nodePools[].className`", "name: l4-gke"
    ),
    ("InferenceClass", "description"): Key(
        "Free text for readers.", "not read by any rule", "description: One L4 per node."
    ),
    ("InferenceClass", "devices"): Key(
        "What one node of the class offers, as DRA devices (claimed) or Synthetic ones (described only). Leave "
        "it out to take it from the machine: a GPU machine's GPUs (`gpu`, its vendor's driver and DeviceClass, "
        "one per GPU), or on a machine without GPUs a `cpu` device of `dra.cpu` claiming the vCPUs less the 2 "
        "dra-driver-cpu reserves; without a machine, from `accelerator`. Written devices are checked against "
        "the machine.",
        "claimed drivers -> the cluster's `draDrivers` and the pool's role (`infra/checks/devices.py`); "
        "what is left out: `infra/checks/supply.py`",
        "devices: [{name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com}]",
    ),
    ("InferenceClass", "accelerator"): Key(
        "The GPUs of an Existing cluster's nodes (`type`, `count`), for a class that backs its pools. When set, "
        "the device rules hold the class to them (a GPU driver of the type's vendor, one device per GPU) and the "
        "type is the pool's `modelplane.ai/gpu` label; without it the label is `<vendor>-gpu`. On an Existing "
        "cluster the type is one of the accelerator vocabulary (docs/existing-clusters.md lists it: the machine "
        "catalog's types and the AMD Instinct products), or the class sets `uncataloguedAccelerator`. A class that "
        "leaves out `devices` gets one `gpu` device of `count` GPUs of the type's vendor. A provisioned "
        "class names its accelerator in its provisioning block instead, or, naming its provider and no machine, "
        "says here what it needs (`accelerator: nvidia-l4` is one GPU of that type): the plan chooses the cheapest priced catalog machine that carries it and "
        "shows the choice (name the machine to keep it whatever the catalog says).",
        "`accelerator-driver-mismatch`, `accelerator-type-unknown`; the pool's GPU label; the machine choice "
        "(`infra/checks/supply.py`)",
        "accelerator: {type: amd-mi300x, count: 8}",
    ),
    ("InferenceClass", "uncataloguedAccelerator"): Key(
        "The Existing cluster's nodes carry a GPU the accelerator vocabulary does not list yet: take `accelerator` "
        "as written. Without it such a type stops the run (a typo would otherwise become the pool's GPU label).",
        "`accelerator-type-unknown` (`infra/checks/devices.py`)",
        "uncataloguedAccelerator: true",
    ),
    ("InferenceClass", "minGpuMemoryGib"): Key(
        "For a class that names its provider and no machine: the least memory per GPU it needs (with "
        "`accelerator`, or alone for one GPU of any type). The plan chooses the cheapest priced catalog machine "
        "that has it.",
        "the machine choice (`infra/checks/supply.py`)",
        "minGpuMemoryGib: 40",
    ),
    ("InferenceClass", "provisioning"): Key(
        "The machine for one provider. Omit it for a class used only on Existing clusters.",
        "`class-provider-mismatch`: a provisioned cluster's pool needs a class whose provider is its source",
        "provisioning: {provider: GKE, gke: {machineType: g2-standard-8}}",
    ),
    ("Device", "name"): Key(
        "The device's name; deployments claim it by this name.", "`deployments[].devices[].name`", "name: gpu"
    ),
    ("Device", "claim"): Key(
        "`DRA`: claimed through a ResourceClaim. `Synthetic`: describes the node, never claimed, installs nothing.",
        "claimed drivers (only `DRA` devices count)",
        "claim: DRA",
    ),
    ("Device", "driver"): Key(
        "The DRA driver that publishes the device (`gpu.nvidia.com`, `gpu.amd.com`, `dra.cpu`, `dra.net`).",
        "`unsupported-devices`, pool role, which serving-stack components install (`docs/supported-devices.md`)",
        "driver: gpu.nvidia.com",
    ),
    ("Device", "deviceClassName"): Key(
        "The DeviceClass a claim asks for; required when `claim` is `DRA`.",
        "the deployment's ResourceClaimTemplate",
        "deviceClassName: gpu.nvidia.com",
    ),
    ("Device", "count"): Key(
        "How many of the device one node has.",
        "`accelerator-driver-mismatch` (GPU count = `accelerator.count`); upper bound of a deployment's request",
        "count: 1",
    ),
    ("Device", "attributes"): Key(
        "Device attributes as the driver publishes them, each holding exactly one of string, version, bool or int.",
        "described for readers and the plan",
        "attributes: {productName: {string: NVIDIA L4}}",
    ),
    ("Device", "capacity"): Key(
        "Device capacities as Kubernetes quantities. `dra.cpu/cpu` on a `dra.cpu` device is the CPUs one claim takes.",
        "`cpu-claim-resources` (requests = limits = claimed CPUs); Kubernetes 1.36+ when a claim consumes capacity",
        'capacity: {dra.cpu/cpu: {value: "6"}}',
    ),
    ("AttributeValue", "string"): Key("A string attribute.", "as `attributes`", "string: NVIDIA L4"),
    ("AttributeValue", "version"): Key("A semantic-version attribute.", "as `attributes`", 'version: "1.0.0"'),
    ("AttributeValue", "bool"): Key("A boolean attribute.", "as `attributes`", "bool: true"),
    ("AttributeValue", "int"): Key("An integer attribute.", "as `attributes`", "int: 80"),
    ("CapacityValue", "value"): Key(
        "A Kubernetes quantity (`6`, `500m`, `262128Mi`).", "as `capacity`", "value: 23034Mi"
    ),
    ("Provisioning", "provider"): Key(
        "The cloud this machine is on; the block of the same name (lowercase) must be set, and only it.",
        "`class-provider-mismatch`",
        "provider: GKE",
    ),
    ("Accelerator", "type"): Key(
        "The accelerator on the machine, vendor first (`nvidia-l4`, `nvidia-h100-80gb`, `amd-mi325x`).",
        "`accelerator-driver-mismatch` (vendor matches the GPU driver); the `modelplane.ai/gpu` label",
        "type: nvidia-l4",
    ),
    ("Accelerator", "count"): Key(
        "Accelerators per machine (default 1).",
        "`accelerator-driver-mismatch` (equals the GPU device count)",
        "count: 1",
    ),
    # Clusters
    ("InferenceCluster", "name"): Key(
        "The cluster name; resource names and `deployments[].cluster` use it.",
        "every resource of the cluster",
        "name: gke-prod",
    ),
    ("InferenceCluster", "labels"): Key("Labels for readers and tooling.", "the plan", "labels: {team: ml}"),
    ("InferenceCluster", "source"): Key(
        "Where the cluster comes from; the block of the same name (lowercase) must be set, and only it.",
        "the cluster component (`clouds/<cloud>/component.py`), supported drivers",
        "source: GKE",
    ),
    ("InferenceCluster", "gateway"): Key(
        "How other clusters' fleet services reach this cluster's gateway: `host`, the DNS name they use (point it "
        "at the Gateway's address), and `issuerRef`, the cert-manager CA issuer of its certificate, of the CA "
        "every cluster's gateway chains to (docs/serving.md, Fleet services).",
        "the Gateway's `fleet` listener and its Certificate; `infra.checks.fleet`",
        "gateway: {host: west.gw.example.com, issuerRef: {name: fleet-ca}}",
    ),
    ("FleetGateway", "host"): Key(
        "The gateway's DNS name.", "the listener and its Certificate", "host: west.gw.example.com"
    ),
    ("FleetGateway", "issuerRef"): Key(
        "The cert-manager CA issuer of its certificate.", "the Certificate", "issuerRef: {name: fleet-ca}"
    ),
    ("InferenceCluster", "nodePools"): Key(
        "Node pools, besides the `system` pool every provisioned cluster gets.",
        "one node pool per entry; `schedulablePools`",
        "nodePools: [{name: gpu, className: l4-gke, nodeCount: 1}]",
    ),
    ("InferenceCluster", "taints"): Key(
        "Taints every node of the cluster's pools carries: a provisioned cloud puts them on each pool it "
        "declares (not the `system` pool, where the cloud's own add-ons run); on Existing they say what "
        "the owner's pool nodes carry. Model deployments and every node agent of the serving stack "
        "tolerate each exactly. A pool's role taint keys (`nvidia.com/gpu`, `amd.com/gpu`, "
        "`modelplane.ai/cpu`) and a repeated key and effect are refused. On Vultr a taint taken away stays on "
        "the pool's nodes (its API keeps what an update leaves out): a plan against the earlier one reports it "
        "as an error, with the fix.",
        "each pool's taints (`infra/facts.py`, `derive_cluster`); deployments' and node agents' "
        "tolerations (`infra/serving/catalog.py`, `cluster_charts`); `infra/checks/clusters.py` (`check_taints`)",
        "taints: [{key: example.com/dedicated, value: ml, effect: NoSchedule}]",
    ),
    ("Taint", "key"): Key("Taint key.", "as `taints`", "key: example.com/dedicated"),
    ("Taint", "value"): Key("Taint value.", "as `taints`", "value: ml"),
    ("Taint", "effect"): Key("Taint effect, in Kubernetes spelling.", "as `taints`", "effect: NoSchedule"),
    ("NodePool", "name"): Key(
        "Pool name, unique in the cluster; `system` is reserved. Nodes get `modelplane.ai/pool=<name>`.",
        "`pool-role-marking`; `deployments[].pool`",
        "name: gpu",
    ),
    ("NodePool", "className"): Key("The class of the pool's nodes.", "device rules, pool role", "className: l4-gke"),
    ("NodePool", "nodeCount"): Key(
        "Nodes to start with. GKE counts it per zone of a regional cluster (3 zones unless `zones` lists "
        "them): a fixed pool has `nodeCount` in each zone, an autoscaled one starts `nodeCount` rounded up to "
        "whole nodes per zone, which must fit `maxNodeCount`.",
        "the cloud's node pool; a deployment needs a pool that can have nodes; `check_pool_start`",
        "nodeCount: 1",
    ),
    ("NodePool", "minNodeCount"): Key(
        "Autoscaling lower bound; set with `maxNodeCount`, `minNodeCount <= nodeCount <= maxNodeCount`.",
        "the cloud's autoscaler",
        "minNodeCount: 0",
    ),
    ("NodePool", "maxNodeCount"): Key(
        "Autoscaling upper bound; set with `minNodeCount`.", "the cloud's autoscaler", "maxNodeCount: 4"
    ),
    ("NodePool", "zones"): Key(
        "Zones for the pool's nodes; empty lets the cloud choose. Each is a zone of the cluster's region: on GKE "
        "and EKS one the zone catalog lists for the region (`clouds/gke/zones.py`, `clouds/eks/zones.py`, each "
        "with its source), where the catalog knows the region.",
        "the cloud's node pool locations; `zone-outside-region`",
        "zones: [us-central1-a]",
    ),
    ("NodePool", "uncataloguedZones"): Key(
        "The pool's zones exist though the zone catalog does not list them for the region yet; they are then "
        "checked against the zone form and the region only.",
        "`zone-outside-region` (`infra/checks/devices.py`)",
        "uncataloguedZones: true",
    ),
    ("NodePool", "capacity"): Key(
        "How the pool's nodes are bought: `type` OnDemand (default), Spot (spot or preemptible), Reservation or "
        "CapacityBlock, with `reservation`, `hourlyPrice`, `blockNodes`, `blockZone` and `maxPrice` where the type "
        'and cloud take them (docs/machines.md, "Capacity"). On an Existing cluster, a Spot pool\'s `nodeTaint` '
        "`{key, value, effect}` is the taint the owner puts on its spot nodes, which every component and model "
        "placed there tolerates (docs/existing-clusters.md).",
        "the cloud's node pool purchase option; the budget's price",
        "capacity: {type: Spot}",
    ),
    ("NodePool", "adopt"): Key(
        "A running pool of an adopted cluster, taken in with the engine's import: `id` is its import ID, in the "
        "shape its cloud's cluster `adopt` names (GKE: <project>/<region>/<cluster name>/<pool name>); the pool "
        "keeps its running name, so `name` must be the ID's (docs/adopting.md).",
        "the import option of the cloud's node pool; `infra/checks/adoption.py`",
        "adopt: {id: my-project/us-central1/inference-1/gpu}",
    ),
    ("ChartMirror", "url"): Key(
        "The mirror every component's chart comes from unless its own entry names another.",
        "the serving stack's releases",
        "url: https://charts.example.internal",
    ),
    ("ChartMirror", "components"): Key(
        "Per component (its catalog key, as `modelplane catalog` lists them): a URL, or `{url, version}`.",
        "`infra/serving/mirror.py`: unknown keys are refused with the closest names",
        "components: {dra-driver-cpu: {url: oci://registry.example.internal/charts, version: 0.3.1}}",
    ),
    ("MirroredChart", "url"): Key(
        "Where this component's chart comes from; defaults to `chartMirror.url`.",
        "the component's release",
        "url: oci://registry.example.internal/charts",
    ),
    ("MirroredChart", "version"): Key(
        "The exact chart version the mirror serves, when it is not the catalog's pin. The values were checked "
        "against the pin only; the plan and `pulumi preview` say so.",
        "the component's release; policy `mirror-chart-version` (advisory)",
        "version: 0.3.1",
    ),
    ("Budget", "monthlyUsd"): Key(
        "The monthly budget in USD, a plain number (`5000`, not `$5,000`).",
        "policy `cost-over-budget`",
        "monthlyUsd: 5000",
    ),
}
KEYS.update(SERVING_KEYS)
KEYS.update(cloud_keys())

# Where each model appears in a stack file, in reading order.
SECTIONS: list[tuple[str, str]] = [
    ("Fleet", "config"),
    ("InferenceClass", "modelplane:classes[]"),
    ("Device", "modelplane:classes[].devices[]"),
    ("AttributeValue", "modelplane:classes[].devices[].attributes.<name>"),
    ("CapacityValue", "modelplane:classes[].devices[].capacity.<name>"),
    ("Provisioning", "modelplane:classes[].provisioning"),
    *cloud_sections("machine"),
    ("Accelerator", "modelplane:classes[].provisioning.<provider>.accelerator"),
    ("InferenceCluster", "modelplane:clusters[]"),
    *cloud_sections("cluster"),
    ("OwnerPrometheus", "modelplane:clusters[].existing.prometheus"),
    ("FleetGateway", "modelplane:clusters[].gateway"),
    ("NodePool", "modelplane:clusters[].nodePools[]"),
    ("Taint", "modelplane:clusters[].taints[]"),
    ("ModelDeploymentSpec", "modelplane:deployments[]"),
    ("DeploymentDevice", "modelplane:deployments[].devices[]"),
    ("ModelCache", "modelplane:deployments[].cache"),
    ("Autoscaling", "modelplane:deployments[].autoscaling"),
    ("ModelServiceSpec", "modelplane:services[]"),
    ("ServiceBackend", "modelplane:services[].backends[]"),
    ("ExternalEndpoint", "modelplane:services[].backends[].external"),
    ("ServiceTls", "modelplane:services[].tls"),
    ("IssuerRef", "modelplane:services[].tls.issuerRef"),
    ("Budget", "modelplane:budget"),
    ("ChartMirror", "modelplane:chartMirror"),
    ("MirroredChart", "modelplane:chartMirror.components.<key>"),
]
