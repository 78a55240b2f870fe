"""Running a coroutine as a step of the calling task, and noticing when it first waits.

A handler that answers without waiting needs no task of its own, and an HTTP connection whose handlers never
wait needs no reader task beside them: both are decided when the coroutine first yields to trio. The schedule
point of a write the descriptor took at once (``pass_turn``) is not a wait: the task runs on in trio's next batch.
"""

from __future__ import annotations

import contextvars
import functools
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Final

import trio

__all__ = ["pass_turn", "run_noting_waits"]

#: How many times ``pass_turn`` yielded, in any task: a step of a watched coroutine that yields while it grew
#: ended in ``pass_turn`` (a step runs alone; another thread's trio run passing a turn meanwhile at worst makes a
#: real wait count one step late).
_turns_passed = 0
#: What ``next`` returns for a coroutine that ended (none yields it).
_ENDED: Final = object()


async def pass_turn() -> None:
    """Let the other tasks run once, as a schedule point and never a cancellation: the checkpoint that a write
    done without waiting still owes after its ``checkpoint_if_cancelled``. ``run_noting_waits`` does not take it
    for a wait."""
    global _turns_passed
    _turns_passed += 1
    await trio.lowlevel.cancel_shielded_checkpoint()


@types.coroutine
def run_noting_waits(
    awaitable: Awaitable[None], on_wait: Callable[[], bool], context: contextvars.Context | None = None
) -> Generator[Any, Any, None]:
    """Await ``awaitable`` in this task, calling ``on_wait()`` each time it yields to trio to wait (not to
    ``pass_turn``) until that returns True.

    Trio's sends and throws reach it as they come; with ``context``, every step of it runs in that context (as
    in a task of its own), so neither side sees the other's context variables."""
    coro = awaitable.__await__()
    turns = _turns_passed
    # Most never wait: their one step needs none of what the loop below sets up, and ``next`` with a default takes
    # its end without the StopIteration that ``send`` raises, which costs more to catch than the step itself.
    yielded = next(coro, _ENDED) if context is None else context.run(next, coro, _ENDED)
    if yielded is _ENDED:
        return
    # Every step runs in ``context``: trio's sends come at each wait, its throws (a cancellation) and a close
    # rarely, so only the send is bound for it.
    send: Callable[[Any], Any] = coro.send
    if context is not None:
        run: Callable[..., Any] = context.run
        send = functools.partial(run, send)
    watching = True
    try:
        while True:
            if watching and turns == _turns_passed:
                watching = not on_wait()
            try:
                sent = yield yielded
            except GeneratorExit:
                if context is None:
                    coro.close()
                else:
                    context.run(coro.close)
                raise
            except BaseException as exc:
                turns = _turns_passed
                yielded = coro.throw(exc) if context is None else context.run(coro.throw, exc)
            else:
                turns = _turns_passed
                yielded = send(sent)
    except StopIteration:
        return
