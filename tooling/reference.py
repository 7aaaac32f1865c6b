"""The configuration reference and the stack-file JSON Schema, both generated from `infra.config`.

Types, defaults, bounds and allowed values come from the pydantic models (their JSON Schema);
this module adds, per key, what it means, which rule or component reads it, and an example.
`modelplane schema` prints the schema; `modelplane docs` writes it and `docs/configuration.md`,
and a test fails when either is stale or when a key of the model has no entry here.

The schema checks shape (types, bounds, patterns, which block a `source` or `provider` needs).
Rules across keys (references between classes, clusters and deployments, unique names,
`minNodeCount <= nodeCount <= maxNodeCount`, the device rules) are checked by the loader and
the plan, never by an editor.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pydantic import BaseModel

from clouds import CLOUDS, PROVISIONED
from infra.checks.clusters import MIN_KUBERNETES
from infra.config.model import MIRROR_URL_RE, Fleet
from infra.config.names import FLEET_KEYS, NAMESPACE
from infra.formats import EXACT_CHART_VERSION, QUANTITY_RE
from tooling.keys import KEYS, SECTIONS, Key

SCHEMA_PATH = "docs/stack.schema.json"


# --------------------------------------------------------------------------------------------
# The schema


# A whole fleet in the short form (docs/configuration.md); a test plans it and keeps it short.
THREE_MODELS = """\
config:
  modelplane:protect: true
  modelplane:classes:
    - name: l4
      provisioning: {provider: GKE, gke: {machineType: g2-standard-8}}
    - name: cpu
      provisioning: {provider: AKS, aks: {vmSize: Standard_D8s_v5}}
    - name: mi300x
      accelerator: amd-mi300x
  modelplane:clusters:
    - name: gke
      source: GKE
      gke: {project: my-project, region: us-central1, kubernetesVersion: "1.35"}
      nodePools: [{name: l4, className: l4, zones: [us-central1-a]}]
    - name: aks
      source: AKS
      aks: {location: westeurope, kubernetesVersion: "1.36"}
      nodePools: [{name: cpu, className: cpu}]
    - name: lab
      source: Existing
      existing: {kubernetesVersion: "1.36"}
      nodePools: [{name: mi300x, className: mi300x}]
  modelplane:deployments:
    - {name: llama, cluster: gke, pool: l4, devices: [{name: gpu}], memory: 16Gi, cache: {size: 20Gi},
       image: vllm/vllm-openai:v0.23.0, args: [--model, meta-llama/Llama-3.2-3B-Instruct]}
    - {name: qwen, cluster: aks, pool: cpu, devices: [{name: cpu}], memory: 16Gi, cache: {size: 20Gi},
       image: vllm/vllm-openai-cpu:v0.23.0-x86_64, args: [--model, Qwen/Qwen2.5-0.5B-Instruct]}
    - {name: mistral, cluster: lab, pool: mi300x, devices: [{name: gpu}], memory: 32Gi, cache: {volume: NodeLocal},
       image: vllm/vllm-openai-rocm:v0.23.0, args: [--model, mistralai/Mistral-7B-Instruct-v0.3]}
  # The kubeconfig of `lab`: pulumi config set --secret modelplane:kubeconfig < kubeconfig
  modelplane:kubeconfig:
    secure: v1:placeholder
