"""What each provider's Python SDK declares a resource to take, for the test providers' `Check`.

The real providers answer `Check` from their schema: an unknown property is rejected or silently
dropped, a wrong scalar type is rejected, a missing required input is rejected. The Python SDK
that the program uses is generated from that same schema, so its `@pulumi.input_type` classes
name every property (`pulumi.getter(name=...)`) with its type, and its `_utilities.register`
table maps each type token to the class that registers it. This module reads those, lazily: a
provider process imports only the SDK modules of the types it is asked about.
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import importlib
import json
import re
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi import _types

from clouds import CLOUDS

# The Python package of each provider plugin the program uses: every cloud's, and Kubernetes'.
SDK_PACKAGES = {
    **{c.provider_package: c.sdk for c in CLOUDS if c.provider_package is not None and c.sdk is not None},
    "kubernetes": "pulumi_kubernetes",
}


class Unknown:
    """A value the engine has not computed yet: it matches every shape."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = Unknown()


@functools.cache
def _token_table(package: str) -> dict[str, tuple[str, str]]:
    """type token -> (module, class name), from the SDK's own `register(resource_modules=...)`."""
    root = Path(importlib.util.find_spec(SDK_PACKAGES[package]).origin).parent  # type: ignore[union-attr]
    source = (root / "__init__.py").read_text()
    match = re.search(r'resource_modules="""(.*?)"""', source, re.S)
    table: dict[str, tuple[str, str]] = {}
    for module in json.loads(match.group(1)) if match else []:
        for token, class_name in module["classes"].items():
            table[token] = (module["fqn"], class_name)
    return table


@functools.cache
def args_class(token: str) -> type | None:
    """The `@pulumi.input_type` class a resource of `token` takes, or None for one we cannot read."""
    if token.startswith("pulumi:providers:"):
        package = token.removeprefix("pulumi:providers:")
        if package not in SDK_PACKAGES:
            return None
        module_name, class_name = SDK_PACKAGES[package], "Provider"
    else:
        package = token.split(":", 1)[0]
        if package not in SDK_PACKAGES:
            return None
        found = _token_table(package).get(token)
        if found is None:
            return None
        module_name, class_name = found
    resource = getattr(importlib.import_module(module_name), class_name)
    # The args class sits in the resource's own file. Where a nested input type has the name
    # `<Class>Args` (azure-native's `network.SubnetArgs` is a VNet's subnet block), the generator
    # names the resource's `<Class>InitArgs`.
    own = sys.modules[resource.__module__]
    for name in (f"{class_name}InitArgs", f"{class_name}Args"):
        cls = getattr(own, name, None)
        if cls is not None and cls.__module__ == own.__name__ and _types.is_input_type(cls):
            return cls
    return None


def _members(hint: Any) -> tuple[list[Any], bool]:
    """The shapes a hint admits on the wire, without the SDK's Awaitable/Output wrappers, and
    whether it admits nothing (None)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        shapes: list[Any] = []
        optional = False
        for arg in typing.get_args(hint):
            inner, none = _members(arg)
            shapes += inner
            optional = optional or none
        return shapes, optional
    if hint is type(None):
        return [], True
    origin = typing.get_origin(hint)
    if origin in (collections.abc.Awaitable, pulumi.Output) or hint is pulumi.Output:
        return [], False
    return [hint], False


def required(cls: type) -> frozenset[str]:
    return _types._required_property_names(cls)


def properties(cls: type) -> dict[str, Any]:
    """Pulumi name -> type hint, as the SDK declares them."""
    return _types._raw_return_hints(cls)


@dataclass(frozen=True)
class Failure:
    path: str
    reason: str


def check(token: str, inputs: dict[str, Any]) -> list[Failure]:
    """Every property of `inputs` the provider's schema does not take, with its path and why."""
    cls = args_class(token)
    if cls is None:
        return []
    if token.startswith("pulumi:providers:"):
        # The SDK sends a provider's non-string settings JSON-encoded (pulumi/runtime/resource.py,
        # provider inputs), and the providers decode them before they check. `version` and
        # `__internal` are the engine's own keys in every provider's inputs
        # (pkg/resource/deploy/providers/registry.go at v3.274.1, `versionKey`, `internalKey`).
        inputs = {k: _decoded(v) for k, v in inputs.items() if k not in ("version", "__internal")}
    return _check_object(cls, inputs, "")


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return decoded if isinstance(decoded, bool | int | float) else value
    return value


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}" if path else key
    return f'{path}["{key}"]'


