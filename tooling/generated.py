"""Every doc generated from code, path -> renderer; `modelplane docs` writes them, a test fails when one is stale."""

from __future__ import annotations

from tooling.catalog_doc import catalog_markdown
from tooling.machines_doc import render_machines_doc
from tooling.policies_doc import render_policies_doc
from tooling.reference import SCHEMA_PATH, configuration_markdown, schema_json
from tooling.telemetry_doc import render_telemetry_doc

GENERATED_DOCS = {
    "docs/supported-devices.md": catalog_markdown,
    "docs/telemetry.md": render_telemetry_doc,
    "docs/machines.md": render_machines_doc,
    "docs/configuration.md": configuration_markdown,
    "docs/policies.md": render_policies_doc,
    SCHEMA_PATH: schema_json,
}


def generated_docs() -> dict[str, str]:
    """Every generated doc, path -> text."""
    return {path: render() for path, render in GENERATED_DOCS.items()}
