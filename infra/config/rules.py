"""Rules on values the model alone cannot judge: credentials, images, serving, services, versions and cloud names."""

from __future__ import annotations

import re
from collections.abc import Sequence

from clouds import machine, profile
from infra.config.base import ProvisionedClusterBlock
from infra.config.issues import ConfigIssue, unique_names
from infra.config.model import (
    CacheVolume,
    ClaimMode,
    Fleet,
    InferenceClass,
    InferenceCluster,
    ModelDeploymentSpec,
)
from infra.config.names import NAMESPACE, cut, shown
from infra.config.roles import CPU_CLAIM_CAPACITY, CPU_CLAIM_DRIVER, claimed_drivers, role_of
from infra.formats import image_problem, parse_image, parse_quantity
from infra.schedulable import suggested_memory
from infra.vocabulary import GPU_VENDORS

# Environment variable names that hold a credential, by a word in the name, and value prefixes
# that only credentials have: Hugging Face user access tokens (`hf_`, huggingface.co/docs/hub/
# security-tokens), GitHub tokens (`ghp_`, `github_pat_`, docs.github.com "About authentication"),
# OpenAI-style API keys (`sk-`), AWS access key ids (`AKIA`, AWS IAM "Understanding unique ID
# prefixes").
CREDENTIAL_NAME_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
CREDENTIAL_VALUE_PREFIXES = ("hf_", "ghp_", "github_pat_", "sk-", "AKIA")


