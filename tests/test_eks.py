"""The EKS cluster component under Pulumi mocks: what it registers and with which arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi.runtime import rpc

from clouds.eks.network import subnet_zones
from clouds.eks.node_groups import autoscaler_owned, dranet_tolerations
from infra.facts import PoolFacts
from tests.conftest import assert_protected_but_providers, cpu_class, fleet_of, gpu_class, named, of_type, run_fleet
from tooling.mockrun import MockRun, Registration

PROVIDER = "pulumi:providers:aws"
VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
IGW = "aws:ec2/internetGateway:InternetGateway"
EIP = "aws:ec2/eip:Eip"
NAT = "aws:ec2/natGateway:NatGateway"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ROUTE_ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
RELEASE = "kubernetes:helm.sh/v3:Release"


def efa_class() -> dict[str, Any]:
    """8x H100 with 16 EFA interfaces claimed through aws-dranet (`dra.net`)."""
    return {
        "name": "h100-efa",
        "devices": [
            {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8},
            {"name": "efa", "driver": "dra.net", "deviceClassName": "efa.networking.k8s.aws", "count": 16},
        ],
        "provisioning": {
            "provider": "EKS",
            "eks": {
                "instanceType": "p5.48xlarge",
                "diskSizeGb": 500,
                "accelerator": {"type": "nvidia-h100-80gb", "count": 8},
            },
        },
    }


def eks_fleet(efa: bool, protect: bool, zones: bool = True) -> dict[str, Any]:
    classes = [
        gpu_class("l4", "EKS", {"instanceType": "g6.xlarge", "accelerator": {"type": "nvidia-l4", "count": 1}}),
        cpu_class("cpu8", "EKS", {"instanceType": "m7i.2xlarge"}),
    ]
    pools: list[dict[str, Any]] = [
        {"name": "l4", "className": "l4", "nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3},
        {"name": "cpu", "className": "cpu8", "nodeCount": 2},
    ]
    if zones:
        pools[0]["zones"] = ["us-east-1b"]
    if efa:
        classes.append(efa_class())
        pools.append({"name": "h100", "className": "h100-efa", "nodeCount": 2})
    return {
        "classes": classes,
        "clusters": [
            {
                "name": "eks-east",
                "labels": {"team": "inference"},
                "source": "EKS",
                "eks": {"region": "us-east-1", "kubernetesVersion": "1.36"},
                "nodePools": pools,
            }
        ],
        "protect": protect,
    }


@pytest.fixture(scope="module")
def plan() -> MockRun:
    result = run_fleet(eks_fleet(efa=True, protect=True))
    assert result.error is None, result.error
    return result


@pytest.fixture(scope="module")
def without_efa() -> MockRun:
    result = run_fleet(eks_fleet(efa=False, protect=False, zones=False))
    assert result.error is None, result.error
    return result


def under(plan: MockRun, type_token: str) -> list[Registration]:
    return [r for r in of_type(plan, type_token) if r.parent == "eks-east"]


def node_group(plan: MockRun, pool: str) -> dict[str, Any]:
    return dict(named(plan, f"eks-east-{pool}").inputs)


def template_of(plan: MockRun, pool: str) -> dict[str, Any]:
    group = node_group(plan, pool)
    (template,) = [t for t in under(plan, LAUNCH_TEMPLATE) if f"{t.name}-id" == group["launchTemplate"]["id"]]
    assert template.name == f"eks-east-{pool}-template"
    return dict(template.inputs)


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


def test_cluster_is_vpc_iam_cluster_addons_and_a_node_group_per_pool_plus_system(plan: MockRun) -> None:
    assert named(plan, "eks-east").type == "modelplane:eks:EksCluster"
    assert len(under(plan, VPC)) == 1
    assert len(under(plan, IGW)) == 1
    assert len(under(plan, EIP)) == 1
    assert len(under(plan, NAT)) == 1
    assert sorted(r.name for r in under(plan, ROLE)) == [
        "eks-east-autoscaler-role",
        "eks-east-cluster-role",
        "eks-east-node-role",
    ]
    assert [r.name for r in under(plan, CLUSTER)] == ["eks-east-cluster"]
    assert sorted(r.name for r in under(plan, NODE_GROUP)) == [
        "eks-east-cpu",
        "eks-east-h100",
        "eks-east-l4",
        "eks-east-system",
    ]
    assert len(under(plan, LAUNCH_TEMPLATE)) == 4


def test_subnets_are_public_and_private_per_zone_with_load_balancer_role_tags(plan: MockRun) -> None:
    # Registration order is not creation order; the index in the name is the zone's.
    subnets = sorted(under(plan, SUBNET), key=lambda s: s.name)
    public = [s for s in subnets if "-public-" in s.name]
    private = [s for s in subnets if "-private-" in s.name]
    # The pools name one zone; EKS needs two, so the region's first other zone joins it.
    assert [s.inputs["availabilityZone"] for s in public] == ["us-east-1b", "us-east-1a"]
    assert [s.inputs["availabilityZone"] for s in private] == ["us-east-1b", "us-east-1a"]
    for s in public:
        assert s.inputs["tags"]["kubernetes.io/role/elb"] == "1"
        assert s.inputs["mapPublicIpOnLaunch"] is True
    for s in private:
        assert s.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1"
        assert "kubernetes.io/role/elb" not in s.inputs["tags"]
    cidrs = [s.inputs["cidrBlock"] for s in subnets]
    assert len(set(cidrs)) == len(cidrs)


def test_without_pool_zones_the_vpc_spans_three_of_the_regions_zones(without_efa: MockRun) -> None:
    private = sorted((s for s in of_type(without_efa, SUBNET) if "-private-" in s.name), key=lambda s: s.name)
    assert [s.inputs["availabilityZone"] for s in private] == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_zones_repeat_when_the_region_has_fewer_than_asked() -> None:
    assert subnet_zones([], ["a", "b"], 3) == ["a", "b", "a"]
    assert subnet_zones(["c"], ["a", "b", "c"], 2) == ["c", "a"]


def test_private_subnets_route_through_nat_and_public_through_the_internet_gateway(plan: MockRun) -> None:
    tables = {r.name: r.inputs for r in under(plan, ROUTE_TABLE)}
    assert tables["eks-east-public-routes"]["routes"] == [{"cidrBlock": "0.0.0.0/0", "gatewayId": "eks-east-igw-id"}]
    assert tables["eks-east-private-routes"]["routes"] == [
        {"cidrBlock": "0.0.0.0/0", "natGatewayId": "eks-east-nat-id"}
    ]
    nat = named(plan, "eks-east-nat").inputs
    assert nat["allocationId"] == "eks-east-nat-ip-id"
    assert nat["subnetId"] == "eks-east-public-0-id"
    pairs = {(r.inputs["subnetId"], r.inputs["routeTableId"]) for r in under(plan, ROUTE_ASSOCIATION)}
    assert pairs == {
        ("eks-east-public-0-id", "eks-east-public-routes-id"),
        ("eks-east-public-1-id", "eks-east-public-routes-id"),
        ("eks-east-private-0-id", "eks-east-private-routes-id"),
        ("eks-east-private-1-id", "eks-east-private-routes-id"),
    }


def test_cluster_and_node_roles_get_exactly_the_eks_managed_policies(plan: MockRun) -> None:
    by_role: dict[str, set[str]] = {}
    for a in under(plan, ATTACHMENT):
        if a.name != "eks-east-autoscaler-role-policy":
            by_role.setdefault(a.inputs["role"], set()).add(a.inputs["policyArn"])
    assert by_role == {
        "eks-east-cluster-role": {"arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"},
        "eks-east-node-role": {
            "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
            "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
            "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        },
    }
    trust = json.loads(named(plan, "eks-east-node-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    trust = json.loads(named(plan, "eks-east-cluster-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "eks.amazonaws.com"}


def test_cluster_uses_the_version_private_subnets_and_api_access_entries(plan: MockRun) -> None:
    cluster = named(plan, "eks-east-cluster").inputs
    assert cluster["name"] == "eks-east"
    assert cluster["version"] == "1.36"
    assert cluster["roleArn"] == "arn:aws:iam::000000000000:role/eks-east-cluster-role"
    assert cluster["vpcConfig"]["subnetIds"] == ["eks-east-private-0-id", "eks-east-private-1-id"]
    assert cluster["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}
    assert cluster["tags"] == {"team": "inference"}


def test_cluster_gets_the_four_managed_addons(plan: MockRun) -> None:
    addons = {r.inputs["addonName"]: r.inputs for r in under(plan, ADDON)}
    assert set(addons) == {"vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"}
    assert {a["clusterName"] for a in addons.values()} == {"eks-east"}


def test_gpu_pools_use_the_nvidia_ami_and_carry_the_nvidia_taint(plan: MockRun) -> None:
    for pool, instance, accel in (("l4", "g6.xlarge", "nvidia-l4"), ("h100", "p5.48xlarge", "nvidia-h100-80gb")):
        group = node_group(plan, pool)
        assert group["amiType"] == "AL2023_x86_64_NVIDIA"
        assert group["instanceTypes"] == [instance]
        assert group["labels"] == {"modelplane.ai/pool": pool, "modelplane.ai/gpu": accel}
        assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]


def test_cpu_pool_uses_the_standard_ami_with_cpu_label_and_taint(plan: MockRun) -> None:
    group = node_group(plan, "cpu")
    assert group["amiType"] == "AL2023_x86_64_STANDARD"
    assert group["instanceTypes"] == ["m7i.2xlarge"]
    assert group["labels"] == {"modelplane.ai/pool": "cpu", "modelplane.ai/cpu": "true"}
    assert group["taints"] == [{"key": "modelplane.ai/cpu", "value": "true", "effect": "NO_SCHEDULE"}]


def test_system_node_group_is_standard_untainted_and_labelled_system(plan: MockRun) -> None:
    group = node_group(plan, "system")
    assert group["amiType"] == "AL2023_x86_64_STANDARD"
    assert group["instanceTypes"] == ["m6i.xlarge"]
    assert group["labels"] == {"modelplane.ai/pool": "system"}
    assert group.get("taints", []) == []


def test_scaling_follows_the_pool_bounds_or_node_count(plan: MockRun) -> None:
    assert node_group(plan, "l4")["scalingConfig"] == {"desiredSize": 1.0, "minSize": 1.0, "maxSize": 3.0}
    assert node_group(plan, "cpu")["scalingConfig"] == {"desiredSize": 2.0, "minSize": 2.0, "maxSize": 2.0}
    assert node_group(plan, "system")["scalingConfig"] == {"desiredSize": 1.0, "minSize": 1.0, "maxSize": 2.0}


def test_pool_zones_pick_the_node_groups_private_subnets(plan: MockRun) -> None:
    assert node_group(plan, "l4")["subnetIds"] == ["eks-east-private-0-id"]
    assert node_group(plan, "cpu")["subnetIds"] == ["eks-east-private-0-id", "eks-east-private-1-id"]


def test_launch_templates_enforce_imdsv2_and_size_the_root_volume(plan: MockRun) -> None:
    for pool, size in (("h100", 500.0), ("l4", 100.0), ("cpu", 100.0), ("system", 100.0)):
        template = template_of(plan, pool)
        assert template["metadataOptions"]["httpTokens"] == "required"
        assert template["metadataOptions"]["httpPutResponseHopLimit"] == 2.0
        (device,) = template["blockDeviceMappings"]
        assert device["ebs"]["volumeSize"] == size
        group = node_group(plan, pool)
        # EKS rejects disk_size next to a launch template.
        assert "diskSize" not in group
        assert group["launchTemplate"]["version"] == "1"


def test_every_aws_resource_uses_the_provider_of_its_region(plan: MockRun) -> None:
    (provider,) = of_type(plan, PROVIDER)
    assert provider.name == "aws-us-east-1-provider"
    assert provider.parent is None
    assert provider.inputs["region"] == "us-east-1"
    children = [r for r in plan.resources if r.type.startswith("aws:")]
    assert len(children) > 20
    for r in children:
        assert r.provider.startswith(provider.urn + "::"), (r.name, r.provider)


def test_kubeconfig_is_secret_and_gets_tokens_from_aws_eks_get_token(plan: MockRun) -> None:
    kubeconfig = named(plan, "eks-east-k8s").inputs["kubeconfig"]
    assert is_secret(kubeconfig)
    config = json.loads(kubeconfig["value"])
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"] == "https://eks-east-cluster.eks.invalid"
    (user,) = config["users"]
    exec_ = user["user"]["exec"]
    assert exec_["command"] == "aws"
    assert exec_["args"][:6] == ["eks", "get-token", "--cluster-name", "eks-east", "--region", "us-east-1"]


def test_aws_dranet_is_installed_when_a_pool_claims_dra_net(plan: MockRun) -> None:
    (release,) = [r for r in of_type(plan, RELEASE) if r.name == "eks-east-aws-dranet"]
    assert release.parent == "eks-east"
    inputs = release.inputs
    assert inputs["name"] == "mp-aws-dranet"
    assert inputs["chart"] == "aws-dranet"
    assert inputs["version"] == "1.0.0"
    assert inputs["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    assert inputs["namespace"] == "kube-system"
    # Only the GPU taint of the EFA pool: never a wildcard toleration.
    assert inputs["values"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    k8s_provider = named(plan, "eks-east-k8s")
    assert release.provider.startswith(k8s_provider.urn + "::")


def test_aws_dranet_is_absent_when_no_pool_claims_dra_net(without_efa: MockRun) -> None:
    assert not [r for r in of_type(without_efa, RELEASE) if "dranet" in r.name]
    assert not [r for r in of_type(without_efa, RELEASE) if r.inputs.get("chart") == "aws-dranet"]


def test_dranet_tolerates_only_the_taints_of_pools_that_claim_it() -> None:
    from infra.facts import derive_fleet

    (facts,) = derive_fleet(fleet_of(eks_fleet(efa=True, protect=False)))
    assert dranet_tolerations(facts.pools) == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    (facts,) = derive_fleet(fleet_of(eks_fleet(efa=False, protect=False)))
    assert dranet_tolerations(facts.pools) == []


def test_protect_covers_cluster_node_groups_and_network(plan: MockRun) -> None:
    protected = {r.name for r in plan.resources if r.protect and r.parent == "eks-east"}
    assert_protected_but_providers(plan)
    assert protected >= {
        "eks-east-vpc",
        "eks-east-public-0",
        "eks-east-public-1",
        "eks-east-private-0",
        "eks-east-private-1",
        "eks-east-cluster",
        "eks-east-system",
        "eks-east-l4",
        "eks-east-cpu",
        "eks-east-h100",
    }
    assert named(plan, "eks-east-cluster").inputs["deletionProtection"] is True


def test_nothing_is_protected_without_protect(without_efa: MockRun) -> None:
    assert not [r.name for r in without_efa.resources if r.protect]
    assert named(without_efa, "eks-east-cluster").inputs["deletionProtection"] is False


def test_efa_pool_gets_one_efa_interface_per_claimed_dra_net_device(plan: MockRun) -> None:
    interfaces = template_of(plan, "h100")["networkInterfaces"]
    assert [i["networkCardIndex"] for i in interfaces] == [float(n) for n in range(16)]
    # Card 0 carries IP traffic and EFA; the others are RDMA-only, which nodeadm leaves alone.
    assert [i["interfaceType"] for i in interfaces] == ["efa"] + ["efa-only"] * 15
    assert [i["deviceIndex"] for i in interfaces[:2]] == [0.0, 1.0]
    assert all(i["securityGroups"] == ["eks-east-efa-id", "sg-eks-east-cluster"] for i in interfaces)
    assert "networkInterfaces" not in template_of(plan, "l4")


def test_cluster_autoscaler_runs_with_its_own_pod_identity_role(plan: MockRun) -> None:
    (release,) = [r for r in of_type(plan, RELEASE) if r.name == "eks-east-cluster-autoscaler"]
    assert release.parent == "eks-east"
    assert release.inputs["chart"] == "cluster-autoscaler"
    assert release.inputs["version"] == "9.57.0"
    assert release.inputs["repositoryOpts"] == {"repo": "https://kubernetes.github.io/autoscaler"}
    assert release.inputs["namespace"] == "kube-system"
    assert release.inputs["values"]["autoDiscovery"] == {"clusterName": "eks-east"}
    assert release.inputs["values"]["rbac"] == {"serviceAccount": {"name": "cluster-autoscaler"}}
    trust = json.loads(named(plan, "eks-east-autoscaler-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    association = named(plan, "eks-east-autoscaler-identity").inputs
    assert (association["namespace"], association["serviceAccount"]) == ("kube-system", "cluster-autoscaler")
    actions = json.loads(named(plan, "eks-east-autoscaler").inputs["policy"])["Statement"][1]["Action"]
    assert actions == ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]


def test_cluster_autoscaler_runs_the_charts_image_whose_dra_handling_is_on(plan: MockRun) -> None:
    # cluster-autoscaler v1.35.0, the image chart 9.57.0 runs, defaults
    # --enable-dynamic-resource-allocation to true and exits if it is false (config/flags/flags.go);
    # the release keeps that image and never sets the flag.
    (release,) = [r for r in of_type(plan, RELEASE) if r.name == "eks-east-cluster-autoscaler"]
    assert release.inputs["version"] == "9.57.0"
    assert "image" not in release.inputs["values"]
    assert not any(k.startswith("enable-dynamic-resource-allocation") for k in release.inputs["values"]["extraArgs"])


def test_autoscaled_node_groups_leave_the_desired_size_to_the_autoscaler() -> None:
    fixed = PoolFacts("cpu", "cpu", "CPU", {}, (), None, None, 2, None, None)
    scaled = PoolFacts("l4", "l4", "GPU", {}, (), None, "nvidia", 1, 1, 3)
    assert autoscaler_owned(scaled) == ["scalingConfig.desiredSize"]
    assert autoscaler_owned(fixed) is None


def test_efa_security_group_allows_all_traffic_within_itself(plan: MockRun) -> None:
    group = named(plan, "eks-east-efa").inputs
    assert [(r["protocol"], r.get("self")) for r in group["ingress"]] == [("-1", True)]
    assert ("-1", True) in [(r["protocol"], r.get("self")) for r in group["egress"]]


def test_efa_pool_sits_in_one_cluster_placement_group_and_one_zone(plan: MockRun) -> None:
    group = named(plan, "eks-east-h100-placement").inputs
    assert group["strategy"] == "cluster"
    assert template_of(plan, "h100")["placement"] == {"groupName": "eks-east-h100-placement"}
    assert len(node_group(plan, "h100")["subnetIds"]) == 1


def test_no_efa_resources_without_dra_net(without_efa: MockRun) -> None:
    names = {r.name for r in without_efa.resources}
    assert "eks-east-efa" not in names
    assert not [n for n in names if n.endswith("-placement")]


def test_the_offline_zones_are_the_regions_names_in_the_providers_order() -> None:
    from tooling.mockrun import invoke_result

    zones = "aws:index/getAvailabilityZones:getAvailabilityZones"
    assert invoke_result(zones, {}, {"region": "us-east-1"})["names"] == [f"us-east-1{x}" for x in "abcdef"]
    # A region the zone list lacks gets the zone form's first letters, enough for the default network.
    assert invoke_result(zones, {}, {"region": "xx-new-1"})["names"] == ["xx-new-1a", "xx-new-1b", "xx-new-1c"]