"""


def _kubernetes_version_pattern() -> str:
    """major.minor at or above MIN_KUBERNETES, then anything the cloud appends (`.1-k3s1`, `+3`)."""
    major, minor = MIN_KUBERNETES
    assert major == 1 and 30 <= minor <= 39, "rewrite the pattern for the new floor"
    newer_minor = f"3[{minor - 30}-9]|[4-9][0-9]|[1-9][0-9]{{2,}}"
    return rf"^v?(1\.({newer_minor})|([2-9]|[1-9][0-9]+)\.[0-9]+)([.+-].*)?$"


SECURE = {
    "type": "object",
    "properties": {"secure": {"type": "string", "description": "ciphertext written by `pulumi config set --secret`"}},
    "required": ["secure"],
    "additionalProperties": False,
}


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _one_block(discriminator: str, choices: list[str], *, required: bool = True) -> list[dict[str, Any]]:
    """`<discriminator>: X` forbids every block but `x`, and requires `x` unless `required` is False."""
    rules = []
    for choice in choices:
        block = choice.lower()
        # `{"not": {}}` rather than `false`: jsonschema reports a false subschema at the parent.
        others: dict[str, Any] = {c.lower(): {"not": {}} for c in choices if c != choice}
        rules.append(
            {
                "if": {"properties": {discriminator: {"const": choice}}, "required": [discriminator]},
                "then": {"required": [block], "properties": others} if required else {"properties": others},
            }
        )
    return rules


def _block_required(discriminator: str, choices: list[str]) -> list[dict[str, Any]]:
    """`<discriminator>: X` requires the block `x`."""
    return [
        {
            "if": {"properties": {discriminator: {"const": c}}, "required": [discriminator]},
            "then": {"required": [c.lower()]},
        }
        for c in choices
    ]


def fleet_defs() -> dict[str, Any]:
    schema = _strip_titles(Fleet.model_json_schema(by_alias=True))
    defs: dict[str, Any] = schema["$defs"]
    defs["Fleet"] = {k: v for k, v in schema.items() if k != "$defs"}
    for name, node in defs.items():
        for key, prop in node.get("properties", {}).items():
            doc = KEYS.get((name, key))
            if doc is not None:
                prop["description"] = f"{doc.meaning} Used by: {doc.used_by}."
                prop["markdownDescription"] = f"{doc.meaning}\n\nUsed by: {doc.used_by}.\n\n`{doc.example}`"
    # Cross-key shape the model checks in code, written the way a schema can say it.
    defs["InferenceCluster"]["allOf"] = _one_block("source", [c.source for c in CLOUDS])
    # `accelerator: nvidia-l4` is one GPU of that type (`infra.config.base.Accelerator`).
    for node in defs.values():
        for prop in node.get("properties", {}).values():
            if {"$ref": "#/$defs/Accelerator"} in prop.get("anyOf", []):
                prop["anyOf"].insert(0, {"type": "string", "minLength": 1})
    # `chartMirror: <url>` and `components.<key>: <url>` are the URL alone (`infra.config.model.ChartMirror`).
    mirror_url = {"type": "string", "pattern": schema_pattern(MIRROR_URL_RE)}
    for name in ("ChartMirror", "MirroredChart"):
        defs[name]["properties"]["url"] = {**defs[name]["properties"]["url"], "anyOf": [mirror_url, {"type": "null"}]}
    defs["MirroredChart"]["properties"]["version"]["anyOf"] = [
        {"type": "string", "pattern": schema_pattern(EXACT_CHART_VERSION)},
        {"type": "null"},
    ]
    defs["ChartMirror"]["properties"]["components"]["additionalProperties"] = {
        "anyOf": [mirror_url, {"$ref": "#/$defs/MirroredChart"}]
    }
    mirror = defs["Fleet"]["properties"]["chartMirror"]
    mirror["anyOf"] = [mirror_url, *mirror["anyOf"]]
    providers = [c.source for c in PROVISIONED]
    defs["Provisioning"]["allOf"] = _one_block("provider", providers, required=False)
    # A class that says what it needs (`accelerator`, `minGpuMemoryGib`) may leave the machine to the
    # plan (`infra.checks.supply`); any other names its machine in the provider's block.
    defs["InferenceClass"]["if"] = {"anyOf": [{"required": ["accelerator"]}, {"required": ["minGpuMemoryGib"]}]}
    defs["InferenceClass"]["else"] = {"properties": {"provisioning": {"allOf": _block_required("provider", providers)}}}
    defs["Device"]["if"] = {"properties": {"claim": {"const": "Synthetic"}}, "required": ["claim"]}
    defs["Device"]["else"] = {"required": ["deviceClassName"]}
    defs["AttributeValue"]["minProperties"] = 1
    defs["AttributeValue"]["maxProperties"] = 1
    defs["NodePool"]["dependentRequired"] = {"minNodeCount": ["maxNodeCount"], "maxNodeCount": ["minNodeCount"]}
    defs["NodePool"]["properties"]["name"]["not"] = {"const": "system"}
    quantity = {"anyOf": [{"type": "string", "pattern": schema_pattern(QUANTITY_RE)}, {"type": "number"}]}
    defs["CapacityValue"]["properties"]["value"] = {**defs["CapacityValue"]["properties"]["value"], **quantity}
    defs["CapacityValue"]["properties"]["value"].pop("type", None)
    shm = defs["ModelDeploymentSpec"]["properties"]["shmSize"]
    shm.pop("type", None)
    shm.update(quantity)
    for c in PROVISIONED:
        defs[c.cluster_block.__name__]["properties"]["kubernetesVersion"]["pattern"] = _kubernetes_version_pattern()
    # `pulumi config set modelplane:protect true` stores the string "true".
    protect = defs["Fleet"]["properties"]["protect"]
    protect.pop("type", None)
    protect["anyOf"] = [{"type": "boolean"}, {"enum": ["true", "false"]}]
    env = defs["ModelDeploymentSpec"]["properties"]["env"]
    env["additionalProperties"] = {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/Secure"}]}
    defs["Secure"] = copy.deepcopy(SECURE)
    return defs


def stack_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of a `Pulumi.<stack>.yaml` file holding a modelplane fleet."""
    defs = fleet_defs()
    fleet = defs["Fleet"]
    config_props = {f"{NAMESPACE}:{key}": fleet["properties"][key] for key in FLEET_KEYS}
    # Every other modelplane key is a secret another key names (an Existing cluster's kubeconfig).
    others = "|".join(FLEET_KEYS)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "modelplane stack file (Pulumi.<stack>.yaml)",
        "description": "Generated by `modelplane schema` from infra/config/model.py; every key: docs/configuration.md.",
        "type": "object",
        "required": ["config"],
        "properties": {
            "config": {
                "type": "object",
                "required": [f"{NAMESPACE}:clusters"],
                "properties": config_props,
                "patternProperties": {
                    rf"^{NAMESPACE}:(?!({others})$)": {
                        **SECURE,
                        "description": "A secret another key names (an Existing cluster's kubeconfigKey).",
                    }
                },
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
            "environment": {},
        },
        "$defs": {k: v for k, v in sorted(defs.items()) if k != "Fleet"},
    }


