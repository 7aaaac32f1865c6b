"""Stack files that once crashed or exhausted the loader: each is an error naming the file and a line."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.config.issues import ConfigError
from infra.config.reader import MAX_EXPANDED_SIZE
from infra.config.stackfile import load_stack_file

ROOT = Path(__file__).resolve().parents[1]


def issues(tmp_path: Path, data: bytes) -> list[str]:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as err:
        load_stack_file(path, display="Pulumi.dev.yaml")
    return [str(i) for i in err.value.issues]


def test_a_duplicated_key_is_rejected_at_its_second_line(tmp_path: Path) -> None:
    data = b"config:\n  modelplane:protect: true\n  modelplane:protect: false\n"
    assert issues(tmp_path, data) == [
        "Pulumi.dev.yaml: line 3, column 3: key 'modelplane:protect' appears twice in one mapping. "
        "Fix: keep one of them (the YAML loader would silently use the last)"
    ]


def test_a_key_with_and_without_its_namespace_is_rejected(tmp_path: Path) -> None:
    data = b"config:\n  modelplane:protect: true\n  protect: false\n"
    assert issues(tmp_path, data) == [
        "Pulumi.dev.yaml: config.protect: 'modelplane:protect' is set twice (with and without the "
        "'modelplane:' namespace). Fix: keep one of them"
    ]


def test_a_non_utf8_byte_names_its_line_and_column(tmp_path: Path) -> None:
    assert issues(tmp_path, b'config:\n  aws:region: "us-\xff"\n') == [
        "Pulumi.dev.yaml: line 2, column 19: byte 0xff is not UTF-8. Fix: save the file as UTF-8"
    ]


def test_a_nul_byte_names_its_line_and_column(tmp_path: Path) -> None:
    assert issues(tmp_path, b"config:\n  aws:region: a\x00b\n") == [
        "Pulumi.dev.yaml: line 2, column 16: character #x0000 is not allowed in YAML. Fix: remove the character"
    ]


def test_a_4301_digit_integer_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    data = b"config:\n  modelplane:clusters:\n    - nodeCount: " + b"1" * 4301 + b"\n"
    assert issues(tmp_path, data) == [
        "Pulumi.dev.yaml: line 3, column 18: an integer of 4301 characters is larger than any field takes. "
        "Fix: write the number the field needs"
    ]


def test_deep_nesting_is_an_error_not_a_recursion_error(tmp_path: Path) -> None:
    data = b"config:\n  aws:x: " + b"[" * 490 + b"]" * 490 + b"\n"
    # Refused where the 65th level starts: the 63rd `[` of `aws:x`'s value, column 10 + 62.
    assert issues(tmp_path, data) == [
        "Pulumi.dev.yaml: line 2, column 72: values nest deeper than 64 levels. Fix: flatten the value or remove it"
    ]


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    # Ten levels of ten aliases: 10^10 items once expanded, in a few hundred bytes.
    lines = [b"config:", b"  aws:l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, 11):
        refs = b", ".join([b"*l%d" % (i - 1)] * 10)
        lines.append(b"  aws:l%d: &l%d [%s]" % (i, i, refs))
    data = b"\n".join(lines) + b"\n"
    assert len(data) < 1000
    # l<i> expands to 1 + 10 * l<i-1>: l5 to 2,111,111 characters, l6 (line 8) past the bound.
    assert issues(tmp_path, data) == [
        f"Pulumi.dev.yaml: line 8, column 11: this value expands to more than {MAX_EXPANDED_SIZE} characters "
        "once its YAML aliases are expanded. Fix: write the values out instead of repeating aliases"
    ]


def test_a_long_string_aliased_many_times_is_refused(tmp_path: Path) -> None:
    data = b"config:\n  aws:big: &s " + b"x" * (1 << 20) + b"\n  aws:args: [" + b", ".join([b"*s"] * 2000) + b"]\n"
    found = issues(tmp_path, data)
    assert len(found) == 1 and found[0].startswith("Pulumi.dev.yaml: line 3, column 13: this value expands")


def test_an_alias_inside_its_own_value_is_refused(tmp_path: Path) -> None:
    assert issues(tmp_path, b"config:\n  aws:x: &a [*a]\n") == [
        "Pulumi.dev.yaml: line 2, column 10: an alias refers to a value that contains it. "
        "Fix: write the value out instead"
    ]


def test_a_date_stays_the_string_pulumi_reads(tmp_path: Path) -> None:
    # A committed stack's fleet, with a date-like value beside it.
    fleet = (ROOT / "stacks" / "Pulumi.civo-dev.yaml").read_text(encoding="utf-8")
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(fleet.replace("config:\n", "config:\n  aws:since: 2024-01-01\n", 1), encoding="utf-8")
    assert load_stack_file(path).plain["aws:since"] == "2024-01-01"


def test_a_long_unknown_key_is_cut_in_the_message(tmp_path: Path) -> None:
    name = "x" * 1000  # YAML allows simple keys up to 1,024 characters
    found = issues(tmp_path, f"config:\n  modelplane:{name}: 1\n".encode())
    # The message is the cut key plus the list of known keys, never the whole name.
    assert len(found) == 1 and len(found[0]) < 500
    assert "(1011 characters)" in found[0]
