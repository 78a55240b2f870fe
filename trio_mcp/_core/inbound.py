"""The inbound check of the Streamable HTTP endpoint, without I/O: one request in, a route or a refusal out.

Given the HTTP method, the headers, the body and the rules of the server (which eras it serves, the
``x-mcp-header`` paths of its tools), ``check`` decides which era a request belongs to and whether it may go
on. Every refusal is a ``Refusal`` whose HTTP status and JSON-RPC code come from ``REFUSALS``, the one table
that says how the endpoint answers a request it will not serve; ``answer_status`` gives the HTTP status of a
2026-07-28 JSON-RPC error answer from the same table. The transport does the I/O; what is decided here is
tested on its own (``tests/core/test_inbound.py``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, NamedTuple, Protocol

import attrs

from .._wire.versions import LEGACY_VERSIONS, MODERN_VERSIONS
from ..errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..types._base import META_PROTOCOL_VERSION
from .jsonrpc import Request, RequestId, classify, decode, is_request_id
from .mcp_headers import NAMED_METHODS, header_matches

__all__ = [
    "REFUSALS",
    "HeaderPaths",
    "HeaderView",
    "InboundRules",
    "Refusal",
    "Rejection",
    "Route",
    "answer_status",
    "check",
]


class HeaderView(Protocol):
    """Read access to request headers (names case-insensitive); ``get_all`` keeps repeated fields apart."""

    def get(self, name: str, /) -> str | None: ...

    def get_all(self, name: str) -> list[str]: ...


HeaderPaths = Callable[[str], "Mapping[str, tuple[str, ...]] | None"]
"""For a tool name: ``{x-mcp-header name (lower case): argument path}``, or None for an unknown tool."""


@attrs.frozen(kw_only=True)
class InboundRules:
    """What the server behind the endpoint serves."""

    #: Serve 2026-07-28 stateless requests.
    stateless: bool = True
    #: Serve the legacy era (sessions).
    sessions: bool = True
    #: The ``x-mcp-header`` paths of the server's tools (None: no ``Mcp-Param-*`` checks).
    header_paths: HeaderPaths | None = None


class Refusal(enum.Enum):
    """Why the endpoint will not serve a request; ``REFUSALS`` gives the answer for each."""

    METHOD_NOT_ALLOWED = "method not allowed"
    UNSUPPORTED_MEDIA_TYPE = "unsupported media type"
    NOT_ACCEPTABLE = "not acceptable"
    PARSE_ERROR = "parse error"
    NOT_A_REQUEST = "not a request"
    BATCH_NOT_ALLOWED = "batch not allowed"
    HEADER_MISMATCH = "header mismatch"
    MODERN_ONLY = "modern only"
    UNSUPPORTED_VERSION_HEADER = "unsupported version header"
    SESSION_REQUIRED = "session required"
    SESSION_NOT_FOUND = "session not found"
    TOO_MANY_SESSIONS = "too many sessions"
    UNKNOWN_LAST_EVENT_ID = "unknown last event id"
    STREAM_ALREADY_OPEN = "stream already open"
    DIRECTORY_UNAVAILABLE = "session directory unavailable"


#: The one table of refusals: ``(HTTP status, JSON-RPC code)`` for each.
REFUSALS: Final[Mapping[Refusal, tuple[int, int]]] = {
    Refusal.METHOD_NOT_ALLOWED: (405, INVALID_REQUEST),
    Refusal.UNSUPPORTED_MEDIA_TYPE: (415, INVALID_REQUEST),
    Refusal.NOT_ACCEPTABLE: (406, INVALID_REQUEST),
    Refusal.PARSE_ERROR: (400, PARSE_ERROR),
    Refusal.NOT_A_REQUEST: (400, INVALID_REQUEST),
    Refusal.BATCH_NOT_ALLOWED: (400, INVALID_REQUEST),
    Refusal.HEADER_MISMATCH: (400, HEADER_MISMATCH),
    Refusal.MODERN_ONLY: (400, UNSUPPORTED_PROTOCOL_VERSION),
    Refusal.UNSUPPORTED_VERSION_HEADER: (400, INVALID_REQUEST),
    Refusal.SESSION_REQUIRED: (400, INVALID_REQUEST),
    Refusal.SESSION_NOT_FOUND: (404, INVALID_REQUEST),
    Refusal.TOO_MANY_SESSIONS: (503, INVALID_REQUEST),
    Refusal.UNKNOWN_LAST_EVENT_ID: (400, INVALID_REQUEST),
    Refusal.STREAM_ALREADY_OPEN: (409, INVALID_REQUEST),
    Refusal.DIRECTORY_UNAVAILABLE: (503, INTERNAL_ERROR),
}

#: The HTTP status of a 2026-07-28 error answer, by JSON-RPC code ("your request was wrong" is 400, an
#: unknown method 404); any other error is 200, as the 2026-07-28 transport page lists.
_ANSWER_STATUS: Final[Mapping[int, int]] = {
    METHOD_NOT_FOUND: 404,
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}


def answer_status(message: Any) -> int:
    """The HTTP status of a stateless request's JSON answer: 200 for a result, from the table for an error."""
    error = message.get("error") if type(message) is dict else None
    if type(error) is not dict:  # a result: most answers
        return 200
    code = error.get("code")
    return _ANSWER_STATUS.get(code, 200) if type(code) is int else 200


