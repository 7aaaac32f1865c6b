"""The README and docs point only at files that exist, and their commands run as written."""

from __future__ import annotations

import functools
import importlib
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
# A path a reader would open: a repository file or folder named in backticks or a relative link.
PATH_RE = re.compile(
    r"`((?:docs|infra|clouds|components|policies|program|tooling|stacks|tests|bench)/[\w./-]*|[\w.-]+\.(?:md|yaml|toml|json))`"
)
LINK_RE = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
PACKAGES = ("infra", "clouds", "components", "policies", "program", "tooling", "tests", "bench")
PRODUCT = ("infra", "clouds", "components", "policies", "program", "tooling")
# A name a reader would look up: `module.symbol` (`infra.profiles.pool_nodes`, `tooling.changes`).
SYMBOL_RE = re.compile(rf"`((?:{'|'.join(PACKAGES)})(?:\.\w+)+)(?:\(\))?`")
# A file and a name in it: "(`tests/engine/provider.py`, `forced_by`)" or "`infra/cost.py` (`over_budget`)".
PATH_NAME_RE = re.compile(rf"`((?:{'|'.join(PACKAGES)})/[\w/]+\.py)`(?:,\s*|\s+\()`(\w+)(?:\(\))?`")
# A path with a placeholder: `clouds/<cloud>/machines.py`, `tests/test_<key>.py`.
PLACEHOLDER_PATH_RE = re.compile(rf"`((?:{'|'.join(PACKAGES)}|docs|stacks)/[\w./-]*<\w+>[\w./<>-]*)`")
CLOUD_FOLDERS = sorted(p.parent.name for p in (ROOT / "clouds").glob("*/__init__.py"))
PRODUCT_CODE = sorted(f for package in PRODUCT for f in (ROOT / package).rglob("*.py"))


def commands(text: str) -> list[str]:
    """Lines of the ```sh blocks, without prompts or comments; a line ending in `\\` goes on the next."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        pending = ""
        for raw in block.splitlines():
            line = raw.split("  #", 1)[0].strip()
            if line.startswith("#") and not pending:
                continue
            if line.endswith("\\"):
                pending += line[:-1].strip() + " "
                continue
            line, pending = (pending + line).strip(), ""
            if line:
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


@functools.cache
def resolves(name: str) -> bool:
    """Whether `a.b.c` names a module, or a module's attribute (a class's field counts as one)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        try:
            found: Any = importlib.import_module(module)
        except ModuleNotFoundError as missing:
            if missing.name and (module + ".").startswith(missing.name + "."):
                continue  # no such module: the rest of the name may be attributes of a shorter one
            raise
        for attr in parts[i:]:
            fields = {**getattr(found, "__annotations__", {}), **getattr(found, "model_fields", {})}
            if not hasattr(found, attr) and attr not in fields:
                return False
            found = getattr(found, attr, None)
        return True
    return False


def unresolved_names(text: str) -> list[str]:
    """Backticked `module.symbol` names, and names given beside a file, that the code does not define."""
    missing = [name for name in SYMBOL_RE.findall(text) if not resolves(name)]
    for path, name in PATH_NAME_RE.findall(text):
        file = ROOT / path
        if file.is_file() and not re.search(rf"\b{name}\b", file.read_text(encoding="utf-8")):
            missing.append(f"{path}: {name}")
    return missing


def placeholder_matches(name: str) -> bool:
    """`<cloud>` is one of the cloud folders; any other `<word>` is a part of a file name."""
    if "<cloud>" in name:
        return any(placeholder_matches(name.replace("<cloud>", cloud)) for cloud in CLOUD_FOLDERS)
    return any(ROOT.glob(re.sub(r"<\w+>", "*", name.rstrip("/"))))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_names_only_symbols_that_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = unresolved_names(text)
    missing += [name for name in PLACEHOLDER_PATH_RE.findall(text) if not placeholder_matches(name)]
    assert missing == [], f"{doc.name} names code that is not in the repository"