def _check_object(cls: type, value: dict[str, Any], path: str) -> list[Failure]:
    declared = properties(cls)
    failures: list[Failure] = []
    for key, item in value.items():
        if key not in declared:
            failures.append(Failure(_join(path, key), f"{cls.__name__} declares no property '{key}'"))
            continue
        failures += _check_value(declared[key], item, _join(path, key))
    for key in sorted(required(cls) - value.keys()):
        failures.append(Failure(_join(path, key), f"missing required property '{key}'"))
    return failures


def _check_value(hint: Any, value: Any, path: str) -> list[Failure]:
    if isinstance(value, Unknown):
        return []
    shapes, optional = _members(hint)
    if value is None:
        return [] if optional or not shapes else [Failure(path, "a required value is null")]
    best: list[Failure] | None = None
    for shape in shapes:
        failures = _check_shape(shape, value, path)
        if not failures:
            return []
        if best is None or len(failures) < len(best):
            best = failures
    return best or []


def _check_shape(shape: Any, value: Any, path: str) -> list[Failure]:
    origin = typing.get_origin(shape)
    if shape is Any or shape is object:
        return []
    if origin is typing.Literal:
        allowed = typing.get_args(shape)
        return [] if value in allowed else [Failure(path, f"expected one of {list(allowed)}, got {value!r}")]
    if origin in (list, collections.abc.Sequence, typing.Sequence):
        if not isinstance(value, list):
            return [Failure(path, f"expected a list, got {type(value).__name__}")]
        (item_hint,) = typing.get_args(shape) or (Any,)
        return [f for i, item in enumerate(value) for f in _check_value(item_hint, item, _join(path, i))]
    if origin in (dict, collections.abc.Mapping, typing.Mapping):
        if not isinstance(value, dict):
            return [Failure(path, f"expected a map, got {type(value).__name__}")]
        args = typing.get_args(shape)
        item_hint = args[1] if len(args) == 2 else Any
        return [f for k, item in value.items() for f in _check_value(item_hint, item, _join(path, k))]
    if isinstance(shape, type):
        if _types.is_input_type(shape):
            if not isinstance(value, dict):
                return [Failure(path, f"expected an object ({shape.__name__}), got {type(value).__name__}")]
            return _check_object(shape, value, path)
        if typing.is_typeddict(shape):
            return [] if isinstance(value, dict) else [Failure(path, "expected an object")]
        if issubclass(shape, enum.Enum):
            allowed = [m.value for m in shape]
            return [] if value in allowed else [Failure(path, f"expected one of {allowed}, got {value!r}")]
        if shape is bool:
            return [] if isinstance(value, bool) else [Failure(path, f"expected a bool, got {value!r}")]
        if shape is int:
            ok = isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer()
            return [] if ok else [Failure(path, f"expected an integer, got {value!r}")]
        if shape is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            return [] if ok else [Failure(path, f"expected a number, got {value!r}")]
        if shape is str:
            return [] if isinstance(value, str) else [Failure(path, f"expected a string, got {value!r}")]
        if issubclass(shape, pulumi.Resource | pulumi.Asset | pulumi.Archive | pulumi.AssetArchive):
            return []
    return []  # a shape this reader does not know is taken as the provider would: unchecked
