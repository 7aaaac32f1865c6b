"""InferenceClass and InferenceCluster -> `classes[]` and `clusters[]` (`tooling.from_modelplane`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from clouds import BY_SOURCE, cloud, machine, profile
from tooling.from_modelplane.xrs import XR, Conversion, ConvertError, Options, value_at

# The Kubernetes version modelplane's XRD gives a cluster that names none
# (`apis/inferenceclusters/definition.yaml`, each block's `kubernetesVersion` default, v0.3.1).
DEFAULT_VERSIONS = {"GKE": "1.35", "EKS": "1.36", "AKS": "1.34", "Nebius": "1.34", "Vultr": "v1.36.1+3"}
# The config key our Existing clusters read the kubeconfig from (`clusters[].existing.kubeconfigKey` default).
KUBECONFIG_KEY = "kubeconfig"
# The command's options for the cluster keys modelplane keeps in its ProviderConfigs
# (`clusters[].<block>.<key>` -> flag); `Options.cluster_values` holds what they were given.
CLUSTER_FLAGS = {
    "gke.project": "--gke-project",
    "nebius.projectId": "--nebius-project-id",
    "nebius.region": "--nebius-region",
}


def convert_class(conv: Conversion, xr: XR) -> dict[str, Any]:
    out: dict[str, Any] = {"name": xr.name}
    if xr.get("spec.description"):
        out["description"] = xr.get("spec.description")
    devices = []
    for i, dev in enumerate(value_at(xr.doc, "spec.devices")):
        devices.append({k: xr.get(f"spec.devices[{i}].{k}") for k in dev})
    out["devices"] = devices
    prov = xr.doc["spec"].get("provisioning")
    if prov:
        provider = xr.get("spec.provisioning.provider")
        if provider not in BY_SOURCE or not profile(provider).provisioned:
            raise ConvertError(
                [
                    f"{xr.file}: InferenceClass {xr.name}: spec.provisioning.provider: {provider} is not a cloud of ours "
                    f"({', '.join(s for s in BY_SOURCE if profile(s).provisioned)}). Fix: leave out provisioning for "
                    "hardware you run (an Existing cluster's class), or the class"
                ]
            )
        key = str(provider).lower()
        block = dict(xr.get(f"spec.provisioning.{key}") or {})
        name = machine_name(str(provider), block)
        row = machine(provider, name) if name is not None else None
        accelerator = block.get("accelerator")
        if row is None:
            block["uncatalogued"] = True
            conv.note(
                "chosen",
                xr,
                f"spec.provisioning.{key}",
                f"the machine catalog does not know {name or block}: the class takes it unchecked and unpriced "
                "(uncatalogued: true)",
            )
        elif accelerator and accelerator.get("type") not in row.accelerator_types:
            del block["accelerator"]
            conv.note(
                "chosen",
                xr,
                f"spec.provisioning.{key}.accelerator.type",
                f"{accelerator.get('type')} is not a name of {name}'s GPU in our machine catalog; the catalog supplies it "
                f"({', '.join(row.accelerator_types) or 'none'})",
            )
        out["provisioning"] = {"provider": provider, key: block}
    return out


def machine_name(provider: str, block: Mapping[str, Any]) -> str | None:
    """The machine a provisioning block names, as our machine catalog names it (Nebius joins platform
    and preset), read by our own block of the cloud, whose keys are modelplane's; None when ours refuses it."""
    shape = cloud(provider).machine_block
    if shape is None:
        return None
    try:
        return shape.model_validate({k: v for k, v in block.items() if k != "accelerator"}).machine_name
    except ValidationError:
        return None


