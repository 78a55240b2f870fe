"""Opaque, tamper-evident pagination cursors for the MCP ``*/list`` methods.

A cursor is ``base64url(version || offset || tag)`` without padding: a format version byte, the offset as a
signed 64-bit big-endian integer, and the first 16 bytes of HMAC-SHA256 over a domain label, the version,
the scope (the list method's name) and the offset.  Clients cannot forge or edit offsets, cannot replay a
``tools/list`` cursor against ``prompts/list``, and a cursor from another process (other secret) is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import struct
from collections.abc import Sequence
from typing import Any, TypeVar

from ._keys import configured_key
from .errors import INVALID_PARAMS, McpError

__all__ = ["InvalidCursor", "CursorCodec", "paginate", "page_result", "MAX_CURSOR_LENGTH"]

#: Longest cursor string ``decode`` will look at; real ones are 34 characters.
MAX_CURSOR_LENGTH = 512

T = TypeVar("T")

_VERSION = 1
_TAG_SIZE = 16
_OFFSET = struct.Struct(">q")
_PAYLOAD_SIZE = 1 + _OFFSET.size + _TAG_SIZE
_DOMAIN = b"trio_mcp.pagination-cursor\x00"
_MIN_SECRET_SIZE = 16
#: One secret per process, so every codec made without one accepts every other's cursors (unless a key is
#: configured: then every process shares that one; see ``_keys``).
_PROCESS_SECRET = secrets.token_bytes(32)


class InvalidCursor(ValueError):
    """A cursor this server did not issue for this list (garbage, tampered, wrong scope or too long)."""


class CursorCodec:
    """Signs list offsets into opaque cursors and verifies them, so clients cannot forge or move them."""

    __slots__ = ("_secret",)

    def __init__(self, secret: bytes | None = None) -> None:
        if secret is None:
            secret = configured_key("pagination-cursor") or _PROCESS_SECRET
        elif not isinstance(secret, bytes):
            raise TypeError(f"cursor secret must be bytes, not {type(secret).__name__}")
        elif len(secret) < _MIN_SECRET_SIZE:
            raise ValueError(f"cursor secret must be at least {_MIN_SECRET_SIZE} bytes")
        self._secret = secret

    def __repr__(self) -> str:
        return "CursorCodec(<secret>)"

    def _tag(self, version: int, offset_bytes: bytes, scope: str) -> bytes:
        scope_bytes = scope.encode("utf-8")
        message = b"".join((_DOMAIN, bytes((version,)), struct.pack(">I", len(scope_bytes)), scope_bytes, offset_bytes))
        return hmac.new(self._secret, message, hashlib.sha256).digest()[:_TAG_SIZE]

    def _pack(self, offset: int, scope: str) -> str:
        """Sign any 64-bit offset, negative included (``encode`` refuses those; tests need them)."""
        offset_bytes = _OFFSET.pack(offset)
        payload = bytes((_VERSION,)) + offset_bytes + self._tag(_VERSION, offset_bytes, scope)
        return base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii")

    def encode(self, offset: int, *, scope: str) -> str:
        """The cursor for resuming list ``scope`` at ``offset``: URL-safe, opaque and bound to the scope."""
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TypeError("cursor offset must be an int")
        if not 0 <= offset <= 2**63 - 1:
            raise ValueError(f"cursor offset out of range: {offset}")
        return self._pack(offset, scope)

    def decode(self, cursor: str, *, scope: str) -> int:
        """The offset inside a cursor this codec issued for ``scope``; anything else raises InvalidCursor."""
        if not isinstance(cursor, str):
            raise InvalidCursor("cursor must be a string")
        if len(cursor) > MAX_CURSOR_LENGTH:
            raise InvalidCursor("cursor too long")
        if not cursor.isascii():
            raise InvalidCursor("malformed cursor")
        raw = cursor.encode("ascii")
        try:
            payload = base64.b64decode(raw + b"=" * (-len(raw) % 4), altchars=b"-_", validate=True)
        except (binascii.Error, ValueError):
            raise InvalidCursor("malformed cursor") from None
        # Only the canonical spelling is accepted: no '+' or '/', no stray padding bits.
        if len(payload) != _PAYLOAD_SIZE or base64.urlsafe_b64encode(payload).rstrip(b"=") != raw:
            raise InvalidCursor("malformed cursor")
        version = payload[0]
        offset_bytes = payload[1 : 1 + _OFFSET.size]
        tag = payload[1 + _OFFSET.size :]
        # Always compute the tag, so a wrong version costs the same as a wrong tag.
        expected = self._tag(version, offset_bytes, scope)
        if not hmac.compare_digest(tag, expected) or version != _VERSION:
            raise InvalidCursor("cursor was not issued for this list")
        (offset,) = _OFFSET.unpack(offset_bytes)
        if offset < 0:
            raise InvalidCursor("negative cursor offset")
        return int(offset)


def paginate(
    items: Sequence[T], cursor: str | None, *, page_size: int, scope: str, codec: CursorCodec
) -> tuple[list[T], str | None]:
    """One page of ``items`` from ``cursor`` (None: the start) and the cursor of the next page (None: done)."""
    if isinstance(page_size, bool) or not isinstance(page_size, int):
        raise TypeError("page_size must be an int")
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, not {page_size}")
    offset = 0 if cursor is None else codec.decode(cursor, scope=scope)
    total = len(items)
    if offset >= total:
        return [], None  # the list shrank under an old cursor: an empty last page, not an error
    end = offset + page_size
    page = list(items[offset:end])
    return page, (codec.encode(end, scope=scope) if end < total else None)


def page_result(
    key: str, items: Sequence[Any], cursor: object, *, page_size: int, scope: str, codec: CursorCodec
) -> dict[str, Any]:
    """A paginated result, ``{key: page, "nextCursor"?: ...}``; a bad cursor is -32602 (Invalid params)."""
    if cursor is not None and not isinstance(cursor, str):
        raise McpError(INVALID_PARAMS, "Invalid params: cursor must be a string")
    try:
        page, next_cursor = paginate(items, cursor, page_size=page_size, scope=scope, codec=codec)
    except InvalidCursor as exc:
        raise McpError(INVALID_PARAMS, f"Invalid params: bad cursor ({exc})") from None
    result: dict[str, Any] = {key: page}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result
