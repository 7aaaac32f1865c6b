"""ModelDeployment (and the ModelCache it mounts) -> `deployments[]`, placed as modelplane's scheduler places
replicas (`tooling.from_modelplane`)."""

from __future__ import annotations

import re
import shlex
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from clouds import machine, profile
from infra.checks.schedulable import suggested_memory
from infra.formats import parse_quantity
from tooling.from_modelplane.platform import machine_name
from tooling.from_modelplane.xrs import CLUSTER_LABEL, DEPLOYMENT_LABEL, XR, Conversion, ConvertError, Placed, value_at

# Where modelplane mounts a ModelCache in every serving pod (`apis/modelcaches/definition.yaml`,
# docs/manifests/concepts/model-cache.yaml): an engine pointed at it reads the cache's repository.
CACHE_MOUNT = "/mnt/models"
# vLLM's multi-node flags our LeaderWorkerSet adds itself (`components.features.multinode.launch_args`);
# modelplane's engines write them with its own variables ($(MODELPLANE_RANK), ...).
GROUP_FLAGS = ("--nnodes", "--node-rank", "--master-addr")
# modelplane fills these in its pods; our pods have no such variables.
MODELPLANE_VARIABLE = re.compile(r"\$\(MODELPLANE_[A-Z_]+\)")
# The shapes of device selector the converter evaluates, as modelplane's published ModelDeployments
# write them (docs/manifests/**/model-deployment*.yaml): the device's driver, and a capacity compared
# with a quantity, joined by `&&`.
DRIVER_CEL = re.compile(r"""^device\.driver\s*==\s*"(?P<driver>[^"]+)"$""")
CAPACITY_CEL = re.compile(
    r"""^device\.capacity\["(?P<driver>[^"]+)"\]\.(?P<name>[A-Za-z0-9_.-]+)\.compareTo\(quantity\("(?P<qty>[^"]+)"\)\)\s*(?P<op>>=|>|==|<=|<)\s*0$"""
)


