"""Server-to-client logging: levels, a rate limit, and a bridge from the stdlib ``logging`` module."""

from __future__ import annotations

import contextvars
import logging
from typing import Any, Final, Protocol

import trio

__all__ = ["LEVELS", "level_rank", "RateLimiter", "McpLogHandler", "current_context"]

#: RFC 5424 severities in increasing order, as MCP's ``LoggingLevel`` defines them.
LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_RANK: Final = {level: rank for rank, level in enumerate(LEVELS)}

_STDLIB_TO_MCP: Final = (
    (logging.CRITICAL, "critical"),
    (logging.ERROR, "error"),
    (logging.WARNING, "warning"),
    (logging.INFO, "info"),
)


class RequestLogTarget(Protocol):
    """Where a stdlib record emitted while a request is served goes (the request's ``Context``)."""

    def _log_soon(self, level: str, data: Any, logger: str | None) -> None: ...


#: The ``Context`` of the request the current task (or worker thread) is serving.
current_context: contextvars.ContextVar[RequestLogTarget | None] = contextvars.ContextVar(
    "trio_mcp_context", default=None
)


def level_rank(level: str) -> int:
    """Position of ``level`` in ``LEVELS``; raises ``KeyError`` for an unknown level."""
    return _RANK[level]


class RateLimiter:
    """A token bucket: ``burst`` messages at once, refilled at ``per_second``; counts what it refuses."""

    __slots__ = ("_burst", "_rate", "_tokens", "_updated", "dropped")

    def __init__(self, per_second: float = 100.0, burst: int = 200) -> None:
        self._burst = float(burst)
        self._rate = per_second
        self._tokens = float(burst)
        self._updated = trio.current_time()
        self.dropped = 0

    def allow(self) -> bool:
        """True if one more message may go now."""
        now = trio.current_time()
        self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._rate)
        self._updated = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.dropped += 1
        return False


class McpLogHandler(logging.Handler):
    """Sends stdlib log records emitted while a request is being served to that request's client.

    Attach it to a logger (``logging.getLogger("myserver").addHandler(McpLogHandler())``); records emitted
    outside a request, or below the client's level, are ignored. Safe from worker threads.
    """

    def emit(self, record: logging.LogRecord) -> None:
        """Queue ``record`` for the client of the request being served; ignore it outside a request."""
        context = current_context.get()
        if context is None:
            return
        try:
            level = next((name for number, name in _STDLIB_TO_MCP if record.levelno >= number), "debug")
            data: Any = self.format(record)
            context._log_soon(level, data, record.name)
        except Exception:  # a logging handler must never raise into the code that logged
            self.handleError(record)
