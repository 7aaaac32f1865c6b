"""A test provider that answers the engine for every package the program uses, in place of a cloud.

`python -m tests.engine.provider <package> <version> <engine address>` serves Pulumi's
ResourceProvider protocol through the Python SDK's own provider server; `tests/engine/harness.py`
installs one launcher per package and version in a test-only `PULUMI_HOME`, so the engine starts
it as it would start `pulumi-resource-gcp`. Nothing in the product knows about it.

What it does at the boundary, as the real providers do:
- `Check` rejects, with the property path, what the provider's schema does not take (`schema.py`).
- `Diff` reports the properties that changed, and a replacement for those the real provider
  replaces on (`tooling.replacements`, each row with its source, read by `tooling.changes.forced_by`).
- `Create` in a preview leaves what the cloud computes unknown (ids, endpoints, certificates,
  kubeconfigs); on `up` it returns deterministic values (the same ones as the offline plan's
  mocks, `tooling.mockrun`). `Invoke` answers the functions the program calls.
- `Read` returns the state, changed by any drift planted in `drift.json` (for `refresh`); for an
  import (an ID and nothing else) it returns the running resource a test planted in `running.json`.
- `Construct` registers a multi-language component (`kubernetes:yaml/v2:ConfigFile`) with no
  children: the real one fetches its manifest, which no test can.
- Every Kubernetes object that is not a Helm release goes to a real kube-apiserver standing for
  its cluster (`tests/engine/kube.py`), as pulumi-kubernetes sends it: a server-side dry run in a
  preview, a server-side apply on `up` (read back and recorded in `kube.jsonl`), a delete on
  delete. The server's refusal (a CEL rule, an immutable field, a missing namespace or CRD) fails
  the step with the server's message. Helm releases are echoed: charts cannot be fetched in CI.
- `Parameterize`, for the plugin of the dynamically bridged Terraform providers only
  (`terraform-provider`, which pulumi-nebius parameterizes), answers as that bridge does: with the
  package named by the value its SDK embeds, once per process (`bridged_package`).

Every process start, create, update, delete and construct is appended to `ops.jsonl` in the directory named by
`MODELPLANE_TEST_PROVIDER_DIR`, and `MODELPLANE_TEST_FAIL_AT=N` makes the Nth create or update of a
run (counted across every provider process) fail, as a cloud API error would.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.provider.experimental import provider as p
from pulumi.provider.experimental.property_value import Computed, PropertyValue, ResourceReference
from pulumi.provider.experimental.server import main

from tests.engine import schema
from tests.engine.kube import ApiError, ApiServer, ServerPool
from tooling.changes import changed_leaves, forced_by, path_text, refused_by
from tooling.mockrun import computed_outputs, invoke_result
from tooling.replacements import forcing

# The engine's unknown sentinel (sdk/go/common/resource/plugin/rpc.go, `UnknownStringValue`).
# `PropertyValue.computed()` does not marshal in SDK 3.272.0, so an unknown is sent as this string.
UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

# The plugin of the dynamically bridged Terraform providers, parameterized per package at run time
# (pulumi/pulumi-terraform-bridge dynamic/main.go, `baseProviderName`); an SDK generated from it
# names this plugin in its pulumi-plugin.json with the parameterization (pulumi-nebius 0.6.73:
# `terraform-provider` 1.5.0, parameterized as `nebius` 0.6.73).
DYNAMIC_BRIDGE = "terraform-provider"


def bridged_package(value: bytes) -> tuple[str, str]:
    """(package name, version) the dynamic bridge answers `Parameterize` with, for the value an SDK embeds.

    The value is JSON: `{"remote": {"url": "[host/]namespace/type", "version": "x.y.z"}}` or
    `{"local": {"path": ...}}`, exactly one of them (dynamic/parameterize/value.go, `Unmarshal`).
    The bridge answers with the Terraform provider's name, the type at the end of its registry
    address, and its version (dynamic/main.go, `XParamaterize`: `p.Name()`, `p.Version()` of the
    provider it fetched for `remote.url`/`remote.version`). A local provider is a binary on disk,
    which no test provides.
    """
    try:
        parsed = json.loads(value)
    except ValueError as e:
        raise ValueError(f"failed to parse parameterized value: {e}") from None
    remote = parsed.get("remote") if isinstance(parsed, dict) else None
    if not isinstance(remote, dict) or "local" in parsed:
        raise ValueError('test provider: only a "remote" parameter value is served (a local provider is a binary)')
    url, version = str(remote.get("url") or ""), str(remote.get("version") or "")
    if not url:
        raise ValueError("remote.url cannot be empty")
    if not version:
        raise ValueError("remote.version cannot be empty")
    return url.rstrip("/").rsplit("/", 1)[-1], version


def state_dir() -> Path:
    return Path(os.environ["MODELPLANE_TEST_PROVIDER_DIR"])


def record(op: str, urn: str, **extra: Any) -> None:
    line = json.dumps({"op": op, "urn": urn, "pid": os.getpid(), **extra}) + "\n"
    with open(state_dir() / "ops.jsonl", "a") as log:
        log.write(line)


def next_change() -> int:
    """The number of this create or update among every provider process's of the run."""
    counter = state_dir() / "changes.count"
    with open(counter, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = int(f.read() or 0) + 1
        f.seek(0)
        f.truncate()
        f.write(str(n))
        return n


def urn_type(urn: str) -> str:
    """The resource type of a URN (its last type segment)."""
    return urn.split("::")[2].split("$")[-1]


# Kubernetes types that never reach the API server here: a Helm release is installed by the
# provider's Helm client from a chart repository, which CI cannot reach.
ECHOED_KUBERNETES = ("kubernetes:helm.sh/v3:Release",)


class UnreachableError(Exception):
    """A kubeconfig that names no cluster: pulumi-kubernetes marks the cluster unreachable, previews
    without it and fails any change (provider/pkg/provider/provider.go, `unreachableCluster`)."""


def kubeconfig_server(kubeconfig: Any) -> str | None:
    """The server of a kubeconfig's current context; None while the kubeconfig is unknown."""
    if kubeconfig is None or kubeconfig is schema.UNKNOWN:
        return None
    config = yaml.safe_load(kubeconfig) if isinstance(kubeconfig, str) else kubeconfig
    try:
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        return str(cluster["server"])
    except (KeyError, TypeError, StopIteration):
        raise UnreachableError("the kubeconfig names no current context and cluster") from None


def has_unknown(value: Any) -> bool:
    if value is schema.UNKNOWN:
        return True
    if isinstance(value, Mapping):
        return any(has_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(has_unknown(v) for v in value)
    return False


def namespace_missing(err: ApiError) -> bool:
    """pulumi-kubernetes's `IsNamespaceNotFoundErr`: a create in a namespace not created yet."""
    details = err.status.get("details") or {}
    return err.code == 404 and details.get("kind") == "namespaces"


def fault(op: str, urn: str) -> None:
    fail_at = os.environ.get("MODELPLANE_TEST_FAIL_AT")
    if fail_at and next_change() == int(fail_at):
        record("failed-" + op, urn)
        raise RuntimeError(f"test provider: {op} of {urn} failed (MODELPLANE_TEST_FAIL_AT={fail_at})")


def plain(value: PropertyValue) -> Any:
    """A property value as plain Python, with `schema.UNKNOWN` for what is not computed yet."""
    v = value.value
    if isinstance(v, Computed) or v == UNKNOWN_SENTINEL:
        return schema.UNKNOWN
    if isinstance(v, ResourceReference):
        return v.urn
    if isinstance(v, Mapping):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, tuple | list):
        return [plain(x) for x in v]
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def wrap(value: Any, secret: bool = False) -> PropertyValue:
    if isinstance(value, PropertyValue):
        return value
    if value is schema.UNKNOWN:
        return PropertyValue(UNKNOWN_SENTINEL)
    if isinstance(value, Mapping):
        return PropertyValue({k: wrap(x) for k, x in value.items()}, is_secret=secret)
    if isinstance(value, list | tuple):
        return PropertyValue([wrap(x) for x in value], is_secret=secret)
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    return PropertyValue(value, is_secret=secret)


def plain_map(values: Mapping[str, PropertyValue]) -> dict[str, Any]:
    return {k: plain(v) for k, v in values.items()}


# Inputs the cloud reads back in another shape, which `Create` and `Update` return as the cloud's
# mock answers them (`clouds.<cloud>.mock_outputs`): an EKS cluster's `vpcConfig` with the security
# group EKS made, an AKS cluster's `identity` with its user-assigned identities as a map.
READ_BACK_RESHAPED = frozenset({"vpcConfig", "identity"})


def differs(old: Any, new: Any) -> bool:
    """Whether an input changed against the stored state. A nested key that the state holds and the
    inputs do not is one the cloud computed (an EKS cluster's `vpcConfig.clusterSecurityGroupId`),
    as a bridged provider's `Optional+Computed` attribute is: it is no change."""
    if new is schema.UNKNOWN:
        return True
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return any(differs(old.get(k), v) for k, v in new.items())
    if isinstance(old, list) and isinstance(new, list):
        return len(old) != len(new) or any(differs(o, n) for o, n in zip(old, new, strict=True))
    if isinstance(old, Mapping) and isinstance(new, list) and all(isinstance(n, str) for n in new):
        # azure-native reads a list of ARM IDs back as a map keyed by them (an AKS cluster's
        # `identity.userAssignedIdentities`, ManagedClusterIdentityResponse): the same IDs are no change.
        return sorted(old) != sorted(new)
    return bool(old != new)


def refuse(urn: str, olds: Mapping[str, Any], news: Mapping[str, Any]) -> None:
    """Fail an update as the real provider does when it changes what that provider cannot change
    in place (`tooling.replacements`, `refused`): its diff accepted it, its update call fails."""
    typ, _ = _type_name(urn)
    refused = refused_by(typ, _changed(olds, news, news), olds, news)
    if refused:
        rule = forcing(typ)
        paths = ", ".join(path_text(path) for path in refused)
        raise RuntimeError(f"updating {paths} of {urn} failed: {rule.refused_why if rule else ''}")


def _changed(olds: Mapping[str, Any], news: Mapping[str, Any], keys: Iterable[str]) -> list[tuple[str | int, ...]]:
    """The input paths under `keys` where the inputs differ from the state, leaving out what the
    cloud computed (`_shaped`), as `tooling.changes.changed_leaves` spells them."""
    keys = list(keys)
    return changed_leaves({k: _shaped(olds.get(k), news.get(k)) for k in keys}, {k: news.get(k) for k in keys})


def _shaped(old: Any, new: Any) -> Any:
    """`old` without the nested keys `new` does not write: what the cloud computed, which
    `differs` counts as no change."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return {k: _shaped(old[k], new[k]) for k in old if k in new}
    if isinstance(old, list) and isinstance(new, list):
        return [_shaped(o, n) for o, n in zip(old, new, strict=False)] + old[len(new) :]
    return old


def _type_name(urn: str) -> tuple[str, str]:
    parts = urn.split("::")
    return parts[-2].split("$")[-1], parts[-1]


def resource_id(urn: str) -> str:
    name = _type_name(urn)[1]
    return f"{name}-{hashlib.sha256(urn.encode()).hexdigest()[:8]}"


def _secret_output(key: str) -> bool:
    # The providers mark kubeconfigs and certificates sensitive in their schemas.
    return "kube" in key.lower()


class TestProvider(p.Provider):
    def __init__(self, package: str) -> None:
        self.package = package
        self.pool = ServerPool.from_env() if package == "kubernetes" else None
        self.cluster: str | None = None  # the kubeconfig's server, once known
        self.unreachable: str | None = None  # why the kubeconfig reaches no cluster
        # The provider's configuration (its region), which an invoke's answer may depend on.
        self.settings: dict[str, Any] = {}
        # The package this process serves after `Parameterize` (the dynamic bridge only).
        self.parameterized: tuple[str, str] | None = None

    async def parameterize(self, request: p.ParameterizeRequest) -> p.ParameterizeResponse:
        if self.package != DYNAMIC_BRIDGE:
            # A provider that is not parameterized answers Parameterize as unimplemented, as the
            # SDK's own base provider does.
            return await super().parameterize(request)
        if self.parameterized is not None:
            # dynamic/main.go, `newDoubleParameterizeErr`: one process serves one package.
            name, version = self.parameterized
            raise RuntimeError(f"provider is already parameterized to ({name}, {version})")
        params = request.parameters
        if not isinstance(params, p.ParametersValue):
            # The engine sends the value form when it runs a program (registry.go,
            # `loadParameterizedProvider`); the args form is `pulumi package add`'s, for SDK generation.
            raise ValueError("test provider: only the value form of Parameterize is served")
        name, version = bridged_package(params.value)
        if name not in schema.SDK_PACKAGES:
            raise ValueError(f"test provider: no SDK of package {name!r} to check its resources with")
        self.parameterized = (name, version)
        record("parameterize", f"{self.package}@{name}@{version}")
        return p.ParameterizeResponse(name=name, version=version)

    async def check_config(self, request: p.CheckRequest) -> p.CheckResponse:
        return self._check(request)

    async def diff_config(self, request: p.DiffRequest) -> p.DiffResponse:
        # Where a provider works (its project, region or location) is taken, conservatively, to
        # replace what it manages when it changes: the engine asks exactly this when a resource
        # moves to another provider (pkg/resource/deploy/step_generator.go, `providerChanged`).
        olds, news = plain_map(request.old_state), plain_map(request.new_inputs)
        keys = sorted((set(olds) | set(news)) - {"version", "__internal"})
        diffs = [k for k in keys if differs(olds.get(k), news.get(k))]
        replaces = [k for k in diffs if k in ("project", "region", "location")]
        return p.DiffResponse(changes=bool(diffs), replaces=replaces, diffs=diffs)

    async def configure(self, request: p.ConfigureRequest) -> p.ConfigureResponse:
        self.settings = plain_map(request.args)
        if self.pool is not None:
            try:
                self.cluster = kubeconfig_server(plain_map(request.args).get("kubeconfig"))
            except UnreachableError as why:
                self.unreachable = str(why)
        return p.ConfigureResponse(
            accept_secrets=True, supports_preview=True, accept_resources=True, accept_outputs=False
        )

    async def check(self, request: p.CheckRequest) -> p.CheckResponse:
        return self._check(request)

    def _check(self, request: p.CheckRequest) -> p.CheckResponse:
        failures = schema.check(request.type, plain_map(request.new_inputs))
        if failures:
            return p.CheckResponse(failures=[p.CheckFailure(f.path, f.reason) for f in failures])
        return p.CheckResponse(inputs=dict(request.new_inputs))

    async def diff(self, request: p.DiffRequest) -> p.DiffResponse:
        if urn_type(request.urn) in ECHOED_KUBERNETES:
            # A release the state holds left its namespace on the cluster when it was installed; a
            # server started after that state was made (an imported fixture's) learns it here.
            self._release(request.urn, request.old_state)
        # The bridged providers diff the stored state against the new inputs, leaving out what the
        # cloud computes; a refresh diffs the refreshed state against the inputs the same way.
        olds = plain_map(request.old_state)
        news = plain_map(request.new_inputs)
        typ, _ = _type_name(request.urn)
        computed = set(computed_outputs(typ, "x", {})) - set(news)
        keys = sorted((set(olds) - computed - {"id"}) | set(news))
        diffs = [k for k in keys if k not in request.ignore_changes and differs(olds.get(k), news.get(k))]
        # A replace where the real provider replaces: the forcing paths `tooling.replacements` reads
        # from each provider at its locked version, matched as the plan's `--against` matches them.
        replaces = sorted({str(path[0]) for path in forced_by(typ, _changed(olds, news, diffs))})
        detailed = {
            k: p.PropertyDiff(p.PropertyDiffKind.UPDATE_REPLACE if k in replaces else p.PropertyDiffKind.UPDATE, True)
            for k in diffs
        }
        return p.DiffResponse(changes=bool(diffs), replaces=replaces, diffs=diffs, detailed_diff=detailed)

    def _outputs(self, urn: str, inputs: Mapping[str, PropertyValue], preview: bool) -> dict[str, PropertyValue]:
        typ, name = _type_name(urn)
        computed = computed_outputs(typ, name, plain_map(inputs))
        outputs = dict(inputs)
        for key, value in computed.items():
            if key in inputs and key not in READ_BACK_RESHAPED:
                continue
            outputs[key] = wrap(schema.UNKNOWN if preview else value, secret=_secret_output(key))
        return outputs

    def _server(self, urn: str, values: Mapping[str, PropertyValue]) -> tuple[ApiServer, dict[str, Any]] | None:
        """The API server and object a Kubernetes step goes to; None where pulumi-kubernetes would
        not reach a server: a Helm release, a cluster whose kubeconfig is not known yet (a first
        preview), or an object with values not known yet (pulumi-kubernetes previews those
        client-side)."""
        typ = urn_type(urn)
        if self.pool is None or self.cluster is None or typ in ECHOED_KUBERNETES:
            return None
        obj = plain_map(values)
        if has_unknown(obj):
            return None
        return self.pool.server(self.cluster), obj

    def _release(self, urn: str, values: Mapping[str, PropertyValue]) -> None:
        """What an echoed Helm release leaves on the server that other objects need: the namespace
        Helm creates for it (`createNamespace`, `helm install --create-namespace`). The Gateway API
        CRDs Envoy Gateway's chart installs are on every server from its start (`kube.py`)."""
        if self.pool is None or self.cluster is None:
            return
        release = plain_map(values)
        if release.get("createNamespace") and isinstance(release.get("namespace"), str):
            server = self.pool.server(self.cluster)
            server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": release["namespace"]}})

    def _apply(self, op: str, urn: str, values: Mapping[str, PropertyValue], preview: bool) -> None:
        """Send an object to its cluster's API server, as pulumi-kubernetes does for `op`."""
        if self.unreachable and not preview:
            raise RuntimeError(f"configured Kubernetes cluster is unreachable: {self.unreachable}")
        if urn_type(urn) in ECHOED_KUBERNETES:
            if not preview:
                self._release(urn, values)
            return
        target = self._server(urn, values)
        if target is None:
            return
        server, obj = target
        try:
            if op == "create" and not preview and server.get(obj) is not None:
                # provider/pkg/await/await.go, `Creation`: an existing object is not adopted.
                raise ApiError(409, {"message": f"{obj['kind']} {obj['metadata']['name']!r} already exists"})
            server.apply(obj, dry_run=preview)
        except ApiError as err:
            if preview and op == "create" and namespace_missing(err):
                return  # await.go: "If the namespace hasn't been created yet, the preview will always fail."
            record(f"refused-{op}", urn, reason=err.reason, message=str(err))
            raise RuntimeError(f"the API server refused the {op}: {err}") from None
        if not preview:
            line = json.dumps({"op": op, "urn": urn, "sent": obj, "stored": server.get(obj)}) + "\n"
            with open(state_dir() / "kube.jsonl", "a") as log:
                log.write(line)

    async def create(self, request: p.CreateRequest) -> p.CreateResponse:
        if request.preview:
            self._apply("create", request.urn, request.properties, True)
            return p.CreateResponse(resource_id="", properties=self._outputs(request.urn, request.properties, True))
        fault("create", request.urn)
        self._apply("create", request.urn, request.properties, False)
        rid = resource_id(request.urn)
        record("create", request.urn, id=rid)
        return p.CreateResponse(resource_id=rid, properties=self._outputs(request.urn, request.properties, False))

    async def update(self, request: p.UpdateRequest) -> p.UpdateResponse:
        if not request.preview:
            fault("update", request.urn)
            refuse(request.urn, plain_map(request.olds), plain_map(request.news))
        self._apply("update", request.urn, request.news, request.preview)
        if not request.preview:
            record("update", request.urn, id=request.resource_id)
        return p.UpdateResponse(properties=self._outputs(request.urn, request.news, request.preview))

    async def delete(self, request: p.DeleteRequest) -> None:
        target = self._server(request.urn, request.properties)
        if target is not None:
            server, obj = target
            server.delete(obj)
            # With no controller manager, an object with a finalizer (a namespace, a claimed volume)
            # stays, marked for deletion; anything else must be gone.
            stored = server.get(obj)
            if stored is not None and not stored["metadata"].get("deletionTimestamp"):
                raise RuntimeError(f"{obj['kind']} {obj['metadata']['name']!r} is still on the API server")
        record("delete", request.urn, id=request.resource_id)

    async def read(self, request: p.ReadRequest) -> p.ReadResponse:
        if not request.properties and not request.inputs:
            return self._read_running(request)
        properties = dict(request.properties)
        drift_file = state_dir() / "drift.json"
        if drift_file.exists():
            for key, value in json.loads(drift_file.read_text()).get(request.urn, {}).items():
                properties[key] = wrap(value)
        return p.ReadResponse(resource_id=request.resource_id, properties=properties, inputs=dict(request.inputs))

    def _read_running(self, request: p.ReadRequest) -> p.ReadResponse:
        """An import: the engine sends only the ID (pkg/resource/deploy/step.go, `ImportStep.Apply`),
        and a provider answers with the running resource's state and the inputs that would make it,
        or, when nothing of that ID runs, with no state, which the engine reports as "resource '...'
        does not exist"; the SDK's provider server sends an empty state instead, so this one fails the
        read. What runs is what a test planted in `running.json`, by ID: `{"inputs", "outputs"}`."""
        running_file = state_dir() / "running.json"
        running = json.loads(running_file.read_text()) if running_file.exists() else {}
        found = running.get(request.resource_id)
        record("read", request.urn, id=request.resource_id, found=found is not None)
        if found is None:
            raise RuntimeError(f"resource '{request.resource_id}' does not exist")
        inputs = {k: wrap(v) for k, v in found["inputs"].items()}
        outputs = {**inputs, **{k: wrap(v, secret=_secret_output(k)) for k, v in found.get("outputs", {}).items()}}
        return p.ReadResponse(resource_id=request.resource_id, properties=outputs, inputs=inputs)

    async def invoke(self, request: p.InvokeRequest) -> p.InvokeResponse:
        result = invoke_result(request.tok, plain_map(request.args), self.settings)
        return p.InvokeResponse(return_value={k: wrap(v, secret=_secret_output(k)) for k, v in result.items()})

    async def construct(self, request: p.ConstructRequest) -> p.ConstructResponse:
        record("construct", f"{request.resource_type}::{request.name}")
        component = pulumi.ComponentResource(request.resource_type, request.name, None, request.options)
        component.register_outputs({"resources": []})
        urn = await component.urn.future()
        return p.ConstructResponse(urn=urn or "", state={"resources": PropertyValue([])}, state_dependencies={})


class _NoPackages(dict[str, Any]):
    """A resource-package registry that keeps nothing (see `serve`)."""

    def __setitem__(self, key: str, value: Any) -> None:
        pass


def serve(package: str, version: str, args: list[str]) -> None:
    record("start", f"{package}@{version}")
    # The SDK's provider server turns each provider reference of a Construct request into a live
    # provider resource through a `pulumi:pulumi:getResource` invoke when the provider's SDK package
    # has registered itself (`register_resource_package`, done on import; pulumi/provider/
    # experimental/server.py, `_create_provider_resource`), and that invoke puts the engine's
    # `pulumi` default provider in the stack's state. The real providers make no such invoke, and
    # this one imports the SDKs only to read their argument types (`schema.args_class`), in an
    # order that depends on which request comes first, or before it starts (`forkserver.warm`);
    # so it keeps no registrations, and Construct sees the references as the engine sent them.
    pulumi.runtime.rpc._RESOURCE_PACKAGES = _NoPackages()
    sys.argv = [sys.argv[0], *args]  # the SDK's `main` reads the engine address from sys.argv
    main(args, version, TestProvider(package))


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], sys.argv[3:])
