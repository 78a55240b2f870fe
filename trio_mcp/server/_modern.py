"""The modern revision (2026-07-28) on the server side: the per-request envelope and signed request state.

Every modern request carries its protocol version, the client's capabilities and (optionally) its log
level in ``_meta``; nothing is inferred from earlier requests. A handler that needs input from the client
(``ctx.elicit()``, ``ctx.sample()``, ``ctx.list_roots()``) does not send a request: it raises
``InputRequired``, the request is answered with an ``InputRequiredResult``, and the client retries with the
answers. ``requestState`` carries the answers gathered so far, HMAC-signed and bound to the method, the
request's params and an expiry, so a retry cannot be tampered with or replayed against another call.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import sys
import time
from typing import Any, Final

import attrs

from .._core.jsonrpc import UnencodableMessage, encode
from .._identity import caller_key
from .._keys import configured_key
from .._wire.convert import WireFormatError, from_wire
from .._wire.versions import MODERN_VERSIONS
from ..errors import INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION, McpError
from ..types import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    ClientCapabilities,
    Implementation,
)
from ._logging import LEVELS

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = ["InputRequired", "ModernRequest", "StateSigner", "find_input_required", "modern_meta"]

#: Params keys that are not part of what a retried request must repeat unchanged.
_UNSIGNED_KEYS: Final = frozenset({"_meta", "inputResponses", "requestState"})


@attrs.frozen
class ModernRequest:
    """What one 2026-07-28 request declared about its client, read from its ``_meta``."""

    version: str
    capabilities: ClientCapabilities
    client_info: Implementation | None
    log_level: str | None
    #: Answers to input requests: those carried in ``requestState`` plus this retry's ``inputResponses``.
    answers: dict[str, Any] = attrs.field(factory=dict)


def is_modern(params: dict[str, Any] | None) -> bool:
    """True when a request carries the 2026-07-28 envelope (a protocol version in ``_meta``)."""
    meta = params.get("_meta") if params else None
    return type(meta) is dict and META_PROTOCOL_VERSION in meta


def modern_meta(params: dict[str, Any] | None) -> ModernRequest:
    """Read and check the per-request envelope; raises ``McpError`` as the revision prescribes.

    A missing ``_meta``, version or capabilities is -32602; a version the server does not speak is -32022
    with the supported list.
    """
    meta = params.get("_meta") if params else None
    if type(meta) is not dict:
        raise McpError(
            INVALID_PARAMS, "Invalid params: _meta with the protocol version and client capabilities is required"
        )
    version = meta.get(META_PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise McpError(INVALID_PARAMS, f"Invalid params: _meta[{META_PROTOCOL_VERSION!r}] is required")
    if version not in MODERN_VERSIONS:
        raise McpError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version: {version}",
            {"supported": list(MODERN_VERSIONS), "requested": version},
        )
    raw_capabilities = meta.get(META_CLIENT_CAPABILITIES)
    if type(raw_capabilities) is not dict:
        raise McpError(INVALID_PARAMS, f"Invalid params: _meta[{META_CLIENT_CAPABILITIES!r}] is required")
    raw_info = meta.get(META_CLIENT_INFO)
    capabilities, client_info = _client(raw_capabilities, raw_info if type(raw_info) is dict else None)
    log_level = meta.get(META_LOG_LEVEL)
    if log_level is not None and log_level not in LEVELS:
        raise McpError(INVALID_PARAMS, f"Invalid params: unknown log level {log_level!r}")
    return ModernRequest(version, capabilities, client_info, log_level)


#: What a client declares, read: by the JSON text of its capabilities and clientInfo, which a client sends alike
#: with every request. A few are kept (the table starts over when full), none longer than ``_TEXT_LIMIT``.
_clients: dict[bytes, tuple[ClientCapabilities, Implementation | None]] = {}
_CLIENTS_LIMIT: Final = 64
_TEXT_LIMIT: Final = 4096


def _client(
    raw_capabilities: dict[str, Any], raw_info: dict[str, Any] | None
) -> tuple[ClientCapabilities, Implementation | None]:
    """The capabilities and client info of the ``_meta`` that carries these, read once for each distinct text."""
    try:
        text = encode((raw_capabilities, raw_info))
    except UnencodableMessage:  # not JSON (a peer in this process): read as it is, and kept nowhere
        text = b""
    read = _clients.get(text)
    if read is not None:
        return read
    try:
        read = (
            from_wire(raw_capabilities, ClientCapabilities),
            from_wire(raw_info, Implementation) if raw_info is not None else None,
        )
    except WireFormatError as exc:
        raise McpError(INVALID_PARAMS, f"Invalid params: {exc}") from None
    if text and len(text) <= _TEXT_LIMIT:
        if len(_clients) >= _CLIENTS_LIMIT:
            _clients.clear()
        _clients[text] = read
    return read


class InputRequired(BaseException):
    """Raised inside a modern handler that needs client input; becomes an ``InputRequiredResult``.

    A ``BaseException`` so that a handler's ``except Exception`` cannot swallow it by accident.
    """

    def __init__(self, key: str, request: dict[str, Any]) -> None:
        super().__init__(key)
        self.key = key
        self.request = request


def find_input_required(error: BaseException) -> list[InputRequired] | None:
    """The ``InputRequired`` exceptions ``error`` consists of, or None if it holds anything else.

    A handler that asks for several inputs at once (concurrent asks in a nursery) raises a group of them;
    all become ``inputRequests`` of one result. Cancellations of sibling tasks are ignored.
    """
    if isinstance(error, InputRequired):
        return [error]
    if not isinstance(error, BaseExceptionGroup):
        return None
    found: list[InputRequired] = []
    for inner in error.exceptions:
        if _is_cancelled(inner):
            continue
        nested = find_input_required(inner)
        if nested is None:
            return None
        found += nested
    return found or None


def _is_cancelled(error: BaseException) -> bool:
    return type(error).__name__ == "Cancelled" and type(error).__module__.startswith("trio")


def params_digest(method: str, params: dict[str, Any] | None, principal: Any = None) -> str:
    """A digest of what a retry must repeat unchanged: the method, every param but the MRTR ones, and who
    asked (the caller's key, so another caller cannot replay the state, and the same caller may renew its
    token between rounds)."""
    salient = {key: value for key, value in (params or {}).items() if key not in _UNSIGNED_KEYS}
    canonical = json.dumps(
        [method, salient, caller_key(principal)], sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


class StateSigner:
    """Signs and checks ``requestState``: HMAC-SHA256 over the answers, the request digest and an expiry."""

    def __init__(self, secret: bytes | None = None, *, ttl: float = 600.0) -> None:
        if secret is None:  # the configured key when set (several processes), else one per process
            secret = configured_key("request-state") or secrets.token_bytes(32)
        self._secret = secret
        if len(self._secret) < 16:
            raise ValueError("the request-state secret must be at least 16 bytes")
        self.ttl = ttl

    def sign(self, digest: str, answers: dict[str, Any]) -> str:
        """An opaque token carrying ``answers`` for a retry of the request with ``digest``."""
        body = json.dumps(
            {"v": 1, "d": digest, "exp": int(time.time() + self.ttl), "a": answers},
            separators=(",", ":"),
            ensure_ascii=True,
        ).encode("ascii")
        tag = hmac.new(self._secret, body, hashlib.sha256).digest()
        return _b64(body) + "." + _b64(tag)

    def verify(self, token: str, digest: str) -> dict[str, Any]:
        """The answers in a ``requestState``; raises ``McpError`` (-32602) if tampered, foreign or expired."""
        try:
            body_text, tag_text = token.split(".")
            body = _unb64(body_text)
            tag = _unb64(tag_text)
        except (ValueError, TypeError):
            raise McpError(INVALID_PARAMS, "Invalid params: requestState is malformed") from None
        if not hmac.compare_digest(tag, hmac.new(self._secret, body, hashlib.sha256).digest()):
            raise McpError(INVALID_PARAMS, "Invalid params: requestState failed its integrity check")
        state = json.loads(body)
        if state.get("v") != 1 or state.get("d") != digest:
            raise McpError(INVALID_PARAMS, "Invalid params: requestState belongs to a different request")
        if state.get("exp", 0) < time.time():
            raise McpError(INVALID_PARAMS, "Invalid params: requestState has expired; start the request again")
        answers = state.get("a")
        return answers if isinstance(answers, dict) else {}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
