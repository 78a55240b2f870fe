"""Noticing a handler that holds the event loop: a blocking call (``time.sleep(3)``, a sync HTTP client) in an
async handler stalls every other request of every client, and nothing else would say so.

The handler's coroutine is driven one step at a time (from one ``await`` that yields to the next) and each
step is timed with ``time.perf_counter()``; a step longer than the server's ``blocking_warning`` is logged
with the handler's name. That costs two clock reads per step, and nothing for servers that turn it off.
"""

from __future__ import annotations

import logging
import time
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Final, TypeVar

import attrs

__all__ = ["Watch", "watched"]

logger = logging.getLogger("trio_mcp.server")

T = TypeVar("T")


@attrs.frozen
class Watch:
    """How long one step of a handler may hold the event loop before a warning, and the handler's name."""

    limit: float
    what: str

    def check(self, started: float) -> None:
        """Warn if the step that began at ``started`` (``time.perf_counter()``) held the loop too long."""
        held = time.perf_counter() - started
        if held > self.limit:
            logger.warning(
                "%s held the event loop for %.2f s without yielding, so every other request waited: a blocking "
                "call in an async handler? Use an async library or trio.to_thread.run_sync(), or make it a sync "
                "tool (those run in a worker thread); Server(blocking_warning=None) turns this warning off",
                self.what,
                held,
            )


#: What ``next`` returns for a handler that ended (none yields it).
_ENDED: Final = object()


async def _kept(value: list[Any], handler: Awaitable[Any]) -> None:
    """Await ``handler`` and keep its value in ``value``: a coroutine whose end carries nothing, so that ``next``
    with a default takes it (``watched``)."""
    value.append(await handler)


@types.coroutine
def watched(watch: Watch, fn: Callable[..., Awaitable[T]], kwargs: dict[str, Any]) -> Generator[Any, Any, T]:
    """Await ``fn(**kwargs)`` as ``await fn(**kwargs)`` would, timing each step it runs (see the module
    docstring). The call is made here, not by the caller: ``functools.partial(watched, watch, fn)`` then starts a
    watched handler with no function of the caller's own around it.

    The first step, in which most handlers end, is taken by ``next`` with a default, which takes the end without
    the StopIteration that ``send`` raises: catching that costs more than the handler's whole step."""
    value: list[T] = []
    steps = _kept(value, fn(**kwargs)).__await__()
    clock, limit = time.perf_counter, watch.limit
    step: Any = None  # the next step: the first (None), or with what trio sent, or throwing what it threw in
    given: Any = None
    while True:
        started = clock()
        try:
            yielded = next(steps, _ENDED) if step is None else step(given)
        except StopIteration:  # a later step ended it
            yielded = _ENDED
        except BaseException:
            watch.check(started)
            raise
        if clock() - started > limit:
            watch.check(started)
        if yielded is _ENDED:
            return value[0]
        try:
            step, given = steps.send, (yield yielded)
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as exc:  # a cancellation (or anything trio throws in) goes on to the handler
            step, given = steps.throw, exc
