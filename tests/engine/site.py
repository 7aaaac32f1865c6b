"""What happened on a local cluster, read from its API server: releases, pods, claims, placement.

The cluster tier's assertions and `make demo`'s table read only this: the objects the real
provider, Helm, the controllers and the scheduler left on the cluster, never our harness's logs.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.engine.cluster import LocalCluster, condition

# How Helm 3 stores a release: a Secret `sh.helm.release.v1.<name>.v<revision>` labelled
# owner=helm, name, status, version (helm.sh/helm/v3 pkg/storage/driver/secrets.go).
HELM_OWNER = {"owner": "helm"}


@dataclass(frozen=True)
class Release:
    name: str
    namespace: str
    revision: int
    status: str
    chart: str
    version: str


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    node: str | None
    phase: str
    ready: bool
    # "<kind>/<name>" of the workload it belongs to: its DaemonSet, the Deployment of its ReplicaSet,
    # or the LeaderWorkerSet of its StatefulSet (a worker's StatefulSet is its leader pod's).
    owner: str
    claims: tuple[str, ...]  # the ResourceClaims made for it
    labels: Mapping[str, str]
    env: Mapping[str, str]  # its first container's environment (plain values)
    ip: str = ""  # its address, once KWOK has given it one


@dataclass(frozen=True)
class Allocation:
    claim: str
    namespace: str
    node: str | None
    driver: str
    devices: tuple[str, ...]
    consumed: Mapping[str, str]


@dataclass
class Site:
    """A snapshot of one cluster."""

    cluster: LocalCluster

    def _list(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        return self.cluster.list(api_version, kind)

    def releases(self) -> dict[str, Release]:
        """The newest revision of each Helm release, with the chart it installed."""
        newest: dict[str, Release] = {}
        for secret in self._list("v1", "Secret"):
            meta = secret["metadata"]
            labels = meta.get("labels") or {}
            if labels.get("owner") != "helm" or secret.get("type") != "helm.sh/release.v1":
                continue
            # The release is base64 of gzip of JSON, inside the Secret's own base64.
            raw = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))
            release = Release(
                name=labels["name"],
                namespace=meta["namespace"],
                revision=int(labels["version"]),
                status=labels["status"],
                chart=raw["chart"]["metadata"]["name"],
                version=raw["chart"]["metadata"]["version"],
            )
            if release.name not in newest or newest[release.name].revision < release.revision:
                newest[release.name] = release
        return newest

    def pods(self) -> list[Pod]:
        pods = self._list("v1", "Pod")
        # What owns what, for the kinds that stand between a pod and its workload.
        controllers = {
            (o["metadata"]["namespace"], f"{kind}/{o['metadata']['name']}"): _controller(o)
            for kind, objects in (
                ("ReplicaSet", self._list("apps/v1", "ReplicaSet")),
                ("StatefulSet", self._list("apps/v1", "StatefulSet")),
                ("Pod", pods),
            )
            for o in objects
        }
        out = []
        for pod in pods:
            meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
            owner = _controller(pod)
            while controllers.get((meta["namespace"], owner)):
                owner = controllers[(meta["namespace"], owner)]
            out.append(
                Pod(
                    namespace=meta["namespace"],
                    name=meta["name"],
                    node=spec.get("nodeName"),
                    phase=status.get("phase", ""),
                    ready=condition(pod, "Ready"),
                    owner=owner,
                    claims=tuple(
                        c["resourceClaimName"]
                        for c in status.get("resourceClaimStatuses") or []
                        if c.get("resourceClaimName")
                    ),
                    labels=dict(meta.get("labels") or {}),
                    env={e["name"]: e["value"] for e in spec["containers"][0].get("env") or [] if "value" in e},
                    ip=status.get("podIP", ""),
                )
            )
        return out

    def daemon_nodes(self, namespace: str, daemonset: str) -> set[str]:
        """The nodes a DaemonSet's pods run on (Running and Ready)."""
        return {
            p.node
            for p in self.pods()
            if p.namespace == namespace and p.owner == f"DaemonSet/{daemonset}" and p.ready and p.node
        }

    def daemonsets(self, release: str) -> list[tuple[str, str]]:
        """(namespace, name) of each DaemonSet a Helm release installed (Helm's
        `meta.helm.sh/release-name` annotation on every object it creates)."""
        return sorted(
            (d["metadata"]["namespace"], d["metadata"]["name"])
            for d in self._list("apps/v1", "DaemonSet")
            if (d["metadata"].get("annotations") or {}).get("meta.helm.sh/release-name") == release
        )

    def release_nodes(self, release: str) -> set[str]:
        """The nodes the pods of a release's DaemonSets run on."""
        return {n for namespace, name in self.daemonsets(release) for n in self.daemon_nodes(namespace, name)}

    def allocations(self) -> list[Allocation]:
        out = []
        for claim in self._list("resource.k8s.io/v1", "ResourceClaim"):
            allocation = (claim.get("status") or {}).get("allocation")
            if not allocation:
                continue
            results = allocation["devices"]["results"]
            node = None
            for term in ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms")) or []:
                for field in term.get("matchFields") or []:
                    if field["key"] == "metadata.name":
                        node = field["values"][0]
            consumed: dict[str, str] = {}
            for r in results:
                consumed.update(r.get("consumedCapacity") or {})
            out.append(
                Allocation(
                    claim=claim["metadata"]["name"],
                    namespace=claim["metadata"]["namespace"],
                    node=node,
                    driver=results[0]["driver"],
                    devices=tuple(sorted(r["device"] for r in results)),
                    consumed=consumed,
                )
            )
        return out

    def published(self) -> dict[tuple[str, str], set[str]]:
        """(node, driver) -> the device names its ResourceSlices publish."""
        out: dict[tuple[str, str], set[str]] = {}
        for piece in self._list("resource.k8s.io/v1", "ResourceSlice"):
            spec = piece["spec"]
            out.setdefault((spec["nodeName"], spec["driver"]), set()).update(d["name"] for d in spec["devices"])
        return out

    def endpoints(self, namespace: str, service: str) -> set[str]:
        """The pods a Service's EndpointSlices hold (the endpoint slice controller's)."""
        return {
            e["targetRef"]["name"]
            for piece in self._list("discovery.k8s.io/v1", "EndpointSlice")
            if piece["metadata"]["namespace"] == namespace
            and (piece["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == service
            for e in piece.get("endpoints") or []
            if (e.get("targetRef") or {}).get("kind") == "Pod"
        }

    def node_pools(self) -> dict[str, str]:
        """node -> the pool its `modelplane.ai/pool` label names ("" for none)."""
        return {
            n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get("modelplane.ai/pool", "")
            for n in self._list("v1", "Node")
        }

    def state(self) -> dict[str, str]:
        """uid -> resourceVersion of every object the stack may own, to tell whether anything changed."""
        kinds = [
            ("v1", "Namespace"),
            ("v1", "Service"),
            ("apps/v1", "Deployment"),
            ("apps/v1", "DaemonSet"),
            ("resource.k8s.io/v1", "DeviceClass"),
            ("resource.k8s.io/v1", "ResourceClaimTemplate"),
            ("gateway.networking.k8s.io/v1", "HTTPRoute"),
            ("gateway.networking.k8s.io/v1", "Gateway"),
            ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
        ]
        return {o["metadata"]["uid"]: o["metadata"]["resourceVersion"] for k in kinds for o in self._list(*k)}

    def table(self) -> str:
        """Where each driver and each model landed: one line per workload, its pods' nodes and pools."""
        pools = self.node_pools()
        rows: dict[tuple[str, str], list[str]] = {}
        for pod in self.pods():
            if not pod.node or not pod.owner.startswith(("DaemonSet/", "Deployment/", "LeaderWorkerSet/")):
                continue
            rows.setdefault((pod.namespace, pod.owner), []).append(pod.node)
        allocated = {(a.namespace, a.claim): a for a in self.allocations()}
        claims_of: dict[tuple[str, str], list[Allocation]] = {}
        for pod in self.pods():
            for claim in pod.claims:
                if (pod.namespace, claim) in allocated:
                    claims_of.setdefault((pod.namespace, pod.owner), []).append(allocated[(pod.namespace, claim)])
        lines = [f"{'namespace':<24} {'workload':<52} {'nodes (pool)':<40} devices"]
        for (namespace, owner), nodes in sorted(rows.items()):
            where = ", ".join(f"{n} ({pools.get(n) or '-'})" for n in sorted(nodes))
            devices = "; ".join(
                f"{a.driver} {','.join(a.devices)}" + (f" {dict(a.consumed)}" if a.consumed else "")
                for a in claims_of.get((namespace, owner), [])
            )
            lines.append(f"{namespace:<24} {owner:<52} {where:<40} {devices}")
        return "\n".join(lines)


def _controller(obj: Mapping[str, Any]) -> str:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref['kind']}/{ref['name']}"
    return ""
