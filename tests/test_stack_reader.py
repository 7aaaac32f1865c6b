"""Reading a stack file in-process: each refusal is one issue naming the file, where, what and the fix."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config.issues import ConfigError, ConfigIssue, format_path
from infra.config.model import SecureValue
from infra.config.names import shown
from infra.config.reader import MAX_EXPANDED_SIZE, MAX_FILE_BYTES, read_yaml
from infra.config.stackfile import load_stack_file, parse_fleet
from tests.conftest import gke_fleet

FILE = "Pulumi.dev.yaml"


def refusal(tmp_path: Path, data: bytes) -> list[ConfigIssue]:
    """The issues `read_yaml` raises for a file holding `data`."""
    path = tmp_path / FILE
    path.write_bytes(data)
    with pytest.raises(ConfigError) as err:
        read_yaml(path, FILE)
    return err.value.issues


def read(tmp_path: Path, data: bytes) -> Any:
    path = tmp_path / FILE
    path.write_bytes(data)
    return read_yaml(path, FILE)


def stack_issues(tmp_path: Path, data: bytes) -> list[ConfigIssue]:
    """The issues `load_stack_file` raises for a stack file holding `data`."""
    path = tmp_path / FILE
    path.write_bytes(data)
    with pytest.raises(ConfigError) as err:
        load_stack_file(path, display=FILE)
    return err.value.issues


# ---------------------------------------------------------------------------------------------
# How a rejected value is quoted


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("x", "'x'"),
        (5, "5"),
        (2.5, "2.5"),
        (True, "True"),
        (None, "None"),
        ([1], "list"),
        ({"a": 1}, "dict"),
        # 78 digits and 256 bits: still short enough to quote.
        (2**256 - 1, "115792089237316195423570985008687907853269984665640564039457584007913129639935"),
        (2**256, "a 257-bit integer"),
        ("x" * 78, "'" + "x" * 78 + "'"),
        ("x" * 79, "'" + "x" * 78 + "… (81 characters)"),
    ],
)
def test_a_rejected_value_is_quoted_by_its_repr_its_type_or_its_size(value: Any, quoted: str) -> None:
    assert shown(value) == quoted


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        ([], ""),
        (["clusters", 0, "nodePools", 1, "name"], "clusters[0].nodePools[1].name"),
        (["classes", 0, "devices", 0, "attributes", "x"], "classes[0].devices[0].attributes.x"),
    ],
)
def test_a_location_is_written_as_the_path_in_the_stack_file(loc: list[str | int], path: str) -> None:
    assert format_path(loc) == path


# ---------------------------------------------------------------------------------------------
# read_yaml: the file's bytes


def test_a_missing_file_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        read_yaml(tmp_path / FILE, FILE)
    assert err.value.issues == [
        ConfigIssue("", "cannot read the file (No such file or directory)", "check the path", file=FILE)
    ]


def test_a_file_one_byte_over_the_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    assert MAX_FILE_BYTES == 8 * 1024 * 1024
    assert refusal(tmp_path, b"#" * (MAX_FILE_BYTES + 1)) == [
        ConfigIssue("", "the file has 8388609 bytes, more than 8388608", "shorten the file", file=FILE)
    ]


def test_a_file_at_the_byte_bound_is_read(tmp_path: Path) -> None:
    # It gets past the size check to the UTF-8 check, which its first byte fails.
    assert refusal(tmp_path, b"\xff" + b"#" * (MAX_FILE_BYTES - 1)) == [
        ConfigIssue("line 1, column 1", "byte 0xff is not UTF-8", "save the file as UTF-8", file=FILE)
    ]


# Where the bad byte or character stands: first in the file, after a leading newline, two lines
# down; lines follow it, so counting past it would show.
POSITIONS = [
    (b"", "line 1, column 1"),
    (b"\n  ", "line 2, column 3"),
    (b"config:\n  aws:a: x\n  aws:b: ", "line 3, column 10"),
]
AFTER = b"\n  aws:c: y\n\n"


@pytest.mark.parametrize(("before", "where"), POSITIONS)
def test_a_non_utf8_byte_names_its_line_and_column(tmp_path: Path, before: bytes, where: str) -> None:
    assert refusal(tmp_path, before + b"\xfe" + AFTER) == [
        ConfigIssue(where, "byte 0xfe is not UTF-8", "save the file as UTF-8", file=FILE)
    ]


@pytest.mark.parametrize(("before", "where"), POSITIONS)
def test_a_control_character_names_its_line_and_column(tmp_path: Path, before: bytes, where: str) -> None:
    assert refusal(tmp_path, before + b"\x07" + AFTER) == [
        ConfigIssue(where, "character #x0007 is not allowed in YAML", "remove the character", file=FILE)
    ]


@pytest.mark.parametrize("data", [b"", b"# only a comment\n"])
def test_a_file_without_a_document_reads_as_nothing(tmp_path: Path, data: bytes) -> None:
    assert read(tmp_path, data) is None


# ---------------------------------------------------------------------------------------------
# read_yaml: YAML syntax and structure


SYNTAX = "fix the YAML syntax"


@pytest.mark.parametrize(
    ("data", "where", "problem", "fix"),
    [
        # What the parser was reading, and where that began, comes before what it found.
        (
            b"config:\n  aws:a: [1, 2\n",
            "line 3, column 1",
            "not valid YAML: while parsing a flow sequence at line 2, column 10, expected ',' or ']', "
            "but got '<stream end>'",
            SYNTAX,
        ),
        (
            b"config:\n  aws:a: b: c\n",
            "line 2, column 11",
            "not valid YAML: mapping values are not allowed here",
            SYNTAX,
        ),
        (
            b"a: 1\n---\nb: 2\n",
            "line 2, column 1",
            "not valid YAML: expected a single document in the stream at line 1, column 1, but found another document",
            "keep one document: remove the '---' line shown and what follows it",
        ),
        (
            b"a: &x 1\nb: &x 2\n",
            "line 2, column 4",
            "not valid YAML: found duplicate anchor 'x'; first occurrence at line 1, column 4, second occurrence",
            SYNTAX,
        ),
        (
            b"? [a]\n: 1\n",
            "line 1, column 3",
            "not valid YAML: while constructing a mapping at line 1, column 1, found unhashable key",
            SYNTAX,
        ),
        # A long problem is cut like a long value.
        (
            b"config:\n  aws:a: !" + b"x" * 100 + b" 1\n",
            "line 2, column 10",
            "not valid YAML: could not determine a constructor for the tag '!" + "x" * 31 + "… (149 characters)",
            SYNTAX,
        ),
    ],
)
def test_bad_yaml_names_the_line_column_and_what_the_parser_found(
    tmp_path: Path, data: bytes, where: str, problem: str, fix: str
) -> None:
    assert refusal(tmp_path, data) == [ConfigIssue(where, problem, fix, file=FILE)]


DUPLICATE_FIX = "keep one of them (the YAML loader would silently use the last)"


@pytest.mark.parametrize(
    ("data", "where", "key"),
    [
        # Keys before the repeated one that the check skips: a merge key, an unhashable key.
        (b"base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n  y: 3\n", "line 5, column 3", "'y'"),
        (b"? [a]\n: 1\nb: 1\nb: 2\n", "line 4, column 1", "'b'"),
        (b"1: a\n1: b\n", "line 2, column 1", "1"),
    ],
)
def test_a_repeated_key_is_refused_at_its_second_line(tmp_path: Path, data: bytes, where: str, key: str) -> None:
    assert refusal(tmp_path, data) == [
        ConfigIssue(where, f"key {key} appears twice in one mapping", DUPLICATE_FIX, file=FILE)
    ]


def test_a_merge_key_merges_the_aliased_mapping(tmp_path: Path) -> None:
    assert read(tmp_path, b"base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n") == {"base": {"x": 1}, "m": {"x": 1, "y": 2}}


def test_an_integer_of_100_characters_is_read_and_of_101_refused(tmp_path: Path) -> None:
    assert read(tmp_path, b"a: " + b"1" * 100 + b"\n") == {"a": int("1" * 100)}
    assert refusal(tmp_path, b"a: " + b"1" * 101 + b"\n") == [
        ConfigIssue(
            "line 1, column 4",
            "an integer of 101 characters is larger than any field takes",
            "write the number the field needs",
            file=FILE,
        )
    ]


def nested(levels: int) -> bytes:
    """A stack file with `levels` lists nested in `config:`'s value `aws:x`."""
    return b"config:\n  aws:x: " + b"[" * levels + b"]" * levels + b"\n"


