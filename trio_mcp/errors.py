"""Exceptions raised by trio_mcp and the JSON-RPC / MCP error codes they carry.

Every public call raises exactly one of these (never an ExceptionGroup): ``McpError`` when the peer answered
with a JSON-RPC error, ``RequestTimeout`` when it did not answer in time, ``ConnectionClosed`` when the
transport went away before it could.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CONNECTION_CLOSED",
    "DEADLINE_EXCEEDED",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "RATE_LIMITED",
    "RESOURCE_NOT_FOUND",
    "RESPONSE_TOO_LARGE",
    "SERVER_BUSY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",
    "CapabilityError",
    "ConnectionClosed",
    "LocalProtocolError",
    "McpError",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestTimeout",
    "ResourceNotFound",
    "SkillVerificationError",
    "ToolError",
    "TrioMcpError",
]

# JSON-RPC 2.0
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# Implementation-defined (-32000 .. -32019): used by this library only.
CONNECTION_CLOSED = -32000  # the official SDKs' code for a closed connection
#: A request refused because the connection already has ``max_in_flight`` requests being served.
SERVER_BUSY = -32010
#: A request refused by ``trio_mcp.middleware.RateLimit``; ``data.retryAfter`` says in how many seconds to retry.
RATE_LIMITED = -32011
#: A response larger than ``trio_mcp.middleware.SizeLimit`` allows; ``data`` has its ``size`` and the ``limit``.
RESPONSE_TOO_LARGE = -32012
#: The caller's deadline passed before the request was answered (the deadline extension, docs/deadlines.md).
DEADLINE_EXCEEDED = -32013

# MCP
RESOURCE_NOT_FOUND = -32002  # legacy revisions only; 2026-07-28 uses INVALID_PARAMS
URL_ELICITATION_REQUIRED = -32042  # 2025-11-25 only
HEADER_MISMATCH = -32020  # 2026-07-28
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021  # 2026-07-28
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28


class TrioMcpError(Exception):
    """Base class of every exception trio_mcp raises on purpose."""


class McpError(TrioMcpError):
    """A JSON-RPC error: raised by handlers to answer with it, and raised to callers who received one."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object for this exception."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_error(cls, error: Any) -> McpError:
        """Build from a received JSON-RPC ``error`` object, tolerating a malformed one."""
        if not isinstance(error, dict):
            return cls(INTERNAL_ERROR, f"peer sent a malformed error object: {error!r}")
        code = error.get("code")
        message = error.get("message")
        return cls(
            code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
            message if isinstance(message, str) else repr(message),
            error.get("data"),
        )


class ToolError(TrioMcpError):
    """Raise it in a tool to fail the call with this message for the model to read (an ``isError`` result).

    Any other exception a tool raises reaches the model only as "the tool failed" and a correlation id, since
    its text may hold details meant for the operator alone (see ``Server(expose_errors=...)``).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ResourceNotFound(TrioMcpError):
    """Raise it in a resource handler (a template's, typically) when nothing exists at the URI asked for.

    The client gets the protocol's "resource not found" error for its revision (-32002, or -32602 on
    2026-07-28), as for a URI no resource matches; any other exception is an internal error (-32603).
    """

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}")
        self.uri = uri


class RequestTimeout(TrioMcpError):
    """The peer did not answer a request in time; ``notifications/cancelled`` was sent for it."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(f"{method} got no response within {timeout:g} s")
        self.method = method
        self.timeout = timeout


class ConnectionClosed(TrioMcpError):
    """The transport closed (or the peer process died) before the call could complete.

    ``detail`` says why, e.g. a subprocess exit status and the tail of its stderr.
    """

    def __init__(self, message: str = "connection closed", *, detail: str | None = None) -> None:
        super().__init__(message if detail is None else f"{message}: {detail}")
        self.reason = message
        self.detail = detail


class CapabilityError(TrioMcpError):
    """The client refused a call itself, without sending it: the server did not declare the capability the
    method needs, or the method does not exist in the protocol revision in use. ``method`` names it."""

    def __init__(self, method: str, message: str) -> None:
        super().__init__(message)
        self.method = method


class SkillVerificationError(TrioMcpError):
    """A skill file read from a server is not what the skill's entry says (SEP-2640): its size, its digest or
    (for ``SKILL.md``) its frontmatter differ, or it is not listed in the entry at all. The content is never
    returned; ``get_skill()`` fetches the current entry. ``uri`` names the file, ``reason`` what differed."""

    def __init__(self, uri: str, reason: str) -> None:
        super().__init__(f"{uri}: {reason}; the content was not used (get_skill() fetches the current entry)")
        self.uri = uri
        self.reason = reason


class ProtocolError(TrioMcpError):
    """Somebody broke the protocol; subclasses say who (the h11 convention)."""


class LocalProtocolError(ProtocolError):
    """We were asked to do something the protocol forbids (a request before initialization, say)."""


class RemoteProtocolError(ProtocolError):
    """The peer did something the protocol forbids."""
