"""Each cloud's credentials in stack config reach its explicit provider, as secrets.

An explicit provider never reads the stack's `<package>:` config (pulumi/pulumi-aws#1307), so the
program passes each documented key on (`components.base.stack_credentials`). Unset keys leave the
provider to its environment variables.
"""

from __future__ import annotations

import pytest

from program.main import run
from tests.conftest import cpu_cluster_fleet
from tooling.mockrun import run_under_mocks
from tooling.stackconfig import runtime_config

SECRET_SIG = "4dabf18193072939515e22adb298388d"

# (cluster source, provider package, config key, the provider's input as registered)
CASES = [
    ("GKE", "gcp", "credentials", "credentials"),
    ("GKE", "gcp", "accessToken", "accessToken"),
    ("EKS", "aws", "accessKey", "accessKey"),
    ("EKS", "aws", "secretKey", "secretKey"),
    ("EKS", "aws", "profile", "profile"),
    ("AKS", "azure-native", "clientSecret", "clientSecret"),
    ("AKS", "azure-native", "subscriptionId", "subscriptionId"),
    ("Civo", "civo", "token", "token"),
    ("Vultr", "vultr", "apiKey", "apiKey"),
    ("Nebius", "nebius", "token", "token"),
    ("DigitalOcean", "digitalocean", "token", "token"),
    ("OCI", "oci", "privateKey", "privateKey"),
]


def provider_inputs(source: str, package: str, config: dict[str, object]) -> dict[str, object]:
    settings, secret_keys = runtime_config(cpu_cluster_fleet(source, "c1", "c2"), {}, config)
    result = run_under_mocks(run, "creds", settings, secret_keys)
    assert result.error is None, result.error
    (provider,) = [r for r in result.resources if r.type == f"pulumi:providers:{package}"]
    return dict(provider.inputs)


@pytest.mark.parametrize(("source", "package", "key", "argument"), CASES)
def test_a_credential_in_stack_config_reaches_the_provider_as_a_secret(
    source: str, package: str, key: str, argument: str
) -> None:
    inputs = provider_inputs(source, package, {f"{package}:{key}": {"secure": "v1:ciphertext"}})
    value = inputs[argument]
    assert isinstance(value, dict) and value.get(SECRET_SIG), f"{package}:{key} reached the provider in plain text"


def test_a_plain_credential_is_passed_on_as_a_secret_too() -> None:
    inputs = provider_inputs("Civo", "civo", {"civo:token": "plain-token"})
    assert inputs["token"] == {SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "value": "plain-token"}


@pytest.mark.parametrize(("source", "package"), sorted({(c[0], c[1]) for c in CASES}))
def test_no_credential_in_config_leaves_the_provider_to_its_environment(source: str, package: str) -> None:
    inputs = provider_inputs(source, package, {})
    assert not {c[3] for c in CASES if c[1] == package} & set(inputs)
