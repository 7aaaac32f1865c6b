"""Property: mutate any committed stack file and the result is a clean plan or an error with a place.

Every mutation of every `stacks/Pulumi.*.yaml` ends in one of three ways, never a traceback:
rejected by the loader with a path or a line, rejected by a device or cloud rule, or accepted.
Whatever the program's guard rejects registers no resource under the mock runtime, fed the
config as the Pulumi CLI would hand it over (structured values JSON-encoded, secrets opaque), and
the program rejects exactly what the plan rejects.

`python -m tests.test_stack_mutations N` runs N seeded mutations and prints the class counts.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pulumi
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.checks.guard import fleet_issues
from infra.checks.machines import fleet_violations
from infra.config.issues import ConfigError, located
from infra.config.names import NAMESPACE
from infra.config.stackfile import load_stack_file
from infra.facts import derive_fleet
from program.main import run
from tooling.mockrun import OPAQUE_SECRET, run_under_mocks

STACKS = sorted((Path(__file__).resolve().parents[1] / "stacks").glob("Pulumi.*.yaml"))

# Values a mutation puts in place of any node: wrong types, bounds, markup, cloud-refused names.
ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    7,
    17,
    65,
    2**31,
    2**64,
    10**12,
    1.5,
    float("inf"),
    "",
    " ",
    "x" * 300,
    "[/x]",
    "nvidia-[/l4]",
    "1abc",
    "latest",
    "vllm/vllm-openai:latest",
    "image:latest@sha256:",
    "A=B",
    "aws:team",
    "GKE",
    "EKS",
    "AKS",
    "Civo",
    "Vultr",
    "Existing",
    "Synthetic",
    "dra.cpu",
    "dra.net",
    "gpu.amd.com",
    "gpu.nvidia.com",
    "nic.nvidia.com",
    "-2Gi",
    "500m",
    "1.33",
    "1.35.2",
    "NoExecute",
    "amd-mi325x",
    "nvidia-h100",
    # Misspelt accelerator types: on an Existing cluster nothing but the vocabulary refuses them.
    "amd-mi300",
    "nvidia-h10O",
    [],
    {},
    [1],
    {"a": 1},
    {"secure": "v1:abc"},
    "\u00e9\u4e2d",
]
ODD_BYTES = [b"\x00", b"\xff", b"\t", b"[", b"{", b"'", b'"', b"&a ", b"*a", b": ", b"\n  - ", b"\n", b"<<: *a", b"\\"]


def node_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into the document, outermost first."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += node_paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += node_paths(v, (*prefix, i))
    return out


def parent_of(doc: Any, path: tuple[Any, ...]) -> Any:
    node = doc
    for part in path[:-1]:
        node = node[part]
    return node


def mutate_document(doc: dict[str, Any], rnd: random.Random) -> dict[str, Any]:
    """One structural mutation: replace, delete, duplicate or rename somewhere under `config`."""
    doc = copy.deepcopy(doc)
    paths = [p for p in node_paths(doc) if len(p) >= 2]
    path = rnd.choice(paths)
    parent, last = parent_of(doc, path), path[-1]
    kind = rnd.choice(["replace", "replace", "replace", "delete", "duplicate", "rename"])
    if kind == "replace":
        parent[last] = copy.deepcopy(rnd.choice(ODD_VALUES))
    elif kind == "delete":
        del parent[last]
    elif kind == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif kind == "rename" and isinstance(parent, dict):
        value = parent.pop(last)
        parent[rnd.choice([f"{last}x", str(last).lower(), str(last)[:-1], f"modelplane:{last}"])] = value
    else:
        parent[last] = copy.deepcopy(rnd.choice(ODD_VALUES))
    return doc


def mutated_file(stack: Path, rnd: random.Random) -> bytes:
    """The stack file after one mutation of its YAML values, or of its bytes."""
    text = stack.read_bytes()
    if rnd.random() < 0.2:
        at = rnd.randrange(len(text) + 1)
        if rnd.random() < 0.2:
            return text[:at]
        return text[:at] + rnd.choice(ODD_BYTES) + text[at:]
    doc = mutate_document(yaml.safe_load(text), rnd)
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()


def cli_config(data: bytes) -> tuple[dict[str, str], list[str]] | None:
    """The config the Pulumi CLI would hand the program for this file, or None when it cannot read it."""
    try:
        doc = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("config") or {}, dict):
        return None
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in (doc.get("config") or {}).items():
        full = str(key) if ":" in str(key) else f"{NAMESPACE}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[full] = OPAQUE_SECRET
            secret_keys.append(full)
        else:
            try:
                config[full] = value if isinstance(value, str) else json.dumps(value)
            except (TypeError, ValueError):
                return None  # not a value the CLI can pass on either
    return config, secret_keys


def classify(data: bytes, tmp: Path, stack: str) -> str:
    """`path` (loader error with a place), `device-rule`, `guard` (a cloud rule), or `accepted`.

    Raises AssertionError on a traceback, a placeless error, or a rejected run that registered.
    """
    path = tmp / f"Pulumi.{stack}.yaml"
    path.write_bytes(data)
    try:
        loaded = load_stack_file(path)
    except ConfigError as err:
        assert err.issues and all(i.path for i in err.issues), err
        verdict = "path"
    else:
        # The guard stops on every mandatory device and machine rule (`infra.checks.machines.fleet_violations`).
        violations = [v for v in located(fleet_violations(loaded.fleet), loaded.file) if v.mandatory]
        if violations:
            verdict = "device-rule"
        else:
            facts = derive_fleet(loaded.fleet)
            verdict = "guard" if located(fleet_issues(loaded.fleet, facts), loaded.file) else "accepted"
    given = cli_config(data)
    if given is not None:
        result = run_under_mocks(run, stack, *given)
        if result.error is not None:
            assert isinstance(result.error, pulumi.RunError), repr(result.error)
            assert result.resources == [], f"{len(result.resources)} resources registered before: {result.error}"
            message = str(result.error)
            assert f"Pulumi.{stack}.yaml: " in message and ".yaml: : " not in message, message
        elif verdict == "accepted":
            assert result.resources
        # The program stops whatever the plan rejects: the same rules run in both.
        assert (result.error is None) == (verdict == "accepted"), (verdict, result.error)
    return verdict


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(stack=st.sampled_from(STACKS), rnd=st.randoms(use_true_random=False))
def test_mutated_stacks_never_trace_back_and_rejections_register_nothing(
    stack: Path, rnd: random.Random, tmp_path: Path
) -> None:
    name = stack.name[len("Pulumi.") : -len(".yaml")]
    assert classify(mutated_file(stack, rnd), tmp_path, name) in {"path", "device-rule", "guard", "accepted"}


def test_a_misspelt_accelerator_type_of_an_existing_stack_is_a_device_rule_and_registers_nothing(
    tmp_path: Path,
) -> None:
    stack = next(s for s in STACKS if s.name == "Pulumi.byo-amd.yaml")
    doc = yaml.safe_load(stack.read_bytes())
    mi325x = next(c for c in doc["config"]["modelplane:classes"] if c["name"] == "mi325x-byo")
    mi325x["accelerator"] = "amd-mi325"
    assert classify(yaml.safe_dump(doc, sort_keys=False).encode(), tmp_path, "byo-amd") == "device-rule"
    mi325x["accelerator"] = "amd-mi325x"
    assert classify(yaml.safe_dump(doc, sort_keys=False).encode(), tmp_path, "byo-amd") == "accepted"


def main(count: int) -> None:
    import tempfile

    rnd = random.Random(13)
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(count):
            stack = rnd.choice(STACKS)
            name = stack.name[len("Pulumi.") : -len(".yaml")]
            try:
                counts[classify(mutated_file(stack, rnd), Path(folder), name)] += 1
            except AssertionError as err:
                counts["failed"] += 1
                print(f"{stack.name}: {err}"[:500], file=sys.stderr)
            except Exception as err:  # a traceback a user would see
                counts["traceback"] += 1
                print(f"{stack.name}: {err!r}"[:500], file=sys.stderr)
    print(json.dumps({"mutations": count, **counts}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
