"""What becomes of an exception that escapes a handler (a tool, a resource, a callback).

The rule: it is that request's failure alone (``fate_of`` applies it in the handler's task, ``must_propagate``
in the HTTP and WebSocket servers' to a request or connection that failed). It is logged with its traceback
under a short correlation id and answered with an error that names the id but not the exception's text
(``expose`` adds the details, for development). Only two things escape a handler unanswered: Ctrl-C (``KeyboardInterrupt``), which stops the
program, and the cancellation trio delivers because a scope around the handler was cancelled (the peer
cancelled the request, or the server is stopping).
"""

from __future__ import annotations

import contextvars
import enum
import logging
import math
import re
import secrets
import sys
import traceback
from collections.abc import Callable

import trio

from ._util import first_leaf

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "Fate",
    "fate_of",
    "must_propagate",
    "report_failure",
    "failure_text",
    "error_id_of",
    "error_id_in",
    "shaping",
    "shaped",
]

#: The exception mapping in effect for the request being served (``trio_mcp.middleware.ErrorShaping`` sets it, so
#: that a tool's failure, which never leaves the tool's handler as an exception, is mapped too).
shaping: contextvars.ContextVar[Callable[[BaseException], BaseException | None] | None] = contextvars.ContextVar(
    "trio_mcp_shaping", default=None
)

_ERROR_ID = re.compile(r"\(error id ([0-9a-f]+)\)")


class Fate(enum.Enum):
    """What to do with an exception that escaped a handler."""

    #: Let it go on up: Ctrl-C, or a cancellation of a scope around the handler.
    PROPAGATE = "propagate"
    #: The request is being cancelled from outside, but the handler failed on its way out: log, do not answer.
    DROP = "drop"
    #: The handler failed: log it and answer the request with an error.
    ANSWER = "answer"


def _only_cancelled(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_cancelled(inner) for inner in exc.exceptions)
    return isinstance(exc, trio.Cancelled)


def fate_of(exc: BaseException) -> Fate:
    """Decide, in the handler's task just outside the handler's own scopes, what ``exc`` means.

    A ``trio.Cancelled`` is genuine only while a scope around us is cancelled; one a handler kept from its own
    scope and re-raised later is a bug in that handler, and fails only its request.
    """
    if first_leaf(exc, KeyboardInterrupt) is not None:
        return Fate.PROPAGATE
    if trio.current_effective_deadline() == -math.inf:
        return Fate.PROPAGATE if _only_cancelled(exc) else Fate.DROP
    return Fate.ANSWER


def must_propagate(exc: BaseException) -> bool:
    """Whether a failure of one HTTP request or connection must go on up: Ctrl-C, or a cancellation of a scope
    around the caller. Anything else, a ``SystemExit`` or a ``trio.Cancelled`` that escaped a handler's own
    cancel scope included, fails that request or connection only."""
    if first_leaf(exc, KeyboardInterrupt) is not None:
        return True
    return trio.current_effective_deadline() == -math.inf and first_leaf(exc, trio.Cancelled) is not None


def report_failure(logger: logging.Logger, what: str, exc: BaseException) -> str:
    """Log ``exc`` with its traceback at ERROR under a new correlation id, and return the id."""
    error_id = error_id_of(exc)
    logger.error("%s failed (error id %s)", what, error_id, exc_info=exc)
    return error_id


def failure_text(what: str, exc: BaseException, error_id: str, *, expose: bool) -> str:
    """What the peer is told: that ``what`` failed and the id to find it in the logs; the details only if
    ``expose`` (they may hold paths, queries or secrets)."""
    if not expose:
        return f"{what} failed (error id {error_id})"
    details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
    return f"{what} failed (error id {error_id}): {type(exc).__name__}: {exc}\n{details}"


def error_id_of(exc: BaseException) -> str:
    """The correlation id of ``exc``: made once, so that every line about one failure (the access log's, the
    traceback's, the peer's answer) names the same id."""
    error_id = getattr(exc, "_trio_mcp_error_id", None)
    if not isinstance(error_id, str):
        error_id = secrets.token_hex(4)
        try:
            exc._trio_mcp_error_id = error_id  # type: ignore[attr-defined]
        except AttributeError:  # pragma: no cover - an exception class with __slots__
            pass
    return error_id


def error_id_in(text: str) -> str | None:
    """The correlation id a ``failure_text`` names, if ``text`` is one."""
    found = _ERROR_ID.search(text)
    return found.group(1) if found else None


def shaped(exc: BaseException) -> BaseException | None:
    """What the exception mapping in effect makes of ``exc`` (an ``McpError`` or ``ToolError``), or None."""
    shape = shaping.get()
    return shape(exc) if shape is not None else None
