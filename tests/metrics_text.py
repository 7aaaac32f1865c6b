"""A strict reader of Prometheus's text exposition format (version 0.0.4), for tests that read what a
server exposes. It refuses what the format does not allow rather than guessing.

The format (prometheus.io/docs/instrumenting/exposition_formats, "Text-based format"): `# HELP
name text` and `# TYPE name type` before a family's samples, then `name{label="value",...} value`
lines; a histogram's samples are its `_bucket` (each with `le`, cumulative, ending at `+Inf`),
`_sum` and `_count`. Metric names match `[a-zA-Z_:][a-zA-Z0-9_:]*`, label names
`[a-zA-Z_][a-zA-Z0-9_]*`, label values escape `\\`, `"` and newline. Timestamps are not read (our
servers send none). Not a general client: no summaries, no untyped samples, no OpenMetrics.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
TYPES = ("counter", "gauge", "histogram")


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass
class Family:
    name: str
    type: str
    help: str
    samples: list[Sample] = field(default_factory=list)


class FormatError(ValueError):
    pass


def _value(text: str) -> float:
    if text in ("+Inf", "-Inf", "NaN"):
        return {"+Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}[text]
    try:
        return float(text)
    except ValueError:
        raise FormatError(f"not a sample value: {text!r}") from None


def _unescape(raw: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), raw)


def _sample(line: str) -> Sample:
    name = METRIC_NAME.match(line)
    if not name:
        raise FormatError(f"no metric name: {line!r}")
    pos = name.end()
    labels: dict[str, str] = {}
    if line.startswith("{", pos):
        pos += 1
        while not line.startswith("}", pos):
            label = LABEL.match(line, pos)
            if not label or label.group(1) in labels:
                raise FormatError(f"labels: {line!r}")
            labels[label.group(1)] = _unescape(label.group(2))
            pos = label.end()
            if line.startswith(",", pos):
                pos += 1
            elif not line.startswith("}", pos):
                raise FormatError(f"labels: {line!r}")
        pos += 1
    if not line.startswith(" ", pos):
        raise FormatError(f"no value: {line!r}")
    rest = line[pos + 1 :]
    if " " in rest:
        raise FormatError(f"more than a value (timestamps are not read): {line!r}")
    return Sample(name.group(), labels, _value(rest))


def _check_histogram(family: Family) -> None:
    series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
    counts: dict[tuple[tuple[str, str], ...], float] = {}
    for s in family.samples:
        if s.name == family.name + "_bucket":
            labels = dict(s.labels)
            if "le" not in labels:
                raise FormatError(f"{family.name}: a bucket without le")
            le = _value(labels.pop("le"))
            series.setdefault(tuple(sorted(labels.items())), []).append((le, s.value))
        elif s.name == family.name + "_count":
            counts[tuple(sorted(s.labels.items()))] = s.value
    for key, buckets in series.items():
        bounds = [b for b, _ in buckets]
        if bounds != sorted(bounds) or bounds[-1] != math.inf:
            raise FormatError(f"{family.name}{dict(key)}: buckets out of order or without +Inf")
        values = [v for _, v in buckets]
        if values != sorted(values) or counts.get(key) != values[-1]:
            raise FormatError(f"{family.name}{dict(key)}: buckets not cumulative or +Inf != _count")


def parse(text: str) -> dict[str, Family]:
    """Every family of an exposition, by the name its TYPE line gives."""
    if not text.endswith("\n"):
        raise FormatError("an exposition ends with a newline")
    families: dict[str, Family] = {}
    helps: dict[str, str] = {}
    current: Family | None = None
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            if not METRIC_NAME.fullmatch(name) or name in helps:
                raise FormatError(f"HELP: {line!r}")
            helps[name] = help_text
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            if not METRIC_NAME.fullmatch(name) or kind not in TYPES or name in families:
                raise FormatError(f"TYPE: {line!r}")
            current = families[name] = Family(name, kind, helps.get(name, ""))
        elif line.startswith("#") or not line:
            raise FormatError(f"neither a comment this reader knows nor a sample: {line!r}")
        else:
            sample = _sample(line)
            if current is None:
                raise FormatError(f"a sample before any TYPE: {line!r}")
            allowed = {current.name}
            if current.type == "histogram":
                allowed = {current.name + s for s in ("_bucket", "_sum", "_count")}
            if sample.name not in allowed:
                raise FormatError(f"{sample.name} in the family of {current.name} ({current.type})")
            key = (sample.name, tuple(sorted(sample.labels.items())))
            if key in seen:
                raise FormatError(f"a series twice: {line!r}")
            seen.add(key)
            current.samples.append(sample)
    for family in families.values():
        if family.type == "histogram":
            _check_histogram(family)
    return families
