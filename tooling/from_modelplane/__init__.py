"""Turn modelplane's XRs (`modelplane.ai/v1alpha1`) into a stack file of ours (docs/from-modelplane.md).

modelplane describes a fleet as Crossplane composite resources: `InferenceClass`, `InferenceCluster`,
`ModelDeployment`, `ModelCache`, `ModelService` and `ModelEndpoint`, as its XRDs define them
(github.com/modelplaneai/modelplane `apis/*/definition.yaml` at v0.3.1). This module reads them and
writes the `modelplane:` keys our loader takes (`infra/config/`), with one comment line for every
field it could not carry over and why. It is not a loader: the stack it writes is read, checked and
planned like any other.

Where modelplane decides at run time, the converter decides once, the way modelplane would:
- A ModelDeployment names no cluster; modelplane's scheduler places each replica on a cluster whose
  labels match `clusterSelector` and whose pool has the devices its members ask for, spreading the
  replicas over such clusters, fewest first, ties broken by cluster name
  (`functions/compose-model-deployment/function/scheduling.py`, "Fill"). The converter does the same
  over the clusters it reads, and writes one deployment per cluster that gets replicas.
- A ModelService selects ModelEndpoints by label; modelplane labels the endpoint of each replica
  `modelplane.ai/deployment` and `modelplane.ai/cluster` (`functions/compose-model-deployment/function/fn.py`,
  `_child_labels`), and a user-written ModelEndpoint carries the labels it is given. An entry's weight
  is spread evenly over the endpoints it matches (`apis/modelservices/definition.yaml`, `weight`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from tooling.from_modelplane.placement import place_deployment, pool_nodes
from tooling.from_modelplane.platform import convert_class, convert_cluster
from tooling.from_modelplane.services import convert_service
from tooling.from_modelplane.xrs import (
    XR,
    Conversion,
    ConvertError,
    Note,
    Options,
    read_files,
    stack_text,
    summary,
    unmapped,
)

__all__ = ["XR", "Conversion", "ConvertError", "Note", "Options", "convert", "read_files", "stack_text", "summary"]


def convert(xrs: Sequence[XR], options: Options | None = None) -> Conversion:
    options = options or Options()
    conv = Conversion()
    by_kind: dict[str, list[XR]] = defaultdict(list)
    for xr in xrs:
        by_kind[xr.kind].append(xr)
    problems = _duplicates(xrs)
    if problems:
        raise ConvertError(problems)
    classes = {xr.name: xr for xr in by_kind["InferenceClass"]}
    for xr in by_kind["InferenceClass"]:
        conv.classes.append(convert_class(conv, xr))
    for xr in by_kind["InferenceCluster"]:
        conv.clusters.append(convert_cluster(conv, xr, classes, options))
    caches = {(xr.namespace, xr.name): xr for xr in by_kind["ModelCache"]}
    ledger = {k: n for c in by_kind["InferenceCluster"] for k, n in pool_nodes(c).items()}
    placed = [
        p
        for xr in by_kind["ModelDeployment"]
        for p in place_deployment(conv, xr, by_kind["InferenceCluster"], classes, caches, ledger)
    ]
    for xr in by_kind["ModelService"]:
        service = convert_service(conv, xr, placed, by_kind["ModelEndpoint"], options)
        if service is not None:
            conv.services.append(service)
    for xr in xrs:
        for path, why in unmapped(xr):
            conv.note("not mapped", xr, path, why)
    return conv


def _duplicates(xrs: Sequence[XR]) -> list[str]:
    seen: dict[tuple[str, str, str], XR] = {}
    out = []
    for xr in xrs:
        scoped = xr.kind not in ("InferenceClass", "InferenceCluster")
        key = (xr.kind, xr.namespace if scoped else "", xr.name)
        if key in seen:
            out.append(f"{xr.file}: {xr.kind} {xr.name}: also defined in {seen[key].file}. Fix: pass each object once")
        seen[key] = xr
    return out
