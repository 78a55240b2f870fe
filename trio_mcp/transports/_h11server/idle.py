"""The keep-alive timeout of every connection of a server, kept by one task.

A connection that waits for its next request is closed once it has waited ``HttpLimits.keep_alive_timeout``. A
deadline on the connection's own cancel scope would be written twice a request (when it goes idle, and back to
none when the request comes), each write re-registering it with trio; here going idle is an entry in a dict, and
one task for the whole server sleeps until the first entry is due.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NoReturn, Protocol

import trio

__all__ = ["KeepAliveTimeouts"]


class Idle(Protocol):
    """A connection as its keep-alive timeout sees it."""

    def close_if_idle(self) -> None:
        """Close the connection if it still waits for its next request."""


class KeepAliveTimeouts:
    """Connections waiting for their next request, and when each is due to be closed; ``run`` closes them then."""

    __slots__ = ("_due", "_now", "_timeout", "_waited", "_wakeup")

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        #: The run's clock, read without the two calls of ``trio.current_time`` (made in the run that serves).
        self._now = trio.lowlevel.current_clock().current_time
        #: Each waiting connection and when it is due: in that order too, every connection waiting the same time
        #: and each entry made afresh at the end (ordered, so that taking the first is as cheap as adding one).
        self._due: OrderedDict[Idle, float] = OrderedDict()
        #: Whether a connection began to wait since ``run`` last looked.
        self._waited = False
        #: Set for ``run`` when it sleeps with nothing to time (after a whole timeout without a waiting connection).
        self._wakeup: trio.Event | None = None

    def start(self, connection: Idle) -> None:
        """``connection`` waits for its next request from now on."""
        self._due[connection] = self._now() + self._timeout
        self._waited = True
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    def stop(self, connection: Idle) -> bool:
        """``connection`` no longer waits (its request came, or it closed); False if it waited too long (and was
        told to close)."""
        return self._due.pop(connection, None) is not None

    async def run(self) -> NoReturn:
        """Close each connection when it is due; runs until cancelled.

        It sleeps until the first entry is due; with none, for a whole timeout if a connection waited meanwhile
        (any that begins to wait later is due later), else until one begins to wait: a connection that goes
        idle and back costs it nothing, whatever the number of requests."""
        due = self._due
        while True:
            now = self._now()
            while due and next(iter(due.values())) <= now:
                connection, _ = due.popitem(last=False)
                connection.close_if_idle()
            if due:
                wake_at = next(iter(due.values()))
            elif self._waited:
                wake_at = now + self._timeout
            else:
                self._wakeup = wakeup = trio.Event()
                await wakeup.wait()
                continue
            self._waited = False
            await trio.sleep_until(wake_at)
