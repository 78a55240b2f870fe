"""JSON-RPC 2.0 message classification and encoding, without I/O.

``decode()`` turns bytes into JSON, ``classify()`` turns one decoded JSON value into an event, and the
``*_message`` builders make the dicts we send. Invalid input becomes an ``InvalidMessage`` event that says
what the peer did wrong and which error code answers it; nothing here raises on peer input.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final, TypeGuard, Union

from ..errors import INVALID_REQUEST, PARSE_ERROR

__all__ = [
    "RequestId",
    "Request",
    "Notification",
    "Response",
    "ErrorResponse",
    "InvalidMessage",
    "Event",
    "decode",
    "encode",
    "UnencodableMessage",
    "classify",
    "is_request_id",
    "request_message",
    "notification_message",
    "result_message",
    "error_message",
]

RequestId = Union[str, int]


class Request:
    """A request from the peer: it expects exactly one response with the same ``id``."""

    __slots__ = ("id", "method", "params")

    def __init__(self, id: RequestId, method: str, params: dict[str, Any] | None) -> None:
        self.id = id
        self.method = method
        self.params = params

    def __repr__(self) -> str:
        return f"Request(id={self.id!r}, method={self.method!r})"


class Notification:
    """A one-way message from the peer."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None) -> None:
        self.method = method
        self.params = params

    def __repr__(self) -> str:
        return f"Notification(method={self.method!r})"


class Response:
    """A successful answer to one of our requests."""

    __slots__ = ("id", "result")

    def __init__(self, id: RequestId, result: Any) -> None:
        self.id = id
        self.result = result

    def __repr__(self) -> str:
        return f"Response(id={self.id!r})"


class ErrorResponse:
    """An error answer; ``id`` is None when the peer could not tell which request it answers."""

    __slots__ = ("id", "error")

    def __init__(self, id: RequestId | None, error: Any) -> None:
        self.id = id
        self.error = error

    def __repr__(self) -> str:
        return f"ErrorResponse(id={self.id!r}, error={self.error!r})"


class InvalidMessage:
    """The peer sent something that is not a valid JSON-RPC message.

    ``id`` is the request id when one could be recovered (so the error can be correlated), else None;
    ``respond`` is False when the broken message was a response, which must never be answered.
    """

    __slots__ = ("id", "code", "reason", "respond")

    def __init__(self, code: int, reason: str, id: RequestId | None = None, respond: bool = True) -> None:
        self.id = id
        self.code = code
        self.reason = reason
        self.respond = respond

    def __repr__(self) -> str:
        return f"InvalidMessage(code={self.code}, reason={self.reason!r}, id={self.id!r})"


Event = Union[Request, Notification, Response, ErrorResponse, InvalidMessage]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # ``1e999`` is valid JSON syntax but becomes inf, which no answer could carry back (encode() refuses it).
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:32]} is out of range")
    return value


_decoder: Final = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
# The decoder's scanner, called directly: ``JSONDecoder.decode`` adds two whitespace matches and a method call
# to every message. What the scanner does not take whole (surrounding whitespace, an error) goes to ``decode``.
_scan: Final[Callable[[str, int], tuple[Any, int]]] = _decoder.scan_once  # type: ignore[attr-defined]


def decode(data: bytes | str) -> Any:
    """Parse one JSON document, or return an ``InvalidMessage`` (-32700) saying why it is not JSON."""
    try:
        text = data if isinstance(data, str) else data.decode("utf-8")
        try:
            value, end = _scan(text, 0)
        except StopIteration:
            end = -1
        return value if end == len(text) else _decoder.decode(text)
    except UnicodeDecodeError as exc:
        return InvalidMessage(PARSE_ERROR, f"Parse error: message is not valid UTF-8 ({exc.reason})")
    except RecursionError:
        return InvalidMessage(PARSE_ERROR, "Parse error: JSON nested too deeply")
    except ValueError as exc:
        return InvalidMessage(PARSE_ERROR, f"Parse error: {exc}")