def check_rules(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """Every rule of this module that looks at the whole fleet; each reports what it finds, independently."""
    return (
        check_images(fleet, file)
        + check_serving(fleet, file)
        + check_plain_credentials(fleet, file)
        + check_autoscaling(fleet, file)
        + check_multinode(fleet, file)
    )


def check_plain_credentials(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """Env values that look like credentials but are written in plain text.

    A plain value goes into the pod spec, the state and the plan's JSON as written; only a
    `secure:` value reaches the pod through a Secret. The message names the variable and never
    the value.
    """
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(fleet.deployments):
        for name, value in dep.env.items():
            if not isinstance(value, str) or not value:
                continue
            by_name = any(word in name.upper() for word in CREDENTIAL_NAME_WORDS)
            by_value = value.startswith(CREDENTIAL_VALUE_PREFIXES)
            if not (by_name or by_value):
                continue
            why = "its name says it holds a credential" if by_name else "its value has a credential's prefix"
            issues.append(
                ConfigIssue(
                    file,
                    f"deployments[{di}].env.{name}",
                    f"env {shown(name)} is written in plain text and {why} (the value is not shown)",
                    f"store it as a secret: pulumi config set --secret --path "
                    f"'{NAMESPACE}:deployments[{di}].env.{name}' <value>",
                )
            )
        issues += credential_arg_issues(file, di, dep.args)
    return issues


# vLLM flags that take a credential, and the environment variable vLLM reads it from instead
# (docs.vllm.ai "Engine Arguments", `--hf-token`, and "OpenAI-Compatible Server", `--api-key` /
# `VLLM_API_KEY`; `huggingface_hub` reads `HF_TOKEN`, huggingface.co/docs/huggingface_hub
# package_reference/environment_variables). `--token` is the form other servers take.
CREDENTIAL_FLAGS = {"--hf-token": "HF_TOKEN", "--token": "HF_TOKEN", "--api-key": "VLLM_API_KEY"}


def credential_arg_issues(file: str, di: int, args: Sequence[str]) -> list[ConfigIssue]:
    """Args that pass a credential on the command line, which lands as written in the pod spec,
    the state and the plan's JSON: a credential flag (`--hf-token x`, `--api-key=x`), or a value with
    a credential's prefix. The message names the flag, never the value."""
    issues: list[ConfigIssue] = []
    skip = -1
    for ai, arg in enumerate(args):
        if ai == skip:
            continue
        flag, sep, _ = arg.partition("=")
        remove = "it"
        if flag in CREDENTIAL_FLAGS:
            why, env = f"'{flag}' passes a credential on the command line", CREDENTIAL_FLAGS[flag]
            skip = ai + 1 if not sep else -1
            if skip != -1 and skip < len(args):
                # The credential is the next arg: removing the flag alone would leave it in plain text.
                remove = f"it and its value, args[{skip}],"
        elif arg.startswith(CREDENTIAL_VALUE_PREFIXES) or (
            sep and arg.split("=", 1)[1].startswith(CREDENTIAL_VALUE_PREFIXES)
        ):
            why, env = "the value has a credential's prefix", "HF_TOKEN"
        else:
            continue
        issues.append(
            ConfigIssue(
                file,
                f"deployments[{di}].args[{ai}]",
                f"args[{ai}] is plain text in the pod spec and the plan, and {why} (the value is not shown)",
                f"remove {remove} from args and pass it through env as a secret: pulumi config set --secret --path "
                f"'{NAMESPACE}:deployments[{di}].env.{env}' <value> (written as env: {{{env}: {{secure: ...}}}})",
            )
        )
    return issues


def check_images(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """Deployment images are pinned: a digest, or a tag that does not float (`infra.formats`).

    An untagged image means `latest`, and a floating tag lets a node pull an engine nobody
    reviewed the next time a pod restarts.
    """
    issues = []
    for di, dep in enumerate(fleet.deployments):
        problem = image_problem(dep.image)
        if problem is not None:
            pin = "" if parse_image(dep.image) is None else "is not pinned: it "
            issues.append(
                ConfigIssue(
                    file,
                    f"deployments[{di}].image",
                    f"image {shown(dep.image)} {pin}{problem}",
                    "pin an exact version tag or a digest, e.g. vllm/vllm-openai:v0.23.0",
                )
            )
    return issues


# The flag vLLM's OpenAI server takes its listening port from (`vllm serve --port`, default 8000).
PORT_FLAG = "--port"


def port_args(args: Sequence[str]) -> list[tuple[int, str | None]]:
    """Each `--port N` / `--port=N` in the args: (index of the flag, its value or None when missing)."""
    found: list[tuple[int, str | None]] = []
    for i, arg in enumerate(args):
        if arg == PORT_FLAG:
            found.append((i, args[i + 1] if i + 1 < len(args) else None))
        elif arg.startswith(PORT_FLAG + "="):
            found.append((i, arg.split("=", 1)[1] or None))
    return found


def check_serving(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """The engine's port, memory and cache, and `services[]` references (docs/serving.md)."""
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(fleet.deployments):
        dpath = f"deployments[{di}]"
        for ai, value in port_args(dep.args):
            if value == str(dep.port):
                continue
            shown = f"'{PORT_FLAG} {value}'" if value else f"'{PORT_FLAG}' without a value"
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.args[{ai}]",
                    f"args set {shown} but the deployment's port is {dep.port}",
                    f"remove it from args and set {dpath}.port"
                    + (f": {value}" if value and value.isdigit() else "")
                    + " (the container, probes, Service and route all follow port)",
                )
            )
        try:
            cluster = fleet.cluster_named(dep.cluster)
            pool = next(p for p in cluster.node_pools if p.name == dep.pool)
            role = role_of(claimed_drivers(fleet.class_named(pool.class_name)))
        except (KeyError, StopIteration):
            continue  # an unknown reference, reported by check_references
        if role == "GPU":
            cls = fleet.class_named(pool.class_name)
            gpus = claimed_gpus(cls, dep) * dep.nodes
            issues += parallelism_issues(file, dpath, dep.args, gpus, dep.nodes)
            issues += weights_issues(file, dpath, dep.args, gpus, gpu_memory_gib(cluster, cls))
        if role == "GPU" and dep.memory is None:
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.memory",
                    f"deployment '{dep.name}' runs on GPU pool '{dep.pool}' without a memory request",
                    memory_fix(fleet, cluster, pool.class_name, dep.shm_size),
                )
            )
        if dep.memory is not None and (parse_quantity(dep.memory) or 0) <= (parse_quantity(dep.shm_size) or 0):
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.memory",
                    f"memory {dep.memory} does not exceed shmSize {dep.shm_size}, which counts against it",
                    "raise memory above shmSize plus what the engine needs",
                )
            )
        cache = dep.cache
        pods = dep.peak_replicas * dep.nodes
        if cache is not None and cache.volume is CacheVolume.PERSISTENT_VOLUME_CLAIM and pods > 1:
            spread = (
                f"{dep.peak_replicas} replicas"
                if dep.nodes == 1
                else f"{pods} pods ({dep.peak_replicas} x {dep.nodes} nodes)"
            )
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.cache.volume",
                    f"a PersistentVolumeClaim cache is ReadWriteOnce: one node mounts it, not {spread}",
                    f"use volume: NodeLocal for several replicas, or {dep.peak_replicas_key}: 1"
                    if dep.nodes == 1
                    else "use volume: NodeLocal, which each pod of a group keeps on its own node",
                )
            )
        if (
            cache is not None
            and cache.volume is CacheVolume.PERSISTENT_VOLUME_CLAIM
            and cache.storage_class_name is None
            and profile(cluster.source).cache_storage_class is None
        ):
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.cache.storageClassName",
                    f"{cluster.source} cluster '{cluster.name}' has no StorageClass this program provides",
                    "set storageClassName to a class the cluster has (install its CSI driver first), "
                    "or use volume: NodeLocal",
                )
            )
    issues.extend(_check_services(fleet, file))
    return issues


