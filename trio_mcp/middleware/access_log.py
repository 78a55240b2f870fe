"""Structured access logging: one line per request served, with what an operator looks for first."""

from __future__ import annotations

import logging
from typing import Any

import trio

from .._failures import Fate, error_id_in, error_id_of, fate_of
from .._middleware import CallNext, RequestInfo
from ..errors import DEADLINE_EXCEEDED, INTERNAL_ERROR, McpError
from ._caller import caller_key, target

__all__ = ["AccessLog"]


class AccessLog:
    """Middleware logging one line per request to ``logger`` (``trio_mcp.access`` by default) at ``level``.

    The line reads ``tools/call search principal=3f2a9c01d4e5b6a7 duration_ms=12.3 outcome=ok`` and its
    record carries the same as attributes (``method``, ``target``, ``principal``, ``duration_ms``,
    ``outcome``, ``error_code``, ``error_id``) for a structured formatter. ``outcome`` is ``ok``,
    ``tool_error`` (an ``isError`` result), ``error`` (with the JSON-RPC code, and the correlation id of a
    failure), ``timeout`` (the caller's deadline passed) or ``cancelled``. ``principal`` is the start of the
    caller's key, never a token; ``-`` when the transport authenticated nobody. Put it first, so that it times
    and sees what the other middleware do.
    """

    def __init__(self, logger: logging.Logger | None = None, *, level: int = logging.INFO) -> None:
        self.logger = logger if logger is not None else logging.getLogger("trio_mcp.access")
        self.level = level

    async def __call__(self, call: RequestInfo, call_next: CallNext) -> Any:
        if call.is_notification or not self.logger.isEnabledFor(self.level):
            return await call_next()
        start = trio.current_time()
        try:
            result = await call_next()
        except McpError as exc:
            outcome = "timeout" if exc.code == DEADLINE_EXCEEDED else "error"
            self._line(call, start, outcome, exc.code, error_id_in(exc.message))
            raise
        except BaseException as exc:
            if fate_of(exc) is Fate.ANSWER:  # answered -32603, and logged, under this same id
                self._line(call, start, "error", INTERNAL_ERROR, error_id_of(exc))
            else:
                self._line(call, start, "cancelled", None, None)
            raise
        if type(result) is dict and result.get("isError") is True:
            blocks = result.get("content") or ()
            text = " ".join(str(block.get("text", "")) for block in blocks if type(block) is dict)
            self._line(call, start, "tool_error", None, error_id_in(text))
        else:
            self._line(call, start, "ok", None, None)
        return result

    def _line(self, call: RequestInfo, start: float, outcome: str, code: int | None, error_id: str | None) -> None:
        duration_ms = round((trio.current_time() - start) * 1000, 1)
        what = _printable(target(call))
        method = _printable(call.method)
        principal = "-" if call.principal is None else caller_key(call.principal)[:16]
        fields = {
            "method": method,
            "target": what,
            "principal": principal,
            "duration_ms": duration_ms,
            "outcome": outcome,
            "error_code": code,
            "error_id": error_id,
        }
        line = f"{method}{' ' + what if what else ''} principal={principal} duration_ms={duration_ms} outcome={outcome}"
        if code is not None:
            line += f" error_code={code}"
        if error_id is not None:
            line += f" error_id={error_id}"
        self.logger.log(self.level, "%s", line, extra=fields)


def _printable(text: str | None) -> str | None:
    """``text`` as one line can hold it: what the peer named is escaped, never a line of its own in the log."""
    return text if text is None or text.isprintable() else repr(text)
