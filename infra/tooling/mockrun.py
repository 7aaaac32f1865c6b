"""Run the real program under Pulumi's mock runtime and collect what it registered.

This is how `modelplane plan` and the tests see the program without a Pulumi CLI or cloud
credentials. The mocks stand in for the engine and providers: a resource's state is its inputs
plus the few outputs a provider would compute (ids, endpoints, kubeconfigs); invokes return the
minimal answer the program reads. The program itself does not know it runs here.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi.runtime
from pulumi.runtime import rpc
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

PROJECT = "modelplane"
# Placeholder for `secure:` values: the offline plan has no passphrase, so secrets stay opaque.
OPAQUE_SECRET = "<secret: not decrypted offline>"

FAKE_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMOCK\n-----END CERTIFICATE-----\n").decode()


def fake_kubeconfig(name: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": name, "cluster": {"server": f"https://{name}.invalid", "certificate-authority-data": FAKE_CA}}
            ],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
            "users": [{"name": name, "user": {"token": "mock"}}],
        }
    )


# Outputs providers compute that the program reads back (camelCase, as the engine sends them).
def _computed_outputs(typ: str, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    if typ == "gcp:container/cluster:Cluster":
        return {"endpoint": "203.0.113.10", "masterAuth": {"clusterCaCertificate": FAKE_CA}, "selfLink": name}
    if typ == "aws:eks/cluster:Cluster":
        vpc_config = dict(inputs.get("vpcConfig") or {}, clusterSecurityGroupId=f"sg-{name}")
        return {
            "vpcConfig": vpc_config,
            "endpoint": f"https://{name}.eks.invalid",
            "certificateAuthority": {"data": FAKE_CA},
            "arn": f"arn:aws:eks:region:000000000000:cluster/{name}",
        }
    if typ == "aws:ec2/placementGroup:PlacementGroup":
        return {"name": inputs.get("name") or name}  # the provider auto-names it
    if typ == "aws:ec2/launchTemplate:LaunchTemplate":
        return {"latestVersion": 1}
    if typ.startswith("aws:") and typ.endswith(":Role"):
        # IAM autonames a role whose name input is unset; attachments refer to it by name.
        return {"arn": f"arn:aws:iam::000000000000:role/{name}", "name": inputs.get("name", name)}
    if typ == "civo:index/kubernetesCluster:KubernetesCluster":
        return {"kubeconfig": fake_kubeconfig(name), "apiEndpoint": f"https://{name}.civo.invalid"}
    if typ == "vultr:index/kubernetes:Kubernetes":
        return {
            "kubeConfig": base64.b64encode(fake_kubeconfig(name).encode()).decode(),
            "endpoint": f"{name}.vultr.invalid",
        }
    if typ == "gcp:serviceaccount/account:Account":
        return {"email": f"{name}@project.iam.gserviceaccount.com"}
    if typ.startswith("azure-native:"):
        # azure-native autonames a resource whose name input is unset and returns it as `name`.
        return {"name": name}
    return {}


def _invoke_result(token: str, args: Mapping[str, Any]) -> dict[str, Any]:
    if token == "azure-native:containerservice:listManagedClusterUserCredentials":
        return {
            "kubeconfigs": [
                {
                    "name": "clusterUser",
                    "value": base64.b64encode(fake_kubeconfig(str(args.get("resourceName", "aks"))).encode()).decode(),
                }
            ]
        }
    if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
        return {"names": ["zone-a", "zone-b", "zone-c"], "zoneIds": ["z1", "z2", "z3"], "id": "zones"}
    if token == "aws:index/getPartition:getPartition":
        return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"}
    if token == "aws:index/getCallerIdentity:getCallerIdentity":
        return {
            "accountId": "000000000000",
            "arn": "arn:aws:iam::000000000000:user/plan",
            "userId": "plan",
            "id": "000000000000",
        }
    return {}


class PlanMocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        state = dict(args.inputs)
        state.update(_computed_outputs(args.typ, args.name, args.inputs))
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        # An empty failure list, not None: the mock monitor iterates it.
        return _invoke_result(args.token, args.args), []


@dataclass(frozen=True)
class Registration:
    type: str
    name: str
    parent: str | None  # the parent's name, None for the stack's direct children
    urn: str
    inputs: Mapping[str, Any]
    custom: bool
    # URNs of the resources this one was registered to depend on (`depends_on` and input outputs).
    dependencies: tuple[str, ...] = ()
    protect: bool = False
    provider: str = ""  # the explicit provider reference (`<provider urn>::<id>`), "" when ambient
    parent_urn: str = ""  # the parent's URN as the engine records it (the stack's for top-level resources)


@dataclass
class MockRun:
    resources: list[Registration] = field(default_factory=list)
    error: BaseException | None = None


def _reset_runtime() -> None:
    runtime_settings.reset_options()
    with contextlib.suppress(RuntimeError):
        asyncio.get_event_loop().close()
    asyncio.set_event_loop(asyncio.new_event_loop())


class _RecordingMonitor(MockMonitor):
    """A MockMonitor that also keeps each registration's parent, type, inputs and options."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self._records: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type == "pulumi:pulumi:Stack":
            return response
        inputs = _sync_await(_deserialize(rpc, request.object))
        parent = request.parent or ""
        parent_name = None
        if parent and "pulumi:pulumi:Stack" not in parent.split("::")[2].split("$")[-1]:
            parent_name = parent.split("::")[-1]
        record = Registration(
            request.type,
            request.name,
            parent_name,
            response.urn,
            inputs,
            request.custom,
            dependencies=tuple(request.dependencies),
            protect=bool(request.protect),
            provider=request.provider,
            parent_urn=parent,
        )
        self._records.append(record)
        return response

    def registrations(self) -> list[Registration]:
        return list(self._records)


def run_under_mocks(
    program: Callable[[], None],
    stack: str,
    config: Mapping[str, str],
    secret_keys: list[str] | None = None,
    preview: bool = False,
) -> MockRun:
    """Run `program` once under fresh mocks with `config` (full keys, string values)."""
    _reset_runtime()
    mocks = PlanMocks()
    monitor = _RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=preview, monitor=monitor)
    pulumi.runtime.set_all_config(dict(config), secret_keys or [])
    result = MockRun()
    try:
        _sync_await(run_pulumi_func(program))
    except BaseException as err:
        result.error = err
    result.resources = monitor.registrations()
    _reset_runtime()
    return result


async def _deserialize(rpc: Any, struct: Any) -> dict[str, Any]:
    return dict(rpc.deserialize_properties(struct, keep_unknowns=True))