def check_autoscaling(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """`autoscaling` across keys: it replaces `replicas`, and it cannot scale from zero.

    KEDA owns the replica count of an autoscaled deployment; a `replicas` beside it would be a
    second owner, reset by every `pulumi up`. At `minReplicas: 0` the first request after an idle
    spell waits for a whole start (a node too, where the pool scales down): the pull, the weights'
    download and their load. A model cache keeps the download out of that wait; without one every
    cold start downloads the weights again.
    """
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(fleet.deployments):
        scaling = dep.autoscaling
        if scaling is None:
            continue
        dpath = f"deployments[{di}]"
        if "replicas" in dep.model_fields_set:
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.replicas",
                    f"deployment '{dep.name}' sets both replicas and autoscaling; the autoscaler owns the replica count",
                    f"remove replicas, or remove autoscaling for a fixed count (bounds: {dpath}.autoscaling.minReplicas "
                    "and maxReplicas)",
                )
            )
        if scaling.min_replicas == 0:
            # The trigger reads vLLM's own gauges, which exist only while an engine runs: at zero
            # replicas the query returns nothing, KEDA reads 0, and no request ever brings one back.
            issues.append(
                ConfigIssue(
                    file,
                    f"{dpath}.autoscaling.minReplicas",
                    f"at minReplicas 0 deployment '{dep.name}' would never start again: its metric comes from "
                    "the engine's own /metrics, which no pod serves at zero replicas",
                    "set minReplicas: 1 (the smallest count its metric can scale from)",
                )
            )
    return issues


# vLLM's parallelism flags and their short forms (docs.vllm.ai "Engine Arguments", ParallelConfig:
# `--tensor-parallel-size/-tp`, `--pipeline-parallel-size/-pp`, `--data-parallel-size/-dp`, each
# default 1). One replica's engine uses tensor x pipeline x data GPUs ("Parallelism and Scaling":
# world size is tensor x pipeline per data-parallel rank).
PARALLEL_FLAGS = {
    "--tensor-parallel-size": "tensor",
    "-tp": "tensor",
    "--pipeline-parallel-size": "pipeline",
    "-pp": "pipeline",
    "--data-parallel-size": "data",
    "-dp": "data",
}


def claimed_gpus(cls: InferenceClass, dep: ModelDeploymentSpec) -> int:
    """The GPU devices one replica of `dep` claims of its pool's class."""
    gpu = {d.name for d in cls.devices if d.claim is ClaimMode.DRA and d.driver in GPU_VENDORS}
    return sum(r.count for r in dep.devices if r.name in gpu)