def lists(levels: int, inside: Any = None) -> list[Any]:
    """`levels` lists, one inside the other, the innermost holding `inside` (or nothing)."""
    value: list[Any] = [] if inside is None else [inside]
    for _ in range(levels - 1):
        value = [value]
    return value


def test_nesting_of_64_levels_is_read_and_of_65_refused_where_the_65th_starts(tmp_path: Path) -> None:
    assert read(tmp_path, nested(62)) == {"config": {"aws:x": lists(62)}}
    # The document's mapping is level 1, `config:`'s value level 2, `aws:x`'s outer list level 3:
    # the 63rd `[` (column 10 + 62) is level 65.
    assert refusal(tmp_path, nested(63)) == [
        ConfigIssue(
            "line 2, column 72", "values nest deeper than 64 levels", "flatten the value or remove it", file=FILE
        )
    ]


def frames() -> int:
    """The Python frames on the stack below the caller's."""
    frame, count = sys._getframe(1), 0
    while frame is not None:
        frame, count = frame.f_back, count + 1
    return count


def test_a_file_read_with_little_stack_left_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    # The nesting bounds keep the reader far from Python's recursion limit; when a caller is
    # already deep in the stack, a nesting within the bounds may still pass it, and the reader
    # says so instead of raising RecursionError.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(frames() + 100)
    try:
        issues = refusal(tmp_path, nested(62))
    finally:
        sys.setrecursionlimit(limit)
    assert issues == [ConfigIssue("", "values nest too deeply to read", "flatten the nested values", file=FILE)]
    assert read(tmp_path, nested(62)) == {"config": {"aws:x": lists(62)}}


