"""Pull a summary and per-parameter descriptions out of a docstring.

Understands Google style (``Args:`` / ``Attributes:`` sections), reST field lists (``:param x:``) and NumPy
style (``Parameters`` underlined with dashes). Anything it does not understand is simply not used.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

__all__ = ["parse_docstring", "class_doc"]

_GOOGLE_PARAM_SECTIONS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "attributes", "other parameters"}
)
_GOOGLE_OTHER_SECTIONS = frozenset(
    {
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "examples",
        "example",
        "notes",
        "note",
        "see also",
        "warnings",
        "warning",
        "todo",
        "references",
        "methods",
    }
)
_GOOGLE_HEADER = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_FIELD = re.compile(
    r"^\s*:(param|parameter|arg|argument|key|keyword|ivar|var|cvar)\s+(?:[^:]*\s)?\*{0,2}"
    r"([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)$"
)
_REST_ANY_FIELD = re.compile(r"^\s*:[A-Za-z]+[^:]*:")
_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::.*)?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(parts: list[str]) -> str:
    return " ".join(part.strip() for part in parts if part.strip())


def parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """``(summary, {parameter: description})``; the summary is the text before the first section."""
    if not doc or not doc.strip():
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, str] = {}
    summary_end = len(lines)
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        header = _GOOGLE_HEADER.match(line)
        if header and header.group(1).lower() in (_GOOGLE_PARAM_SECTIONS | _GOOGLE_OTHER_SECTIONS):
            summary_end = min(summary_end, i)
            if header.group(1).lower() in _GOOGLE_PARAM_SECTIONS:
                i = _google_section(lines, i, params)
                continue
        elif i + 1 < len(lines) and stripped and _NUMPY_UNDERLINE.match(lines[i + 1]):
            summary_end = min(summary_end, i)
            if stripped.lower() in _GOOGLE_PARAM_SECTIONS:
                i = _numpy_section(lines, i + 2, params)
                continue
            i += 2
            continue
        elif _REST_ANY_FIELD.match(line):
            summary_end = min(summary_end, i)
            field = _REST_FIELD.match(line)
            if field:
                i = _rest_field(lines, i, field.group(2), field.group(3), params)
                continue
        i += 1
    summary = "\n".join(lines[:summary_end]).strip()
    return (summary or None), params


def _google_section(lines: list[str], start: int, params: dict[str, str]) -> int:
    base = _indent(lines[start])
    i = start + 1
    entry_indent: int | None = None
    name: str | None = None
    parts: list[str] = []
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if indent <= base:
            break
        if entry_indent is None:
            entry_indent = indent
        entry = _GOOGLE_ENTRY.match(line.strip()) if indent == entry_indent else None
        if entry:
            if name is not None:
                params.setdefault(name, _join(parts))
            name, parts = entry.group(1), [entry.group(2)]
        elif name is not None:
            parts.append(line)
        i += 1
    if name is not None:
        params.setdefault(name, _join(parts))
    return i


def _numpy_section(lines: list[str], start: int, params: dict[str, str]) -> int:
    i = start
    name: str | None = None
    parts: list[str] = []
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and _NUMPY_UNDERLINE.match(lines[i + 1]):
            break  # next section
        if line.strip() and _indent(line) == 0:
            entry = _NUMPY_ENTRY.match(line.strip())
            if name is not None:
                params.setdefault(name, _join(parts))
            name, parts = (entry.group(1), []) if entry else (None, [])
        elif name is not None:
            parts.append(line)
        i += 1
    if name is not None:
        params.setdefault(name, _join(parts))
    return i


def _rest_field(lines: list[str], start: int, name: str, first: str, params: dict[str, str]) -> int:
    base = _indent(lines[start])
    parts = [first]
    i = start + 1
    while i < len(lines) and lines[i].strip() and _indent(lines[i]) > base:
        parts.append(lines[i])
        i += 1
    params.setdefault(name, _join(parts))
    return i


def class_doc(cls: Any) -> str | None:
    """A class's own docstring, or None: a dataclass without one gets a generated signature, which is no description."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return None
    if dataclasses.is_dataclass(cls) and doc.startswith(f"{getattr(cls, '__name__', '')}("):
        return None
    return doc
