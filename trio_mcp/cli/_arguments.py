"""Command-line arguments → tool arguments: ``key=value`` words converted by the tool's input schema.

A value becomes what the property's schema asks for: ``count=3`` is the integer 3 for an ``integer`` property
and the string "3" for a ``string`` one; ``tags=["a","b"]`` is parsed as JSON for an array or object. Where the
schema allows several kinds, JSON is tried first and the text is kept as a string if that is allowed. One word
that is a JSON object (``'{"a": 1}'``) gives many arguments at once; ``key=value`` words after it override.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._schema._util import json_kind
from ._exit import USAGE, CliError

__all__ = ["tool_arguments", "string_arguments"]

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def _split(word: str) -> tuple[str, str]:
    key, sep, value = word.partition("=")
    if not sep or not key:
        raise CliError(f"argument {word!r}: expected key=value (or one JSON object such as '{{\"key\": 1}}')", USAGE)
    return key, value


def _kinds(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a property schema allows, in a useful order; empty when it does not say."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    kinds: list[str] = []
    for keyword in ("anyOf", "oneOf"):
        for option in schema.get(keyword) or []:
            if isinstance(option, Mapping):
                kinds.extend(k for k in _kinds(option) if k not in kinds)
    if not kinds and ("enum" in schema or "const" in schema):
        values = schema.get("enum") or [schema.get("const")]
        if all(isinstance(v, str) for v in values):
            kinds.append("string")
    return kinds


def _convert(key: str, text: str, schema: Mapping[str, Any]) -> Any:
    kinds = _kinds(schema)
    if kinds == ["string"]:
        return text
    if kinds == ["boolean"]:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise CliError(f"{key}={text}: expected a boolean (true/false, yes/no, 1/0)", USAGE)
    if kinds in (["integer"], ["number"]):
        try:
            return int(text)
        except ValueError:
            pass
        if kinds == ["number"]:
            try:
                return float(text)
            except ValueError:
                pass
        raise CliError(f"{key}={text}: expected {'an integer' if kinds == ['integer'] else 'a number'}", USAGE)
    try:
        value = json.loads(text)
    except ValueError:
        if not kinds or "string" in kinds:
            return text
        raise CliError(f"{key}={text}: expected JSON ({' or '.join(kinds)})", USAGE) from None
    if isinstance(value, str) or (kinds and "string" in kinds and json_kind(value) not in kinds):
        return text  # a string property given a word that happens to be JSON keeps the word as typed
    return value


def _object_word(word: str) -> dict[str, Any] | None:
    if not word.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(word)
    except ValueError as exc:
        raise CliError(f"argument {word[:40]!r}: not valid JSON ({exc})", USAGE) from None
    if not isinstance(value, dict):
        raise CliError("a JSON argument must be an object", USAGE)
    return value


def _check(key: str, value: Any, schema: Mapping[str, Any]) -> None:
    """A value from a JSON object word must be of a kind its property allows, as a ``key=value`` word must."""
    kinds = _kinds(schema)
    kind = json_kind(value)
    if kinds and kind not in kinds and not (kind == "integer" and "number" in kinds):
        shown = json.dumps(value, ensure_ascii=False)
        raise CliError(f"{key}: {shown[:40]} is {_kind_name(kind)}; expected {' or '.join(kinds)}", USAGE)


def _kind_name(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def tool_arguments(words: Sequence[str], input_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Build a tool's arguments from the words after its name (``CliError`` with status 2 when they do not fit,
    or when a required argument is missing: the call would only fail on the server)."""
    properties = (input_schema or {}).get("properties") or {}
    arguments: dict[str, Any] = {}
    for word in words:
        whole = _object_word(word)
        if whole is not None:
            for key, value in whole.items():
                schema = properties.get(key)
                _check(key, value, schema if isinstance(schema, Mapping) else {})
            arguments.update(whole)
            continue
        key, text = _split(word)
        schema = properties.get(key)
        arguments[key] = _convert(key, text, schema if isinstance(schema, Mapping) else {})
    missing = [name for name in (input_schema or {}).get("required") or [] if name not in arguments]
    if missing:
        needed = " ".join(f"{name}=..." for name in missing)
        raise CliError(f"missing required argument{'s' if len(missing) > 1 else ''}: {needed}", USAGE)
    return arguments


def string_arguments(words: Sequence[str]) -> dict[str, str]:
    """A prompt's arguments, which are always strings."""
    arguments: dict[str, str] = {}
    for word in words:
        whole = _object_word(word)
        if whole is not None:
            if not all(isinstance(v, str) for v in whole.values()):
                raise CliError("prompt arguments are strings: every value of the JSON object must be a string", USAGE)
            arguments.update(whole)
            continue
        key, text = _split(word)
        arguments[key] = text
    return arguments