def place_deployment(
    conv: Conversion,
    xr: XR,
    clusters: Sequence[XR],
    classes: Mapping[str, XR],
    caches: Mapping[tuple[str, str], XR],
    ledger: dict[tuple[str, str], int],
) -> list[Placed]:
    """The deployments of ours for one ModelDeployment, its replicas placed as modelplane's scheduler
    fills them, charged to `ledger` (the nodes each pool has left, shared by every deployment)."""
    tspec = "spec.template.spec"
    engines = value_at(xr.doc, f"{tspec}.engines")
    if len(engines) > 1:
        conv.note(
            "not mapped",
            xr,
            f"{tspec}.engines[1:]",
            "ours runs one engine a deployment; only the first engine is converted (a prefill/decode split has no key of ours)",
        )
        xr.used.add(f"{tspec}.engines[1]")
        for j in range(2, len(engines)):
            xr.used.add(f"{tspec}.engines[{j}]")
    eng = f"{tspec}.engines[0]"
    members = value_at(xr.doc, f"{eng}.members")
    lead_i = next((j for j, m in enumerate(members) if m.get("role", "Standalone") in ("Standalone", "Leader")), 0)
    lead = f"{eng}.members[{lead_i}]"
    for j in range(len(members)):
        xr.get(f"{eng}.members[{j}].role")
    worker_nodes = sum(
        int(xr.get(f"{eng}.members[{j}].worker.nodes") or 0) for j, m in enumerate(members) if m.get("role") == "Worker"
    )
    requests = []
    for k, _ in enumerate(value_at(xr.doc, f"{lead}.nodeSelector.devices") or []):
        at = f"{lead}.nodeSelector.devices[{k}]"
        requests.append(
            (
                str(xr.get(f"{at}.name")),
                int(xr.get(f"{at}.count") or 1),
                [s.get("cel", "") for s in xr.get(f"{at}.selectors") or []],
            )
        )
    for j, m in enumerate(members):
        if j != lead_i and m.get("nodeSelector") is not None:
            # A group's pods share one pool: the leader's request speaks for it.
            xr.used.add(f"{eng}.members[{j}].nodeSelector")
    cache_name = xr.get(f"{tspec}.modelCacheRef.name")
    cache = caches.get((xr.namespace, cache_name)) if cache_name else None
    if cache_name and cache is None:
        raise ConvertError(
            [
                f"{xr.file}: ModelDeployment {xr.name}: {tspec}.modelCacheRef.name: no ModelCache '{cache_name}' "
                f"in namespace {xr.namespace} among the files. Fix: pass the file that defines it"
            ]
        )
    selector = dict(xr.get(f"{tspec}.clusterSelector.matchLabels") or {})
    if cache is not None:
        selector.update(cache.get("spec.clusterSelector.matchLabels") or {})
    tolerations = value_at(xr.doc, f"{tspec}.tolerations") or []
    eligible = []
    for c in sorted(clusters, key=lambda c: c.name):
        labels = (c.doc.get("metadata") or {}).get("labels") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        taints = (c.doc.get("spec") or {}).get("taints") or []
        if any(not any(_tolerates(t, taint) for t in tolerations) for taint in taints):
            continue  # an untolerated NoSchedule or NoExecute taint keeps new replicas off (`_repels_new`)
        pools = _pools_for(c, classes, requests)
        if pools:
            eligible.append((c, pools))
    if not eligible:
        raise ConvertError(
            [
                f"{xr.file}: ModelDeployment {xr.name}: {lead}.nodeSelector: no InferenceCluster among the files has a pool "
                f"whose class offers {', '.join(f'{n} x{c}' for n, c, _ in requests) or 'its devices'}"
                + (f" and labels {selector}" if selector else "")
                + (
                    ", and no taint its tolerations do not match"
                    if any((c.doc.get("spec") or {}).get("taints") for c in clusters)
                    else ""
                )
                + ". Fix: pass the InferenceCluster and InferenceClass files it runs on"
            ]
        )
    replicas = int(xr.get("spec.replicas"))
    copies = int(xr.get(f"{eng}.copies") or 1)
    # What one replica takes of its pool: a node per pod of each copy (scheduling.py `_member_pods`).
    cost = (1 + worker_nodes) * copies
    counts: dict[str, int] = defaultdict(int)
    chosen: dict[str, dict[str, Any]] = {}
    over = 0
    for _ in range(replicas):
        # Spread first: the cluster with the fewest of them, ties by name, among those with a pool
        # that still has the nodes (one pool a cluster: ours runs a deployment on one pool).
        fits = [
            (c, p)
            for c, pools in eligible
            for p in ([chosen[c.name]] if c.name in chosen else pools)
            if ledger[(c.name, p["name"])] >= cost
        ]
        if not fits:
            over += 1
            fits = [(c, chosen.get(c.name, pools[0])) for c, pools in eligible]
        c, pool = min(fits, key=lambda e: (counts[e[0].name], e[0].name))
        chosen[c.name] = pool
        counts[c.name] += 1
        ledger[(c.name, pool["name"])] -= cost
    if over:
        conv.note(
            "chosen",
            xr,
            "spec.replicas",
            f"{over} replica(s) found no pool with free nodes among the files (modelplane would leave them unscheduled); "
            "placed anyway, where the plan's schedulability rules report them",
        )
    container = f"{lead}.template.spec.containers[0]"
    image = xr.get(f"{container}.image")
    args = _engine_args(conv, xr, container, cache)
    port = _take_port(args)
    env = {}
    for k, e in enumerate(value_at(xr.doc, f"{container}.env") or []):
        if "value" in e:
            env[str(xr.get(f"{container}.env[{k}].name"))] = str(xr.get(f"{container}.env[{k}].value"))
        else:
            xr.get(f"{container}.env[{k}].name")
    for j in range(len(members)):
        if j != lead_i:
            # The workers run the leader's image and args; ours builds their pods from the deployment.
            xr.used.add(f"{eng}.members[{j}].template.spec.containers")
    out = []
    for c, _pools in eligible:
        if not counts[c.name]:
            continue
        pool = chosen[c.name]
        dep: dict[str, Any] = {
            "name": xr.name,
            "namespace": xr.namespace,
            "cluster": c.name,
            "pool": pool["name"],
            "image": image,
            "args": args,
            "replicas": counts[c.name] * copies,
            "devices": [{"name": n, "count": k} for n, k, _ in requests],
        }
        if worker_nodes:
            dep["nodes"] = 1 + worker_nodes
        if port is not None:
            dep["port"] = port
        if env:
            dep["env"] = env
        memory = _memory(c, classes[pool["className"]])
        if memory is not None:
            dep["memory"] = memory
            conv.note(
                "chosen",
                xr,
                container,
                f"on {c.name}: memory {memory} (modelplane sets no memory request; ours needs one on a GPU pool, and this is what a node of the pool's machine can give)",
            )
        if cache is not None:
            dep["cache"] = _shared_cache(conv, xr, c, cache)
        conv.deployments.append(dep)
        # Read, not marked used: the labels select the deployment's endpoints, and ours has no key for them.
        template_labels = dict(value_at(xr.doc, "spec.template.metadata.labels") or {})
        out.append(
            Placed(xr, c.name, counts[c.name], {**template_labels, DEPLOYMENT_LABEL: xr.name, CLUSTER_LABEL: c.name})
        )
    placed_on = [p.cluster for p in out]
    if len(placed_on) > 1 or replicas > 1:
        conv.note(
            "chosen",
            xr,
            "spec.replicas",
            f"{replicas} replica(s) placed as modelplane's scheduler spreads them: "
            + ", ".join(f"{p.cluster} x{p.count}" for p in out),
        )
    return out


