"""Oracle Container Engine for Kubernetes (OKE) clusters: VCN, gateways, subnets and security lists, cluster, node pools.

Everything is created through the run's one `pulumi_oci.Provider` per region (an OCI provider
calls one region's endpoints). Its API key comes from the stack's `oci:tenancyOcid`,
`oci:userOcid`, `oci:fingerprint`, `oci:privateKey` (and `oci:privateKeyPassword`), passed on as
secrets by `stack_credentials`; left unset, the provider reads its environment and `~/.oci/config`
as its documentation describes.

What this module decides (and nothing more), each value with its source (PULUMI_OCI, OKE_ADDONS
and OCI_HPC_OKE are explained in `clouds/oci/__init__.py`; OKE_NETWORK is docs.oracle.com
ContEng/Concepts/contengnetworkconfig.htm, "Network Resource Configuration for Cluster Creation and
Deployment", whose example with a public API endpoint, private worker nodes and public load
balancers this network follows):
- the network: a VCN of its own; an internet gateway for the public subnets, a NAT gateway and a
  service gateway for the private one; three regional subnets (the Kubernetes API endpoint, public;
  the worker nodes, private; the load balancers, public), each with the route table and the security
  list OKE_NETWORK gives it;
- the cluster: an enhanced cluster (the add-ons below need one) with a public API endpoint, flannel
  pod networking, and OKE's NVIDIA GPU Plugin add-on parked on a node label no node carries (the
  profile says why);
- node pools: the system pool and one per pool, of `nodeCount` nodes spread over the pool's
  availability domains (all of the region's when it lists none), on the OKE image for the cluster's
  version (a GPU image on NVIDIA shapes) or the class's own, with labels as `initial_node_labels`
  and taints registered by the kubelet (clouds/oci/taints.py).

Labels, taints, roles and machines come from `infra.facts`; this module only spells them as OKE
wants.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_oci as oci

from clouds.oci import CLOUD as OCI
from clouds.oci.config import FLEX_SUFFIX, OciMachine, machine_parts
from clouds.oci.config import OciCluster as OciClusterBlock
from clouds.oci.taints import USER_DATA, user_data
from components.base import ClusterArgs, ClusterComponent, ComponentError, own_block, stack_credentials
from infra.config.clusters import CapacityType, PoolCapacity
from infra.facts import PoolFacts
from infra.vocabulary import NVIDIA

# The VCN and its subnets (OKE_NETWORK's example ranges): the API endpoint needs a /28 or larger.
VCN_CIDR = "10.0.0.0/16"
API_CIDR = "10.0.0.0/28"
NODES_CIDR = "10.0.10.0/24"
LB_CIDR = "10.0.20.0/24"
ANYWHERE = "0.0.0.0/0"
# Flannel's pod and service ranges, OKE's defaults (PULUMI_OCI `ClusterOptionsKubernetesNetworkConfig`;
# OKE_NETWORK: "10.244.0.0/16" and "10.96.0.0/16").
PODS_CIDR = "10.244.0.0/16"
SERVICES_CIDR = "10.96.0.0/16"
CNI = "FLANNEL_OVERLAY"

# IP protocol numbers as OCI security rules take them (PULUMI_OCI `SecurityList`: "Options are
# supported only for ICMP ("1"), TCP ("6"), UDP ("17")").
TCP, ICMP, ALL = "6", "1", "all"
API_PORT = 6443
# Worker nodes reach the control plane on 12250 as well (OKE_NETWORK, the endpoint's ingress rules).
WORKER_CONTROL_PORT = 12250
# Load balancers reach the nodes' NodePorts and kube-proxy's health port (OKE_NETWORK).
NODE_PORTS = (30000, 32767)
KUBE_PROXY_HEALTH = 10256

# The service gateway reaches every OCI service of the region: the service named "All <key>
# Services In Oracle Services Network" (PULUMI_OCI `core.get_services`).
ALL_SERVICES = "All .* Services In Oracle Services Network"

# OKE's NVIDIA device plugin add-on (OCI_HPC_OKE `--addon-name NvidiaGpuPlugin`) and the node
# label its pods are pinned to, which no node carries (its `nodeSelectors` argument: OKE_ADDONS,
# configuration-arguments-nvidia-gpu-plugin.htm).
NVIDIA_PLUGIN_ADDON = "NvidiaGpuPlugin"
PARKED_LABEL = {"modelplane.ai/oke-nvidia-gpu-plugin": "parked"}

# OKE's image names: `Oracle-Linux-8.10-Gen2-GPU-<date>-OKE-<version>-<build>` for GPU shapes,
# without `GPU` for the others, with `aarch64` for Arm (`oci ce node-pool-options get`).
GPU_IMAGE_WORD = "-GPU-"
ARM_IMAGE_WORD = "aarch64"


def pool_block(pool: PoolFacts) -> OciMachine | None:
    """The OCI block of the pool's class; None for the system pool."""
    if pool.machine_block is None:
        return None
    if not isinstance(pool.machine_block, OciMachine):
        raise ComponentError("node pool", pool.name, "its class has no 'oci' provisioning block")
    return pool.machine_block


