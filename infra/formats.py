"""Value formats that both the config check and the policy pack read: image references, quantities,
a command-line flag's value.

One parser per format, so the stack file check (`infra.config`) and the pack (`policies`) can never
disagree about what a pinned image or a quantity is. This module imports nothing of the project,
so any package may import it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, DecimalException
from typing import Any

# --------------------------------------------------------------------------------------------
# Image references
#
# The grammar is the one container runtimes parse, github.com/distribution/reference v0.6.0
# (reference.go, regexp.go):
#   reference      := name [ ":" tag ] [ "@" digest ]
#   name           := [domain "/"] path-component ["/" path-component]*
#   domain         := domain-component ["." domain-component]* [":" port-number]
#   path-component := alpha-numeric [separator alpha-numeric]*, separator := [_.] | __ | [-]+
#   tag            := [\w][\w.-]{0,127}
#   digest         := algorithm ":" hex (at least 32 hex digits; sha256 has exactly 64,
#                     github.com/opencontainers/go-digest algorithm.go)
# and a name is at most 255 characters.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"^(?P<name>{_NAME})(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?\Z", re.ASCII)
NAME_MAX_LENGTH = 255
SHA256_HEX_LENGTH = 64


@dataclass(frozen=True)
class ImageReference:
    """A parsed image reference: `name[:tag][@digest]`."""

    name: str
    tag: str | None
    digest: str | None


def parse_image(reference: str) -> ImageReference | None:
    """The reference's parts, or None when it is not a reference a container runtime accepts."""
    m = _REFERENCE.match(reference)
    if m is None or len(m["name"]) > NAME_MAX_LENGTH:
        return None
    digest = m["digest"]
    if digest is not None:
        algorithm, _, hex_digits = digest.partition(":")
        if algorithm == "sha256" and len(hex_digits) != SHA256_HEX_LENGTH:
            return None
    return ImageReference(name=m["name"], tag=m["tag"], digest=digest)


def floating_tag(tag: str) -> bool:
    """Whether a tag moves: `latest` itself, or `latest` as a word of it (`latest-gpu`, `labeller-latest`).

    Registries move such tags to each new build, so the image behind them changes without a review.
    """
    return "latest" in re.split(r"[-_.]", tag.lower())


def image_problem(reference: str) -> str | None:
    """Why the image is not pinned, or None when a digest or a fixed tag pins it.

    A digest pins the image whatever the tag says (the runtime pulls by digest); without one, the
    tag must not float, and an untagged reference means `latest`.
    """
    parsed = parse_image(reference)
    if parsed is None:
        return "is not a valid image reference (name[:tag][@sha256:<64 hex digits>])"
    if parsed.digest is not None:
        return None
    if parsed.tag is None:
        return "is untagged"
    if floating_tag(parsed.tag):
        return f"floats on tag '{parsed.tag}'"
    return None


def tag_problem(tag: Any, digest: Any) -> str | None:
    """Why an image given as separate chart fields (`tag` or `version`, `digest`) is not pinned."""
    if digest:
        return None if parse_image(f"x@{digest}") is not None else f"has an invalid digest '{digest}'"
    if tag is None or str(tag) == "":
        return "is untagged"
    text = str(tag)
    if re.fullmatch(_TAG, text, re.ASCII) is None:
        return f"has an invalid tag '{text}'"
    return f"floats on tag '{text}'" if floating_tag(text) else None


# --------------------------------------------------------------------------------------------
# Kubernetes quantities
#
# The grammar of k8s.io/apimachinery/pkg/api/resource/quantity.go (v0.34):
#   <quantity> ::= <signedNumber><suffix>
#   <suffix>   ::= <binarySI> | <decimalExponent> | <decimalSI>
#   <binarySI> ::= Ki | Mi | Gi | Ti | Pi | Ei
#   <decimalSI> ::= n | u | m | "" | k | M | G | T | P | E
#   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
# The same file caps a quantity at 2^63-1 in magnitude; we reject beyond it rather than cap.
QUANTITY_RE = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exp>[+-]?\d+))?\Z",
    re.ASCII,
)
_SCALE: dict[str | None, Decimal] = {
    None: Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
}
QUANTITY_MAX = Decimal(2**63 - 1)
# Longer text is no quantity anyone means, and the exponent arithmetic stays cheap.
_QUANTITY_MAX_LENGTH = 64


def parse_quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity as a number (`6`, `6.0`, `6000m`, `1e3`, `1Gi`), or None when it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        value = repr(value) if isinstance(value, float) else str(value)
    if not isinstance(value, str) or len(value) > _QUANTITY_MAX_LENGTH:
        return None
    m = QUANTITY_RE.match(value)
    if m is None:
        return None
    try:
        number = Decimal(m["number"])
        if m["exp"] is not None:
            exponent = int(m["exp"])
            if abs(exponent) > 30:
                return None
            number = number.scaleb(exponent)
        else:
            number *= _SCALE[m["suffix"]]
    except DecimalException:
        return None
    return number if abs(number) <= QUANTITY_MAX else None


# --------------------------------------------------------------------------------------------
# Engine-shaped values


def plain(value: Any) -> Any:
    """A plain copy of registered or proxied values: dicts, lists, and whole floats back to ints.

    The engine sends every number as a float (`3` arrives as `3.0`) and the policy SDK wraps
    properties in `Mapping` and `Sequence` proxies that are not dicts or lists.
    """
    if isinstance(value, Mapping):
        return {str(k): plain(value[k]) for k in value}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(value[i]) for i in range(len(value))]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An exact chart version: semver, optionally `v`-prefixed (`v1.20.2`, `0.19.0`), with no range
# operator or wildcard; a range would let `pulumi up` install a chart nobody reviewed. The catalog's
# pins, `modelplane:chartMirror`'s versions and the `pinned-versions` policy all hold to it.
EXACT_CHART_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def flag_value(args: Sequence[str], *flags: str) -> tuple[int, str] | None:
    """The last `flag value` / `flag=value` of any of `flags` in args: (index of the flag, value)."""
    found = None
    for i, arg in enumerate(args):
        flag, sep, value = arg.partition("=")
        if flag in flags:
            given = value if sep else (args[i + 1] if i + 1 < len(args) else "")
            found = (i, given)
    return found
