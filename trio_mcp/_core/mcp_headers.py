"""The 2026-07-28 request headers, without I/O: ``Mcp-Name`` and ``Mcp-Param-*`` value encoding and the
``x-mcp-header`` schema rules.

A value that cannot travel as a plain header (non-ASCII, control characters, leading or trailing white
space, or text that already looks like the sentinel) is sent as ``=?base64?<base64 of UTF-8>?=``.
"""

from __future__ import annotations

import base64
import binascii
import collections
import re
from collections.abc import Mapping
from typing import Any, Final

from .._wire.methods import METHODS, TASKS_EXTENSION_METHODS
from .._wire.versions import V2026_07_28

__all__ = [
    "encode_header_value",
    "decode_header_value",
    "header_matches",
    "header_paths",
    "HeaderRuleError",
    "NAMED_METHODS",
    "SAFE_INTEGER",
    "TOKEN",
]

_PREFIX: Final = "=?base64?"
_SUFFIX: Final = "?="
# Both end in \Z, not $: "$" also matches before a final line break, which would let one into a header.
_PLAIN: Final = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?\Z")
#: A character a header value may not contain (any control character but tab).
_CONTROL: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
#: An RFC 9110 token: what an ``x-mcp-header`` name must be.
TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
#: The 2026-07-28 methods whose ``Mcp-Name`` header mirrors a body param, and which param (from the method table).
NAMED_METHODS: Final[Mapping[str, str]] = {
    spec.method: spec.name_param
    for spec in (*METHODS.values(), *TASKS_EXTENSION_METHODS.values())
    if spec.name_param is not None and V2026_07_28 in spec.revisions
}
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
    if _CONTROL.search(value):
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
    if isinstance(expected, str):  # the usual case, first (a str is neither a bool nor a number)
        return text == expected
    if isinstance(expected, bool):
        return text == ("true" if expected else "false")
    if isinstance(expected, int) or (isinstance(expected, float) and expected.is_integer()):
        try:
            return float(text) == float(expected)
        except ValueError:
            return False
    return False


#: Keywords whose value is one subschema (``items`` may also be a list of them).
_SUBSCHEMA: Final = (
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
#: Keywords whose value is a list of subschemas.
_SUBSCHEMA_LISTS: Final = ("prefixItems", "allOf", "anyOf", "oneOf", "items")
#: Keywords whose value maps names to subschemas (``properties`` is handled on its own: it alone is reachable).
_SUBSCHEMA_MAPS: Final = ("patternProperties", "$defs", "definitions", "dependentSchemas")
_HEADER_TYPES: Final = frozenset({"integer", "string", "boolean"})


def header_paths(input_schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """``{header name: property path}`` for every ``x-mcp-header`` in a tool's input schema.

    Raises ``HeaderRuleError`` naming the first rule of 2026-07-28 an annotation breaks: an empty or non-token
    name, a duplicate (ignoring case), a property that is not integer/string/boolean (a ``null`` beside the
    type is allowed: a null value leaves the header out), or one not reachable from the root through
    ``properties`` keys alone. The walk visits schema positions only, so a property *named* ``x-mcp-header``
    or a key inside a ``default`` is not taken for an annotation; it is iterative, so depth costs no stack.
    """
    found: dict[str, tuple[str, ...]] = {}
    queue: collections.deque[tuple[Any, tuple[str, ...], bool]] = collections.deque([(input_schema, (), True)])
    while queue:
        node, path, reachable = queue.popleft()
        if not isinstance(node, Mapping):
            continue
        if "x-mcp-header" in node:
            _check_annotation(node["x-mcp-header"], node, path, reachable, found)
            found[node["x-mcp-header"]] = path
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            for key, child in properties.items():
                queue.append((child, (*path, str(key)), reachable))
        for keyword in _SUBSCHEMA:
            child = node.get(keyword)
            if isinstance(child, Mapping):
                queue.append((child, (*path, keyword), False))
        for keyword in _SUBSCHEMA_LISTS:
            children = node.get(keyword)
            if isinstance(children, list):
                queue.extend((child, (*path, keyword, str(index)), False) for index, child in enumerate(children))
        for keyword in _SUBSCHEMA_MAPS:
            children = node.get(keyword)
            if isinstance(children, Mapping):
                queue.extend((child, (*path, keyword, str(key)), False) for key, child in children.items())
    return found


def _check_annotation(
    name: Any, schema: Mapping[str, Any], path: tuple[str, ...], reachable: bool, found: Mapping[str, Any]
) -> None:
    where = "/".join(path) or "the schema root"
    if not reachable or not path:
        raise HeaderRuleError(f"x-mcp-header at {where} is not on a property reachable through 'properties' alone")
    if not isinstance(name, str) or not name:
        raise HeaderRuleError(f"x-mcp-header at {where} is {name!r}; it must be a non-empty string")
    if not TOKEN.match(name):
        raise HeaderRuleError(f"x-mcp-header {name!r} at {where} is not an RFC 9110 token")
    if name.lower() in {seen.lower() for seen in found}:
        raise HeaderRuleError(f"x-mcp-header {name!r} at {where} is used twice (names are compared ignoring case)")
    declared = schema.get("type")
    kinds = [kind for kind in declared if kind != "null"] if isinstance(declared, list) else [declared]
    if len(kinds) != 1 or kinds[0] not in _HEADER_TYPES:
        raise HeaderRuleError(
            f"x-mcp-header {name!r} at {where} is on a property of type {declared!r}; "
            "only integer, string or boolean properties may carry one"
        )