@pytest.mark.parametrize("package", PRODUCT)
def test_comments_name_only_symbols_that_exist(package: str) -> None:
    missing = [
        f"{file.relative_to(ROOT)}: {name}"
        for file in PRODUCT_CODE
        if file.relative_to(ROOT).parts[0] == package
        for name in unresolved_names(file.read_text(encoding="utf-8"))
    ]
    assert missing == [], "comments and docstrings name code that is not in the repository"


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


# --------------------------------------------------------------------------------------------
# Commands against the repository: every stack, cluster, deployment, output and file a command
# names exists, as a reader following the doc from the top would meet it.

STACKS = ROOT / "stacks"
# A deployment without `namespace` runs in `default` (modelplane:deployments[].namespace).
DEFAULT_NAMESPACE = "default"
# The Gateway the program creates on each cluster with a service (docs/serving.md).
GATEWAY_NAMESPACE, GATEWAY_NAME = "envoy-gateway-system", "modelplane"
# `modelplane:` keys that are fleet config, not a kubeconfig's secret key.
FLEET_KEYS = {"classes", "clusters", "deployments", "services", "budget", "protect", "chartMirror"}
# Options whose value is the next word, per program (a flag not listed takes no value).
VALUE_FLAGS = {
    "pulumi": {
        "--stack",
        "-s",
        "--secrets-provider",
        "--copy-config-from",
        "--file",
        "--policy-pack",
        "--policy-pack-config",
        "--config-file",
        "--target",
        "--parallel",
        "-p",
        "--message",
        "-m",
    },
    "modelplane": {"--stack", "--stack-file", "--out", "--policy-pack-config", "--mode"},
    "kubectl": {
        "-n",
        "--namespace",
        "--context",
        "-o",
        "--output",
        "-l",
        "--selector",
        "--for",
        "--timeout",
        "-f",
        "--filename",
        "-c",
        "--container",
    },
}
REPO_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".lock", ".md", ".py")
REPO_FOLDERS = {
    "stacks",
    "docs",
    "infra",
    "clouds",
    "components",
    "policies",
    "program",
    "tooling",
    "tests",
    "bench",
    "engine",
}
# A word of shell syntax between two commands.
SEPARATORS = {"|", "||", "&&", ";", "&", "(", ")"}
PIPE = "|"


def program_exports() -> set[str]:
    """The stack outputs the program exports: every `pulumi.export("name", ...)` in its packages."""
    sources = [ROOT / "__main__.py"]
    for package in sorted(ROOT.iterdir()):
        if package.is_dir() and package.name != "tests" and (package / "__init__.py").exists():
            sources += sorted(package.rglob("*.py"))
    names: set[str] = set()
    for source in sources:
        names.update(re.findall(r"pulumi\.export\(\s*[\"']([\w-]+)[\"']", source.read_text(encoding="utf-8")))
    return names


@functools.cache
def stack_config(name: str) -> dict[str, Any]:
    """The `modelplane:` config of stacks/Pulumi.<name>.yaml, keys without the namespace ({} if none)."""
    path = STACKS / f"Pulumi.{name}.yaml"
    if not path.exists():
        return {}
    config = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("config") or {}
    return {key.partition(":")[2]: value for key, value in config.items() if key.startswith("modelplane:")}


def entries(name: str, key: str) -> list[dict[str, Any]]:
    value = stack_config(name).get(key) or []
    return [v for v in value if isinstance(v, dict)]


def kubeconfig_keys(name: str) -> set[str]:
    """The secret keys that hold the kubeconfigs of the stack's Existing clusters."""
    return {
        str((c.get("existing") or {}).get("kubeconfigKey", "kubeconfig"))
        for c in entries(name, "clusters")
        if c.get("source") == "Existing"
    }


