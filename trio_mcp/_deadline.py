"""Deadlines that travel with requests: the ``io.github.trio-mcp/deadline`` extension (docs/deadlines.md).

A request sent while the sender's task has a deadline carries the time left, less ``MARGIN``, in its
``_meta``; the receiver serves it under that budget, measured from receipt (no clocks compared). A budget
already spent is answered at once with ``DEADLINE_EXCEEDED``, and so is a handler still running when it runs
out. The sender, told ``DEADLINE_EXCEEDED``, waits out its own deadline, so that its scope is cancelled at the
very time it set, as without the extension.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, TypeVar

import trio

from .errors import DEADLINE_EXCEEDED, INVALID_PARAMS, McpError
from .types import META_DEADLINE

__all__ = ["MARGIN", "declare", "remaining", "serve_within", "waited_out", "with_deadline"]

#: Seconds each hop keeps back from the budget it passes on, for its answer to travel back in time.
MARGIN: Final = 0.002
#: The longest a sender waits out its own deadline after a ``DEADLINE_EXCEEDED`` answer.
WAIT_LIMIT: Final = 1.0

R = TypeVar("R")


class Received(Protocol):
    """A request as the receiving session holds it."""

    @property
    def method(self) -> str: ...

    @property
    def params(self) -> dict[str, Any] | None: ...


Q = TypeVar("Q", bound=Received)


def declare(capabilities: dict[str, Any]) -> dict[str, Any]:
    """``capabilities`` declaring the extension under ``extensions`` (2026-07-28: the legacy revisions have
    no place for extensions; there the ``_meta`` entry alone says it, and is honoured all the same)."""
    capabilities["extensions"] = {
        **(capabilities.get("extensions") or {}),
        META_DEADLINE: {"marginMs": MARGIN * 1000},
    }
    return capabilities


def remaining() -> float | None:
    """Seconds left before the current task's effective deadline (0 once passed), None without one."""
    deadline = trio.current_effective_deadline()
    return None if deadline == math.inf else max(0.0, deadline - trio.current_time())


def with_deadline(params: dict[str, Any] | None) -> tuple[dict[str, Any] | None, float]:
    """``params`` carrying the sender's budget when its task has a deadline, and that deadline (inf: none
    sent)."""
    deadline = trio.current_effective_deadline()
    if deadline == math.inf:
        return params, deadline
    budget_ms = round(max(0.0, (deadline - trio.current_time() - MARGIN) * 1000), 3)
    params = dict(params) if params else {}
    meta = params.get("_meta") or {}
    given = meta.get(META_DEADLINE)
    if type(given) is dict and isinstance(given.get("remainingMs"), (int, float)) and given["remainingMs"] < budget_ms:
        return params, math.inf  # the sender named a shorter budget itself: its answer is the sender's to take
    params["_meta"] = {**meta, META_DEADLINE: {"remainingMs": budget_ms}}
    return params, deadline


def _budget(entry: Any) -> float | None:
    """The budget in seconds of a request's ``_meta`` entry, None for none (null); a malformed one is refused."""
    if entry is None:
        return None
    left = entry.get("remainingMs") if type(entry) is dict else None
    if isinstance(left, bool) or not isinstance(left, (int, float)) or not left >= 0 or left == math.inf:
        raise McpError(
            INVALID_PARAMS,
            f"Invalid params: _meta[{META_DEADLINE!r}] must be an object with remainingMs, a number of"
            " milliseconds 0 or more",
        )
    return left / 1000


def serve_within(request: Q, serve: Callable[[Q], Awaitable[R]]) -> Awaitable[R]:
    """``serve(request)`` within the budget the request carries (if any), counted from now: what to await. A request
    without one (most) is served as it is, with no coroutine of this module around it."""
    params = request.params
    if not params or "_meta" not in params:  # most requests: nothing to read
        return serve(request)
    meta = params["_meta"]
    if type(meta) is not dict or META_DEADLINE not in meta:  # most with a _meta (every 2026-07-28 request)
        return serve(request)
    budget = _budget(meta[META_DEADLINE])
    if budget is None:
        return serve(request)
    return _serve_on_budget(request, serve, budget)


async def _serve_on_budget(request: Q, serve: Callable[[Q], Awaitable[R]], budget: float) -> R:
    """``serve(request)`` cancelled once ``budget`` seconds have passed, which is then the caller's error."""
    if budget <= 0:
        raise McpError(
            DEADLINE_EXCEEDED, f"Deadline exceeded: the caller's deadline for {request.method} passed before it arrived"
        )
    with trio.move_on_after(budget):
        return await serve(request)
    raise McpError(
        DEADLINE_EXCEEDED, f"Deadline exceeded: the caller's deadline for {request.method} passed while it was served"
    )


async def waited_out(error: McpError, deadline: float) -> None:
    """The peer answered ``DEADLINE_EXCEEDED`` to a request sent with ``deadline``: wait for it, so that the
    caller's scope is cancelled when it said (the answer comes ``MARGIN`` early by design). A deadline further
    than ``WAIT_LIMIT`` away means the peer's code meant something else: the error is the caller's at once."""
    if error.code == DEADLINE_EXCEEDED and deadline - trio.current_time() <= WAIT_LIMIT:
        await trio.sleep_until(deadline)
