"""Tools: definitions, annotations, and the ``tools/*`` params and results."""

from typing import Any, Literal

import attrs

from ._base import CacheablePaginatedResult, Icon, Meta, Result, WireType
from .content import ContentBlock

__all__ = [
    "ToolAnnotations",
    "ToolExecution",
    "Tool",
    "ListToolsResult",
    "CallToolResult",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ToolAnnotations(WireType):
    """Untrusted hints about how a tool behaves (2025-03-26+)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ToolExecution(WireType):
    """How a tool may be run; ``task_support`` says whether it can become a task (2025-11-25 core tasks)."""

    task_support: Literal["forbidden", "optional", "required"] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Tool(WireType):
    """A tool the model can call; the schemas are JSON Schema objects kept verbatim."""

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    execution: ToolExecution | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ListToolsResult(CacheablePaginatedResult):
    """One page of ``tools/list``."""

    tools: list[Tool]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CallToolResult(Result):
    """The outcome of a tool call; a failing tool sets ``is_error`` rather than raising a protocol error."""

    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool | None = None
