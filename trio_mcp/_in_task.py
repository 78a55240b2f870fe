"""Running a coroutine as a step of the calling task, and noticing when it first waits.

A handler that answers without waiting needs no task of its own, and an HTTP connection whose handlers never
wait needs no reader task beside them: both are decided when the coroutine first yields to trio.
"""

from __future__ import annotations

import contextvars
import functools
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any

__all__ = ["run_noting_waits"]


@types.coroutine
def run_noting_waits(
    awaitable: Awaitable[None], on_wait: Callable[[], bool], context: contextvars.Context | None = None
) -> Generator[Any, Any, None]:
    """Await ``awaitable`` in this task, calling ``on_wait()`` each time it yields to trio until that returns
    True.

    Trio's sends and throws reach it as they come; with ``context``, every step of it runs in that context (as
    in a task of its own), so neither side sees the other's context variables."""
    coro = awaitable.__await__()
    try:
        # Most never wait: their one step needs none of what the loop below sets up.
        yielded = coro.send(None) if context is None else context.run(coro.send, None)
    except StopIteration:
        return
    send: Callable[[Any], Any] = coro.send
    throw: Callable[[BaseException], Any] = coro.throw
    close: Callable[[], None] = coro.close
    if context is not None:
        run: Callable[..., Any] = context.run
        send = functools.partial(run, coro.send)
        throw = functools.partial(run, coro.throw)
        close = functools.partial(run, coro.close)
    watching = True
    try:
        while True:
            if watching:
                watching = not on_wait()
            try:
                sent = yield yielded
            except GeneratorExit:
                close()
                raise
            except BaseException as exc:
                yielded = throw(exc)
            else:
                yielded = send(sent)
    except StopIteration:
        return
