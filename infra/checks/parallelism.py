"""Rules on what one replica runs: its parallelism against the GPUs it claims, its weights against their memory, multi-node groups."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from clouds import machine
from infra.checks.schedulable import suggested_memory
from infra.config.issues import ConfigIssue
from infra.config.model import (
    ClaimMode,
    Fleet,
    InferenceClass,
    InferenceCluster,
    ModelDeploymentSpec,
)
from infra.config.names import shown
from infra.formats import flag_value, parse_quantity
from infra.serving.vllm_args import parallel_args
from infra.vocabulary import GPU_VENDORS


def claimed_gpus(cls: InferenceClass, dep: ModelDeploymentSpec) -> int:
    """The GPU devices one replica of `dep` claims of its pool's class."""
    gpu = {d.name for d in cls.devices if d.claim is ClaimMode.DRA and d.driver in GPU_VENDORS}
    return sum(r.count for r in dep.devices if r.name in gpu)


def parallelism_issues(dpath: str, args: Sequence[str], gpus: int, nodes: int = 1) -> list[ConfigIssue]:
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


def gpu_memory_gib(cluster: InferenceCluster, cls: InferenceClass) -> float | None:
    """The memory of one GPU of the pool's class: its machine's catalog row, or on Existing the
    `memory` capacity the class's GPU device writes; None when neither says."""
    prov = cls.provisioning
    # The value rules run beside the references' (`infra.checks.guard.check`): a class without its
    # provider's block, which check_references reports, says no memory here.
    if cluster.provisioned and prov is not None and prov.provider == cluster.source:
        if prov.written_machine is None:
            return None
        row = machine(cluster.source, prov.machine_name)
        return float(row.gpu.memory_gib) if row is not None and row.gpu is not None else None
    for device in cls.devices:
        if device.claim is ClaimMode.DRA and device.driver in GPU_VENDORS and "memory" in device.capacity:
            amount = parse_quantity(device.capacity["memory"].value)
            return float(amount) / 2**30 if amount else None
    return None


def model_params(args: Sequence[str]) -> tuple[int, str, float] | None:
    """The `--model` arg's index, the model id and its parameters in billions, read from the id
    (`_PARAMS`); None without a model or a count the id states."""
    model = flag_value(args, "--model")
    if model is None or _EXPERTS.search(model[1]):
        return None
    counts = [float(n) for n in _PARAMS.findall(model[1].rsplit("/", 1)[-1])]
    return (model[0], model[1], max(counts)) if counts else None


def checkpoint_floor_gib(args: Sequence[str]) -> tuple[str, float, str, float] | None:
    """The least the model's downloaded weights take: `(model id, parameters in billions, width, GiB)`.

    The download is the checkpoint as published, whatever `--quantization` or `--dtype` the engine
    then runs it in, so only the id is read: 8 bits a weight where it names an 8-bit format, else
    4 bits, the fewest a checkpoint vLLM serves commonly stores (AWQ, GPTQ, MXFP4). A 16-bit
    checkpoint takes twice that and more, so a size under the floor is short whatever the format.
    """
    model = model_params(args)
    if model is None or re.search("gguf", model[1], re.IGNORECASE):
        return None  # GGUF files go below 4 bits a weight (Q2_K, Q3_K)
    _, model_id, params = model
    eight = _EIGHT_BIT.search(model_id) and not _FOUR_BIT.search(model_id)
    width, bytes_each = ("8-bit", 1.0) if eight else ("4-bit", 0.5)
    return model_id, params, width, params * 1e9 * bytes_each / 2**30


def cache_size_issues(dpath: str, args: Sequence[str], size: str) -> list[ConfigIssue]:
    """A model cache volume smaller than the model's weights: the download fills it and the engine
    exits before it serves, on every start (`checkpoint_floor_gib` is the least the weights take).

    The fix names the 16-bit size (8 or 4 bits where the id names such a format) with a fifth to
    spare, rounded up to 10 GiB.
    """
    floor = checkpoint_floor_gib(args)
    amount = parse_quantity(size)
    if floor is None or amount is None or float(amount) / 2**30 >= floor[3]:
        return []
    model_id, params, width, least = floor
    bytes_each = 0.5 if _FOUR_BIT.search(model_id) else 1.0 if _EIGHT_BIT.search(model_id) else 2.0
    suggest = math.ceil(params * 1e9 * bytes_each / 2**30 * 1.2 / 10) * 10
    return [
        ConfigIssue(
            f"{dpath}.cache.size",
            f"cache size {size} is less than the {least:.1f} GiB the weights of model {shown(model_id)} take even "
            f"at {width.replace('-bit', ' bits')} a weight ({params:g}B parameters): the download would fill the "
            "volume and the engine stop before it serves",
            f"set size above the model's checkpoint with room to spare, e.g. size: {suggest}Gi",
        )
    ]


def weights_issues(dpath: str, args: Sequence[str], gpus: int, per_gpu_gib: float | None) -> list[ConfigIssue]:
    """A model whose weights alone exceed the GPU memory one replica may use: it can never load.

    The estimate errs low, so only the clearly impossible is refused: parameters read from the
    model id (`--model`) x bytes per weight (`_FOUR_BIT`, `_EIGHT_BIT`, else 2) against the claimed
    GPUs x their memory (the catalog's figure) x `--gpu-memory-utilization`; the KV cache and
    activations, which need more still, are not counted. A model id without a parameter count, or a
    pool whose GPU memory is unknown, is not checked.
    """
    model = model_params(args)
    if model is None or per_gpu_gib is None or gpus == 0:
        return []
    at, model_id, params = model
    named = " ".join(
        [
            model_id,
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
            f"{dpath}.args[{at}]",
            f"model {shown(model_id)} has about {params:g}B parameters, {weights:.1f} GiB of {width} weights, more "
            f"than the {usable:.1f} GiB vLLM may use of the {gpus} x {per_gpu_gib:g} GiB GPUs one replica claims "
            f"(gpu-memory-utilization {utilization:g}), before any KV cache",
            "claim more GPUs per replica (and set --tensor-parallel-size to match), use a quantized build of the "
            "model (FP8, AWQ, GPTQ), or a pool with larger GPUs",
        )
    ]


def memory_fix(fleet: Fleet, cluster: InferenceCluster, class_name: str, shm_size: str) -> str:
    """The fix for a GPU engine without memory, naming a value the pool's node can give a pod
    (`infra.checks.schedulable.suggested_memory`), so the next plan accepts it."""
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


def check_multinode(fleet: Fleet) -> list[ConfigIssue]:
    """Replicas of several nodes (`nodes` > 1): each pod of a group takes a whole node.

    A group is one engine whose pods vLLM places one per node, each driving the GPUs of its node;
    a pod claiming fewer GPUs than a node has leaves the rest idle, or lets two pods of a group
    share a node and starve the collective. So every GPU request of a multi-node deployment
    claims all of the node's devices of that kind. The pool holding the groups' nodes and a group
    staying in one zone are checked with the pool's facts (`infra.checks.schedulable`).
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
                    f"deployments[{di}].devices[{ri}].count",
                    f"a replica spanning {dep.nodes} nodes runs one pod per node, and each pod claims "
                    f"{req.count} of the {device.count} '{req.name}' devices of a node of pool '{pool.name}'",
                    f"claim the whole node: count: {device.count} (and set the parallelism to match), "
                    "or nodes: 1 to keep the replica on one node",
                )
            )
    return issues