@dataclass
class Command:
    """One simple command: its words and its redirections, and whether it pipes into the next."""

    words: list[str]
    redirects: list[tuple[str, str]] = field(default_factory=list)
    piped: bool = False

    @property
    def program(self) -> str:
        if self.words[:2] == ["uv", "run"] and "modelplane" in self.words:
            return "modelplane"
        return self.words[0] if self.words else ""

    def option(self, *names: str) -> str | None:
        """The value of the first of `names` given (`--name value` or `--name=value`)."""
        for i, word in enumerate(self.words):
            for name in names:
                if word == name and i + 1 < len(self.words):
                    return self.words[i + 1]
                if word.startswith(name + "="):
                    return word.split("=", 1)[1]
        return None

    def positional(self, start: int) -> list[str]:
        """Words from `start` on that are neither options nor option values."""
        takes_value = VALUE_FLAGS.get(self.program, set())
        out, skip = [], False
        for word in self.words[start:]:
            if skip:
                skip = False
            elif word.startswith("-"):
                skip = word in takes_value
            else:
                out.append(word)
        return out


def parse(line: str) -> list[Command]:
    """The simple commands of a shell line, in order; `<placeholders>` become one word."""
    line = re.sub(r"<[A-Za-z][^<>\n]*?>", "PLACEHOLDER", line)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    out = [Command([])]
    tokens = list(lexer)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in SEPARATORS:
            out[-1].piped = token == PIPE
            out.append(Command([]))
        elif token in {">", ">>", "<"} and i + 1 < len(tokens):
            out[-1].redirects.append((token, tokens[i + 1]))
            i += 1
        else:
            out[-1].words.append(token)
        i += 1
    return [c for c in out if c.words]


def repository_path(word: str) -> str | None:
    """The word as a repository path, when it reads as one (not a URL, variable or placeholder)."""
    if word.startswith("-") and "=" in word:
        word = word.split("=", 1)[1]
    if (
        not word
        or word.startswith(("-", "/", "~", "../", "path/to/"))
        or any(c in word for c in "$<>{}*:=\"' ")
        or "..." in word
        or "PLACEHOLDER" in word
    ):
        return None
    if word.endswith(REPO_SUFFIXES) or (word.split("/", 1)[0] in REPO_FOLDERS and "/" in word):
        return word.rstrip("/")
    return None