def node_image(sources: Sequence[Any], kubernetes_version: str, gpu: bool) -> str:
    """The newest OKE image for the version: a GPU one for NVIDIA shapes, an x86 one otherwise."""
    wanted = f"-OKE-{kubernetes_version.removeprefix('v')}-"
    found = sorted(
        (s.source_name, s.image_id)
        for s in sources
        if wanted in s.source_name and ARM_IMAGE_WORD not in s.source_name and (GPU_IMAGE_WORD in s.source_name) == gpu
    )
    if not found:
        kind = "GPU " if gpu else ""
        raise ComponentError("node image", kubernetes_version, f"OKE lists no {kind}x86 image for it")
    return str(found[-1][1])


def ad_names(domains: Sequence[Any], numbers: Sequence[str]) -> list[str]:
    """The availability domains of the region whose numbers are listed (all of them when none are)."""
    names = [d.name for d in domains]
    if not numbers:
        return names
    return [n for n in names if n.rsplit("-", 1)[-1] in numbers]


def tcp_in(source: str, low: int, high: int | None = None) -> oci.core.SecurityListIngressSecurityRuleArgs:
    return oci.core.SecurityListIngressSecurityRuleArgs(
        protocol=TCP,
        source=source,
        tcp_options=oci.core.SecurityListIngressSecurityRuleTcpOptionsArgs(min=low, max=high or low),
    )


def tcp_out(destination: str, low: int, high: int | None = None) -> oci.core.SecurityListEgressSecurityRuleArgs:
    return oci.core.SecurityListEgressSecurityRuleArgs(
        protocol=TCP,
        destination=destination,
        tcp_options=oci.core.SecurityListEgressSecurityRuleTcpOptionsArgs(min=low, max=high or low),
    )


# ICMP type 3 code 4, "Destination Unreachable: Fragmentation Needed" (path MTU discovery), which
# OKE_NETWORK allows on each subnet.
def mtu_in(source: str) -> oci.core.SecurityListIngressSecurityRuleArgs:
    icmp = oci.core.SecurityListIngressSecurityRuleIcmpOptionsArgs(type=3, code=4)
    return oci.core.SecurityListIngressSecurityRuleArgs(protocol=ICMP, source=source, icmp_options=icmp)


def mtu_out(destination: str) -> oci.core.SecurityListEgressSecurityRuleArgs:
    icmp = oci.core.SecurityListEgressSecurityRuleIcmpOptionsArgs(type=3, code=4)
    return oci.core.SecurityListEgressSecurityRuleArgs(protocol=ICMP, destination=destination, icmp_options=icmp)


def region_provider(name: str, region: str) -> oci.Provider:
    """The run's provider for one region, with the API key from stack config (`stack_credentials`)."""
    key = stack_credentials(OCI)
    return oci.Provider(
        name,
        region=region,
        tenancy_ocid=key.get("tenancy_ocid"),
        user_ocid=key.get("user_ocid"),
        fingerprint=key.get("fingerprint"),
        private_key=key.get("private_key"),
        private_key_password=key.get("private_key_password"),
    )


def capacity_settings(pool: PoolFacts) -> dict[str, Any]:
    """The placement fields that buy the pool's nodes as its capacity says (the `clouds.oci` profile's `CAPACITY`).

    Spot: `preemptible_node_config` with the action OKE takes on a reclaim, TERMINATE, the boot
    volume not kept (a node comes back from the image); OKE labels the nodes
    `oci.oraclecloud.com/oke-is-preemptible=true`
    (https://docs.oracle.com/iaas/Content/ContEng/Tasks/contengusingpreemptiblecapacity.htm). A
    reservation: `capacity_reservation_id`. Both are "(Updatable)" in pulumi-oci 5.5.0's
    `NodePoolNodeConfigDetailsPlacementConfig`: a change updates the pool in place.
    """
    # The system pool has no capacity of its own (None): on demand.
    capacity = pool.capacity or PoolCapacity()
    if capacity.type is CapacityType.SPOT:
        return {
            "preemptible_node_config": oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigPreemptibleNodeConfigArgs(
                preemption_action=oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigPreemptibleNodeConfigPreemptionActionArgs(
                    type="TERMINATE", is_preserve_boot_volume=False
                )
            )
        }
    if capacity.type is CapacityType.RESERVATION:
        return {"capacity_reservation_id": str(capacity.reservation)}
    return {}