def schema_json() -> str:
    return json.dumps(stack_schema(), indent=2) + "\n"


# --------------------------------------------------------------------------------------------
# The reference


def _models() -> dict[str, type[BaseModel]]:
    from infra.config import base, model

    blocks = {b.__name__: b for c in CLOUDS for b in (c.cluster_block, c.machine_block) if b is not None}
    return {name: blocks.get(name) or getattr(model, name, None) or getattr(base, name) for name, _ in SECTIONS}


def undocumented() -> list[str]:
    """`Model.key` for every field of the model that has no entry in KEYS."""
    missing = []
    for name, model in _models().items():
        for field_name, field in model.model_fields.items():
            key = field.alias or field_name
            if (name, key) not in KEYS:
                missing.append(f"{name}.{key}")
    return missing


def _type_of(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in prop:
        target = prop["$ref"].rsplit("/", 1)[-1]
        node = defs[target]
        if "enum" in node:
            return "string"
        return "mapping"
    if "anyOf" in prop:
        # `"true"`/`"false"` beside a boolean is how Pulumi stores a top-level value: still a boolean.
        branches = [p for p in prop["anyOf"] if p.get("type") != "null" and set(p.get("enum", [])) != {"true", "false"}]
        kinds = [_type_of(p, defs) for p in branches]
        return " or ".join(dict.fromkeys(kinds))
    if "enum" in prop:
        return "string"
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type_of(prop.get('items', {}), defs)}"
    if kind == "object":
        inner = prop.get("additionalProperties")
        return f"map of {_type_of(inner, defs)}" if isinstance(inner, dict) else "mapping"
    return {"integer": "whole number", "boolean": "true or false"}.get(kind, str(kind))


