"""Who a caller is, as one key that every process computes alike: ``caller_key(principal)``.

Whatever a caller started is bound to this key: its HTTP sessions, its tasks, the ``requestState`` of its
input rounds. So it must stay the same across refreshed or stepped-up tokens, and across processes (no
``repr``, no set or hash order). A ``trio_mcp.auth.Principal`` (or any object with ``issuer``, ``subject`` and
``client_id`` attributes) is keyed by those three alone: its scopes, expiry, audience and key thumbprint are
checked per request, never part of who the caller is. What an ``authenticate=`` callable returns otherwise must
be a string or JSON-like data (dicts with string keys, lists, strings, numbers, booleans, None), keyed by its
canonical JSON; anything else is refused with a ``TypeError`` saying what to return.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Final

__all__ = ["caller_key"]

#: Names the key's scheme, so a key computed another way can never collide with one of these.
_SCHEME: Final = "trio_mcp.caller.v1"
_IDENTITY: Final = ("issuer", "subject", "client_id")


def caller_key(principal: Any) -> str:
    """A hex digest naming the caller ``principal`` stands for (the same for every token of that caller).

    Raises ``TypeError`` for a principal that is neither a ``Principal``-like identity, a string, nor JSON-like
    data: its key could differ between processes.
    """
    if principal is None:  # no authentication: one caller, one key string shared by all it holds
        return _ANONYMOUS
    return _key(principal)


def _key(principal: Any) -> str:
    if all(hasattr(principal, name) for name in _IDENTITY):
        identity: list[Any] = ["principal", *(_text(principal, name) for name in _IDENTITY)]
    else:
        _check_data(principal)
        identity = ["data", principal]
    canonical = json.dumps([_SCHEME, *identity], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _text(principal: Any, name: str) -> str | None:
    value = getattr(principal, name)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"a principal's {name} must be a string or None, not {type(value).__name__}")
    return value


def _check_data(value: Any) -> None:
    """Refuse what has no canonical JSON form (sets, objects, non-finite numbers, non-string keys)."""
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if math.isfinite(value):
            return
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_data(item)
        return
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                break
            _check_data(item)
        else:
            return
    raise TypeError(
        f"cannot key a caller by a {type(value).__name__}: authenticate must return a trio_mcp.auth.Principal, "
        "a string, or JSON-like data (dict with string keys, list, str, int, float, bool, None) naming the caller"
    )


_ANONYMOUS: Final = _key(None)