def parallel_args(args: Sequence[str]) -> dict[str, tuple[int, str | None]]:
    """Each parallelism the args set: kind -> (index of the flag, its value or None when missing); the last wins, as in vLLM."""
    found: dict[str, tuple[int, str | None]] = {}
    for i, arg in enumerate(args):
        flag, sep, value = arg.partition("=")
        if flag in PARALLEL_FLAGS:
            given = value if sep else (args[i + 1] if i + 1 < len(args) else None)
            found[PARALLEL_FLAGS[flag]] = (i, given or None)
    return found


def parallelism_issues(file: str, dpath: str, args: Sequence[str], gpus: int, nodes: int = 1) -> list[ConfigIssue]:
    """The parallelism the args ask for against the GPU devices one replica claims.

    Checked only when the args set one of vLLM's parallelism flags (another engine's args are
    not read): tensor x pipeline x data parallel must equal the replica's GPUs, on a replica of
    several `nodes` the GPUs of all its pods (one engine spans them); more cannot start, fewer
    leaves claimed GPUs idle.
    """
    found = parallel_args(args)
    if not found:
        return []
    sizes: dict[str, int] = {}
    for kind, (i, value) in found.items():
        if value is None or not value.isdigit() or int(value) < 1:
            return [
                ConfigIssue(
                    file,
                    f"{dpath}.args[{i}]",
                    f"args[{i}] sets {kind} parallelism to {shown(value) if value else 'nothing'}, not a whole number",
                    f"give it a whole number, such as {args[i].partition('=')[0]} {gpus}",
                )
            ]
        sizes[kind] = int(value)
    tensor, pipeline, data = (sizes.get(k, 1) for k in ("tensor", "pipeline", "data"))
    wanted = tensor * pipeline * data
    if wanted == gpus:
        return []
    first = min(i for i, _ in found.values())
    rest = pipeline * data
    suggest = (
        # vLLM's "Parallelism and Scaling" page: across nodes, tensor parallel = GPUs per node and
        # pipeline parallel = the nodes.
        f"--tensor-parallel-size {gpus // nodes} --pipeline-parallel-size {nodes}"
        if nodes > 1 and data == 1 and gpus % nodes == 0
        else f"--tensor-parallel-size {gpus // rest}"
        if gpus % rest == 0
        else f"--tensor-parallel-size {gpus} without pipeline or data parallelism"
    )
    spans = f" ({nodes} nodes x {gpus // nodes})" if nodes > 1 else ""
    claim = (
        f"claim {wanted} GPU devices in {dpath}.devices"
        if nodes == 1
        else f"span {wanted // (gpus // nodes)} node{'s' if wanted // (gpus // nodes) > 1 else ''} ({dpath}.nodes)"
        if gpus and wanted % (gpus // nodes) == 0
        else f"claim {wanted} GPU devices across {dpath}.nodes x {dpath}.devices"
    )
    return [
        ConfigIssue(
            file,
            f"{dpath}.args[{first}]",
            f"args ask for {wanted} GPUs (tensor {tensor} x pipeline {pipeline} x data {data} parallel) but one "
            f"replica claims {gpus} GPU devices{spans}",
            f"set {suggest}, or {claim}",
        )
    ]


# What one weight takes, by the quantization or dtype the model id or the args name; 16-bit (BF16,
# vLLM's `--dtype auto` for most checkpoints) otherwise. A 4-bit marker wins over an 8-bit one, so
# the estimate never exceeds the real size (docs/serving.md, "Weights against GPU memory").
_FOUR_BIT = re.compile(r"awq|gptq|int4|w4a16|4bit|bnb|nf4|mxfp4|fp4", re.IGNORECASE)
_EIGHT_BIT = re.compile(r"fp8|int8|w8a8|w8a16|8bit", re.IGNORECASE)
# A parameter count in a model id (`Llama-3.1-70B`, `Qwen2.5-0.5B`, `Qwen3-30B-A3B`: the largest is the
# total); a mixture written as experts x size (`Mixtral-8x7B`) does not say its total and is not read.
_PARAMS = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)[bB](?![a-zA-Z])")
_EXPERTS = re.compile(r"\d+x\d+(?:\.\d+)?[bB]", re.IGNORECASE)
# vLLM's default share of each GPU's memory for weights, activations and KV cache
# (docs.vllm.ai "Engine Arguments", `--gpu-memory-utilization`, default 0.9).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9


