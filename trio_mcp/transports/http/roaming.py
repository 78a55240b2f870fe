"""What several processes serving one legacy-era session share: the ``SessionDirectory`` interface.

With a directory (``HttpTransportOptions(session_directory=...)``), a session is not tied to the process that
opened it. Its state (what the connection hands ``StreamControl.remember``) is kept in the directory and any process that receives a request for
it takes it over, and every process serving a session hears the others through ``publish``:

- a client's answer to a server request, or a cancellation, that reaches a process which did not send that
  request or is not serving it;
- a client notification (``notifications/initialized``, roots changes), for every process serving the session;
- an SSE event for a stream whose reader is attached to another process (the GET stream, or a request's stream
  resumed elsewhere with ``Last-Event-ID``).

Each process has an ``origin`` (random, unique): the ids of the streams it opens and of the requests it sends
start with it, so ids never clash, and a stream resumed on another process can tell whether the process that
serves it is still alive (``alive``). ``trio_mcp.scale.RedisSessionDirectory`` implements it on Redis;
``LocalSessionDirectory``, the one a server without it uses, is one process alone: its own sessions are all there
is, so it records, routes and claims nothing, at no cost per call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, NoReturn, Protocol

import trio

from ..._core.jsonrpc import RequestId
from ..._core.session_record import SessionRecord

__all__ = ["LocalSessionDirectory", "Routed", "SessionDirectory", "SessionTasks"]

#: Receives what another process published for a session this process may be serving.
Routed = Callable[[str, Mapping[str, Any]], Awaitable[None]]
#: Called once this process hears the others (again): what they published meanwhile is lost.
Joined = Callable[[], Awaitable[None]]
Started = trio.TaskStatus[None]


class SessionTasks(Protocol):
    """The server's tasks as the end of a session shared by several processes concerns them (``TaskManager``): a
    process may run a task of a session it does not serve, so each learns of the end."""

    def shared_sessions(self) -> Collection[str]:
        """The ids of the shared sessions with a task running in this process."""

    async def session_ended(self, session_id: str) -> None:
        """The session ended: its tasks running in this process end too."""


class SessionDirectory(Protocol):
    """Session records and messages shared by the processes that serve the same clients."""

    @property
    def origin(self) -> str:
        """This process's id among those sharing the directory (letters and digits only); empty for a directory
        no other process shares (``LocalSessionDirectory``): ids then need no mark of their process."""

    async def save(self, session_id: str, record: SessionRecord) -> None:
        """Keep a session's record, replacing the previous one; it expires when the session idles out."""

    async def load(self, session_id: str) -> SessionRecord | None:
        """A session's record, or None if there is none (never opened, ended, expired, or unreadable: logged)."""

    async def touch(self, session_ids: Sequence[str]) -> None:
        """These sessions were used: their records live another ``ttl`` (the directory's own setting)."""

    async def forget(self, session_id: str) -> None:
        """Drop a session's record and stream records (it ended)."""

    async def open_stream(self, session_id: str, stream_id: str, request_ids: Sequence[RequestId]) -> None:
        """Record which requests a stream answers, for a process that resumes it after its own process died."""

    async def stream_requests(self, session_id: str, stream_id: str) -> list[RequestId] | None:
        """The requests a stream answers (``open_stream``), or None if unknown."""

    async def claim(self, session_id: str, change: str) -> bool:
        """True for the first process to claim ``change`` (a ``notified_change``) for this session, which then tells
        the client of it; False for every other (for a minute at least, longer than pub/sub takes)."""

    async def publish(self, session_id: str, message: Mapping[str, Any]) -> None:
        """Send ``message`` (JSON) to every other process, for the session ``session_id``; at most once (an
        outage drops it, and never raises)."""

    async def alive(self, origin: str) -> bool:
        """Whether the process ``origin`` is running (it keeps saying so while its ``run`` runs)."""

    async def run(
        self, routed: Routed, joined: Callable[[], Awaitable[None]], *, task_status: trio.TaskStatus[None] = ...
    ) -> NoReturn:
        """Deliver what the other processes publish to ``routed`` and keep this process marked alive, for the
        life of the HTTP app; ``task_status.started()`` once subscribed. ``joined`` is awaited after every
        subscription, the first included: what was published while this process was not subscribed is lost, so
        it reloads the records of the sessions it holds. An outage, even at the start, is waited out (and
        logged), never raised."""


class LocalSessionDirectory:
    """The ``SessionDirectory`` of one process alone (``origin`` empty): the sessions it serves are all there
    are, held by the endpoint itself; nothing needs recording for, routing to or claiming from another process."""

    @property
    def origin(self) -> str:
        return ""

    async def save(self, session_id: str, record: SessionRecord) -> None:
        pass

    async def load(self, session_id: str) -> SessionRecord | None:
        return None  # a session this process does not hold is no session

    async def touch(self, session_ids: Sequence[str]) -> None:
        pass

    async def forget(self, session_id: str) -> None:
        pass

    async def open_stream(self, session_id: str, stream_id: str, request_ids: Sequence[RequestId]) -> None:
        pass

    async def stream_requests(self, session_id: str, stream_id: str) -> list[RequestId] | None:
        return None

    async def claim(self, session_id: str, change: str) -> bool:
        return True

    async def publish(self, session_id: str, message: Mapping[str, Any]) -> None:
        pass

    async def alive(self, origin: str) -> bool:
        return True

    async def run(self, routed: Routed, joined: Joined, *, task_status: Started = trio.TASK_STATUS_IGNORED) -> NoReturn:
        task_status.started()
        await trio.sleep_forever()
