"""Rules on values the model alone cannot judge: credentials and images; `check_rules` runs every topic's."""

from __future__ import annotations

from collections.abc import Sequence

from infra.checks.adoption import check_adoption
from infra.checks.capacity import check_capacity
from infra.checks.parallelism import check_multinode
from infra.checks.reclaim import check_reclaim
from infra.checks.services import check_autoscaling, check_serving
from infra.config.issues import ConfigIssue
from infra.config.model import (
    Fleet,
)
from infra.config.names import NAMESPACE, shown
from infra.formats import image_problem, parse_image

# Environment variable names that hold a credential, by a word in the name, and value prefixes
# that only credentials have: Hugging Face user access tokens (`hf_`, huggingface.co/docs/hub/
# security-tokens), GitHub tokens (`ghp_`, `github_pat_`, docs.github.com "About authentication"),
# OpenAI-style API keys (`sk-`), AWS access key ids (`AKIA`, AWS IAM "Understanding unique ID
# prefixes").
CREDENTIAL_NAME_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
CREDENTIAL_VALUE_PREFIXES = ("hf_", "ghp_", "github_pat_", "sk-", "AKIA")


def check_rules(fleet: Fleet) -> list[ConfigIssue]:
    """Every rule of this module that looks at the whole fleet; each reports what it finds, independently."""
    return (
        check_images(fleet)
        + check_serving(fleet)
        + check_plain_credentials(fleet)
        + check_autoscaling(fleet)
        + check_multinode(fleet)
        + check_capacity(fleet)
        + check_adoption(fleet)
        + check_reclaim(fleet)
    )


def check_plain_credentials(fleet: Fleet) -> list[ConfigIssue]:
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
                    f"deployments[{di}].env.{name}",
                    f"env {shown(name)} is written in plain text and {why} (the value is not shown)",
                    f"store it as a secret: pulumi config set --secret --path "
                    f"'{NAMESPACE}:deployments[{di}].env.{name}' <value>",
                )
            )
        issues += credential_arg_issues(di, dep.args)
    return issues


# vLLM flags that take a credential, and the environment variable vLLM reads it from instead
# (docs.vllm.ai "Engine Arguments", `--hf-token`, and "OpenAI-Compatible Server", `--api-key` /
# `VLLM_API_KEY`; `huggingface_hub` reads `HF_TOKEN`, huggingface.co/docs/huggingface_hub
# package_reference/environment_variables). `--token` is the form other servers take.
CREDENTIAL_FLAGS = {"--hf-token": "HF_TOKEN", "--token": "HF_TOKEN", "--api-key": "VLLM_API_KEY"}


def credential_arg_issues(di: int, args: Sequence[str]) -> list[ConfigIssue]:
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
                f"deployments[{di}].args[{ai}]",
                f"args[{ai}] is plain text in the pod spec and the plan, and {why} (the value is not shown)",
                f"remove {remove} from args and pass it through env as a secret: pulumi config set --secret --path "
                f"'{NAMESPACE}:deployments[{di}].env.{env}' <value> (written as env: {{{env}: {{secure: ...}}}})",
            )
        )
    return issues


def check_images(fleet: Fleet) -> list[ConfigIssue]:
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
                    f"deployments[{di}].image",
                    f"image {shown(dep.image)} {pin}{problem}",
                    "pin an exact version tag or a digest, e.g. vllm/vllm-openai:v0.23.0",
                )
            )
    return issues