def _allowed(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in prop:
        node = defs[prop["$ref"].rsplit("/", 1)[-1]]
        return _allowed(node, defs) if "enum" in node else ""
    if "anyOf" in prop:
        return "; ".join(a for a in (_allowed(p, defs) for p in prop["anyOf"]) if a)
    parts = []
    if "enum" in prop:
        parts.append(", ".join(f"`{v}`" for v in prop["enum"]))
    if "minimum" in prop or "maximum" in prop:
        parts.append(f"{prop.get('minimum', '')}..{prop.get('maximum', '')}")
    if "minItems" in prop or "maxItems" in prop:
        parts.append(f"{prop.get('minItems', 0)}..{prop.get('maxItems', '')} items")
    if "maxLength" in prop:
        parts.append(f"at most {prop['maxLength']} characters")
    if "pattern" in prop:
        parts.append(_PATTERNS.get(prop["pattern"], f"pattern `{prop['pattern']}`"))
    if "not" in prop and "const" in prop["not"]:
        parts.append(f"not `{prop['not']['const']}`")
    return "; ".join(parts)


def schema_pattern(pattern: re.Pattern[str]) -> str:
    """A Python pattern as JSON Schema (ECMA-262) and Python both read it: no group names, `$` for `\\Z`."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern.pattern).replace("\\Z", "$")


def _pattern_names() -> dict[str, str]:
    floor = ".".join(map(str, MIN_KUBERNETES))
    return {
        schema_pattern(QUANTITY_RE): "a Kubernetes quantity (`6`, `500m`, `262128Mi`)",
        _kubernetes_version_pattern(): f"{floor} or newer, as the cloud spells it",
        r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": "a DNS label: lowercase letters, digits, `-`",
        r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": "a DNS subdomain (`gpu.nvidia.com`)",
    }


_PATTERNS = _pattern_names()


def _default(name: str, key: str, prop: dict[str, Any], required: set[str]) -> str:
    if key in required:
        return "required"
    if name == "Fleet" and key == "clusters":
        return "required (at least one)"
    if name == "Device" and key == "deviceClassName":
        return "required when `claim` is `DRA`"
    if "default" in prop:
        value = prop["default"]
        return f"`{json.dumps(value)}`" if value is not None else "unset"
    return "empty"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def configuration_markdown() -> str:
    defs = fleet_defs()
    lines = [
        "# Configuration reference",
        "",
        "Generated by `modelplane docs` from `infra/config/`; do not edit by hand.",
        "",
        "A stack file is ordinary Pulumi stack config (`stacks/Pulumi.<stack>.yaml`, or any path given",
        "to `modelplane plan --stack-file`). The fleet lives under the `modelplane:` namespace; keys are",
        "camelCase and unknown keys are rejected. Whole numbers are written without quotes (`nodeCount: 3`);",
        'versions and quantities that look like numbers are quoted (`kubernetesVersion: "1.35"`).',
        "",
        f"Editors check and complete stack files against the JSON Schema `{SCHEMA_PATH}`",
        "(`modelplane schema` prints it). With the YAML language server (VS Code's YAML extension,",
        "neovim, Helix), the first line of a stack file names it, relative to the file; the example",
        "stacks in `stacks/` start with:",
        "",
        "```yaml",
        "# yaml-language-server: $schema=../docs/stack.schema.json",
        "```",
        "",
        "In your own repository, write the schema next to your stacks with",
        "`uv run modelplane schema > stack.schema.json` and point the comment at it.",
        "",
        "The schema checks shape. The loader (`infra/config/`) also checks what a schema cannot:",
        "references (a pool's `className`, a deployment's `cluster`, `pool` and `devices`), unique names,",
        "`minNodeCount <= nodeCount <= maxNodeCount`, an Existing cluster's kubeconfig secret, pinned",
        "images; the device rules (`infra/checks/devices.py`, `docs/policies.md`) run next. Every error names",
        "the file, the path inside it (`clusters[0].nodePools[1].className`) and the fix.",
        "",
        "## A minimal stack",
        "",
        "```yaml",
        "config:",
        "  modelplane:classes:",
        "    - name: l4-gke",
        "      provisioning: {provider: GKE, gke: {machineType: g2-standard-8}}",
        "  modelplane:clusters:",
        "    - name: gke-dev",
        "      source: GKE",
        '      gke: {project: my-project, region: us-central1, kubernetesVersion: "1.35"}',
        "      nodePools:",
        "        - {name: gpu, className: l4-gke, nodeCount: 1, zones: [us-central1-a]}",
        "```",
        "",
        "The class names only its machine: the machine catalog (`docs/machines.md`) says a g2-standard-8",
        "carries one NVIDIA L4, so the class claims one `gpu` device of `gpu.nvidia.com` (DeviceClass",
        "`gpu.nvidia.com`) and its block takes `accelerator: {type: nvidia-l4, count: 1}`; a machine without",
        "GPUs gets a `cpu` device of `dra.cpu` claiming its vCPUs less the 2 dra-driver-cpu reserves",
        "(`infra/checks/supply.py`). This is the long form of the same class, which stays valid; what you write",
        "must agree with the machine, or the plan names both values:",
        "",
        "```yaml",
        "    - name: l4-gke",
        "      devices:",
        "        - {name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, count: 1}",
        "      provisioning:",
        "        provider: GKE",
        "        gke: {machineType: g2-standard-8, accelerator: {type: nvidia-l4, count: 1}}",
        "```",
        "",
        "`modelplane plan` shows, per pool, what was supplied and from which catalog row.",
        "",
        "## A fleet of three models",
        "",
        "An NVIDIA L4 pool on GKE, a CPU pool on AKS and the MI300X nodes of a cluster you run, each",
        "serving a model. The GKE and AKS classes name their machines; the Existing class declares its",
        "nodes' GPUs (`accelerator`), which gives it one `gpu.amd.com` device per GPU.",
        "",
        "```yaml",
        *THREE_MODELS.splitlines(),
        "```",
        "",
        "`stacks/` holds one example per cloud and the recipes (`docs/recipes/`).",
        "",
    ]
    for name, where in SECTIONS:
        node = defs[name]
        required = set(node.get("required", []))
        heading = "Top-level keys" if name == "Fleet" else f"`{where}`"
        lines += [f"## {heading}", ""]
        if name == "Fleet":
            lines += ["Keys under `config:`, each written `modelplane:<key>`.", ""]
        lines += ["| key | type | default | allowed | meaning | used by | example |", "|---|---|---|---|---|---|---|"]
        for key, prop in node.get("properties", {}).items():
            doc = KEYS.get((name, key), Key("(undocumented)", "", ""))
            shown = f"modelplane:{key}" if name == "Fleet" else key
            lines.append(
                "| "
                + " | ".join(
                    [
                        f"`{shown}`",
                        _cell(_type_of(prop, defs)),
                        _cell(_default(name, key, prop, required)),
                        _cell(_allowed(prop, defs)),
                        _cell(doc.meaning),
                        _cell(doc.used_by),
                        f"`{_cell(doc.example)}`" if doc.example else "",
                    ]
                )
                + " |"
            )
        lines.append("")
    return "\n".join(lines)
