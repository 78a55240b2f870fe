"""A lock for writes: one per event or response written, almost always free."""

from __future__ import annotations

import trio

from .._in_task import pass_turn

__all__ = ["QuickLock"]


class QuickLock:
    """A FIFO lock whose free path is one checkpoint, as trio's own ``Lock`` has, and nothing more.

    Held once per event written, and almost always free: taking it checks for cancellation, takes it and lets the
    other tasks run once (``checkpoint_if_cancelled`` before, ``pass_turn`` after), with no
    parking lot and no cancel scope. When it is held, waiters queue in order and the holder hands it to the first
    on release.
    """

    __slots__ = ("_held", "_waiters")

    def __init__(self) -> None:
        self._held = False
        self._waiters: trio.lowlevel.ParkingLot | None = None

    @property
    def locked(self) -> bool:
        """Whether a writer holds it (so that taking it would wait)."""
        return self._held

    async def acquire(self, *, shielded: bool = False, turn: bool = True) -> None:
        """Take the lock, waiting in line if it is held. ``shielded``: a cancelled caller still takes it, at
        once if it is free (a caller that must wait for it waits in a shielded scope of its own). ``turn=False``:
        a free lock is taken without the schedule point, for a holder whose writes take theirs."""
        if not shielded:
            await trio.lowlevel.checkpoint_if_cancelled()
        if not self._held:
            self._held = True
            if turn:
                await pass_turn()
            return
        if self._waiters is None:
            self._waiters = trio.lowlevel.ParkingLot()
        await self._waiters.park()  # returns holding the lock: release() handed it over

    def release(self) -> None:
        """Hand the lock to the first waiter, or free it."""
        if self._waiters:
            self._waiters.unpark()
        else:
            self._held = False

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        self.release()