def flag_value(args: Sequence[str], *flags: str) -> tuple[int, str] | None:
    """The last `flag value` / `flag=value` of any of `flags` in args: (index of the flag, value)."""
    found = None
    for i, arg in enumerate(args):
        flag, sep, value = arg.partition("=")
        if flag in flags:
            given = value if sep else (args[i + 1] if i + 1 < len(args) else "")
            found = (i, given)
    return found


def gpu_memory_gib(cluster: InferenceCluster, cls: InferenceClass) -> float | None:
    """The memory of one GPU of the pool's class: its machine's catalog row, or on Existing the
    `memory` capacity the class's GPU device writes; None when neither says."""
    prov = cls.provisioning
    if cluster.provisioned and prov is not None and prov.provider == cluster.source:
        row = machine(cluster.source, prov.machine_name)
        return float(row.gpu.memory_gib) if row is not None and row.gpu is not None else None
    for device in cls.devices:
        if device.claim is ClaimMode.DRA and device.driver in GPU_VENDORS and "memory" in device.capacity:
            amount = parse_quantity(device.capacity["memory"].value)
            return float(amount) / 2**30 if amount else None
    return None


def weights_issues(
    file: str, dpath: str, args: Sequence[str], gpus: int, per_gpu_gib: float | None
) -> list[ConfigIssue]:
    """A model whose weights alone exceed the GPU memory one replica may use: it can never load.

    The estimate errs low, so only the clearly impossible is refused: parameters read from the
    model id (`--model`) x bytes per weight (`_FOUR_BIT`, `_EIGHT_BIT`, else 2) against the claimed
    GPUs x their memory (the catalog's figure) x `--gpu-memory-utilization`; the KV cache and
    activations, which need more still, are not counted. A model id without a parameter count, or a
    pool whose GPU memory is unknown, is not checked.
    """
    model = flag_value(args, "--model")
    if model is None or per_gpu_gib is None or gpus == 0 or _EXPERTS.search(model[1]):
        return []
    counts = [float(n) for n in _PARAMS.findall(model[1].rsplit("/", 1)[-1])]
    if not counts:
        return []
    params = max(counts)
    named = " ".join(
        [
            model[1],
            *(v for _, v in filter(None, [flag_value(args, "--quantization", "-q"), flag_value(args, "--dtype")])),
        ]
    )
    width, bytes_each = (
        ("4-bit", 0.5) if _FOUR_BIT.search(named) else ("8-bit", 1.0) if _EIGHT_BIT.search(named) else ("16-bit", 2.0)
    )
    if re.search(r"float32|fp32", named, re.IGNORECASE):
        width, bytes_each = "32-bit", 4.0
    utilization_arg = flag_value(args, "--gpu-memory-utilization")
    try:
        utilization = float(utilization_arg[1]) if utilization_arg else DEFAULT_GPU_MEMORY_UTILIZATION
    except ValueError:
        return []
    weights = params * 1e9 * bytes_each / 2**30
    usable = per_gpu_gib * gpus * utilization
    if weights <= usable:
        return []
    return [
        ConfigIssue(
            file,
            f"{dpath}.args[{model[0]}]",
            f"model {shown(model[1])} has about {params:g}B parameters, {weights:.1f} GiB of {width} weights, more "
            f"than the {usable:.1f} GiB vLLM may use of the {gpus} x {per_gpu_gib:g} GiB GPUs one replica claims "
            f"(gpu-memory-utilization {utilization:g}), before any KV cache",
            "claim more GPUs per replica (and set --tensor-parallel-size to match), use a quantized build of the "
            "model (FP8, AWQ, GPTQ), or a pool with larger GPUs",
        )
    ]