@dataclass
class Walk:
    """A doc's commands followed from the top, with what each one finds wrong."""

    exports: set[str]
    stack: str | None = None
    created_stacks: set[str] = field(default_factory=set)
    created_files: set[str] = field(default_factory=set)
    # The stack and cluster whose kubeconfig the last `pulumi stack output clusters | jq` fetched.
    fetched: tuple[str, str] | None = None
    problems: dict[str, list[str]] = field(default_factory=dict)

    def report(self, kind: str, line: str, message: str) -> None:
        self.problems.setdefault(kind, []).append(f"`{line}`: {message}")

    def run(self, text: str) -> Walk:
        for line in commands(text):
            pipeline = parse(line)
            for i, command in enumerate(pipeline):
                rest = pipeline[i + 1 :] if command.piped else []
                self.stacks(line, command)
                self.files(line, command)
                self.outputs(line, command, rest)
                self.config(line, command)
                self.kubectl(line, command)
        return self

    # stacks ---------------------------------------------------------------------------------

    def name_stack(self, line: str, name: str, *, creates: bool = False) -> None:
        name = name.rsplit("/", 1)[-1]  # org/project/stack
        if creates:
            self.created_stacks.add(name)
        elif not (STACKS / f"Pulumi.{name}.yaml").exists() and name not in self.created_stacks:
            self.report("stack", line, f"stack '{name}' has no stacks/Pulumi.{name}.yaml and is not created before")
        self.stack = name

    def stacks(self, line: str, c: Command) -> None:
        if c.program not in {"pulumi", "modelplane"}:
            return
        if c.words[:3] in (["pulumi", "stack", "init"], ["pulumi", "stack", "select"], ["pulumi", "stack", "rm"]):
            names = c.positional(3)
            creates = c.words[2] == "init" or (c.words[2] == "select" and ("--create" in c.words or "-c" in c.words))
            if names:
                self.name_stack(line, names[0], creates=creates)
        flags = ("--stack", "-s") if c.program == "pulumi" else ("--stack",)
        named = c.option(*flags)
        if named is not None:
            self.name_stack(line, named)
        stack_file = c.option("--stack-file")
        found = re.fullmatch(r"stacks/Pulumi\.([\w.-]+)\.yaml", stack_file or "")
        if found and ((ROOT / found.group(0)).exists() or found.group(0) in self.created_files):
            self.stack = found.group(1)

    # files ----------------------------------------------------------------------------------

    def create_file(self, path: str) -> None:
        self.created_files.add(path.rstrip("/"))
        found = re.fullmatch(r"stacks/Pulumi\.([\w.-]+)\.yaml", path)
        if found:
            self.created_stacks.add(found.group(1))

    def need_file(self, line: str, word: str) -> None:
        path = repository_path(word)
        if path is not None and path not in self.created_files and not (ROOT / path).exists():
            self.report("file", line, f"'{path}' is not in the repository and no command before creates it")

    def files(self, line: str, c: Command) -> None:
        created: set[int] = set()
        for op, target in c.redirects:
            if op == "<":
                self.need_file(line, target)
            else:
                self.create_file(target)
        if c.program in {"cp", "mv"} and len(c.words) > 2:
            self.create_file(c.words[-1])
            created.add(len(c.words) - 1)
        if c.program in {"touch", "mkdir", "tee"}:
            for word in c.words[1:]:
                if not word.startswith("-"):
                    self.create_file(word)
            return
        # What `pulumi stack export --file` and `modelplane plan --out` write.
        writes = (
            "--file" if c.words[:3] == ["pulumi", "stack", "export"] else "--out" if c.program == "modelplane" else ""
        )
        if writes in c.words and c.words.index(writes) + 1 < len(c.words):
            index = c.words.index(writes) + 1
            self.create_file(c.words[index])
            created.add(index)
        pack = c.option("--policy-pack")
        if pack is not None and "$" not in pack and not (ROOT / pack / "PulumiPolicy.yaml").exists():
            self.report("file", line, f"--policy-pack '{pack}' is not a policy pack folder of the repository")
        for i, word in enumerate(c.words[1:], start=1):
            if i not in created:
                self.need_file(line, word)

    # stack outputs --------------------------------------------------------------------------

    def outputs(self, line: str, c: Command, rest: list[Command]) -> None:
        if c.words[:3] != ["pulumi", "stack", "output"]:
            return
        names = c.positional(3)
        if names and names[0] not in self.exports:
            self.report(
                "output", line, f"the program exports no output '{names[0]}' (it exports {sorted(self.exports)})"
            )
        jq = next((r for r in rest if r.program == "jq"), None)
        if jq is None:
            return
        if "--json" not in c.words and "-j" not in c.words:
            self.report("jq", line, "`pulumi stack output` piped into jq needs --json")
        if names[:1] == ["clusters"]:
            for cluster in re.findall(r"\.\[?\"([^\"]+)\"\]?", " ".join(jq.words[1:])):
                self.fetch(line, cluster)

    def fetch(self, line: str, cluster: str) -> None:
        if self.stack is None:
            self.report("deployment", line, f"fetches cluster '{cluster}' before naming a stack")
            return
        if cluster not in {c.get("name") for c in entries(self.stack, "clusters")}:
            self.report("deployment", line, f"stack '{self.stack}' has no cluster '{cluster}'")
        self.fetched = (self.stack, cluster)

    # pulumi config set ----------------------------------------------------------------------

    def config(self, line: str, c: Command) -> None:
        if c.words[:3] != ["pulumi", "config", "set"] or self.stack is None:
            return
        keys = c.positional(3)
        if not keys or not keys[0].startswith("modelplane:"):
            return
        key = keys[0].partition(":")[2]
        indexed = re.match(r"(\w+)\[(\d+)\]", key) if "--path" in c.words else None
        if indexed:
            listed = entries(self.stack, indexed.group(1))
            if int(indexed.group(2)) >= len(listed):
                self.report(
                    "config",
                    line,
                    f"stack '{self.stack}' has {len(listed)} {indexed.group(1)}, no [{indexed.group(2)}]",
                )
        elif "--secret" in c.words and key not in FLEET_KEYS and key not in kubeconfig_keys(self.stack):
            self.report(
                "config", line, f"no Existing cluster of stack '{self.stack}' reads its kubeconfig from '{key}'"
            )

    # kubectl --------------------------------------------------------------------------------

    def kubectl(self, line: str, c: Command) -> None:
        if c.program != "kubectl":
            return
        namespace = c.option("-n", "--namespace") or DEFAULT_NAMESPACE
        refs: list[tuple[str, str]] = []
        for i, word in enumerate(c.words):
            kind, _, name = word.partition("/")
            if name and kind in {"deploy", "deployment", "deployments", "deployment.apps", "svc", "service", "gateway"}:
                refs.append((kind, name))
            elif kind in {"deploy", "deployment", "deployment.apps"} and not name and i + 1 < len(c.words):
                following = c.words[i + 1]
                if not following.startswith("-"):
                    refs.append((kind, following))
        for kind, name in refs:
            if kind == "gateway":
                self.gateway(line, c, namespace, name)
            else:
                self.deployment(line, c, namespace, name)

    def cluster_in_use(self, line: str, c: Command) -> str | None:
        assert self.stack is not None
        context = c.option("--context")
        if context is not None:
            for spec in entries(self.stack, "clusters"):
                if context in {spec.get("name"), (spec.get("existing") or {}).get("context")}:
                    return str(spec.get("name"))
            self.report("deployment", line, f"stack '{self.stack}' has no cluster or context '{context}'")
            return None
        if self.fetched is None:
            return None
        stack, cluster = self.fetched
        if stack != self.stack:
            self.report(
                "deployment",
                line,
                f"the kubeconfig is cluster '{cluster}' of stack '{stack}', but the doc now works with '{self.stack}'",
            )
        return cluster

    def deployment(self, line: str, c: Command, namespace: str, name: str) -> None:
        if self.stack is None:
            self.report("deployment", line, f"names deployment '{name}' before naming a stack")
            return
        cluster = self.cluster_in_use(line, c)
        declared = [
            f"{d.get('name')} (namespace {d.get('namespace', DEFAULT_NAMESPACE)}, cluster {d.get('cluster')})"
            for d in entries(self.stack, "deployments")
        ]
        found = [
            d
            for d in entries(self.stack, "deployments")
            if d.get("name") == name
            and d.get("namespace", DEFAULT_NAMESPACE) == namespace
            and (cluster is None or d.get("cluster") == cluster)
        ]
        if not found:
            where = f" on cluster '{cluster}'" if cluster else ""
            self.report(
                "deployment",
                line,
                f"stack '{self.stack}' has no deployment '{name}' in namespace '{namespace}'{where}"
                f" (it declares: {', '.join(declared) or 'none'})",
            )

    def gateway(self, line: str, c: Command, namespace: str, name: str) -> None:
        if (namespace, name) != (GATEWAY_NAMESPACE, GATEWAY_NAME):
            self.report("deployment", line, f"the program's Gateway is {GATEWAY_NAMESPACE}/{GATEWAY_NAME}")
        if self.stack is None:
            return  # the Gateway of any stack with a service
        cluster = self.cluster_in_use(line, c)
        on = {d.get("name"): d.get("cluster") for d in entries(self.stack, "deployments")}
        published = {on.get(s.get("deployment")) for s in entries(self.stack, "services")}
        if not published or (cluster is not None and cluster not in published):
            self.report("deployment", line, f"stack '{self.stack}' publishes no service on the cluster in use")


