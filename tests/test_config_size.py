"""A stack whose config the Pulumi language host cannot hand to the program is refused by the plan.

The host passes the whole config as one environment string, `PULUMI_CONFIG=<JSON>`, and Linux
refuses a string over 131072 bytes, so such a stack would fail in `pulumi preview` before its
program (and so the program's guard) ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bench.fleets import fleet
from infra.config.issues import ConfigIssue
from infra.config.stackfile import load_stack_file
from tooling.plan import plan_stack
from tooling.stackconfig import MAX_ENV_STRING, config_env_bytes, config_size_issue

SMALL = {
    "classes": [{"name": "cpu", "devices": [{"name": "c", "driver": "dra.cpu", "deviceClassName": "dra.cpu"}]}],
    "clusters": [
        {
            "name": "lab",
            "source": "Existing",
            "existing": {"kubeconfigKey": "kc"},
            "nodePools": [{"name": "cpu", "className": "cpu"}],
        }
    ],
}


def stack_file(tmp_path: Path, raw: dict[str, Any], plain: dict[str, Any] | None = None) -> Path:
    config: dict[str, Any] = {f"modelplane:{k}": v for k, v in raw.items()}
    config["modelplane:kc"] = {"secure": "v1:" + "A" * 400}
    config.update(plain or {})
    path = tmp_path / "Pulumi.big.yaml"
    path.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    return path


def test_the_size_is_the_environment_string_go_writes_with_secret_values_counted_empty(tmp_path: Path) -> None:
    stack = load_stack_file(stack_file(tmp_path, SMALL, {"x:html": "<&>", "x:n": 3}))
    classes = '[{\\"devices\\":[{\\"deviceClassName\\":\\"dra.cpu\\",\\"driver\\":\\"dra.cpu\\",\\"name\\":\\"c\\"}],\\"name\\":\\"cpu\\"}]'
    clusters = (
        '[{\\"existing\\":{\\"kubeconfigKey\\":\\"kc\\"},\\"name\\":\\"lab\\",'
        '\\"nodePools\\":[{\\"className\\":\\"cpu\\",\\"name\\":\\"cpu\\"}],\\"source\\":\\"Existing\\"}]'
    )
    expected = (
        f'PULUMI_CONFIG={{"modelplane:classes":"{classes}","modelplane:clusters":"{clusters}",'
        '"modelplane:kc":"","x:html":"\\u003c\\u0026\\u003e","x:n":"3"}'
    )
    assert config_env_bytes(stack) == len(expected.encode()) + 1


def test_a_config_at_the_limit_is_accepted_and_one_byte_over_refused(tmp_path: Path) -> None:
    base = config_env_bytes(load_stack_file(stack_file(tmp_path, SMALL, {"x:pad": ""})))
    at_limit = load_stack_file(stack_file(tmp_path, SMALL, {"x:pad": "p" * (MAX_ENV_STRING - base)}))
    assert config_env_bytes(at_limit) == MAX_ENV_STRING
    assert config_size_issue(at_limit) is None
    over = load_stack_file(stack_file(tmp_path, SMALL, {"x:pad": "p" * (MAX_ENV_STRING - base + 1)}), "Pulumi.big.yaml")
    assert config_size_issue(over) == ConfigIssue(
        "",
        "the stack's config is 131073 bytes as the Pulumi language host hands it to the program (one "
        "environment string, PULUMI_CONFIG), over the 131072 bytes Linux allows one environment string, so "
        "`pulumi preview` and `pulumi up` would fail before the program starts",
        "split the fleet into several stacks (for example one per region or team), each under 131072 bytes",
        file="Pulumi.big.yaml",
    )


def test_the_plan_refuses_a_fleet_too_large_to_start_and_plans_nothing(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.fleet250.yaml"
    config = {f"modelplane:{k}": v for k, v in fleet(250).items()} | {"modelplane:kubeconfig": {"secure": "v1:x"}}
    path.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    doc = plan_stack(path, display="Pulumi.fleet250.yaml")
    assert doc["ok"] is False
    [error] = doc["errors"]
    assert error["path"] == ""
    assert error["message"].startswith("the stack's config is ")
    assert "over the 131072 bytes Linux allows one environment string" in error["message"]
    assert error["message"].endswith("(in Pulumi.fleet250.yaml)")
    assert doc["resources"] == [] and doc["clusters"] == []