def memory_fix(fleet: Fleet, cluster: InferenceCluster, class_name: str, shm_size: str) -> str:
    """The fix for a GPU engine without memory, naming a value the pool's node can give a pod
    (`infra.schedulable.suggested_memory`), so the next plan accepts it."""
    prov = fleet.class_named(class_name).provisioning
    row = (
        machine(cluster.source, prov.machine_name)
        if cluster.provisioned and prov is not None and prov.provider == cluster.source
        else None
    )
    value = suggested_memory(cluster.source, row, "GPU", shm_size)
    if value is None:
        assert row is not None, "without a machine any value above shmSize fits"
        return (
            f"a {row.name} node cannot hold shmSize {shm_size} and the engine: lower shmSize, or use a larger "
            "machine for the pool's class, then set memory"
        )
    return (
        "set memory to what the engine holds in host RAM (weights are staged through it, plus "
        f"shmSize {shm_size}), e.g. memory: {value}"
    )


def _check_services(fleet: Fleet, file: str) -> list[ConfigIssue]:
    issues = unique_names(file, [s.name for s in fleet.services], "services[{i}].name", "service")
    routes: dict[tuple[str, str, str], int] = {}
    for si, svc in enumerate(fleet.services):
        spath = f"services[{si}]"
        matches = [d for d in fleet.deployments if d.name == svc.deployment and svc.cluster in (None, d.cluster)]
        if not matches:
            names = sorted({d.name for d in fleet.deployments})
            issues.append(
                ConfigIssue(
                    file,
                    f"{spath}.deployment",
                    f"no deployment '{svc.deployment}'" + (f" on cluster '{svc.cluster}'" if svc.cluster else ""),
                    f"use one of: {', '.join(names) or '(none declared)'}",
                )
            )
            continue
        if len(matches) > 1:
            issues.append(
                ConfigIssue(
                    file,
                    f"{spath}.cluster",
                    f"deployment '{svc.deployment}' runs on clusters {', '.join(d.cluster for d in matches)}",
                    "set cluster to the one whose gateway publishes this service",
                )
            )
            continue
        if svc.tls is not None and svc.host is None:
            issues.append(
                ConfigIssue(
                    file,
                    f"{spath}.tls",
                    "TLS needs a host to issue the certificate for",
                    f"set {spath}.host to the DNS name clients use, or remove tls",
                )
            )
        key = (matches[0].cluster, svc.host or "", svc.route_path)
        if key in routes:
            issues.append(
                ConfigIssue(
                    file,
                    f"{spath}.path",
                    f"services[{routes[key]}] already routes {svc.host or '(any host)'}{svc.route_path} "
                    f"on cluster '{key[0]}'",
                    "give each service on a cluster its own host or path",
                )
            )
        else:
            routes[key] = si
    return issues


def check_multinode(fleet: Fleet, file: str) -> list[ConfigIssue]:
    """Replicas of several nodes (`nodes` > 1): each pod of a group takes a whole node.

    A group is one engine whose pods vLLM places one per node, each driving the GPUs of its node;
    a pod claiming fewer GPUs than a node has leaves the rest idle, or lets two pods of a group
    share a node and starve the collective. So every GPU request of a multi-node deployment
    claims all of the node's devices of that kind. The pool holding the groups' nodes and a group
    staying in one zone are checked with the pool's facts (`infra.schedulable`).
    """
    issues: list[ConfigIssue] = []
    for di, dep in enumerate(fleet.deployments):
        if dep.nodes == 1:
            continue
        try:
            cluster = fleet.cluster_named(dep.cluster)
            pool = next(p for p in cluster.node_pools if p.name == dep.pool)
            cls = fleet.class_named(pool.class_name)
        except (KeyError, StopIteration):
            continue  # an unknown reference, reported by check_references
        devices = {d.name: d for d in cls.devices if d.claim is ClaimMode.DRA and d.driver in GPU_VENDORS}
        for ri, req in enumerate(dep.devices):
            device = devices.get(req.name)
            if device is None or req.count == device.count:
                continue
            issues.append(
                ConfigIssue(
                    file,
                    f"deployments[{di}].devices[{ri}].count",
                    f"a replica spanning {dep.nodes} nodes runs one pod per node, and each pod claims "
                    f"{req.count} of the {device.count} '{req.name}' devices of a node of pool '{pool.name}'",
                    f"claim the whole node: count: {device.count} (and set the parallelism to match), "
                    "or nodes: 1 to keep the replica on one node",
                )
            )
    return issues