class OkeCluster(ClusterComponent):
    CLOUD = OCI

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        block = own_block(args.facts, OciClusterBlock)
        super().__init__(name, args, opts)
        self.compartment_id = block.compartment_id
        self.kubernetes_version = block.kubernetes_version
        self.oci_provider = args.providers.shared(
            ("oci", block.region),
            lambda shared: region_provider(shared, block.region),
        )
        self._network()
        self._cluster()
        self._park_nvidia_device_plugin()
        self._pools()
        self.connect(self._kubeconfig())
        self.finish()

    def _on_oci(self, **extra: Any) -> pulumi.ResourceOptions:
        return self.child(provider=self.oci_provider, **extra)

    def _invoke(self) -> pulumi.InvokeOutputOptions:
        return pulumi.InvokeOutputOptions(provider=self.oci_provider, parent=self)

    def _in_vcn(self) -> dict[str, Any]:
        return {"compartment_id": self.compartment_id, "vcn_id": self.vcn.id}

    def _network(self) -> None:
        """The VCN, its gateways, and the endpoint, node and load balancer subnets (OKE_NETWORK)."""
        name = self._name
        self.vcn = oci.core.Vcn(
            f"{name}-vcn",
            compartment_id=self.compartment_id,
            cidr_blocks=[VCN_CIDR],
            display_name=name,
            opts=self._on_oci(),
        )
        internet = oci.core.InternetGateway(
            f"{name}-igw", display_name=name, enabled=True, **self._in_vcn(), opts=self._on_oci()
        )
        nat = oci.core.NatGateway(f"{name}-nat", display_name=name, **self._in_vcn(), opts=self._on_oci())
        services = oci.core.get_services_output(
            filters=[oci.core.GetServicesFilterArgs(name="name", values=[ALL_SERVICES], regex=True)],
            opts=self._invoke(),
        ).services
        service_id = services.apply(lambda found: found[0].id)
        service_cidr = services.apply(lambda found: found[0].cidr_block)
        gateway = oci.core.ServiceGateway(
            f"{name}-sgw",
            display_name=name,
            services=[oci.core.ServiceGatewayServiceArgs(service_id=service_id)],
            **self._in_vcn(),
            opts=self._on_oci(),
        )
        public_routes = oci.core.RouteTable(
            f"{name}-public",
            display_name=f"{name}-public",
            route_rules=[oci.core.RouteTableRouteRuleArgs(destination=ANYWHERE, network_entity_id=internet.id)],
            **self._in_vcn(),
            opts=self._on_oci(),
        )
        private_routes = oci.core.RouteTable(
            f"{name}-private",
            display_name=f"{name}-private",
            route_rules=[
                oci.core.RouteTableRouteRuleArgs(destination=ANYWHERE, network_entity_id=nat.id),
                oci.core.RouteTableRouteRuleArgs(
                    destination=service_cidr, destination_type="SERVICE_CIDR_BLOCK", network_entity_id=gateway.id
                ),
            ],
            **self._in_vcn(),
            opts=self._on_oci(),
        )
        api_rules = oci.core.SecurityList(
            f"{name}-api",
            display_name=f"{name}-api",
            # Clients and `pulumi up` reach the API server; worker nodes reach it and OKE's
            # control plane port; path MTU discovery (OKE_NETWORK, the endpoint subnet's rules).
            ingress_security_rules=[
                tcp_in(ANYWHERE, API_PORT),
                tcp_in(NODES_CIDR, API_PORT),
                tcp_in(NODES_CIDR, WORKER_CONTROL_PORT),
                mtu_in(NODES_CIDR),
            ],
            # The control plane reaches OKE through the service gateway and the nodes on any port.
            egress_security_rules=[
                oci.core.SecurityListEgressSecurityRuleArgs(
                    protocol=TCP,
                    destination=service_cidr,
                    destination_type="SERVICE_CIDR_BLOCK",
                    tcp_options=oci.core.SecurityListEgressSecurityRuleTcpOptionsArgs(min=443, max=443),
                ),
                oci.core.SecurityListEgressSecurityRuleArgs(protocol=TCP, destination=NODES_CIDR),
                mtu_out(NODES_CIDR),
            ],
            **self._in_vcn(),
            opts=self._on_oci(),
        )
        node_rules = oci.core.SecurityList(
            f"{name}-nodes",
            display_name=f"{name}-nodes",
            # Pods talk across nodes; the control plane and the load balancers reach the nodes
            # (OKE_NETWORK, the worker subnet's rules).
            ingress_security_rules=[
                oci.core.SecurityListIngressSecurityRuleArgs(protocol=ALL, source=NODES_CIDR),
                oci.core.SecurityListIngressSecurityRuleArgs(protocol=TCP, source=API_CIDR),
                mtu_in(ANYWHERE),
                tcp_in(LB_CIDR, *NODE_PORTS),
                tcp_in(LB_CIDR, KUBE_PROXY_HEALTH),
            ],
            # Nodes reach each other, the API server, OCI's services, and the internet through NAT
            # (images, model weights).
            egress_security_rules=[
                oci.core.SecurityListEgressSecurityRuleArgs(protocol=ALL, destination=NODES_CIDR),
                tcp_out(API_CIDR, API_PORT),
                tcp_out(API_CIDR, WORKER_CONTROL_PORT),
                mtu_out(API_CIDR),
                oci.core.SecurityListEgressSecurityRuleArgs(
                    protocol=TCP, destination=service_cidr, destination_type="SERVICE_CIDR_BLOCK"
                ),
                oci.core.SecurityListEgressSecurityRuleArgs(protocol=ALL, destination=ANYWHERE),
            ],
            **self._in_vcn(),
            opts=self._on_oci(),
        )
        lb_rules = oci.core.SecurityList(
            f"{name}-lb",
            display_name=f"{name}-lb",
            # The gateway's load balancer serves HTTP and HTTPS and forwards to the nodes (OKE_NETWORK).
            ingress_security_rules=[tcp_in(ANYWHERE, 80), tcp_in(ANYWHERE, 443)],
            egress_security_rules=[tcp_out(NODES_CIDR, *NODE_PORTS), tcp_out(NODES_CIDR, KUBE_PROXY_HEALTH)],
            **self._in_vcn(),
            opts=self._on_oci(),
        )

        def subnet(
            suffix: str, cidr: str, routes: oci.core.RouteTable, rules: oci.core.SecurityList, public: bool
        ) -> oci.core.Subnet:
            # Regional subnets (no `availability_domain`) span every AD of the region (PULUMI_OCI `Subnet`).
            return oci.core.Subnet(
                f"{name}-{suffix}-subnet",
                display_name=f"{name}-{suffix}",
                cidr_block=cidr,
                route_table_id=routes.id,
                security_list_ids=[rules.id],
                prohibit_public_ip_on_vnic=not public,
                **self._in_vcn(),
                opts=self._on_oci(),
            )

        self.api_subnet = subnet("api", API_CIDR, public_routes, api_rules, True)
        self.node_subnet = subnet("nodes", NODES_CIDR, private_routes, node_rules, False)
        self.lb_subnet = subnet("lb", LB_CIDR, public_routes, lb_rules, True)

    def _cluster(self) -> None:
        """The enhanced OKE cluster: public API endpoint, flannel pods, load balancers in their subnet."""
        self.cluster = oci.containerengine.Cluster(
            f"{self._name}-cluster",
            compartment_id=self.compartment_id,
            name=self._name,
            kubernetes_version=self.kubernetes_version,
            vcn_id=self.vcn.id,
            # Cluster add-ons are managed on enhanced clusters only (OKE_ADDONS).
            type="ENHANCED_CLUSTER",
            # `pulumi up` reaches the API server from outside the VCN.
            endpoint_config=oci.containerengine.ClusterEndpointConfigArgs(
                subnet_id=self.api_subnet.id, is_public_ip_enabled=True
            ),
            cluster_pod_network_options=[oci.containerengine.ClusterClusterPodNetworkOptionArgs(cni_type=CNI)],
            options=oci.containerengine.ClusterOptionsArgs(
                service_lb_subnet_ids=[self.lb_subnet.id],
                kubernetes_network_config=oci.containerengine.ClusterOptionsKubernetesNetworkConfigArgs(
                    pods_cidr=PODS_CIDR, services_cidr=SERVICES_CIDR
                ),
            ),
            opts=self._on_oci(),
        )

    def _park_nvidia_device_plugin(self) -> None:
        """OKE's NVIDIA device plugin, pinned to a label no node carries: the DRA driver serves the GPUs."""
        self.nvidia_plugin = oci.containerengine.Addon(
            f"{self._name}-nvidia-gpu-plugin",
            cluster_id=self.cluster.id,
            addon_name=NVIDIA_PLUGIN_ADDON,
            # OKE may have deployed it already: take it over (PULUMI_OCI `override_existing`), and
            # remove its pods when this resource goes (`remove_addon_resources_on_delete`).
            override_existing=True,
            remove_addon_resources_on_delete=True,
            configurations=[
                oci.containerengine.AddonConfigurationArgs(key="nodeSelectors", value=json.dumps(PARKED_LABEL))
            ],
            opts=self._on_oci(),
        )

    def _pools(self) -> None:
        """The system pool and one node pool per declared pool (system first, as in the facts)."""
        compartment = self.compartment_id
        self.domains = oci.identity.get_availability_domains_output(
            compartment_id=compartment, opts=self._invoke()
        ).availability_domains
        self.images = oci.containerengine.get_node_pool_option_output(
            node_pool_option_id="all",
            compartment_id=compartment,
            node_pool_k8s_version=self.kubernetes_version,
            opts=self._invoke(),
        ).sources
        self.node_pools = [self._node_pool(pool) for pool in self.facts.pools]

    def _node_pool(self, pool: PoolFacts) -> oci.containerengine.NodePool:
        shape, ocpus, memory = machine_parts(str(pool.machine))
        block = pool_block(pool)
        gpu = pool.role == "GPU" and pool.vendor == NVIDIA
        version = self.kubernetes_version
        image = (
            block.image_id
            if block is not None and block.image_id
            else self.images.apply(lambda sources: node_image(sources, version, gpu))
        )
        zones = tuple(pool.zones)
        domains = self.domains.apply(lambda found: ad_names(found, zones))
        node_subnet = self.node_subnet.id
        capacity = capacity_settings(pool)
        placements = pulumi.Output.all(domains, node_subnet).apply(
            lambda a: [
                oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigArgs(
                    availability_domain=ad, subnet_id=a[1], **capacity
                )
                for ad in a[0]
            ]
        )
        return oci.containerengine.NodePool(
            f"{self._name}-{pool.name}",
            cluster_id=self.cluster.id,
            compartment_id=self.compartment_id,
            name=pool.name,
            kubernetes_version=version,
            node_shape=shape,
            node_shape_config=oci.containerengine.NodePoolNodeShapeConfigArgs(ocpus=ocpus, memory_in_gbs=memory)
            if shape.endswith(FLEX_SUFFIX)
            else None,
            node_config_details=oci.containerengine.NodePoolNodeConfigDetailsArgs(
                size=pool.node_count,
                placement_configs=placements,
                node_pool_pod_network_option_details=oci.containerengine.NodePoolNodeConfigDetailsNodePoolPodNetworkOptionDetailsArgs(
                    cni_type=CNI
                ),
            ),
            node_source_details=oci.containerengine.NodePoolNodeSourceDetailsArgs(
                source_type="IMAGE",
                image_id=image,
                boot_volume_size_in_gbs=str(pool.disk_size_gb or (block.disk_size_gb if block else 100)),
            ),
            initial_node_labels=[
                oci.containerengine.NodePoolInitialNodeLabelArgs(key=k, value=v) for k, v in pool.labels.items()
            ],
            node_metadata={USER_DATA: user_data([f"{t.key}={t.value}:{t.effect}" for t in pool.taints])},
            # Pool names are unique within a cluster: a replacement deletes the old pool first.
            opts=self._on_oci(delete_before_replace=True),
        )

    def _kubeconfig(self) -> pulumi.Output[str]:
        # OKE writes the kubeconfig (its user runs `oci ce cluster generate-token`, PULUMI_OCI
        # `get_cluster_kube_config`); it waits for the node pools (their ids), so nothing installed
        # through the cluster's Kubernetes provider starts before there are nodes to run it.
        cluster_id = pulumi.Output.all(self.cluster.id, *[p.id for p in self.node_pools]).apply(lambda a: str(a[0]))
        config = oci.containerengine.get_cluster_kube_config_output(
            cluster_id=cluster_id, token_version="2.0.0", opts=self._invoke()
        )
        return config.content