def walk(text: str) -> Walk:
    return Walk(program_exports()).run(text)


@functools.cache
def doc_walk(doc: Path) -> Walk:
    return walk(doc.read_text(encoding="utf-8"))


def problems(doc: Path, kind: str) -> list[str]:
    return [f"{doc.relative_to(ROOT)}: {p}" for p in doc_walk(doc).problems.get(kind, [])]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_name_only_stacks_that_exist_or_that_the_doc_creates(doc: Path) -> None:
    found = problems(doc, "stack")
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_kubectl_names_a_deployment_of_the_stack_and_cluster_the_doc_works_with(doc: Path) -> None:
    found = problems(doc, "deployment")
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_config_set_addresses_entries_and_kubeconfig_keys_of_the_stack_in_use(doc: Path) -> None:
    found = problems(doc, "config")
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_command_file_arguments_exist_or_are_created_before(doc: Path) -> None:
    found = problems(doc, "file")
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_stack_output_piped_into_jq_is_json(doc: Path) -> None:
    found = problems(doc, "jq")
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_stack_output_names_only_outputs_the_program_exports(doc: Path) -> None:
    found = problems(doc, "output")
    assert found == [], "\n".join(found)


def test_the_program_exports_the_outputs_the_docs_read() -> None:
    assert {"clusters", "endpoints"} <= program_exports()


