"""Tools: registration from Python functions, ``tools/list`` per revision, and ``tools/call`` execution."""

from __future__ import annotations

import collections.abc
import functools
import json
import logging
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypedDict

import attrs

from .._core.mcp_headers import header_paths
from .._schema import ArgumentError, FunctionSchema, OutputError, describe_function
from .._wire.convert import to_wire
from .._wire.features import Feature, content_for_revision, defines_every_field, has, project
from ..types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    Icon,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolAnnotations,
    ToolExecution,
    UnknownContent,
)
from ._blocking import Watch
from ._calls import is_async_callable, is_context, refuse_unannotated_context, starter

__all__ = ["CONTENT_TYPES", "ToolDefinition", "make_tool", "tool_result_wire"]

logger = logging.getLogger("trio_mcp.server")

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")

CONTENT_TYPES = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource, UnknownContent)

#: Why bytes are not a tool result, and what to return instead.
_NO_BARE_BYTES = (
    "MCP tool results have no bare binary content: return ImageContent or AudioContent (base64 data and a "
    "MIME type), an EmbeddedResource with BlobResourceContents (a URI), or serve the bytes as a resource"
)


def _is_unstructured(annotation: Any) -> bool:
    """Return annotations that mean "content, not structured data": str, content blocks, lists of blocks.

    ``list[str]`` is structured data (a JSON array), not a list of text blocks. The whole rule is the table
    in docs/structured-output.md.
    """
    if annotation is str or annotation is CallToolResult or annotation is type(None):
        return True
    return _is_content(annotation)


def _is_content(annotation: Any) -> bool:
    # The generic form first: on Python 3.10 ``list[TextContent]`` is also an instance of ``type``.
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, collections.abc.Sequence, typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        return bool(args) and all(arg is Ellipsis or arg is type(None) or _is_content(arg) for arg in args)
    return isinstance(annotation, type) and issubclass(annotation, CONTENT_TYPES)


@attrs.frozen(kw_only=True, slots=False)
class ToolDefinition:
    """A registered tool: the function, its schemas and the metadata ``tools/list`` shows."""

    name: str
    fn: Callable[..., Any]
    schema: FunctionSchema
    title: str | None = None
    description: str | None = None
    annotations: ToolAnnotations | None = None
    icons: list[Icon] | None = None
    execution: ToolExecution | None = None
    meta: dict[str, Any] | None = None
    is_async: bool = True
    run_in_thread: bool = True
    structured: bool = False
    #: The handler calls ``ctx.start_task()`` to become a task (asking for input inline before that).
    defer_task: bool = False
    #: How many times a task of this tool is run again from the start when its process dies (its input is kept
    #: in the task store for that).
    retry_on_loss: int = 0
    #: How long one step may hold the event loop before a warning (``Server(blocking_warning=...)``).
    watch: Watch | None = None

    @functools.cached_property
    def sees_context(self) -> bool:
        """Whether the function takes the request's ``Context`` (asked on every call)."""
        return bool(self.schema.skipped)

    @functools.cached_property
    def _start(self) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        """``invoke`` for this tool's function, decided once: what ``call`` starts it with."""
        return starter(self.fn, is_async=self.is_async, run_in_thread=self.run_in_thread, watch=self.watch)

    @functools.cached_property
    def header_paths(self) -> dict[str, tuple[str, ...]]:
        """``x-mcp-header`` names and the argument path each mirrors (2026-07-28 HTTP)."""
        return header_paths(self.schema.input_schema)

    def wire(self, version: str) -> dict[str, Any]:
        """The ``Tool`` object as the given revision defines it (fields it lacks are left out)."""
        tool: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            tool["title"] = self.title
        if self.description is not None:
            tool["description"] = self.description
        tool["inputSchema"] = self.schema.input_schema
        if self.schema.output_schema is not None and self.structured:
            tool["outputSchema"] = self.schema.output_schema
        if self.annotations is not None:
            tool["annotations"] = to_wire(self.annotations)
        if self.execution is not None:
            tool["execution"] = to_wire(self.execution)
        if self.icons:
            tool["icons"] = [to_wire(icon) for icon in self.icons]
        if self.meta is not None:
            tool["_meta"] = self.meta
        return project("Tool", tool, version)

    def finish(self, value: Any, version: str) -> dict[str, Any]:
        """What the function returned, as the finished ``CallToolResult`` wire object for ``version``, the
        request's (a value its annotation does not allow raises ``TypeError``)."""
        result = tool_result_wire(self, value)
        if _sent_as_built(version):
            return result
        result["content"] = [content_for_revision(block, version) for block in result["content"]]
        return project("CallToolResult", result, version)

    def call(self, arguments: Mapping[str, Any] | None, context: object) -> Awaitable[Any]:
        """Validate ``arguments`` and start the function (sync ones in a worker thread, ``context`` in each injected
        parameter): what to await for its value.

        Raises ``ArgumentError`` for bad arguments; whatever the function raises propagates from the await.
        """
        schema = self.schema
        kwargs = schema.bind(arguments)
        if schema.skipped:
            for name in schema.skipped:
                kwargs[name] = context
        return self._start(kwargs)


