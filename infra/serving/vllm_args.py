"""vLLM's command-line arguments as the engine reads them: the port and the parallelism (any flag's
value: `infra.formats.flag_value`).

The checks (`infra.checks`) judge a deployment's args with these, and the model deployment builds its
container from the same reading, so both agree on what the args say. Nothing here judges a value.
"""

from __future__ import annotations

from collections.abc import Sequence

from infra.formats import flag_value

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


def parallel_args(args: Sequence[str]) -> dict[str, tuple[int, str | None]]:
    """Each parallelism the args set: kind -> (index of the flag, its value or None when missing); the last wins, as in vLLM."""
    found: dict[str, tuple[int, str | None]] = {}
    for i, arg in enumerate(args):
        flag, sep, value = arg.partition("=")
        if flag in PARALLEL_FLAGS:
            given = value if sep else (args[i + 1] if i + 1 < len(args) else None)
            found[PARALLEL_FLAGS[flag]] = (i, given or None)
    return found


def served_model(args: Sequence[str]) -> str | None:
    """The model name vLLM serves and labels its series with: `--served-model-name` (its first name),
    else `--model`, else `vllm serve`'s positional model (ModelConfig.served_model_name); None when the
    args name none (the image's own command does)."""
    named = flag_value(args, "--served-model-name") or flag_value(args, "--model")
    if named is not None and named[1]:
        return named[1]
    positional = [a for a in args if not a.startswith("-")]
    return positional[0] if positional and not args[0].startswith("-") else None
