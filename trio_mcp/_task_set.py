"""Tasks run in a nursery another task holds open, cancelled together.

A session served this way holds no task while it is idle: its requests and notifications run in the nursery of
the transport that owns it, and ending the session cancels exactly its own tasks. A parked task and the nursery
it waits in were most of an idle HTTP session's memory.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ._failures import Fate, fate_of

__all__ = ["TaskSet"]


class TaskSet:
    """The tasks of one owner (a session) in a nursery it does not own.

    Each task runs in a cancel scope of its own; ``cancel()`` cancels them all, and any started later, and then
    tells whoever asked (``on_cancel``). What escapes a task other than Ctrl-C or the nursery's own cancellation
    goes to ``on_failure`` instead of the nursery, so one owner's failure never reaches the others.
    """

    __slots__ = ("_nursery", "_scopes", "_on_cancel", "_on_failure", "cancelled")

    def __init__(self, nursery: trio.Nursery, *, on_failure: Callable[[BaseException], None]) -> None:
        self._nursery = nursery
        self._scopes: set[trio.CancelScope] = set()
        self._on_cancel: list[Callable[[], None]] = []
        self._on_failure = on_failure
        self.cancelled = False

    def start_soon(
        self, fn: Callable[..., Awaitable[object]], *args: Any, scope: trio.CancelScope | None = None
    ) -> None:
        """Run ``fn(*args)`` in the nursery, cancelled with the rest of this set: in a cancel scope of its own,
        or in ``scope``, one the task enters itself (a request's: a second scope would cost as much again)."""
        own = scope is None
        if scope is None:
            scope = trio.CancelScope()
        self.hold(scope)
        self._nursery.start_soon(self._run, scope, own, fn, args)

    async def _run(
        self, scope: trio.CancelScope, own: bool, fn: Callable[..., Awaitable[object]], args: tuple[Any, ...]
    ) -> None:
        try:
            if own:
                with scope:
                    await fn(*args)
            else:
                await fn(*args)
        except BaseException as exc:
            if fate_of(exc) is Fate.PROPAGATE:
                raise
            self._on_failure(exc)
        finally:
            self.release(scope)

    def hold(self, scope: trio.CancelScope) -> None:
        """Cancel ``scope`` with this set, until ``release``: each task's (``start_soon``), or that of work running
        in a task the set does not own."""
        if self.cancelled:
            scope.cancel()
        self._scopes.add(scope)

    def release(self, scope: trio.CancelScope) -> None:
        """Stop cancelling ``scope`` with this set (its work is done)."""
        self._scopes.discard(scope)

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Have ``callback`` called once, when ``cancel()`` is (at once if it already was)."""
        if self.cancelled:
            callback()
        else:
            self._on_cancel.append(callback)

    def cancel(self) -> None:
        """Cancel every task of this set, now and to come, then run the ``on_cancel`` callbacks (once)."""
        if self.cancelled:
            return
        self.cancelled = True
        for scope in self._scopes:
            scope.cancel()
        callbacks, self._on_cancel = self._on_cancel, []
        for callback in callbacks:
            callback()