class ToolOptions(TypedDict, total=False):
    """What ``Server.add_tool()`` takes besides the function: the keywords of ``Server.tool()``."""

    name: str | None
    title: str | None
    description: str | None
    annotations: ToolAnnotations | Mapping[str, Any] | None
    icons: Sequence[Icon] | None
    execution: ToolExecution | None
    input_schema: Mapping[str, Any] | None
    structured_output: bool | None
    meta: Mapping[str, Any] | None
    run_in_thread: bool
    task_support: Literal["forbidden", "optional", "required"] | None
    defer_task: bool
    retry_on_loss: int


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    annotations: ToolAnnotations | Mapping[str, Any] | None = None,
    icons: Sequence[Icon] | None = None,
    execution: ToolExecution | None = None,
    input_schema: Mapping[str, Any] | None = None,
    structured_output: bool | None = None,
    meta: Mapping[str, Any] | None = None,
    run_in_thread: bool = True,
    task_support: str | None = None,
    defer_task: bool = False,
    retry_on_loss: int = 0,
) -> ToolDefinition:
    """Build a ``ToolDefinition`` from a function; raises ``TypeError``/``ValueError`` for what cannot work."""
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name or not _TOOL_NAME.match(tool_name):
        raise ValueError(f"invalid tool name {tool_name!r}: use 1-128 characters from A-Z a-z 0-9 _ . -")
    refuse_unannotated_context(fn, f"tool {tool_name!r}")
    try:
        schema = describe_function(
            fn,
            skip=is_context,
            unstructured=_is_unstructured,
            input_schema=dict(input_schema) if input_schema is not None else None,
        )
    except TypeError:
        if _returns_bytes(fn):
            raise TypeError(f"tool {tool_name!r}: -> bytes cannot be a tool's result; {_NO_BARE_BYTES}") from None
        raise
    if isinstance(annotations, Mapping):
        annotations = ToolAnnotations(**annotations)
    doc_description = schema.description
    if task_support is not None:
        if task_support not in ("forbidden", "optional", "required"):
            raise ValueError(f"task_support must be 'forbidden', 'optional' or 'required', not {task_support!r}")
        if execution is not None:
            raise ValueError("give task_support or execution, not both")
        execution = ToolExecution(task_support=task_support)  # type: ignore[arg-type]
    runs_as_task = execution is not None and execution.task_support not in (None, "forbidden")
    if defer_task and not runs_as_task:
        raise ValueError(f"tool {tool_name!r}: defer_task=True needs task_support 'optional' or 'required'")
    if isinstance(retry_on_loss, bool) or not isinstance(retry_on_loss, int) or retry_on_loss < 0:
        raise ValueError(f"tool {tool_name!r}: retry_on_loss must be a whole number, 0 or more, not {retry_on_loss!r}")
    if retry_on_loss and not runs_as_task:
        raise ValueError(f"tool {tool_name!r}: retry_on_loss needs task_support 'optional' or 'required'")
    structured = schema.output_schema is not None if structured_output is None else structured_output
    if structured and schema.output_schema is None:
        raise TypeError(f"tool {tool_name!r}: structured_output=True needs a return annotation with a schema")
    return ToolDefinition(
        name=tool_name,
        fn=fn,
        schema=schema,
        title=title,
        description=description if description is not None else doc_description,
        annotations=annotations,
        icons=list(icons) if icons else None,
        execution=execution,
        meta=dict(meta) if meta is not None else None,
        is_async=is_async_callable(fn),
        run_in_thread=run_in_thread,
        structured=structured,
        defer_task=defer_task,
        retry_on_loss=retry_on_loss,
    )


