"""A response-size limit, and a log of each request's and response's size.

Sizes are those of the JSON text (UTF-8) of the request's params and of the result, close to what the
transport writes. A result over the limit is refused with ``RESPONSE_TOO_LARGE`` (-32012), or, with
``truncate=True``, a tool's text result is cut to fit and says so.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from .._middleware import CallNext, RequestInfo
from ..errors import RESPONSE_TOO_LARGE, McpError
from ._caller import target

__all__ = ["SizeLimit"]

logger = logging.getLogger("trio_mcp.middleware.size")


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=repr).encode())


class SizeLimit:
    """Middleware refusing (or truncating) results over ``max_bytes``, logging every request's sizes.

    ``truncate``: cut a ``tools/call`` result made of text to fit, ending with a notice of how much was cut
    (results of other methods, and results with structured or non-text content, are refused all the same).
    Each request's sizes go to the ``trio_mcp.middleware.size`` logger at ``log_level`` (DEBUG by default), and
    each refusal or truncation at WARNING.
    """

    def __init__(self, max_bytes: int, *, truncate: bool = False, log_level: int = logging.DEBUG) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1024:
            raise ValueError(f"max_bytes must be a whole number of bytes, 1024 or more, not {max_bytes!r}")
        self.max_bytes = max_bytes
        self.truncate = truncate
        self.log_level = log_level

    async def __call__(self, call: RequestInfo, call_next: CallNext) -> Any:
        result = await call_next()
        if call.is_notification:
            return result
        size = _size(result)
        what = target(call) or call.method
        if logger.isEnabledFor(self.log_level):
            logger.log(
                self.log_level,
                "%s %s: request %d bytes, response %d bytes",
                call.method,
                what,
                _size(call.params),
                size,
            )
        if size <= self.max_bytes:
            return result
        if self.truncate and call.method == "tools/call":
            cut = _truncated(result, size, self.max_bytes)
            if cut is not None:
                logger.warning("%s %s: response of %d bytes truncated to %d", call.method, what, size, self.max_bytes)
                return cut
        logger.warning("%s %s: response of %d bytes refused (limit %d)", call.method, what, size, self.max_bytes)
        raise McpError(
            RESPONSE_TOO_LARGE,
            f"Response too large: {call.method} {what} answered {size} bytes, the limit is {self.max_bytes}",
            {"size": size, "limit": self.max_bytes},
        )


def _truncated(result: Any, size: int, limit: int) -> dict[str, Any] | None:
    """``result`` (a tool's text-only result) cut to at most ``limit`` bytes with a notice, or None."""
    content = result.get("content") if type(result) is dict else None
    if not isinstance(content, list) or "structuredContent" in result:
        return None
    if not all(type(block) is dict and block.get("type") == "text" for block in content):
        return None
    text = "".join(str(block.get("text", "")) for block in content)
    notice = f"\n[truncated: the response was {size} bytes, the limit is {limit}]"
    base = {**result, "content": [{"type": "text", "text": notice}]}
    room = limit - _size(base)
    keep = len(text)
    while keep > 0 and _size(text[:keep]) - 2 > room:  # - 2: the quotes already counted around the notice
        keep = min(keep - 1, keep * room // max(1, _size(text[:keep])))
    return {**result, "content": [{"type": "text", "text": text[: max(0, keep)] + notice}]}