_encoder: Final = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def _one_shot_encoder() -> Callable[[Any, int], Any]:
    """The C encoder ``JSONEncoder.encode`` builds for every call, built once (a third of the cost of a small
    message). It keeps no cycle markers, which would be state shared by every caller: a cycle ends in the
    RecursionError that deep nesting does. Without the C accelerator, the encoder's own path."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is not None:
        try:
            return make(  # type: ignore[no-any-return]
                None, _encoder.default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False
            )
        except TypeError:  # an interpreter whose C encoder takes other arguments
            pass
    return lambda message, _level: _encoder.iterencode(message, _one_shot=True)


_encode_chunks: Final = _one_shot_encoder()


class UnencodableMessage(ValueError):
    """A message holds something JSON cannot carry (a set, an object, NaN, a cycle): our side's fault, found
    before any byte of it is written, so the stream stays whole and only that message fails."""


def encode(message: Any) -> bytes:
    """Serialise one message as compact ASCII JSON (lone surrogates are escaped, never a UnicodeEncodeError)."""
    try:
        return "".join(_encode_chunks(message, 0)).encode("ascii")
    except (TypeError, ValueError, RecursionError) as exc:
        raise UnencodableMessage(f"message cannot be encoded as JSON: {exc}") from exc


def is_request_id(value: object) -> TypeGuard[RequestId]:
    """JSON-RPC ids we accept: strings and integers (not booleans, floats, null or objects)."""
    return type(value) is str or type(value) is int


#: The types of the ids ``is_request_id`` accepts.
_ID_TYPES: Final = frozenset({str, int})
#: What ``classify`` reads as a message's ``id`` when it has none (``null`` is an id, if not a valid one).
_NO_ID: Final = object()


def classify(message: Any, request: type[Request] = Request) -> Event:
    """Classify one decoded JSON value (not a batch) as a JSON-RPC event; a request is made as ``request`` (a
    subclass taking ``Request``'s arguments: the object the reader keeps for it, not a second one)."""
    if type(message) is not dict:
        return InvalidMessage(INVALID_REQUEST, f"Invalid Request: expected a JSON object, got {_json_type(message)}")
    if message.get("jsonrpc") != "2.0":
        id = message.get("id")
        return InvalidMessage(
            INVALID_REQUEST,
            'Invalid Request: "jsonrpc" must be "2.0"',
            id if is_request_id(id) else None,
            respond="method" in message or not ("result" in message or "error" in message),
        )
    method = message.get("method")
    if method is not None:
        if type(method) is not str:
            return InvalidMessage(INVALID_REQUEST, 'Invalid Request: "method" must be a string', _id_or_none(message))
        params = message.get("params")
        if type(params) is not dict and params is not None:  # a dict (most) is one test
            return InvalidMessage(INVALID_REQUEST, 'Invalid Request: "params" must be an object', _id_or_none(message))
        id = message.get("id", _NO_ID)
        if type(id) in _ID_TYPES:  # is_request_id, inline: every request passes here
            return request(id, method, params)
        if id is _NO_ID:
            return Notification(method, params)
        return InvalidMessage(
            INVALID_REQUEST, f'Invalid Request: "id" must be a string or an integer, got {_json_type(id)}'
        )
    has_result = "result" in message
    has_error = "error" in message
    id = message.get("id")
    if has_result and not has_error and is_request_id(id):
        return Response(id, message["result"])
    if has_error and not has_result and (id is None or is_request_id(id)):
        return ErrorResponse(id, message["error"])
    if has_result or has_error:
        return InvalidMessage(
            INVALID_REQUEST, "Invalid response: needs a valid id and exactly one of result or error", respond=False
        )
    return InvalidMessage(INVALID_REQUEST, 'Invalid Request: no "method", "result" or "error"', _id_or_none(message))


def _id_or_none(message: dict[str, Any]) -> RequestId | None:
    id = message.get("id")
    return id if is_request_id(id) else None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def request_message(id: RequestId, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """A request envelope (``params`` left out when None)."""
    if params is None:
        return {"jsonrpc": "2.0", "id": id, "method": method}
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def notification_message(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """A notification envelope (``params`` left out when None)."""
    if params is None:
        return {"jsonrpc": "2.0", "method": method}
    return {"jsonrpc": "2.0", "method": method, "params": params}


def result_message(id: RequestId, result: Any) -> dict[str, Any]:
    """A success response envelope."""
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_message(id: RequestId | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """An error response envelope; ``id`` None becomes JSON null, as for unparseable requests."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": error}
