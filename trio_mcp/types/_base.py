"""Shared building blocks of the MCP wire types.

Every wire class is an ``attrs.frozen(kw_only=True, eq=False, repr=False)`` subclass of :class:`WireType`, which
writes ``==``, ``hash`` and ``repr`` for all of them. Python field names are snake_case; the converter in
``trio_mcp._wire.convert`` derives the camelCase wire names from them (``meta`` is sent as ``_meta``). Fields that
only some protocol revisions define are optional and default to ``None``; ``None`` is never written to the wire.

This module must not import ``from __future__ import annotations``: cattrs reads the annotations at runtime.
"""

import threading
from typing import Any, Final, TypeAlias

import attrs

__all__ = [
    "TaskMetadata",
    "Meta",
    "RequestId",
    "ProgressToken",
    "Cursor",
    "Role",
    "WireType",
    "ErrorObject",
    "Annotations",
    "Icon",
    "RequestParams",
    "NotificationParams",
    "PaginatedRequestParams",
    "Result",
    "EmptyResult",
    "PaginatedResult",
    "CacheableResult",
    "CacheablePaginatedResult",
    "META_PROGRESS_TOKEN",
    "META_PROTOCOL_VERSION",
    "META_CLIENT_INFO",
    "META_CLIENT_CAPABILITIES",
    "META_LOG_LEVEL",
    "META_SUBSCRIPTION_ID",
    "META_SERVER_INFO",
    "META_RELATED_TASK",
    "META_MODEL_IMMEDIATE_RESPONSE",
    "META_DEADLINE",
    "RESULT_COMPLETE",
    "RESULT_INPUT_REQUIRED",
    "RESULT_TASK",
]

#: The free-form ``_meta`` object; keys are namespaced strings, values any JSON.
Meta: TypeAlias = dict[str, Any]
#: A JSON-RPC request id. Never ``bool`` (the converter rejects it) and never ``None``.
RequestId: TypeAlias = str | int
#: A progress token chosen by the requestor; same shape as a request id.
ProgressToken: TypeAlias = str | int
#: An opaque pagination cursor.
Cursor: TypeAlias = str
#: ``"user"`` or ``"assistant"``, kept as a plain string so new roles do not break parsing.
Role: TypeAlias = str

# Well-known ``_meta`` keys (plain data; the engines decide when each one is required).
META_PROGRESS_TOKEN: Final = "progressToken"
META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
META_MODEL_IMMEDIATE_RESPONSE: Final = "io.modelcontextprotocol/model-immediate-response"
#: trio_mcp's deadline extension (docs/deadlines.md): its ``_meta`` key and its capability identifier.
META_DEADLINE: Final = "io.github.trio-mcp/deadline"

# Values of ``Result.result_type`` defined by 2026-07-28 and the tasks extension (the set stays open).
RESULT_COMPLETE: Final = "complete"
RESULT_INPUT_REQUIRED: Final = "input_required"
RESULT_TASK: Final = "task"


_field_names_of: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _field_names_of.get(cls)
    if names is None:
        names = _field_names_of[cls] = tuple(field.name for field in attrs.fields(cls))
    return names


_repr_guard = threading.local()


@attrs.frozen(kw_only=True, eq=False, repr=False)
class WireType:
    """Base class of every wire object.

    ``extra`` holds the wire keys the class does not know (fields a newer peer sent); ``to_wire`` writes them
    back unchanged, so a message survives a round trip through an older trio_mcp.

    ``__eq__``, ``__hash__`` and ``__repr__`` are written once here, for every subclass (declared with
    ``eq=False, repr=False``), and behave like the ones attrs generates: generating them for each of the 120-odd
    classes cost about a third of ``import trio_mcp``.
    """

    extra: dict[str, Any] | None = None

    def __eq__(self, other: object) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        equal: Any = True
        for name in _field_names(self.__class__):
            equal = getattr(self, name) == getattr(other, name)
            if not equal:
                break
        return equal

    def __hash__(self) -> int:
        return hash((self.__class__, *[getattr(self, name) for name in _field_names(self.__class__)]))

    def __repr__(self) -> str:
        repring: set[int] | None = getattr(_repr_guard, "ids", None)
        if repring is None:
            repring = _repr_guard.ids = set()
        if id(self) in repring:  # a value that contains this object
            return "..."
        repring.add(id(self))
        try:
            fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _field_names(self.__class__))
            return f"{self.__class__.__qualname__.rsplit('>.', 1)[-1]}({fields})"
        finally:
            repring.remove(id(self))


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ErrorObject(WireType):
    """The ``error`` member of a JSON-RPC error response, also embedded in failed tasks."""

    code: int
    message: str
    data: Any = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Annotations(WireType):
    """Hints for clients about who a piece of content is for, how important it is and when it changed."""

    audience: list[Role] | None = None
    priority: float | None = None
    last_modified: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Icon(WireType):
    """An image a client may show next to a tool, prompt, resource or implementation (2025-11-25+)."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class RequestParams(WireType):
    """Params of a request that carries nothing but ``_meta`` (e.g. ``ping``, ``server/discover``)."""

    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class NotificationParams(WireType):
    """Params of a notification that carries nothing but ``_meta`` (e.g. the ``list_changed`` family)."""

    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class PaginatedRequestParams(RequestParams):
    """Params of the ``*/list`` requests: an optional cursor from the previous page."""

    cursor: Cursor | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Result(WireType):
    """Fields every result may carry: ``_meta`` and, from 2026-07-28, ``resultType``."""

    meta: Meta | None = None
    result_type: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class EmptyResult(Result):
    """A result without payload (answers ``ping``, ``resources/subscribe``, ``logging/setLevel``, ...)."""


@attrs.frozen(kw_only=True, eq=False, repr=False)
class PaginatedResult(Result):
    """A result page; ``next_cursor`` is absent on the last page."""

    next_cursor: Cursor | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CacheableResult(Result):
    """A result a client may cache for ``ttl_ms`` milliseconds (2026-07-28); ``cache_scope`` is public/private."""

    ttl_ms: int | None = None
    cache_scope: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CacheablePaginatedResult(PaginatedResult):
    """A result page that may also be cached (the ``*/list`` results of 2026-07-28)."""

    ttl_ms: int | None = None
    cache_scope: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class TaskMetadata(WireType):
    """The ``task`` param that turns a request into a task; ``ttl`` is the requested lifetime in ms."""

    ttl: int | None = None