@attrs.frozen
class Rejection:
    """A request the endpoint will not serve: answer ``status`` with a JSON-RPC error of ``code``."""

    refusal: Refusal
    detail: str
    request_id: RequestId | None = None
    data: Any = None
    #: Extra response headers (``Allow`` for 405).
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def status(self) -> int:
        return REFUSALS[self.refusal][0]

    @property
    def code(self) -> int:
        return REFUSALS[self.refusal][1]


class Route(NamedTuple):
    """A request that may go on, and what the transport needs to serve it (a named tuple: one is made for every
    request, and a tuple is the cheapest immutable record to make; build it with keywords)."""

    era: Literal["modern", "legacy"]
    #: ``POST``, ``GET`` or ``DELETE``.
    method: str
    #: The decoded JSON-RPC message (an object, or a list for a legacy-era batch); None for GET/DELETE.
    message: Any = None
    #: The JSON-RPC method of a single message (None for a batch, a response, or GET/DELETE).
    rpc_method: str | None = None
    #: The ids of the requests in the message; none means nothing will be answered (202).
    request_ids: frozenset[RequestId] = frozenset()
    #: ``Mcp-Session-Id`` (legacy era; None on an ``initialize`` that opens one).
    session_id: str | None = None
    #: ``MCP-Protocol-Version`` as sent.
    version_header: str | None = None
    #: ``Last-Event-ID`` of a resuming GET.
    last_event_id: str | None = None
    #: The classified request of a stateless POST, served as it is (nothing classifies it again).
    request: Request | None = None

    @property
    def opens_session(self) -> bool:
        """An ``initialize`` without a session id: it opens a new session."""
        return self.era == "legacy" and self.session_id is None and self.rpc_method == "initialize"


#: ``check``'s ``decoded`` when nobody decoded the body before it.
NOT_DECODED: Final[Any] = object()


def check(
    method: str, headers: HeaderView, body: bytes, rules: InboundRules, decoded: Any = NOT_DECODED
) -> Route | Rejection:
    """Route one request to the Streamable HTTP endpoint, or say why it is refused (see ``REFUSALS``).
    ``decoded``: the body as ``jsonrpc.decode`` gave it already (to the authorization guard), not decoded again."""
    if method == "POST":
        return _check_post(headers, body, rules, decoded)
    if method in ("GET", "DELETE") and rules.sessions:
        return _check_session_request(method, headers)
    allow = "GET, POST, DELETE" if rules.sessions else "POST"
    return Rejection(Refusal.METHOD_NOT_ALLOWED, f"Method Not Allowed: use {allow}", headers=(("allow", allow),))


