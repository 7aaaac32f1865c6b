"""A deployment's `secure:` env values become a Kubernetes Secret read by `secretKeyRef`, never plain."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime import rpc

from infra.config.issues import ConfigError
from program.main import run
from tests.conftest import CLUSTER_BLOCKS, cpu_class, fleet_of
from tooling.mockrun import run_under_mocks
from tooling.plan import plan_stack
from tooling.stackconfig import runtime_config

CIPHERTEXT = "v1:AAABAJyMhKwTHgEXAMPLE"
TOKEN = "hf_plaintext_token_value"


def fleet(token: Any, name: str = "HF_TOKEN") -> dict[str, Any]:
    return {
        "classes": [cpu_class("cpu", "Civo", {"size": "g4p.kube.medium"})],
        "clusters": [
            {
                "name": "civo",
                "source": "Civo",
                "civo": CLUSTER_BLOCKS["Civo"],
                "nodePools": [{"name": "cpu", "className": "cpu"}],
            }
        ],
        "deployments": [
            {
                "name": "qwen",
                "cluster": "civo",
                "pool": "cpu",
                "image": "vllm/vllm-openai-cpu:v0.23.0-x86_64",
                "env": {name: token, "VLLM_CPU_KVCACHE_SPACE": "4"},
                "devices": [{"name": "cpu"}],
            }
        ],
    }


def test_plan_puts_a_secure_env_value_in_a_secret_and_never_shows_it(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    config = {f"modelplane:{k}": v for k, v in fleet({"secure": CIPHERTEXT}).items()}
    path.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    doc = plan_stack(path)
    assert doc["ok"], (doc["errors"], doc["violations"])
    assert CIPHERTEXT not in json.dumps(doc)
    resources = {r["name"]: r for r in doc["resources"]}
    secret = resources["civo-qwen-env"]
    assert secret["type"] == "kubernetes:core/v1:Secret"
    assert secret["inputs"]["stringData"] == "[secret]"
    [engine] = resources["civo-qwen-deployment"]["inputs"]["spec"]["template"]["spec"]["containers"]
    by_name = {e["name"]: e for e in engine["env"]}
    assert by_name["HF_TOKEN"] == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "qwen-env", "key": "HF_TOKEN"}},
    }


def test_under_the_engine_a_decrypted_env_value_stays_out_of_the_pod_spec() -> None:
    # The engine hands `modelplane:deployments` over decrypted and marks the key secret.
    config, secret_keys = runtime_config(fleet(TOKEN))
    result = run_under_mocks(run, "dev", config, [*secret_keys, "modelplane:deployments"])
    assert result.error is None, result.error
    [deployment] = [r for r in result.resources if r.type == "kubernetes:apps/v1:Deployment"]
    assert TOKEN not in json.dumps(deployment.inputs, default=str)
    [secret] = [r for r in result.resources if r.type == "kubernetes:core/v1:Secret"]
    # Every value of the key goes through the Secret: which one was `secure:` is lost in decryption.
    assert rpc.is_rpc_secret(secret.inputs["stringData"])
    assert secret.inputs["stringData"]["value"] == {"HF_TOKEN": TOKEN, "VLLM_CPU_KVCACHE_SPACE": "4"}


def test_plain_env_values_stay_inline_when_nothing_is_secure() -> None:
    config, secret_keys = runtime_config(fleet("not-a-secret", name="HF_HUB_OFFLINE"))
    result = run_under_mocks(run, "dev", config, secret_keys)
    assert result.error is None, result.error
    assert not [r for r in result.resources if r.type == "kubernetes:core/v1:Secret"]
    [deployment] = [r for r in result.resources if r.type == "kubernetes:apps/v1:Deployment"]
    [engine] = deployment.inputs["spec"]["template"]["spec"]["containers"]
    assert {"name": "HF_HUB_OFFLINE", "value": "not-a-secret"} in engine["env"]


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("HF_TOKEN", "written-in-plain-1", "its name says it holds a credential"),
        ("OPENAI_API_KEY", "written-in-plain-2", "its name says it holds a credential"),
        ("DB_PASSWORD", "written-in-plain-3", "its name says it holds a credential"),
        ("MODEL_SOURCE", TOKEN, "its value has a credential's prefix"),
    ],
)
def test_a_plain_credential_is_refused_with_the_fix_and_never_echoed(
    tmp_path: Path, name: str, value: str, why: str
) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    raw = fleet(value, name=name)
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}))
    doc = plan_stack(path, display="Pulumi.dev.yaml")
    assert not doc["ok"]
    assert doc["errors"] == [
        {
            "path": f"deployments[0].env.{name}",
            "message": f"env '{name}' is written in plain text and {why} (the value is not shown). Fix: store it "
            f"as a secret: pulumi config set --secret --path 'modelplane:deployments[0].env.{name}' <value> "
            "(in Pulumi.dev.yaml)",
        }
    ]
    assert value not in json.dumps(doc)


def test_every_plain_credential_is_refused_past_values_that_are_secret_empty_or_no_credential() -> None:
    raw = fleet({"secure": CIPHERTEXT})
    raw["deployments"][0]["env"] = {
        "HF_TOKEN": {"secure": CIPHERTEXT},
        "EMPTY_TOKEN": "",
        "HF_HUB_OFFLINE": "1",
        "OPENAI_API_KEY": "written-in-plain",
        "MODEL_SOURCE": TOKEN,
    }
    with pytest.raises(ConfigError) as err:
        fleet_of(raw)
    assert [(i.path, i.problem) for i in err.value.issues] == [
        (
            "deployments[0].env.OPENAI_API_KEY",
            "env 'OPENAI_API_KEY' is written in plain text and its name says it holds a credential (the value is not "
            "shown)",
        ),
        (
            "deployments[0].env.MODEL_SOURCE",
            "env 'MODEL_SOURCE' is written in plain text and its value has a credential's prefix (the value is not "
            "shown)",
        ),
    ]


@pytest.mark.parametrize(
    ("args", "at", "value_at", "why", "env"),
    [
        (["--model", "m", "--hf-token", "written-in-plain-1"], 2, 3, "'--hf-token' passes a credential", "HF_TOKEN"),
        (["--api-key=written-in-plain-2"], 0, None, "'--api-key' passes a credential", "VLLM_API_KEY"),
        (
            ["--token", "written-in-plain-3", "--max-model-len", "8192"],
            0,
            1,
            "'--token' passes a credential",
            "HF_TOKEN",
        ),
        (["--model", "m", "--served-model-name", TOKEN], 3, None, "the value has a credential's prefix", "HF_TOKEN"),
        (["--trust-remote-code", f"--some-flag={TOKEN}"], 1, None, "the value has a credential's prefix", "HF_TOKEN"),
    ],
)
def test_a_credential_in_args_is_refused_with_the_secure_env_form_and_never_echoed(
    tmp_path: Path, args: list[str], at: int, value_at: int | None, why: str, env: str
) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    raw = fleet("4", name="VLLM_CPU_KVCACHE_SPACE")
    raw["deployments"][0]["args"] = args
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}))
    doc = plan_stack(path, display="Pulumi.dev.yaml")
    assert doc["errors"] == [
        {
            "path": f"deployments[0].args[{at}]",
            "message": f"args[{at}] is plain text in the pod spec and the plan, and {why}"
            + (" on the command line" if "passes" in why else "")
            + " (the value is not shown). Fix: remove "
            + ("it" if value_at is None else f"it and its value, args[{value_at}],")
            + " from args and pass it through env as a secret: pulumi "
            f"config set --secret --path 'modelplane:deployments[0].env.{env}' <value> (written as env: "
            f"{{{env}: {{secure: ...}}}}) (in Pulumi.dev.yaml)",
        }
    ]
    secret = next(a for a in args if "plain" in a or TOKEN in a)
    assert secret.split("=")[-1] not in json.dumps(doc)

    # The fix, applied as written, plans clean with no credential left in the plan.
    raw["deployments"][0]["args"] = [a for i, a in enumerate(args) if i not in (at, value_at)]
    raw["deployments"][0]["env"][env] = {"secure": CIPHERTEXT}
    path.write_text(yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in raw.items()}}))
    fixed = plan_stack(path, display="Pulumi.dev.yaml")
    assert (fixed["ok"], fixed["errors"]) == (True, []), fixed["violations"]
    assert secret.split("=")[-1] not in json.dumps(fixed)


def test_args_without_credentials_plan_clean() -> None:
    raw = fleet("4", name="VLLM_CPU_KVCACHE_SPACE")
    raw["deployments"][0]["args"] = ["--model", "Qwen/Qwen2.5-0.5B-Instruct", "--max-model-len", "8192"]
    fleet_of(raw)