def convert_cluster(conv: Conversion, xr: XR, classes: Mapping[str, XR], options: Options) -> dict[str, Any]:
    source = xr.get("spec.cluster.source")
    if source not in BY_SOURCE:
        raise ConvertError(
            [
                f"{xr.file}: InferenceCluster {xr.name}: spec.cluster.source: {source} is not a cluster source of ours "
                f"({', '.join(BY_SOURCE)}). Fix: leave the cluster out, or run its nodes as an Existing cluster"
            ]
        )
    out: dict[str, Any] = {"name": xr.name}
    labels = xr.get("metadata.labels")
    if labels:
        out["labels"] = dict(labels)
    out["source"] = source
    key = str(source).lower()
    if not profile(source).provisioned:
        xr.get("spec.cluster.existing.secretRef")
        out["existing"] = {"kubeconfigKey": KUBECONFIG_KEY}
        conv.secrets[KUBECONFIG_KEY] = {"secure": "v1:placeholder"}
        conv.note(
            "fill in",
            xr,
            "spec.cluster.existing.secretRef",
            f"ours reads the kubeconfig from the stack's secret config: pulumi config set --secret modelplane:{KUBECONFIG_KEY} < kubeconfig",
        )
    else:
        # Our block's keys in order: what modelplane wrote, and what it keeps in its ProviderConfig
        # (a GCP or Nebius project) from the options, else left for the user to fill in.
        block: dict[str, Any] = {}
        written = value_at(xr.doc, f"spec.cluster.{key}") or {}
        for name, spec in cloud(source).cluster_block.model_fields.items():
            field_ = spec.alias or name
            if field_ == "kubernetesVersion":
                continue
            if field_ in written:
                block[field_] = xr.get(f"spec.cluster.{key}.{field_}")
            elif spec.is_required():
                block[field_] = options.cluster_values.get(f"{key}.{field_}") or _fill(conv, xr, key, field_)
        version = xr.get(f"spec.cluster.{key}.kubernetesVersion")
        if version is None and source not in DEFAULT_VERSIONS:
            raise ConvertError(
                [
                    f"{xr.file}: InferenceCluster {xr.name}: spec.cluster.{key}.kubernetesVersion is missing, and modelplane "
                    f"v0.3.1 has no default for {source} to take. Fix: set it, as the cloud spells it"
                ]
            )
        if version is None:
            version = DEFAULT_VERSIONS[str(source)]
            conv.note(
                "chosen",
                xr,
                f"spec.cluster.{key}.kubernetesVersion",
                f"unset; modelplane's default for {source}, {version}, written out (ours has no default)",
            )
        block["kubernetesVersion"] = str(version)
        out[key] = block
    pools = []
    for i, _ in enumerate(value_at(xr.doc, "spec.nodePools") or []):
        at = f"spec.nodePools[{i}]"
        pool: dict[str, Any] = {"name": xr.get(f"{at}.name"), "className": xr.get(f"{at}.className")}
        for k in ("nodeCount", "minNodeCount", "maxNodeCount", "zones"):
            value = xr.get(f"{at}.{k}")
            if value is not None:
                pool[k] = value
        reservation = xr.get(f"{at}.capacityBlock.capacityReservationId")
        if reservation:
            pool["capacity"] = {"type": "CapacityBlock", "reservation": reservation}
            conv.note(
                "fill in",
                xr,
                f"{at}.capacityBlock",
                "ours also takes the block's instance count and zone (capacity.blockNodes, capacity.blockZone; docs/machines.md)",
            )
        if pool["className"] not in classes:
            raise ConvertError(
                [
                    f"{xr.file}: InferenceCluster {xr.name}: {at}.className: no InferenceClass "
                    f"'{pool['className']}' among the files. Fix: pass the file that defines it"
                ]
            )
        pools.append(pool)
    out["nodePools"] = pools
    taints = xr.get("spec.taints")
    if taints:
        out["taints"] = [dict(t) for t in taints]
    return out


def _fill(conv: Conversion, xr: XR, key: str, field_: str) -> str:
    flag = CLUSTER_FLAGS.get(f"{key}.{field_}")
    conv.note(
        "fill in",
        xr,
        f"spec.cluster.{key}",
        f"our {key}.{field_} is required and modelplane keeps it outside the XR (its ProviderConfig); "
        + (f"pass {flag} or edit the value" if flag else "edit the value"),
    )
    # Not a valid value on purpose: the plan refuses the stack until it is filled in.
    return "FILL-IN"