def _shared_cache(conv: Conversion, xr: XR, cluster: XR, cache: XR) -> dict[str, Any]:
    """The deployment's `cache` for a ModelCache: a Shared volume where the cloud has ReadWriteMany
    storage of ours (infra/profiles.py `SharedStorage`), else a node's own directory."""
    source = str(cluster.doc["spec"]["cluster"]["source"])
    storage = profile(source).shared_cache
    size = int(cache.get("spec.huggingFace.sizeGiB"))
    if storage is None:
        conv.note(
            "chosen",
            xr,
            "spec.template.spec.modelCacheRef",
            f"on {cluster.name}: ours has no ReadWriteMany storage on {source} (docs/serving.md, Shared weight cache); "
            "each node keeps its own copy (cache.volume: NodeLocal)",
        )
        return {"volume": "NodeLocal"}
    out: dict[str, Any] = {"volume": "Shared", "size": f"{size}Gi"}
    if storage.storage_class is None:
        named = cluster.get("spec.cluster.existing.cache.storageClassName")
        if named:
            out["storageClassName"] = named
        else:
            conv.note(
                "fill in",
                xr,
                "spec.template.spec.modelCacheRef",
                f"on {cluster.name}: a shared cache on an Existing cluster names its ReadWriteMany StorageClass; set cache.storageClassName",
            )
    elif size < storage.min_gib:
        out["size"] = f"{storage.min_gib}Gi"
        conv.note(
            "chosen",
            xr,
            "spec.template.spec.modelCacheRef",
            f"on {cluster.name}: size {storage.min_gib}Gi, the least {storage.storage_class} provisions (the ModelCache asks {size}Gi)",
        )
    return out


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' matching, as modelplane's scheduler applies it (scheduling.py `_tolerates`): an empty
    effect matches any; `Exists` matches the key (an empty key every taint); `Equal` key and value."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return bool(
        toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")
    )


def _pools_for(
    cluster: XR, classes: Mapping[str, XR], requests: Sequence[tuple[str, int, list[str]]]
) -> list[dict[str, Any]]:
    """The pools of `cluster` whose class has every requested device, in number, and meets its selectors."""
    out = []
    for pool in (cluster.doc.get("spec") or {}).get("nodePools") or []:
        cls = classes.get(pool.get("className"))
        if cls is None:
            continue
        devices = {d.get("name"): d for d in (cls.doc.get("spec") or {}).get("devices") or []}
        if all(
            name in devices
            and int(devices[name].get("count") or 1) >= count
            and all(_meets(devices[name], cel) for cel in cels)
            for name, count, cels in requests
        ):
            out.append(dict(pool))
    return out


def pool_nodes(cluster: XR) -> dict[tuple[str, str], int]:
    """The nodes each pool of `cluster` offers replicas: `maxNodeCount`, else `nodeCount` (default 1), as
    modelplane publishes them in the cluster's status (`gpuPools[].nodes`)."""
    return {
        (cluster.name, str(p.get("name"))): int(p.get("maxNodeCount") or p.get("nodeCount") or 1)
        for p in (cluster.doc.get("spec") or {}).get("nodePools") or []
    }


