"""ModelService (and the ModelEndpoints it selects) -> `services[]` (`tooling.from_modelplane`)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from tooling.from_modelplane.xrs import XR, Conversion, Options, Placed, value_at


def convert_service(
    conv: Conversion, xr: XR, placed: Sequence[Placed], endpoints: Sequence[XR], options: Options
) -> dict[str, Any] | None:
    """One service of ours from a ModelService: its entries' endpoints, each with its share of the weight."""
    shares: dict[tuple[str, str, str], Fraction] = defaultdict(Fraction)
    externals: dict[tuple[str, str, str], XR] = {}
    for i, _ in enumerate(value_at(xr.doc, "spec.endpoints")):
        want = dict(xr.get(f"spec.endpoints[{i}].selector.matchLabels"))
        weight = int(xr.get(f"spec.endpoints[{i}].weight") or 1)
        matched: list[tuple[str, str, str]] = []
        for p in placed:
            if p.xr.namespace == xr.namespace and all(p.labels.get(k) == v for k, v in want.items()):
                matched += [("deployment", p.xr.name, p.cluster)] * p.count  # one endpoint per replica
        for ep in endpoints:
            labels = (ep.doc.get("metadata") or {}).get("labels") or {}
            if ep.namespace == xr.namespace and all(labels.get(k) == v for k, v in want.items()):
                key = ("external", ep.name, "")
                externals[key] = ep
                matched.append(key)
        if not matched:
            conv.note(
                "not mapped",
                xr,
                f"spec.endpoints[{i}]",
                f"selects no endpoint among the files ({want}); it gets no share",
            )
            continue
        for key in matched:
            shares[key] += Fraction(weight, len(matched))
    if not shares:
        conv.note(
            "not mapped", xr, "spec.endpoints", "no entry selects an endpoint among the files; no service written"
        )
        return None
    scale = math.lcm(*(s.denominator for s in shares.values()))
    weights = {k: int(s * scale) for k, s in shares.items()}
    common = math.gcd(*weights.values())
    weights = {k: w // common for k, w in weights.items()}
    out: dict[str, Any] = {"name": xr.name}
    deployments = [k for k in weights if k[0] == "deployment"]
    clusters = sorted({k[2] for k in deployments})
    if len(weights) == 1 and deployments:
        [(_, dep, cluster)] = deployments
        out["deployment"] = dep
        if sum(1 for p in placed if p.xr.name == dep) > 1:
            out["cluster"] = cluster
    elif len(clusters) <= 1 and not externals and len({k[1] for k in deployments}) == len(deployments):
        out["backends"] = [{"deployment": k[1], "weight": w} for k, w in weights.items()]
        if any(sum(1 for p in placed if p.xr.name == k[1]) > 1 for k in deployments):
            out["cluster"] = clusters[0]
    else:
        # A fleet service: served by the gateway of one cluster, the others' deployments and the
        # external endpoints reached from it (docs/serving.md).
        out["cluster"] = clusters[0] if clusters else None
        backends: list[dict[str, Any]] = []
        for key, w in weights.items():
            if key[0] == "deployment":
                backends.append({"deployment": key[1], "cluster": key[2], "weight": w})
            else:
                ep = externals[key]
                url = str(ep.get("spec.url")).rstrip("/")
                rewrite = str(ep.get("spec.rewritePath") or "/").strip("/")
                backends.append({"external": {"url": f"{url}/{rewrite}" if rewrite else url}, "weight": w})
                conv.note(
                    "fill in",
                    ep,
                    "spec",
                    "a ModelEndpoint names no model or API key; set the backend's external.model and, as a secret, external.apiKey "
                    f"(pulumi config set --secret --path 'modelplane:services[{len(conv.services)}].backends[{len(backends) - 1}].external.apiKey')",
                )
        if out["cluster"] is None:
            conv.note(
                "fill in",
                xr,
                "spec.endpoints",
                "every endpoint is external; set services[].cluster to the cluster whose gateway serves it",
            )
            out["cluster"] = "FILL-IN"
        out["backends"] = backends
        conv.note(
            "chosen",
            xr,
            "spec.endpoints",
            f"served by the gateway of {out['cluster']} (modelplane serves it from its control plane's gateway)",
        )
    if options.keep_paths:
        out["path"] = f"/{xr.namespace}/{xr.name}"
    return out
