"""The README and docs point only at files that exist, and their commands run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
# A path a reader would open: a repository file or folder named in backticks or a relative link.
PATH_RE = re.compile(
    r"`((?:docs|infra|components|policies|stacks|tests|bench)/[\w./-]*|[\w.-]+\.(?:md|yaml|toml|json))`"
)
LINK_RE = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def commands(text: str) -> list[str]:
    """Lines of the ```sh blocks, without prompts or comments."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_names_only_files_in_the_repository(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = []
    # A link is outside code spans (a pattern such as `[a-z]([-a-z]*)` is not one).
    for target in LINK_RE.findall(re.sub(r"`[^`\n]*`", "", text)):
        if "://" not in target and not (doc.parent / target).exists():
            missing.append(target)
    for target in PATH_RE.findall(text):
        name = target.rstrip("/")
        generic = "<" in name or "*" in name or name.startswith(("Pulumi.", "stack.schema"))
        if not generic and not (ROOT / name).exists() and not (doc.parent / name).exists():
            missing.append(target)
    # Notes users cannot see: the product spec and the maintainers' reference folder (a URL may
    # still have a `/reference/` path of its own).
    assert "SPEC.md" not in text and not re.search(r"(?<![\w/.-])reference/", text)
    assert missing == [], f"{doc.name} names files that are not in the repository"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_run_as_written(doc: Path) -> None:
    for line in commands(doc.read_text(encoding="utf-8")):
        if re.search(r"(^|\s)modelplane\s", line):
            assert "uv run modelplane" in line, line
        if line.startswith("pulumi up") or line.startswith("pulumi preview"):
            assert "--policy-pack" in line, line


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_kubeconfig_is_written_in_plain_text_to_the_working_directory(doc: Path) -> None:
    for line in commands(doc.read_text(encoding="utf-8")):
        if "kubeconfig" in line and ">" in line:
            target = line.rsplit(">", 1)[1].strip()
            assert target.startswith('"$KUBECONFIG"'), line
