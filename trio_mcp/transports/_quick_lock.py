"""A lock for writes: one per event or response written, almost always free."""

from __future__ import annotations

import trio

__all__ = ["QuickLock"]


class QuickLock:
    """A FIFO lock taken without a schedule point when it is free.

    Held once per event written; it is almost always free, and a checkpoint per event would cost a scheduler
    round each time. When it is not, waiters queue in order and the holder hands it to the first on release.
    """

    __slots__ = ("_held", "_waiters")

    def __init__(self) -> None:
        self._held = False
        self._waiters: trio.lowlevel.ParkingLot | None = None

    @property
    def locked(self) -> bool:
        """Whether a writer holds it (so that taking it would wait)."""
        return self._held

    async def __aenter__(self) -> None:
        if not self._held:
            self._held = True
            return
        if self._waiters is None:
            self._waiters = trio.lowlevel.ParkingLot()
        await self._waiters.park()  # returns holding the lock: release() handed it over

    async def __aexit__(self, *exc_info: object) -> None:
        if self._waiters:
            self._waiters.unpark()
        else:
            self._held = False