# DRA (resource.k8s.io/v1) is GA and on by default from Kubernetes 1.34; every driver we install
# (NVIDIA DRA 0.4, dra-driver-cpu, AMD's DRA mode) claims devices through it.
MIN_KUBERNETES = (1, 34)
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)")


def check_version(file: str, path: str, version: str) -> list[ConfigIssue]:
    m = _VERSION_RE.match(version)
    if m is None:
        return [
            ConfigIssue(
                file,
                path,
                f"'{version}' is not a Kubernetes version",
                "write it as the cloud does, e.g. 1.34 or 1.34.1-k3s1",
            )
        ]
    if (int(m[1]), int(m[2])) < MIN_KUBERNETES:
        floor = ".".join(map(str, MIN_KUBERNETES))
        return [
            ConfigIssue(
                file, path, f"Kubernetes {version} predates DRA's v1 API (GA in {floor})", f"use {floor} or newer"
            )
        ]
    return []


# A claim on the consumable capacity `dra.cpu/cpu` (dra-driver-cpu's grouped mode) is allocated
# only with the DRAConsumableCapacity feature gate: alpha (off) in 1.34 and 1.35, beta and on by
# default from 1.36 (KEP-5075; kubernetes-sigs/dra-driver-cpu docs/user/installation.md on main).
# Managed clouds do not turn on alpha gates, so on an older cluster such a claim never schedules.
MIN_KUBERNETES_CONSUMABLE_CAPACITY = (1, 36)
CAPACITY_FLOOR = ".".join(map(str, MIN_KUBERNETES_CONSUMABLE_CAPACITY))


def capacity_claiming_pools(fleet: Fleet, cluster: InferenceCluster) -> list[str]:
    """The cluster's pools whose class claims consumable capacity (`dra.cpu/cpu`), as errors name them."""
    classes = {c.name: c for c in fleet.classes}
    return [
        f"'{pool.name}' (class '{pool.class_name}')"
        for pool in cluster.node_pools
        if pool.class_name in classes
        and any(
            d.claim is ClaimMode.DRA and d.driver == CPU_CLAIM_DRIVER and CPU_CLAIM_CAPACITY in d.capacity
            for d in classes[pool.class_name].devices
        )
    ]


def check_owner_version(
    fleet: Fleet, cluster: InferenceCluster, file: str, path: str, version: str | None
) -> list[ConfigIssue]:
    """An owner-run cluster's Kubernetes version: optional, but required once a pool claims capacity,
    where the version decides whether the claim can ever schedule (`check_capacity_claims`)."""
    if version is not None:
        return check_version(file, path, version) or check_capacity_claims(fleet, cluster, file, path, version)
    return _capacity_issue(
        fleet,
        cluster,
        file,
        path,
        f"which schedules only from Kubernetes {CAPACITY_FLOOR} (the DRAConsumableCapacity gate), but the cluster "
        "does not say which version it runs",
        f'set kubernetesVersion to the version the cluster runs (`kubectl version`), e.g. kubernetesVersion: "{CAPACITY_FLOOR}"',
    )