def alias_chain(*levels: int) -> bytes:
    """Keys l0, l1, ...: l<i> is levels[i] lists nested around an alias to l<i-1> (l0 around nothing)."""
    lines = [b"l0: &l0 " + b"[" * levels[0] + b"]" * levels[0]]
    for i, n in enumerate(levels[1:], start=1):
        lines.append(b"l%d: &l%d " % (i, i) + b"[" * n + b"*l%d" % (i - 1) + b"]" * n)
    return b"\n".join(lines) + b"\n"


def test_aliases_nesting_to_64_levels_are_read(tmp_path: Path) -> None:
    # The document's mapping (1), l1's 32 lists (2-33), l0's 31 inside the innermost (34-64).
    assert read(tmp_path, alias_chain(31, 32))["l1"] == lists(32, inside=lists(31))


def test_aliases_nesting_to_65_levels_are_refused_at_the_value_past_the_bound(tmp_path: Path) -> None:
    # One list more in l0: l1 holds 64 levels, the document 65.
    assert refusal(tmp_path, alias_chain(32, 32)) == [
        ConfigIssue(
            "line 1, column 1",
            "this value nests deeper than 64 levels once its YAML aliases are expanded",
            "flatten the value or remove it",
            file=FILE,
        )
    ]
    # l2's lists hold l1 (60 levels): its 5th list from the inside, the 26th `[` of line 3
    # (column 9 + 25), is the first to hold 65.
    assert refusal(tmp_path, alias_chain(30, 30, 30)) == [
        ConfigIssue(
            "line 3, column 34",
            "this value nests deeper than 64 levels once its YAML aliases are expanded",
            "flatten the value or remove it",
            file=FILE,
        )
    ]


def sized(total: int) -> bytes:
    """A document whose expanded size (one per node plus the characters of each scalar) is `total`.

    `a: &s <x * 99,999>`, `b:` 82 aliases to it, `c: <y * pad>`: the root mapping (1), the keys
    a, b, c (2 each), s and its 82 copies (83 * 100,000), b's list (1) and c's value (pad + 1).
    """
    pad = total - 9 - 83 * 100_000
    return b"a: &s " + b"x" * 99_999 + b"\nb: [" + b", ".join([b"*s"] * 82) + b"]\nc: " + b"y" * pad + b"\n"


def test_aliases_expanding_to_the_size_bound_are_read_and_one_more_character_refused(tmp_path: Path) -> None:
    assert MAX_EXPANDED_SIZE == 8 * 1024 * 1024
    doc = read(tmp_path, sized(MAX_EXPANDED_SIZE))
    assert len(doc["b"]) == 82 and len(doc["c"]) == 8_388_608 - 8_300_009
    assert refusal(tmp_path, sized(MAX_EXPANDED_SIZE + 1)) == [
        ConfigIssue(
            "line 1, column 1",
            "this value expands to more than 8388608 characters once its YAML aliases are expanded",
            "write the values out instead of repeating aliases",
            file=FILE,
        )
    ]


