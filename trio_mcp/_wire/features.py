"""Revision differences as data: which revisions have each feature, and one projection step that removes
from a wire object the fields its revision does not define.

Code that depends on the revision asks ``has(version, Feature.X)`` or calls ``project(kind, obj, version)``;
it never compares revision strings itself.
"""

from __future__ import annotations

import enum
import functools
from typing import Any, Final

from .versions import V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25, V2026_07_28

__all__ = ["Feature", "REVISIONS", "has", "project", "content_for_revision", "defines_every_field"]


class Feature(enum.Enum):
    """A protocol feature that exists in some revisions only."""

    BATCHES = "JSON-RPC batches"
    TOOL_ANNOTATIONS = "tool annotations"
    AUDIO_CONTENT = "audio content"
    COMPLETIONS = "the completions capability"
    PROGRESS_MESSAGE = "a message in progress notifications"
    TITLE = "display titles"
    STRUCTURED_OUTPUT = "structured tool output"
    RESOURCE_LINKS = "resource links in tool results"
    ELICITATION = "elicitation"
    LAST_MODIFIED = "annotations.lastModified"
    ICONS = "icons"
    IMPLEMENTATION_DETAILS = "description and websiteUrl of an implementation"
    URL_ELICITATION = "URL-mode elicitation"
    SAMPLING_TOOLS = "tools in sampling"
    TASKS = "tasks: the tasks capability, tasks/* requests, Tool.execution"
    TASKS_EXTENSION = "tasks as an extension (io.modelcontextprotocol/tasks)"
    PRIMING_EVENTS = "an SSE stream opened by an event id and a retry hint (Streamable HTTP)"
    HTTP_SSE = "the HTTP+SSE transport (an SSE stream and a POST endpoint it names)"
    DEADLINES = "request deadlines, declared as an extension under capabilities.extensions"

    # Members are singletons compared by identity: hash them so too, not by their name in Python (``has`` looks
    # features up on every call a server answers).
    __hash__ = object.__hash__


#: Feature -> (first revision that has it, last revision that has it; None while it is current).
REVISIONS: Final[dict[Feature, tuple[str, str | None]]] = {
    Feature.BATCHES: (V2025_03_26, V2025_03_26),
    Feature.TOOL_ANNOTATIONS: (V2025_03_26, None),
    Feature.AUDIO_CONTENT: (V2025_03_26, None),
    Feature.COMPLETIONS: (V2025_03_26, None),
    Feature.PROGRESS_MESSAGE: (V2025_03_26, None),
    Feature.TITLE: (V2025_06_18, None),
    Feature.STRUCTURED_OUTPUT: (V2025_06_18, None),
    Feature.RESOURCE_LINKS: (V2025_06_18, None),
    Feature.ELICITATION: (V2025_06_18, None),
    Feature.LAST_MODIFIED: (V2025_06_18, None),
    Feature.ICONS: (V2025_11_25, None),
    Feature.IMPLEMENTATION_DETAILS: (V2025_11_25, None),
    Feature.URL_ELICITATION: (V2025_11_25, None),
    Feature.SAMPLING_TOOLS: (V2025_11_25, None),
    Feature.TASKS: (V2025_11_25, V2025_11_25),
    Feature.TASKS_EXTENSION: (V2026_07_28, None),
    Feature.PRIMING_EVENTS: (V2025_11_25, None),
    Feature.HTTP_SSE: (V2024_11_05, V2024_11_05),
    Feature.DEADLINES: (V2026_07_28, None),
}


def has(version: str, feature: Feature) -> bool:
    """True when revision ``version`` defines ``feature`` (revision strings are ISO dates, so they sort)."""
    first, last = REVISIONS[feature]
    return first <= version and (last is None or version <= last)


_ITEM_FIELDS: Final = {"title": Feature.TITLE, "icons": Feature.ICONS}

#: Wire object kind -> {field: the feature it belongs to}; ``project`` drops a field its revision lacks.
FIELDS: Final[dict[str, dict[str, Feature]]] = {
    "Tool": {
        **_ITEM_FIELDS,
        "outputSchema": Feature.STRUCTURED_OUTPUT,
        "annotations": Feature.TOOL_ANNOTATIONS,
        "execution": Feature.TASKS,
    },
    "Resource": _ITEM_FIELDS,
    "ResourceTemplate": _ITEM_FIELDS,
    "Prompt": _ITEM_FIELDS,
    "PromptArgument": {"title": Feature.TITLE},
    "Annotations": {"lastModified": Feature.LAST_MODIFIED},
    "Implementation": {
        **_ITEM_FIELDS,
        "description": Feature.IMPLEMENTATION_DETAILS,
        "websiteUrl": Feature.IMPLEMENTATION_DETAILS,
    },
    "ServerCapabilities": {"completions": Feature.COMPLETIONS},
    "CallToolResult": {"structuredContent": Feature.STRUCTURED_OUTPUT},
}


@functools.lru_cache(maxsize=256)
def defines_every_field(kind: str, version: str) -> bool:
    """Whether revision ``version`` defines every field ``project`` knows of ``kind`` (asked for every answer)."""
    return all(has(version, feature) for feature in FIELDS[kind].values())


def project(kind: str, obj: dict[str, Any], version: str) -> dict[str, Any]:
    """``obj`` (a wire object of ``kind``) without the fields revision ``version`` does not define; in place."""
    if defines_every_field(kind, version):
        return obj
    for field, feature in FIELDS[kind].items():
        if field in obj and not has(version, feature):
            del obj[field]
    return obj


def content_for_revision(block: dict[str, Any], version: str) -> dict[str, Any]:
    """A content block ``version`` can carry: one of a kind it lacks becomes a text block describing it."""
    kind = block.get("type")
    if kind == "audio" and not has(version, Feature.AUDIO_CONTENT):
        return {"type": "text", "text": f"[audio content ({block.get('mimeType', 'unknown type')}) omitted]"}
    if kind == "resource_link" and not has(version, Feature.RESOURCE_LINKS):
        name = block.get("title") or block.get("name") or block.get("uri")
        return {"type": "text", "text": f"[resource: {name}]({block.get('uri')})"}
    return block