def check_capacity_claims(
    fleet: Fleet, cluster: InferenceCluster, file: str, path: str, version: str
) -> list[ConfigIssue]:
    m = _VERSION_RE.match(version)
    if m is None or (int(m[1]), int(m[2])) >= MIN_KUBERNETES_CONSUMABLE_CAPACITY:
        return []
    return _capacity_issue(
        fleet,
        cluster,
        file,
        path,
        f"which needs the DRAConsumableCapacity feature gate: off before Kubernetes {CAPACITY_FLOOR}, so on {version} "
        "the claim never schedules",
        f"use Kubernetes {CAPACITY_FLOOR} or newer on this cluster, where the gate is on by default",
    )


def _capacity_issue(
    fleet: Fleet, cluster: InferenceCluster, file: str, path: str, why: str, fix: str
) -> list[ConfigIssue]:
    """One issue naming the cluster's pools that claim capacity, or none when no pool does."""
    claiming = capacity_claiming_pools(fleet, cluster)
    if not claiming:
        return []
    return [ConfigIssue(file, path, f"pool {', '.join(claiming)} claims capacity {CPU_CLAIM_CAPACITY}, {why}", fix)]


def check_cloud_names(file: str, base: str, cluster: InferenceCluster) -> list[ConfigIssue]:
    """The names and values a cluster's cloud API refuses (its `CloudProfile`), checked where the fleet declares them."""
    issues: list[ConfigIssue] = []
    cloud = profile(cluster.source)
    if cloud.naming.rule is not None:
        rule = cloud.naming.rule
        if not rule.pattern.match(cluster.name):
            issues.append(
                ConfigIssue(
                    file, f"{base}.name", f"{cloud.name} cluster names {rule.says}, not {shown(cluster.name)}", rule.fix
                )
            )
        for pi, pool in enumerate(cluster.node_pools):
            if not rule.pattern.match(pool.name):
                issues.append(
                    ConfigIssue(
                        file,
                        f"{base}.nodePools[{pi}].name",
                        f"{cloud.name} node pool names {rule.says}, not {shown(pool.name)}",
                        rule.fix,
                    )
                )
    if cloud.naming.max_length is not None and len(cluster.name) > cloud.naming.max_length:
        issues.append(
            ConfigIssue(
                file,
                f"{base}.name",
                f"the name is the {cloud.name} {cloud.naming.used_as}, which holds at most {cloud.naming.max_length} "
                f"characters, not {len(cluster.name)}",
                f"shorten the name to {cloud.naming.max_length} characters",
            )
        )
    block = getattr(cluster, cluster.cloud.key)  # None when missing: check_references says so
    version = block.kubernetes_version if isinstance(block, ProvisionedClusterBlock) else None
    if cloud.version is not None and version is not None and not cloud.version.pattern.match(version):
        issues.append(
            ConfigIssue(
                file,
                f"{base}.{cluster.cloud.key}.kubernetesVersion",
                f"{cloud.name} takes {cloud.version.form}, not {shown(version)}",
                f"write it as {cloud.name} lists it, e.g. {cloud.version.example}",
            )
        )
    tags = cloud.label_tags
    if tags is not None:
        for key, value in cluster.labels.items():
            where = f"{base}.labels.{cut(key)}"
            if key.lower().startswith(tags.reserved_prefix):
                issues.append(
                    ConfigIssue(
                        file,
                        where,
                        f"the tag key {shown(key)} uses the prefix '{tags.reserved_prefix}' that {tags.owner} reserves",
                        "rename the label",
                    )
                )
            elif not 1 <= len(key) <= tags.key_max:
                issues.append(
                    ConfigIssue(
                        file,
                        where,
                        f"an {tags.owner} tag key holds 1-{tags.key_max} characters, not {len(key)}",
                        "shorten the key",
                    )
                )
            if len(value) > tags.value_max:
                issues.append(
                    ConfigIssue(
                        file,
                        where,
                        f"an {tags.owner} tag value holds at most {tags.value_max} characters, not {len(value)}",
                        "shorten the value",
                    )
                )
    return issues


# --------------------------------------------------------------------------------------------