def _returns_bytes(fn: Callable[..., Any]) -> bool:
    try:
        returns = typing.get_type_hints(fn).get("return")
    except Exception:  # the annotations do not resolve: describing the function said why
        return False
    return returns in (bytes, bytearray, memoryview)


@functools.lru_cache(maxsize=16)
def _sent_as_built(version: str) -> bool:
    """Whether a ``CallToolResult`` goes to revision ``version`` as it is built: the revision has every kind of
    content block a tool may return, and every field of the result (asked on every call)."""
    return (
        has(version, Feature.AUDIO_CONTENT)
        and has(version, Feature.RESOURCE_LINKS)
        and defines_every_field("CallToolResult", version)
    )


def _as_content(item: Any) -> Any:
    if isinstance(item, CONTENT_TYPES):
        return item
    if isinstance(item, str):
        return TextContent(text=item)
    return None


def tool_result_wire(tool: ToolDefinition, value: Any) -> dict[str, Any]:
    """What a tool function returned, as the ``CallToolResult`` wire object.

    Strings and content blocks (or lists of them) become content; with an output schema the value is
    also sent as ``structuredContent`` with its JSON text alongside, as the spec recommends. The common
    cases (a string, structured data) are built directly as dicts: this is the hot path of every call.
    """
    if type(value) is str and not tool.structured:
        return {"content": [{"type": "text", "text": value}]}
    if isinstance(value, CallToolResult):
        return to_wire(value)
    if tool.structured:
        structured = _dumped(tool, value, "that its return annotation does not allow")
        text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured}
    if value is None:
        return {"content": []}
    single = _as_content(value)
    if single is not None:
        return {"content": [to_wire(single)]}
    if isinstance(value, (list, tuple)):
        blocks = [_as_content(item) for item in value]
        if all(block is not None for block in blocks):
            return {"content": [to_wire(block) for block in blocks]}
    text = json.dumps(_dumped(tool, value, "that cannot be sent as JSON"), ensure_ascii=False)
    return {"content": [{"type": "text", "text": text}]}


def _dumped(tool: ToolDefinition, value: Any, refusal: str) -> Any:
    """``value`` as JSON data, or a ``TypeError`` naming the tool and the type (the tool's bug: logged under an
    error id, never a repr sent in its place)."""
    try:
        return tool.schema.dump_output(value)
    except OutputError as exc:
        hint = f"; {_NO_BARE_BYTES}" if isinstance(value, (bytes, bytearray, memoryview)) else ""
        problems = "; ".join(exc.errors)
        raise TypeError(
            f"tool {tool.name!r} returned a value of type {type(value).__qualname__} {refusal} ({problems}){hint}"
        ) from None


def error_result(message: str) -> dict[str, Any]:
    """A tool execution error (wire form): the model sees the message and can correct itself."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def argument_error_result(tool: ToolDefinition, error: ArgumentError) -> dict[str, Any]:
    """An ``isError`` result that tells the model exactly which arguments were wrong."""
    lines = "\n".join(f"- {problem}" for problem in error.errors)
    return error_result(f"Invalid arguments for tool {tool.name}:\n{lines}")
