"""The 2026-07-28 request headers, without I/O: ``Mcp-Name`` and ``Mcp-Param-*`` value encoding and the
``x-mcp-header`` schema rules.

A value that cannot travel as a plain header (non-ASCII, control characters, leading or trailing white
space, or text that already looks like the sentinel) is sent as ``=?base64?<base64 of UTF-8>?=``.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final, Mapping

__all__ = [
    "encode_header_value",
    "decode_header_value",
    "header_matches",
    "header_paths",
    "HeaderRuleError",
    "SAFE_INTEGER",
]

_PREFIX: Final = "=?base64?"
_SUFFIX: Final = "?="
_PLAIN: Final = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")
_TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
#: JavaScript's safe-integer bound: x-mcp-header integers must stay within it.
SAFE_INTEGER: Final = 2**53 - 1


class HeaderRuleError(ValueError):
    """A tool's ``x-mcp-header`` annotations break the rules; the message says which and why."""


def encode_header_value(value: str | int | bool) -> str:
    """A JSON scalar as a header value: booleans as ``true``/``false``, integers in decimal, strings plain or base64."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if _PLAIN.match(value) and not (value.startswith(_PREFIX) and value.endswith(_SUFFIX)) or value == "":
        return value
    return _PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _SUFFIX


def decode_header_value(raw: str) -> str:
    """The text a header value stands for (optional white space trimmed, the base64 form decoded).

    Raises ``ValueError`` for a malformed base64 form or characters a header value may not contain.
    """
    value = raw.strip(" \t")
    if any(ord(ch) < 0x20 and ch != "\t" or ord(ch) == 0x7F for ch in value):
        raise ValueError("header value contains control characters")
    if value.startswith(_PREFIX) and value.endswith(_SUFFIX) and len(value) >= len(_PREFIX) + len(_SUFFIX):
        payload = value[len(_PREFIX) : len(value) - len(_SUFFIX)]
        try:
            return base64.b64decode(payload, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ValueError(f"malformed base64 header value: {exc}") from None
    return value


def header_matches(raw: str, expected: Any) -> bool:
    """Whether a received header value stands for the body value ``expected`` (integers compared numerically)."""
    try:
        text = decode_header_value(raw)
    except ValueError:
        return False
    if isinstance(expected, bool):
        return text == ("true" if expected else "false")
    if isinstance(expected, int) or (isinstance(expected, float) and expected.is_integer()):
        try:
            return float(text) == float(expected)
        except ValueError:
            return False
    return isinstance(expected, str) and text == expected


def header_paths(input_schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """``{header name (lower case): property path}`` for every ``x-mcp-header`` in a tool's input schema.

    Raises ``HeaderRuleError`` when an annotation breaks the rules of 2026-07-28: an empty or non-token name,
    a duplicate (ignoring case), a property that is not integer/string/boolean, or one not reachable from the
    root through ``properties`` keys alone.
    """
    found: dict[str, tuple[str, ...]] = {}
    reachable: set[int] = set()

    def walk(schema: Any, path: tuple[str, ...]) -> None:
        if not isinstance(schema, Mapping):
            return
        reachable.add(id(schema))
        name = schema.get("x-mcp-header")
        if name is not None:
            _check_annotation(name, schema, path, found)
            found[name.lower()] = path
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for key, child in properties.items():
                walk(child, (*path, key))

    walk(input_schema, ())
    stray = _stray_annotation(input_schema, reachable)
    if stray is not None:
        raise HeaderRuleError(f"x-mcp-header {stray!r} is not reachable through 'properties' alone")
    return found


def _check_annotation(name: Any, schema: Mapping[str, Any], path: tuple[str, ...], found: Mapping[str, Any]) -> None:
    where = ".".join(path) or "<root>"
    if not isinstance(name, str) or not name or not _TOKEN.match(name):
        raise HeaderRuleError(f"x-mcp-header on {where} must be a non-empty HTTP token, not {name!r}")
    if name.lower() in found:
        raise HeaderRuleError(f"x-mcp-header {name!r} is used twice (names are compared ignoring case)")
    kind = schema.get("type")
    if kind not in ("string", "integer", "boolean"):
        raise HeaderRuleError(f"x-mcp-header {name!r} on {where}: only string, integer and boolean are allowed")
    if not path:
        raise HeaderRuleError(f"x-mcp-header {name!r} cannot annotate the schema root")


def _stray_annotation(schema: Any, reachable: set[int], depth: int = 0) -> str | None:
    """An ``x-mcp-header`` found anywhere the static walk did not reach (under items, anyOf, $defs...)."""
    if depth > 64:
        return None
    if isinstance(schema, Mapping):
        if "x-mcp-header" in schema and id(schema) not in reachable:
            return str(schema["x-mcp-header"])
        children: Any = schema.values()
    elif isinstance(schema, list):
        children = schema
    else:
        return None
    for child in children:
        stray = _stray_annotation(child, reachable, depth + 1)
        if stray is not None:
            return stray
    return None