# ---------------------------------------------------------------------------------------------
# load_stack_file: the document's outline

FIRST_KEYS = "modelplane:classes and modelplane:clusters (every key: docs/configuration.md)"


@pytest.mark.parametrize(
    ("data", "issue"),
    [
        (
            b"",
            ConfigIssue(
                "line 1, column 1", "the stack file is empty", f"start it with 'config:' and {FIRST_KEYS}", file=FILE
            ),
        ),
        (
            b"- config\n",
            ConfigIssue(
                "line 1, column 1", "a stack file is a YAML mapping", "start the file with 'config:'", file=FILE
            ),
        ),
        (
            b"encryptionsalt: x\n",
            ConfigIssue(
                "config", "the stack file has no 'config:' section", f"add 'config:' with {FIRST_KEYS}", file=FILE
            ),
        ),
        (
            b"config:\n",
            ConfigIssue(
                "config", "the stack file has no 'config:' section", f"add 'config:' with {FIRST_KEYS}", file=FILE
            ),
        ),
        (
            b"config: [a]\n",
            ConfigIssue(
                "config",
                "'config' is a mapping of keys to values",
                "write 'config:' followed by indented keys",
                file=FILE,
            ),
        ),
        (
            b"config:\n  aws:region: us-east-1\n",
            ConfigIssue(
                "config",
                "'config:' has no modelplane: keys (modelplane:classes, modelplane:clusters, modelplane:deployments, "
                "modelplane:services, modelplane:protect, modelplane:budget, modelplane:chartMirror)",
                f"add {FIRST_KEYS}",
                file=FILE,
            ),
        ),
    ],
)
def test_a_stack_file_without_a_fleet_says_what_to_write(tmp_path: Path, data: bytes, issue: ConfigIssue) -> None:
    assert stack_issues(tmp_path, data) == [issue]


EXISTING = b"""\
config:
  aws:region: us-east-1
  modelplane:classes:
    - name: cpu
      devices:
        - {name: cpu, driver: dra.cpu, deviceClassName: dra.cpu, capacity: {dra.cpu/cpu: {value: "6"}}}
  modelplane:clusters:
    - name: lab
      source: Existing
      existing: {kubernetesVersion: "1.36", kubeconfigKey: lab-kubeconfig}
      nodePools:
        - {name: cpu, className: cpu}
"""


