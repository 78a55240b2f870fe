"""Shared pieces of the schema package: error records, path formatting and value descriptions.

Both the validator and the type converters report failures as ``Err`` records and render them the same
way, so a message reads alike whether it came from ``validate()`` or from ``FunctionSchema.bind()``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple, Union

#: How deeply values (and, while validating, schemas) may nest before we give up with an error.
MAX_DEPTH: Final = 100
#: How many errors one call reports before summarising the rest.
MAX_ERRORS: Final = 50

PathKey = Union[str, int]
Path = tuple[PathKey, ...]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")


class Err(NamedTuple):
    """One failure at one place.

    For "wrong kind of value" failures ``message`` is empty and ``expected``/``got`` say what was wanted and
    found, so unions can merge them; the text is only built when it is shown (``text()``).
    """

    path: Path
    message: str
    expected: tuple[str, ...] = ()
    got: Any = None

    def text(self) -> str:
        """The human-readable message."""
        return self.message or expected_message(self.expected, self.got)


class Abort(Exception):
    """Raised inside a walk that must stop at once (too deep, too much work); caught by the entry point."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def format_path(path: Path, root: str, prefixed: bool = True) -> str:
    """``("a", 2, "b c")`` → ``$.a[2]["b c"]``; ``root`` alone names the empty path.

    With ``prefixed=False`` the root is left off non-empty paths, so argument errors read ``city: ...`` rather
    than ``arguments.city: ...``.
    """
    if not path:
        return root
    parts = [root] if prefixed else []
    for index, key in enumerate(path):
        if len(path) > 16 and index == 8:
            parts.append(f"...({len(path) - 12} more)...")
        if len(path) > 16 and 8 <= index < len(path) - 4:
            continue
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif _IDENTIFIER.match(key):
            parts.append(f".{key}" if parts else key)
        else:
            parts.append(f"[{json.dumps(key, ensure_ascii=False)}]")
    return "".join(parts)


def show(value: Any, limit: int = 40) -> str:
    """A short literal for a JSON value: strings quoted Python-style, the rest as JSON."""
    if isinstance(value, str):
        if len(value) > limit:
            value = value[: limit - 3] + "..."
        return repr(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        text = repr(value) if isinstance(value, float) and not math.isfinite(value) else json.dumps(value)
        return text if len(text) <= limit else text[: limit - 3] + "..."
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(value: Any) -> str:
    """What a value is, for "got ..." in messages: ``string 'x'``, ``5``, ``true``, ``null``, ``array``, ``object``."""
    if isinstance(value, str):
        return "string " + show(value)
    if value is None or isinstance(value, (bool, int, float)):
        return show(value)
    if isinstance(value, (list, tuple)):
        return "array" if value else "empty array"
    if isinstance(value, dict):
        return "object" if value else "empty object"
    return f"{type(value).__name__} object"


def expected_message(expected: Sequence[str], value: Any, limit: int = 10) -> str:
    """``expected integer or string, got 2.5`` / ``expected one of 'a', 'b', 'c', got string 'd'``."""
    names = list(dict.fromkeys(expected))
    if len(names) > limit:
        names = names[:limit] + ["..."]
    if len(names) == 1:
        wanted = names[0]
    elif len(names) == 2:
        wanted = f"{names[0]} or {names[1]}"
    else:
        wanted = "one of " + ", ".join(names)
    return f"expected {wanted}, got {describe(value)}"


def mismatch(path: Path, expected: Sequence[str], value: Any) -> Err:
    """The error for a value of the wrong kind (type, enum or const)."""
    return Err(path, "", tuple(expected), value)


def merge_alternatives(value: Any, path: Path, failures: Sequence[Sequence[Err]], keyword: str) -> list[Err]:
    """Turn the failures of every alternative of a union / ``anyOf`` into the most useful errors.

    When every alternative merely wanted another kind of value here, one ``expected A or B`` error says it all.
    When exactly one alternative got further (the value had its kind but was wrong inside), its errors are the
    ones that help; otherwise a summary line is followed by the errors of the alternative that failed least.
    """
    shallow: list[str] = []
    deep: list[Sequence[Err]] = []
    for errs in failures:
        if len(errs) == 1 and errs[0].expected and not errs[0].message and errs[0].path == path:
            shallow.extend(errs[0].expected)
        else:
            deep.append(errs)
    if not deep:
        return [mismatch(path, shallow, value)]
    if len(deep) == 1:
        return list(deep[0])
    best = min(deep, key=len)
    return [Err(path, f"matches none of the {len(failures)} alternatives of {keyword}")] + list(best)


def render(errors: Iterable[Err], root: str, prefixed: bool = True, limit: int = MAX_ERRORS) -> list[str]:
    """Error records → strings, keeping the first ``limit`` and summarising the rest."""
    out: list[str] = []
    extra = 0
    for err in errors:
        if len(out) < limit:
            out.append(f"{format_path(err.path, root, prefixed)}: {err.text()}")
        else:
            extra += 1
    if extra:
        out.append(f"... and {extra} more error{'s' if extra != 1 else ''}")
    return out


def json_kind(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value (``True`` is a boolean, not an integer)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"
