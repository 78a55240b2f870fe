"""How results look: short human-readable text on a terminal, the wire JSON with ``--json``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from .._wire.convert import to_wire
from ..types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

__all__ = ["emit_json", "describe_content", "describe_contents", "schema_summary", "Progress"]


def emit_json(value: Any) -> None:
    """Print a wire object (or plain JSON) on stdout, indented."""
    if not isinstance(value, (dict, list, str, int, float, bool, type(None))):
        value = to_wire(value)
    elif isinstance(value, list):
        value = [item if isinstance(item, (dict, str)) else to_wire(item) for item in value]
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _size(data: str) -> str:
    return f"{len(data) * 3 // 4:,} bytes"


def describe_contents(item: Any) -> str:
    """One resource's contents: its text, or a line describing a blob."""
    if isinstance(item, TextResourceContents):
        return item.text
    if isinstance(item, BlobResourceContents):
        return f"[binary {item.mime_type or 'data'} from {item.uri}, {_size(item.blob)}]"
    return json.dumps(to_wire(item), ensure_ascii=False)


def describe_content(block: Any) -> str:
    """One content block as text a person can read."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, ResourceLink):
        return f"[resource link {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    if isinstance(block, EmbeddedResource):
        return describe_contents(block.resource)
    return json.dumps(to_wire(block), ensure_ascii=False)


def _type_of(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"array of {_type_of(schema['items'])}"
    if isinstance(kind, str):
        return kind + (f" ({schema['format']})" if "format" in schema else "")
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list):
        return " | ".join(_type_of(option) for option in options if isinstance(option, Mapping))
    return "any"


def schema_summary(schema: Mapping[str, Any] | None) -> Iterable[str]:
    """One line per property of an input schema: ``name: type (required) — description``."""
    properties = (schema or {}).get("properties") or {}
    required = set((schema or {}).get("required") or [])
    for name, prop in properties.items():
        if not isinstance(prop, Mapping):
            continue
        line = f"{name}: {_type_of(prop)}"
        if name in required:
            line += " (required)"
        elif "default" in prop:
            line += f" = {json.dumps(prop['default'])}"
        if prop.get("description"):
            line += f" — {prop['description']}"
        yield line


class Progress:
    """Shows a call's progress on stderr: one rewritten line on a terminal, one line per update otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown = False

    def update(self, progress: float, total: float | None, message: str | None) -> None:
        text = f"{progress:g}" + (f"/{total:g}" if total is not None else "")
        if message:
            text += f" {message}"
        if self.tty:
            sys.stderr.write(f"\r\x1b[2Kprogress {text}")
        else:
            sys.stderr.write(f"progress {text}\n")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.tty and self.shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
