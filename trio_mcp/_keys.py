"""The server's signing key from configuration, shared by every process that serves the same clients.

``requestState`` and pagination cursors are HMAC-signed by the server and verified on the next request, which
may land on another worker process or machine. Each process therefore needs the same key: it comes from the
``TRIO_MCP_SECRET_KEY`` environment variable (at least 32 characters; keep it secret), and each use gets its
own subkey (HMAC-SHA256 of the key over a purpose label), so a cursor can never pass as a request state.
Without the variable each process keeps a random key of its own, which is right for exactly one process.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from typing import Final

__all__ = ["SECRET_KEY_ENV", "MIN_SECRET_KEY_LENGTH", "configured_key"]

SECRET_KEY_ENV: Final = "TRIO_MCP_SECRET_KEY"
MIN_SECRET_KEY_LENGTH: Final = 32


def configured_key(purpose: str) -> bytes | None:
    """The subkey for ``purpose`` derived from ``TRIO_MCP_SECRET_KEY``, or None when the variable is unset.

    Raises ``ValueError`` naming the variable when it is set but shorter than 32 characters.
    """
    value = os.environ.get(SECRET_KEY_ENV)
    if not value:
        return None
    if len(value) < MIN_SECRET_KEY_LENGTH:
        raise ValueError(f"{SECRET_KEY_ENV} must be at least {MIN_SECRET_KEY_LENGTH} characters long")
    return hmac.new(value.encode("utf-8"), b"trio_mcp/" + purpose.encode("ascii"), hashlib.sha256).digest()
