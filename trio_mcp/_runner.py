"""Where the engine runs an inbound request: in which task, inside which cancel scope, and what ends it.

The engine (``Session``) makes one call for each request it reads, ``await runner.run(serve, request, reader)``;
``serve`` runs the request's handler inside the scope it is given and answers it. There is one runner per way a
transport hands requests over:

- ``Spawn``: each request in a task of its own, in a nursery the connection owns;
- ``Inline``: as a step of the reading task until the handler first waits (stdio);
- ``InCaller``: in the task that handed the request over (an HTTP POST that carries one request).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from ._in_task import run_noting_waits
from ._task_set import TaskSet

__all__ = ["InCaller", "Inline", "Reader", "RequestRunner", "Serve", "Spawn"]


class Reader:
    """One reading task's turn at reading, over once a request it served inline waited (``Inline``).

    ``scope`` is entered around the reading: a request served inline has it for its cancel scope, as the task
    becomes that request's alone once it waits (and nothing but that request can cancel it before). A request
    served with a reader is a step of the reading until it waits: then the turn is ``handed_off``, and
    ``read_on`` starts a new reading task."""

    __slots__ = ("handed_off", "scope", "read_on")

    def __init__(self) -> None:
        self.handed_off = False
        self.scope = trio.CancelScope()
        self.read_on: Callable[[], None] | None = None

    def hand_off(self) -> bool:
        """The request served inline waited: this turn is over, and reading goes on in a new task (whose context
        is the reader's own, untouched). A bound method, not a closure made per request."""
        self.handed_off = True
        assert self.read_on is not None
        self.read_on()
        return True


class Request(Protocol):
    """What a runner needs of the request it runs (``InboundRequest``): the runner gives it its cancel scope."""

    cancel_scope: trio.CancelScope


class Serve(Protocol):
    """The engine's part: run ``request``'s handler inside ``scope`` (None: no scope of its own, the runner gave it
    one already or its task is its scope) and answer it. ``reader`` is the reading turn it is a step of, if any."""

    def __call__(self, request: Any, scope: trio.CancelScope | None, reader: Reader | None) -> Awaitable[None]: ...


class RequestRunner(Protocol):
    """Runs each inbound request the engine reads; see the module docstring."""

    def run(self, serve: Serve, request: Request, reader: Reader | None) -> Awaitable[None]:
        """Give ``request`` its cancel scope and run ``serve`` for it (``reader``: the reading turn it was read
        in, None for a batch's member or a message handed over): what to await, which returns once it is started,
        or done where it runs in this task. The engine's one call per request."""


class Spawn:
    """Each request in a task of its own in ``tasks``: the nursery ``Session.run`` opens, or the ``TaskSet`` an HTTP
    session keeps in its endpoint's nursery (an idle session then holds no task).

    Owner: that nursery. Cancel scope: the request's own, entered by its task around the handler; the peer's
    ``notifications/cancelled`` cancels it, and so does the end of the session (the nursery's scope, or the set,
    which holds the scope). Ends: when the handler returns and the answer is written.
    """

    __slots__ = ("tasks",)

    def __init__(self, tasks: trio.Nursery | TaskSet) -> None:
        self.tasks = tasks

    async def run(self, serve: Serve, request: Request, reader: Reader | None) -> None:
        tasks = self.tasks
        scope = request.cancel_scope = trio.CancelScope()
        if type(tasks) is TaskSet:
            tasks.start_soon(serve, request, scope, None, scope=scope)  # the set cancels it: no second scope
        else:
            tasks.start_soon(serve, request, scope, None)


class Inline:
    """Each request as a step of the reading task until its handler first waits; then the task is that request's
    alone and ``read_on()`` starts a new one reading. Over stdio, whose ``send_later`` queues the answer of a
    request that never waited, most requests cost no task at all. A batch's members, read with no turn of their
    own, are spawned in ``tasks`` (``Spawn``).

    Owner: the reading task (nothing else runs in it until the handler returns). Cancel scope: the reading scope
    (``Reader.scope``), entered already around the reading, one per reading task rather than one per request; the
    peer's cancel or the end of the session (``tasks``' scope) cancels it. Ends: when the handler returns; a task
    that was handed the request then returns, another one reading already.
    """

    __slots__ = ("_spawn", "_read_on")

    def __init__(self, tasks: trio.Nursery, read_on: Callable[[], None]) -> None:
        self._spawn = Spawn(tasks)
        self._read_on = read_on

    def run(self, serve: Serve, request: Request, reader: Reader | None) -> Awaitable[None]:
        if reader is None:
            return self._spawn.run(serve, request, reader)
        request.cancel_scope = reader.scope
        reader.read_on = self._read_on
        # In a context copied for it, as trio gives a task it spawns; no coroutine of this method around it.
        return run_noting_waits(serve(request, None, reader), reader.hand_off, contextvars.copy_context())


class InCaller:
    """In the task that handed the request over: an HTTP POST that carries one request, served before it answers.

    Owner: that task, the HTTP request's. Cancel scope: with ``tasks`` (a session's ``TaskSet``) a scope of its
    own: ``scope``, one the task already runs in (our h11 server's ``handler_scope``, entered once for the requests
    of a connection, whose cancel ends this request and its POST but not the connection), or else a new one,
    entered around the handler. The peer's ``notifications/cancelled`` cancels it, and so does the end of the
    session, which cancels every request in flight (nothing holds the scope meanwhile: the session knows its
    requests). Without ``tasks`` (a stateless request, the only message of its connection), none, the task being
    its scope (the client closing the response cancels it). It runs in a context copied for it, as in a task of its
    own. ``on_wait`` is called the first time the handler waits, so that what the task would have done meanwhile
    (keeping the POST's stream alive) is done by another. Ends: when the handler returns and the answer is
    written; the task then goes on with the HTTP request.
    """

    __slots__ = ("_on_wait", "_scope", "tasks")

    def __init__(
        self,
        tasks: TaskSet | None = None,
        *,
        on_wait: Callable[[], None] | None = None,
        scope: trio.CancelScope | None = None,
    ) -> None:
        self.tasks = tasks
        self._on_wait = on_wait
        self._scope = scope

    def run(self, serve: Serve, request: Request, reader: Reader | None) -> Awaitable[None]:
        scope = self._scope
        if scope is None:
            scope = trio.CancelScope()  # cancelled by the peer's cancel even where not entered
            entered = None if self.tasks is None else scope
        else:
            entered = None  # entered already, around this task
        request.cancel_scope = scope
        # In a context copied for it, as a task of its own would have: the HTTP request's task serves the
        # connection's next requests too, and none of them sees what this one's handler set. No coroutine of
        # this method around it.
        return run_noting_waits(serve(request, entered, None), self._waited, contextvars.copy_context())

    def _waited(self) -> bool:
        """The handler waited for the first time (``run_noting_waits``): tell ``on_wait``."""
        if self._on_wait is not None:
            self._on_wait()
        return True