def test_a_stack_file_loads_into_its_stack_fleet_secrets_and_plain_values(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.lab.yaml"
    path.write_bytes(EXISTING + b"  modelplane:lab-kubeconfig:\n    secure: v1:c2VjcmV0\n")
    stack = load_stack_file(path)
    assert stack.file == str(path)
    assert stack.stack == "lab"
    assert [c.name for c in stack.fleet.clusters] == ["lab"]
    assert stack.secrets == {"lab-kubeconfig": "v1:c2VjcmV0"}
    assert stack.plain == {"aws:region": "us-east-1"}
    assert load_stack_file(path, display="stacks/Pulumi.lab.yaml").file == "stacks/Pulumi.lab.yaml"


def test_an_existing_cluster_without_its_kubeconfig_secret_is_refused(tmp_path: Path) -> None:
    assert stack_issues(tmp_path, EXISTING) == [
        ConfigIssue(
            "clusters[0].existing.kubeconfigKey",
            "no secret config key 'modelplane:lab-kubeconfig' holds the kubeconfig of cluster 'lab'",
            "run: pulumi config set --secret modelplane:lab-kubeconfig < path/to/kubeconfig",
            file=FILE,
        )
    ]


def test_a_fleet_error_names_the_displayed_file(tmp_path: Path) -> None:
    data = EXISTING.replace(b"{name: cpu, className: cpu}", b"{name: cpu, className: cpu, nodeCount: -1}")
    # The missing kubeconfig secret is reported in the same run, after the fleet's own mistake.
    assert stack_issues(tmp_path, data) == [
        ConfigIssue(
            "clusters[0].nodePools[0].nodeCount",
            "input should be greater than or equal to 0 (got -1)",
            "raise the value to the minimum",
            file=FILE,
        ),
        ConfigIssue(
            "clusters[0].existing.kubeconfigKey",
            "no secret config key 'modelplane:lab-kubeconfig' holds the kubeconfig of cluster 'lab'",
            "run: pulumi config set --secret modelplane:lab-kubeconfig < path/to/kubeconfig",
            file=FILE,
        ),
    ]


# ---------------------------------------------------------------------------------------------
# The messages built from the model's validation errors

FLEET: dict[str, Any] = gke_fleet()
POOL = ("clusters", 0, "nodePools", 1)
DEVICE = ("classes", 0, "devices", 0)
POOL_KEYS = "name, className, nodeCount, minNodeCount, maxNodeCount, zones, uncataloguedZones, capacity, adopt"


def fleet_issues(*edits: tuple[tuple[str | int, ...], Any]) -> list[str]:
    """The issues of FLEET with each (path, value) set, or the key removed where the value is DELETE."""
    raw = copy.deepcopy(FLEET)
    for path, value in edits:
        parent = raw
        for part in path[:-1]:
            parent = parent[part]
        if value is DELETE:
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
    with pytest.raises(ConfigError) as err:
        parse_fleet(raw, "F.yaml")
    return [str(i) for i in err.value.issues]


DELETE = object()


def test_the_valid_fleet_parses() -> None:
    assert [c.name for c in parse_fleet(copy.deepcopy(FLEET), "F.yaml").classes] == ["l4", "cpu"]


@pytest.mark.parametrize(
    ("path", "value", "issue"),
    [
        # Unknown keys: the closest known key, else every known key, else nothing to suggest.
        (
            (*POOL, "maxNodeCont"),
            3,
            "clusters[0].nodePools[1].maxNodeCont: unknown key 'maxNodeCont'. "
            "Fix: did you mean 'maxNodeCount'? Remove or rename it",
        ),
        (
            (*POOL, "zzz"),
            3,
            f"clusters[0].nodePools[1].zzz: unknown key 'zzz'. Fix: remove or rename it (known keys: {POOL_KEYS})",
        ),
        (
            ("bogus",),
            1,
            "bogus: unknown key 'bogus'. "
            "Fix: remove or rename it (known keys: classes, clusters, deployments, services, protect, budget, chartMirror)",
        ),
        # Under a name the user chose (an attribute's), the keys are those of its value.
        (
            (*DEVICE, "attributes"),
            {"model": {"string": "L4", "strng": "L4"}},
            "classes[0].devices[0].attributes.model.strng: unknown key 'strng'. "
            "Fix: did you mean 'string'? Remove or rename it",
        ),
        (
            (*DEVICE, "attributes"),
            {"model": {"zzz": 1}},
            "classes[0].devices[0].attributes.model.zzz: unknown key 'zzz'. "
            "Fix: remove or rename it (known keys: string, version, bool, int)",
        ),
        # Under a map of strings there are no keys to suggest.
        (
            ("clusters", 0, "labels"),
            {"team": {"zzz": 1}},
            "clusters[0].labels.team: input should be a valid string. Fix: write a string",
        ),
        # A key of a map the user names that is not a string is named at the map, not as an index.
        (
            ("clusters", 0, "labels"),
            {5: "x"},
            'clusters[0].labels: the key 5 is not a string. Fix: quote it: "5" (YAML reads an unquoted 5 as a number)',
        ),
        (
            ("clusters", 0, "labels"),
            {True: "x"},
            "clusters[0].labels: the key True is not a string. Fix: quote the key",
        ),
        (
            (*DEVICE, "attributes"),
            {1.50: {"int": 1}},
            "classes[0].devices[0].attributes: the key 1.5 is not a string. "
            'Fix: quote it as you wrote it, such as "1.5" (YAML reads an unquoted number as a number and drops '
            "trailing zeros: 1.30 becomes 1.3)",
        ),
        # A key the user spelt "[key]" is a key like any other.
        (
            ("clusters", 0, "labels"),
            {"[key]": 5},
            'clusters[0].labels.[key]: input should be a valid string (got 5). Fix: quote it: "5" '
            "(YAML reads an unquoted 5 as a number)",
        ),
        # Value errors: the text before the last "; " is the problem, after it the fix.
        (
            (*POOL, "nodeCount"),
            "3",
            "clusters[0].nodePools[1].nodeCount: '3' is a quoted string, not a whole number. Fix: write it without quotes",
        ),
        (
            ("classes", 0, "provisioning", "gke", "accelerator", "type"),
            "L4!",
            "classes[0].provisioning.gke.accelerator.type: 'L4!' is not a label value (letters, digits, '-', '_', "
            "'.'; alphanumeric at both ends). Fix: write the type as the cloud names it, such as nvidia-l4",
        ),
        (
            (*DEVICE, "attributes"),
            {"model": {"string": "L4", "int": 4}},
            "classes[0].devices[0].attributes.model: an attribute holds exactly one of string, version, bool or int. "
            "Fix: correct the value",
        ),
        # protect takes Pulumi's boolean spellings only; a typo never decides whether clusters may go.
        (("protect",), "yes", "protect: 'yes' is not true or false. Fix: write protect: true or protect: false"),
        (("protect",), 1, "protect: 1 is not true or false. Fix: write protect: true or protect: false"),
        # A validated default is reported under the key users write.
        (
            (*DEVICE, "deviceClassName"),
            DELETE,
            "classes[0].devices[0].deviceClassName: a DRA device needs deviceClassName. Fix: set it to the "
            "DeviceClass the driver publishes (for example gpu.nvidia.com), or set claim: Synthetic",
        ),
        # Type errors quote what was given, except a mapping or a list.
        (
            (*POOL, "nodeCount"),
            "three",
            "clusters[0].nodePools[1].nodeCount: input should be a valid integer (got 'three'). Fix: write a whole number",
        ),
        (
            (*POOL, "name"),
            5,
            "clusters[0].nodePools[1].name: input should be a valid string (got 5). "
            'Fix: quote it: "5" (YAML reads an unquoted 5 as a number)',
        ),
        (
            (*POOL, "name"),
            2.5,
            "clusters[0].nodePools[1].name: input should be a valid string (got 2.5). "
            'Fix: quote it as you wrote it, such as "2.5" (YAML reads an unquoted number as a number and drops '
            "trailing zeros: 1.30 becomes 1.3)",
        ),
        (
            (*POOL, "name"),
            True,
            "clusters[0].nodePools[1].name: input should be a valid string (got True). Fix: write a string",
        ),
        ((*POOL, "name"), [1], "clusters[0].nodePools[1].name: input should be a valid string. Fix: write a string"),
        (
            ("clusters", 0, "nodePools"),
            "x",
            "clusters[0].nodePools: input should be a valid list (got 'x'). Fix: write a YAML list (items starting with '-')",
        ),
        (
            ("clusters", 0, "source"),
            "gke",
            "clusters[0].source: input should be 'GKE', 'EKS', 'AKS', 'Civo', 'Vultr', 'Nebius', 'DigitalOcean', 'OCI' or 'Existing' "
            "(got 'gke'). Fix: use one of 'GKE', 'EKS', 'AKS', 'Civo', 'Vultr', 'Nebius', 'DigitalOcean', 'OCI' or 'Existing'",
        ),
        ((*POOL, "className"), DELETE, "clusters[0].nodePools[1].className: field required. Fix: add 'className'"),
        (
            (*POOL, "nodeCount"),
            5001,
            "clusters[0].nodePools[1].nodeCount: input should be less than or equal to 5000 (got 5001). "
            "Fix: lower the value to the maximum",
        ),
        (
            ("budget",),
            {"monthlyUsd": 0},
            "budget.monthlyUsd: input should be greater than 0 (got 0). Fix: correct the value",
        ),
        # A class's own price is a positive number of USD a node-hour, never a word, a sign or a flag.
        (
            ("classes", 0, "provisioning", "gke", "hourlyPrice"),
            "twelve",
            "classes[0].provisioning.gke.hourlyPrice: 'twelve' is not a number. "
            "Fix: write what one node costs you an hour in USD, such as hourlyPrice: 12.5",
        ),
        (
            ("classes", 0, "provisioning", "gke", "hourlyPrice"),
            -1,
            "classes[0].provisioning.gke.hourlyPrice: -1 is not a price above 0 and at most 10000. "
            "Fix: write what one node costs you an hour in USD, such as hourlyPrice: 12.5",
        ),
        (
            ("classes", 0, "provisioning", "gke", "hourlyPrice"),
            "nan",
            "classes[0].provisioning.gke.hourlyPrice: 'nan' is not a price above 0 and at most 10000. "
            "Fix: write what one node costs you an hour in USD, such as hourlyPrice: 12.5",
        ),
        (
            ("classes", 0, "provisioning", "gke", "hourlyPrice"),
            True,
            "classes[0].provisioning.gke.hourlyPrice: True is not a price. "
            "Fix: write what one node costs you an hour in USD, such as hourlyPrice: 12.5",
        ),
        # A mapping given as something else names its keys, never the class behind it.
        (
            ("classes", 0, "provisioning", "gke", "accelerator"),
            4,
            "classes[0].provisioning.gke.accelerator: 'accelerator' is a mapping with keys {type} "
            "(got 4). Fix: write it as accelerator: {type}",
        ),
        (
            ("clusters", 0, "gke"),
            ["p"],
            "clusters[0].gke: 'gke' is a mapping with keys {project, region, kubernetesVersion}. "
            "Fix: write it as gke: {project, region, kubernetesVersion}",
        ),
        (
            (*DEVICE, "capacity"),
            {"memory": "24Gi"},
            "classes[0].devices[0].capacity.memory: 'memory' is a mapping with keys {value} (got '24Gi'). "
            "Fix: write it as memory: {value}",
        ),
        (
            (*DEVICE, "attributes"),
            {"model": "L4"},
            "classes[0].devices[0].attributes.model: 'model' is a mapping with keys {string, version, bool, int} "
            "(got 'L4'). Fix: write it as model: {string, version, bool, int}",
        ),
        # A name the user chose stays as written, even where it is the Python name of a field.
        (
            (*DEVICE, "attributes"),
            {"int_": 4},
            "classes[0].devices[0].attributes.int_: 'int_' is a mapping with keys {string, version, bool, int} "
            "(got 4). Fix: write it as int_: {string, version, bool, int}",
        ),
        (
            ("classes", 0),
            "l4",
            "classes[0]: each item of 'classes' is a mapping with keys {name} (got 'l4'). "
            "Fix: write item 0 as - {name}",
        ),
        (
            POOL,
            "cpu",
            "clusters[0].nodePools[1]: each item of 'nodePools' is a mapping with keys {name, className} "
            "(got 'cpu'). Fix: write item 1 as - {name, className}",
        ),
    ],
)
def test_a_validation_error_names_the_path_the_problem_and_the_fix(
    path: tuple[str | int, ...], value: Any, issue: str
) -> None:
    assert fleet_issues((path, value)) == [f"F.yaml: {issue}"]


def test_errors_after_a_key_that_is_not_a_string_are_reported_too() -> None:
    edits = (("clusters", 0, "labels"), {5: "x"}), ((*POOL, "nodeCount"), -1)
    assert fleet_issues(*edits) == [
        'F.yaml: clusters[0].labels: the key 5 is not a string. Fix: quote it: "5" (YAML reads an unquoted 5 as a '
        "number)",
        "F.yaml: clusters[0].nodePools[1].nodeCount: input should be greater than or equal to 0 (got -1). "
        "Fix: raise the value to the minimum",
    ]


def test_every_validation_error_of_a_fleet_is_reported_in_order() -> None:
    edits = (("classes", 0, "zzz"), 1), ((*POOL, "nodeCount"), -1), (("clusters", 0, "source"), "gke")
    assert fleet_issues(*edits) == [
        "F.yaml: classes[0].zzz: unknown key 'zzz'. "
        "Fix: remove or rename it (known keys: name, description, devices, provisioning, accelerator, uncataloguedAccelerator, minGpuMemoryGib)",
        "F.yaml: clusters[0].source: input should be 'GKE', 'EKS', 'AKS', 'Civo', 'Vultr', 'Nebius', 'DigitalOcean', 'OCI' or 'Existing' "
        "(got 'gke'). Fix: use one of 'GKE', 'EKS', 'AKS', 'Civo', 'Vultr', 'Nebius', 'DigitalOcean', 'OCI' or 'Existing'",
        "F.yaml: clusters[0].nodePools[1].nodeCount: input should be greater than or equal to 0 (got -1). "
        "Fix: raise the value to the minimum",
    ]


def deployment_with_env(env: dict[str, Any]) -> dict[str, Any]:
    """A deployment on FLEET's GPU pool with `env`."""
    return {
        "name": "qwen",
        "cluster": "prod",
        "pool": "gpu",
        "image": "vllm/vllm-openai:v0.23.0",
        "memory": "24Gi",
        "devices": [{"name": "gpu"}],
        "env": env,
    }


@pytest.mark.parametrize(
    ("value", "issues"),
    [
        # Plain text or a `secure:` mapping: one error for one mistake, at the value's own path.
        (
            4,
            [
                "deployments[0].env.HF_TOKEN: input should be a valid string (got 4). "
                'Fix: quote it: "4" (YAML reads an unquoted 4 as a number)'
            ],
        ),
        (["x"], ["deployments[0].env.HF_TOKEN: input should be a valid string. Fix: write a string"]),
        (
            {"secure": 1, "x": 2},
            [
                "deployments[0].env.HF_TOKEN.secure: input should be a valid string (got 1). "
                'Fix: quote it: "1" (YAML reads an unquoted 1 as a number)',
                "deployments[0].env.HF_TOKEN.x: unknown key 'x'. Fix: remove or rename it (known keys: secure)",
            ],
        ),
        ({}, ["deployments[0].env.HF_TOKEN.secure: field required. Fix: add 'secure'"]),
    ],
    ids=["number", "list", "bad-secure-mapping", "empty-mapping"],
)
def test_an_env_value_gets_one_error_for_the_form_it_was_written_in(value: Any, issues: list[str]) -> None:
    deployment = deployment_with_env({"HF_TOKEN": value})
    assert fleet_issues((("deployments",), [deployment])) == [f"F.yaml: {i}" for i in issues]


def test_env_values_of_both_forms_parse() -> None:
    raw = copy.deepcopy(FLEET)
    raw["deployments"] = [deployment_with_env({"LEVEL": "DEBUG", "HF_TOKEN": {"secure": "v1:abc"}})]
    env = parse_fleet(raw, "F.yaml").deployments[0].env
    assert env["LEVEL"] == "DEBUG" and isinstance(env["HF_TOKEN"], SecureValue)
    assert env["HF_TOKEN"].secure == "v1:abc"


@pytest.mark.parametrize(
    ("written", "read"),
    [(True, True), ("true", True), ("True", True), (False, False), ("false", False), ("False", False)],
)
def test_protect_takes_the_spellings_pulumi_reads_as_booleans(written: Any, read: bool) -> None:
    raw = copy.deepcopy(FLEET) | {"protect": written}
    assert parse_fleet(raw, "F.yaml").protect is read


@pytest.mark.parametrize(
    ("written", "fix"),
    [
        ("1.30", 'quote it: "1.30" (YAML reads an unquoted 1.30 as the number 1.3)'),
        ("1.35", 'quote it: "1.35" (YAML reads an unquoted 1.35 as a number)'),
        ("1.360", 'quote it: "1.360" (YAML reads an unquoted 1.360 as the number 1.36)'),
    ],
)
def test_an_unquoted_version_is_answered_with_the_text_as_written(tmp_path: Path, written: str, fix: str) -> None:
    data = yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in gke_fleet().items()}}, sort_keys=False)
    data = data.replace("kubernetesVersion: '1.36'", f"kubernetesVersion: {written}")
    assert f"kubernetesVersion: {written}\n" in data
    [issue] = stack_issues(tmp_path, data.encode())
    assert issue.path == "clusters[0].gke.kubernetesVersion"
    assert issue.fix == fix


@pytest.mark.parametrize("written", ["yes", "on", "Yes", "ON", "no", "off"])
def test_a_bare_yaml_1_1_boolean_for_protect_is_refused_as_the_cli_reads_it(tmp_path: Path, written: str) -> None:
    data = yaml.safe_dump({"config": {f"modelplane:{k}": v for k, v in gke_fleet().items()}}, sort_keys=False)
    data += f"  modelplane:protect: {written}\n"
    [issue] = stack_issues(tmp_path, data.encode())
    assert issue.path == "protect"
    assert issue.problem == f"{written!r} is not true or false"
    assert issue.fix == "write protect: true or protect: false"


@pytest.mark.parametrize(("written", "read"), [("true", True), ("TRUE", True), ("False", False)])
def test_the_boolean_spellings_the_cli_reads_as_booleans_stay_booleans(
    tmp_path: Path, written: str, read: bool
) -> None:
    assert read_yaml_text(tmp_path, f"a: {written}\nb: yes\n") == {"a": read, "b": "yes"}


def read_yaml_text(tmp_path: Path, text: str) -> Any:
    return read(tmp_path, text.encode())