def _meets(device: Mapping[str, Any], cel: str) -> bool:
    """Whether the class's device meets a selector, judged conjunct by conjunct: `device.driver == "..."`
    and a capacity compared with a quantity (`CAPACITY_CEL`); a conjunct of another shape is not judged."""
    if "||" in cel or "!" in cel:
        return True  # not a plain conjunction: not judged
    for term in cel.strip().split("&&"):
        term = term.strip()
        driver = DRIVER_CEL.match(term)
        if driver is not None and driver["driver"] != device.get("driver"):
            return False
        m = CAPACITY_CEL.match(term)
        if m is None:
            continue
        if m["driver"] != device.get("driver"):
            return False
        have = parse_quantity(((device.get("capacity") or {}).get(m["name"]) or {}).get("value"))
        want = parse_quantity(m["qty"])
        if have is None or want is None:
            return False
        diff = (have > want) - (have < want)
        if not {">=": diff >= 0, ">": diff > 0, "==": diff == 0, "<=": diff <= 0, "<": diff < 0}[m["op"]]:
            return False
    return True


def _engine_args(conv: Conversion, xr: XR, container: str, cache: XR | None) -> list[str]:
    """The engine's args as our image takes them (its ENTRYPOINT is `vllm serve`)."""
    command = [str(a) for a in xr.get(f"{container}.command") or []]
    args = [str(a) for a in xr.get(f"{container}.args") or []]
    if command:
        words = command
        if len(command) >= 3 and command[0] in ("/bin/sh", "sh", "/bin/bash", "bash") and command[1] == "-c":
            words = shlex.split(command[2])
        if words[:1] == ["exec"]:
            words = words[1:]
        if words[:2] != ["vllm", "serve"]:
            raise ConvertError(
                [
                    f"{xr.file}: ModelDeployment {xr.name}: {container}.command: runs {' '.join(command)[:80]!r}, not `vllm serve`; "
                    "ours runs the image's `vllm serve` with args. Fix: write the engine's flags as args"
                ]
            )
        rest = words[2:]
        if rest and not rest[0].startswith("-"):
            rest = ["--model", rest[0], *rest[1:]]
        args = [*rest, *args]
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        flag, sep, value = arg.partition("=")
        if flag in (*GROUP_FLAGS, "--headless"):
            skip = not sep and flag != "--headless"
            continue
        nxt = args[i + 1] if not sep and i + 1 < len(args) else ""
        variable = MODELPLANE_VARIABLE.search(arg) or MODELPLANE_VARIABLE.search(nxt)
        if variable is not None:
            conv.note(
                "not mapped", xr, f"{container}.args", f"{flag}: ours has no {variable.group()} in its pods; left out"
            )
            skip = bool(nxt)
            continue
        if flag == "--model" and cache is not None:
            given = value if sep else (args[i + 1] if i + 1 < len(args) else "")
            if given.rstrip("/") == CACHE_MOUNT:
                repo = cache.get("spec.huggingFace.repo")
                out += ["--model", str(repo)]
                revision = cache.get("spec.huggingFace.revision")
                if revision:
                    out += ["--revision", str(revision)]
                skip = not sep
                continue
        out.append(arg)
    if cache is not None:
        cache.get("spec.source")
        cache.get("spec.huggingFace.sizeGiB")
    return out


def _take_port(args: list[str]) -> int | None:
    """Remove `--port` from the args and return it: ours passes the deployment's `port` itself."""
    for i, arg in enumerate(args):
        flag, sep, value = arg.partition("=")
        if flag == "--port":
            given = value if sep else (args[i + 1] if i + 1 < len(args) else "")
            del args[i : i + (1 if sep else 2)]
            return int(given) if given.isdigit() and int(given) != 8000 else None
    return None


def _memory(cluster: XR, cls: XR) -> str | None:
    """A memory request for an engine on a GPU pool (ours requires one there; modelplane has none)."""
    if not any(d.get("driver", "").startswith("gpu.") for d in cls.doc["spec"].get("devices") or []):
        return None
    source = str(cluster.doc["spec"]["cluster"]["source"])
    prov = cls.doc["spec"].get("provisioning") or {}
    on_source = prov.get("provider") == source
    name = machine_name(source, prov.get(source.lower()) or {}) if on_source else None
    return suggested_memory(source, machine(source, name) if name is not None else None, "GPU", "2Gi")