SH = "```sh\n{}\n```\n"
HOLES = {
    # A deployment on a cluster whose stack declares none (gke-prod has clusters but no deployments).
    "deployment": (
        "pulumi stack select gke-prod\n"
        'pulumi stack output clusters --show-secrets --json | jq -r \'.["gke-us-central1"].kubeconfig\' > "$KUBECONFIG"\n'
        "kubectl -n ml-team rollout status deploy/qwen",
        "stack 'gke-prod' has no deployment 'qwen' in namespace 'ml-team' on cluster 'gke-us-central1'",
    ),
    "jq": ("pulumi stack select gke-prod\npulumi stack output clusters --show-secrets | jq -r .", "needs --json"),
    "output": ("pulumi stack output kubeconfig --json", "exports no output 'kubeconfig'"),
    "stack": ("pulumi stack select gke-dev", "stack 'gke-dev' has no stacks/Pulumi.gke-dev.yaml"),
    "file": ("uv run modelplane plan --all --policy-pack-config policy-configs.json", "'policy-configs.json'"),
    "config": (
        "pulumi config set --secret modelplane:kubeconfig < path/to/kubeconfig --stack gke-prod",
        "no Existing cluster of stack 'gke-prod'",
    ),
}


@pytest.mark.parametrize("kind", sorted(HOLES))
def test_each_command_check_reports_the_hole_it_is_for(kind: str) -> None:
    text, message = HOLES[kind]
    found = walk(SH.format(text)).problems.get(kind, [])
    assert any(message in p for p in found), found


def test_a_namespace_other_than_the_deployments_is_reported() -> None:
    text = "pulumi stack select recipe-qwen-cpu-civo\nkubectl rollout status deploy/qwen"
    found = walk(SH.format(text)).problems.get("deployment", [])
    assert any("in namespace 'default'" in p for p in found), found


def test_a_kubeconfig_of_another_stack_is_reported() -> None:
    text = (
        "pulumi stack select recipe-qwen-cpu-civo\n"
        'pulumi stack output clusters --show-secrets --json | jq -r \'.["civo-cpu"].kubeconfig\' > "$KUBECONFIG"\n'
        "pulumi stack select recipe-qwen-mi325x\n"
        "kubectl -n ml-team rollout status deploy/qwen"
    )
    found = walk(SH.format(text)).problems.get("deployment", [])
    assert any("the kubeconfig is cluster 'civo-cpu' of stack 'recipe-qwen-cpu-civo'" in p for p in found), found


def test_a_stack_or_file_the_doc_creates_first_is_not_reported() -> None:
    text = (
        "pulumi stack init mine\n"
        "pulumi preview --stack mine --policy-pack policies\n"
        "cp ../elsewhere/Pulumi.x.yaml stacks/Pulumi.other.yaml\n"
        "uv run modelplane plan --stack other\n"
        "pulumi stack export --file state.json\n"
        "pulumi policy analyze --policy-pack policies --file state.json"
    )
    assert walk(SH.format(text)).problems == {}