def _check_session_request(method: str, headers: HeaderView) -> Route | Rejection:
    session_id = headers.get("mcp-session-id")
    if session_id is None:
        return Rejection(
            Refusal.METHOD_NOT_ALLOWED,
            f"Method Not Allowed: {method} needs an Mcp-Session-Id",
            headers=(("allow", "POST"),),
        )
    last_event_id = None
    if method == "GET":
        if "text/event-stream" not in (headers.get("accept") or "text/event-stream").lower():
            return Rejection(Refusal.NOT_ACCEPTABLE, "Accept must allow text/event-stream")
        last_event_id = headers.get("last-event-id")
    return Route(
        era="legacy",
        method=method,
        session_id=session_id,
        last_event_id=last_event_id,
        version_header=headers.get("mcp-protocol-version"),
    )


def _check_post(headers: HeaderView, body: bytes, rules: InboundRules, decoded: Any) -> Route | Rejection:
    content_type = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if content_type != "application/json":
        return Rejection(Refusal.UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json")
    accept = (headers.get("accept") or "*/*").lower()
    if not (
        "application/json" in accept or "text/event-stream" in accept or "*/*" in accept or "application/*" in accept
    ):
        return Rejection(Refusal.NOT_ACCEPTABLE, "Accept must allow application/json and text/event-stream")
    message = decode(body) if decoded is NOT_DECODED else decoded
    if type(message) is not dict and type(message) is not list:
        reason = getattr(message, "reason", "Parse error: the body is not a JSON object or array")
        return Rejection(Refusal.PARSE_ERROR, reason)
    version_header = headers.get("mcp-protocol-version")
    body_version = _meta_version(message)  # read once: which era, then held against the header
    if rules.stateless and (body_version is not _NO_VERSION or version_header in MODERN_VERSIONS):
        return _check_stateless(headers, message, version_header, body_version, rules)
    if not rules.sessions:
        # A modern-only server names the versions it speaks, so a dual-era client knows to switch.
        params = message.get("params") if type(message) is dict else None
        requested = version_header or (params.get("protocolVersion") if type(params) is dict else None)
        return Rejection(
            Refusal.MODERN_ONLY,
            "Unsupported protocol version: this server speaks only the modern revision",
            _id_of(message),
            {"supported": list(MODERN_VERSIONS), "requested": requested},
        )
    return _check_session_post(headers, message, version_header)


def _check_stateless(
    headers: HeaderView, message: Any, version_header: str | None, body_version: Any, rules: InboundRules
) -> Route | Rejection:
    if type(message) is not dict:
        return Rejection(Refusal.BATCH_NOT_ALLOWED, "Invalid Request: batches are not supported")
    event = classify(message)
    if type(event) is not Request:
        if "method" in message and "id" not in message:
            # No client notification is defined over HTTP in this revision: accepted and dropped.
            return Route(
                era="modern",
                method="POST",
                message=message,
                rpc_method=message.get("method"),
                version_header=version_header,
            )
        return Rejection(Refusal.NOT_A_REQUEST, "Invalid Request: expected a request")
    mismatch = _header_mismatch(headers, event, version_header, body_version, rules.header_paths)
    if mismatch is not None:
        return Rejection(Refusal.HEADER_MISMATCH, f"Header mismatch: {mismatch}", event.id)
    return Route(
        era="modern",
        method="POST",
        message=message,
        rpc_method=event.method,
        request_ids=frozenset([event.id]),
        version_header=version_header,
        request=event,
    )


def _header_mismatch(
    headers: HeaderView, event: Request, version_header: str | None, body_version: Any, header_paths: HeaderPaths | None
) -> str | None:
    """What is wrong between a stateless request's headers and its body (``body_version``: its ``_meta``
    version, ``_NO_VERSION`` when absent), or None."""
    params = event.params or {}
    if version_header is None:
        return "the MCP-Protocol-Version header is required"
    if body_version is not _NO_VERSION and body_version is not None and version_header != body_version:
        return f"MCP-Protocol-Version {version_header!r} does not match _meta version {body_version!r}"
    method_headers = headers.get_all("mcp-method")
    name_headers = headers.get_all("mcp-name")
    if len(method_headers) > 1:
        return "the mcp-method header appears more than once"
    if len(name_headers) > 1:
        return "the mcp-name header appears more than once"
    if not method_headers:
        return "the Mcp-Method header is required"
    method_header = method_headers[0]
    if method_header.strip(" \t") != event.method:
        return f"Mcp-Method {method_header!r} does not match body method {event.method!r}"
    field = NAMED_METHODS.get(event.method)
    if field is not None:
        value = params.get(field)
        if not name_headers:
            return "the Mcp-Name header is required"
        name_header = name_headers[0]
        if not header_matches(name_header, value):
            return f"Mcp-Name {name_header!r} does not match body {field} {value!r}"
    if event.method == "tools/call" and header_paths is not None:
        return _param_header_mismatch(headers, params, header_paths)
    return None


def _param_header_mismatch(headers: HeaderView, params: Mapping[str, Any], header_paths: HeaderPaths) -> str | None:
    name = params.get("name")
    paths = header_paths(name) if isinstance(name, str) else None
    if not paths:
        return None
    arguments = params.get("arguments") or {}
    for header, path in paths.items():
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        received = headers.get_all(f"mcp-param-{header}")
        if value is None:
            if received:
                return f"Mcp-Param-{header} was sent but the argument is absent"
            continue
        if len(received) != 1:
            return f"Mcp-Param-{header} is {'missing' if not received else 'repeated'}"
        if not header_matches(received[0], value):
            return f"Mcp-Param-{header} {received[0]!r} does not match the argument {value!r}"
    return None


def _check_session_post(headers: HeaderView, message: Any, version_header: str | None) -> Route | Rejection:
    if version_header is not None and version_header not in LEGACY_VERSIONS:
        return Rejection(
            Refusal.UNSUPPORTED_VERSION_HEADER, f"Unsupported MCP-Protocol-Version: {version_header!r}", _id_of(message)
        )
    session_id = headers.get("mcp-session-id")
    rpc_method = message.get("method") if type(message) is dict else None
    if session_id is None and rpc_method != "initialize":
        return Rejection(Refusal.SESSION_REQUIRED, "Bad Request: Mcp-Session-Id header is required", _id_of(message))
    return Route(
        era="legacy",
        method="POST",
        message=message,
        rpc_method=rpc_method if isinstance(rpc_method, str) else None,
        request_ids=_request_ids(message),
        session_id=session_id,
        version_header=version_header,
    )


#: What ``_meta_version`` gives for a message whose ``_meta`` has no protocol version.
_NO_VERSION: Final = object()


def _meta_version(message: Any) -> Any:
    """The protocol version in a message's ``_meta`` (whatever its type), or ``_NO_VERSION``."""
    params = message.get("params") if type(message) is dict else None
    meta = params.get("_meta") if type(params) is dict else None
    return meta.get(META_PROTOCOL_VERSION, _NO_VERSION) if type(meta) is dict else _NO_VERSION


def _request_ids(message: Any) -> frozenset[RequestId]:
    """The ids of the requests in a legacy-era message (one, or a batch's)."""
    if type(message) is dict:  # most: no generator to run
        request_id = message.get("id")  # a request id (is_request_id, inline: every POST passes here)
        if "method" in message and (type(request_id) is str or type(request_id) is int):
            return frozenset((request_id,))
        return _NO_IDS
    return frozenset(
        item["id"] for item in message if type(item) is dict and "method" in item and is_request_id(item.get("id"))
    )


#: The request ids of a message that carries no request.
_NO_IDS: Final[frozenset[RequestId]] = frozenset()


def _id_of(message: Any) -> RequestId | None:
    request_id = message.get("id") if type(message) is dict else None
    return request_id if is_request_id(request_id) else None
