"""The legacy era of Streamable HTTP (2025-03-26 .. 2025-11-25): opening, finding and ending sessions.

``initialize`` opens a session (``Mcp-Session-Id`` from ``secrets``); later POSTs carry the id, GET opens the
standalone SSE stream, DELETE ends the session. Server messages go on the stream of the request they relate
to, others on the GET stream, each on one stream only (``session.py``: one session and its streams). On
2025-11-25 each stream opens with a priming event and a ``retry`` hint. A dropped stream is not a cancellation
in this era. Idle sessions are reaped and their number is capped. Sessions are found through a session directory
(``roaming.py``): the process's own (``LocalSessionDirectory``), or one shared by several processes, any of which
serves any request of a session, taking it over from its record. The end of a session shared so ends its tasks
on every process, which may run tasks of it whether or not it serves the session now (``SessionTasks``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
from collections.abc import Mapping
from typing import Any, NoReturn

import trio

from ..._core.inbound import Refusal, Rejection, Route
from ..._core.jsonrpc import RequestId, encode
from ..._core.session_record import SessionState
from ..._core.session_streams import ClientMistake, Step, origin_of
from ..._core.sse import encode_comment
from ..._identity import caller_key
from ..._runner import InCaller, Spawn
from ..._wire.features import Feature, has
from ...errors import ConnectionClosed
from .._h11server import ClientDisconnected
from ._common import (
    JSON_HEADERS,
    ConnectFunction,
    SseWriter,
    refuse,
    request_principal,
)
from .exchange import Request as HttpRequest  # the h11 server's, or the ASGI adapter's
from .exchange import Response as HttpResponse
from .options import HttpTransportOptions
from .roaming import LocalSessionDirectory, SessionDirectory, SessionTasks
from .session import HttpSession, SessionStream, unavailable

__all__ = ["HttpSession", "SessionEndpoint"]

logger = logging.getLogger("trio_mcp.http")

#: The requests whose answer says the session's record changed (``StreamControl.remember``).
_RECORDING = frozenset({"initialize", "resources/subscribe", "resources/unsubscribe", "logging/setLevel"})

#: How long a POST's SSE head waits for the first event to go with it (a quick answer then costs one write).
_HEAD_HOLD = 0.05


class SessionEndpoint:
    """Serves the legacy era on the Streamable HTTP endpoint and owns every session (and its reaper)."""

    def __init__(
        self,
        connect: ConnectFunction,
        nursery: trio.Nursery,
        options: HttpTransportOptions,
        tasks: SessionTasks | None = None,
    ) -> None:
        self.options = options
        self._connect = connect
        self._tasks = tasks
        self._nursery = nursery
        self.sessions: dict[str, HttpSession] = {}
        self._directory: SessionDirectory = options.session_directory or LocalSessionDirectory()
        #: The directory of the legacy HTTP+SSE transport's sessions: they never roam.
        self._local = LocalSessionDirectory()
        #: Sessions being taken over from the directory, so that concurrent requests take one over once.
        self._adopting: dict[str, trio.Event] = {}
        #: Of those, the ones another process ended meanwhile: their record, loaded before, is taken over no more.
        self._ended_while_adopting: set[str] = set()

    # -- POST, GET, DELETE ---------------------------------------------------------------------------------

    async def post(self, request: HttpRequest, response: HttpResponse, route: Route) -> None:
        message = route.message
        if route.session_id is None:
            opened = await self.open_session(response, sse_only=False)
            if opened is None:
                return
            session = opened
        else:
            # Most: a session held here, the caller's; one to take over from the directory, or none, is looked up.
            found = self.find(route.session_id) or await self._lookup(route.session_id, response, message)
            if found is None:
                return
            session = found
        try:
            await self._post_to(session, response, route)
        except ConnectionClosed:  # the session ended after it was found: a DELETE here, or on another process
            if not response.started or response.withdraw():
                await refuse(response, Rejection(Refusal.SESSION_NOT_FOUND, "Session not found", _single_id(message)))
            else:  # its stream had begun: it ends with the session
                with contextlib.suppress(ClientDisconnected):
                    await response.finish()

    async def _post_to(self, session: HttpSession, response: HttpResponse, route: Route) -> None:
        """Serve a POST in ``session``; raises ``ConnectionClosed`` if the session ends before it is handed over."""
        message = route.message
        if type(message) is list and not has(session.version, Feature.BATCHES):
            await refuse(
                response,
                Rejection(
                    Refusal.BATCH_NOT_ALLOWED,
                    "Invalid Request: JSON-RPC batches exist only in protocol revision 2025-03-26",
                ),
            )
            return
        session.touch()
        here, there = session.book.split(message)
        if there is not None:
            await session.directory.publish(session.id, {"kind": "inbound", "message": there})
        if not route.request_ids:
            if here is not None:
                await session.deliver(here)
            await response.send(202)
            return
        message = here
        stream = await session.open_stream(route.request_ids)
        # When sessions roam, a request that changes the session's record is answered once it is kept: a 503 if
        # it could not be (the session is not opened, or not changed for good).
        recording = session.roams and type(message) is dict and message.get("method") in _RECORDING
        if self.options.json_response or recording:
            unrecorded = session.unrecorded
            stream.collect = True
            if type(message) is dict:
                # One request runs in this task, which waits for its answer anyway: no task of its own. A client
                # leaving, or a drain, does not end it (as on the SSE path); the server's cancel does.
                await session.deliver(message, InCaller(session.tasks))
            else:
                await session.deliver(message)
            if not stream.over:  # a batch, its members in the session's tasks
                with trio.CancelScope() as watch:  # until answered, the client leaves or a drain begins
                    response.cancel_on_disconnect(watch, or_shutdown=True)
                    await stream.wait_complete()
            if recording and session.unrecorded > unrecorded:
                if route.opens_session:
                    session.end()
                await refuse(response, unavailable(_single_id(message)))
                return
            if response.gone:
                return
            if session.closed:  # a DELETE, here or elsewhere, ended it while the request ran
                raise ConnectionClosed("session ended")
            if self.options.json_response:
                headers = (("mcp-session-id", session.id),)
                answers = session.collected_answers(stream)
                if not answers:  # every request was cancelled: nothing to answer
                    await response.send(202, headers)
                    return
                body = answers[0] if type(message) is dict and len(answers) == 1 else answers
                await response.send(200, [*JSON_HEADERS, *headers], encode(body))
                return
            await response.start(200, session.sse_head)
            writer = SseWriter(response)
            if await session.attach(stream, writer):  # what it collected
                stream.left(writer)
            await writer.end()
            return
        # The revision is known only once initialize is answered: no priming event before that.
        priming = None if route.opens_session else await session.priming(stream)
        # The head waits for the first event: a quick answer goes with it in one write (a slow one gets it after
        # ``_HEAD_HOLD``, below).
        await response.start(200, session.sse_head, priming or b"", hold=True)
        writer = SseWriter(response)
        await session.attach(stream, writer)
        if type(message) is not dict:  # a batch: its members run in the session's tasks
            await session.deliver(message)
            await self._stream_until_done(session, stream, writer, response, head_held=True)
            return
        # The request runs in this task, as a stateless one does: most are answered before they first wait, with no
        # task, wake-up or watch of the stream. One that waits has the stream watched meanwhile by another task.
        watched: trio.Event | None = None

        def watch_meanwhile() -> None:
            nonlocal watched
            watched = trio.Event()
            session.tasks.start_soon(self._watch, session, stream, writer, response, watched)

        # Its cancel scope is the one the connection runs its handlers in, where it has one: no scope per request.
        scope = response.handler_scope
        try:
            await session.deliver(message, InCaller(session.tasks, on_wait=watch_meanwhile, scope=scope))
            await self._end_post(session, stream, writer, response, watched)
        except BaseException:
            if scope is not None and scope.cancel_called:  # the rest of the POST, once the cancel has unwound
                response.after_cancel(functools.partial(self._end_post, session, stream, writer, response, watched))
            raise

    async def _end_post(
        self,
        session: HttpSession,
        stream: SessionStream,
        writer: SseWriter,
        response: HttpResponse,
        watched: trio.Event | None,
    ) -> None:
        """The rest of a POST whose request ran in its task: its stream to the end."""
        if watched is not None:  # it waited: another task has been writing the stream meanwhile, to its end
            await watched.wait()
        elif stream.over:  # over without a wait (most: answered, the response ended with it): nothing to hold open
            stream.left(writer)
            await writer.end()
        else:
            await self._stream_until_done(session, stream, writer, response, head_held=True)

    async def _watch(
        self, session: HttpSession, stream: SessionStream, writer: SseWriter, response: HttpResponse, done: trio.Event
    ) -> None:
        """``_stream_until_done`` for a POST whose request waits in the POST's task; ``done`` set at the end."""
        try:
            await self._stream_until_done(session, stream, writer, response, head_held=True)
        finally:
            done.set()

    async def get(self, request: HttpRequest, response: HttpResponse, route: Route) -> None:
        session = await self._session_for(route, response)
        if session is None:
            return
        session.touch()
        stream = session.standalone
        last_event_id = route.last_event_id
        if last_event_id is not None:
            store = self.options.event_store
            try:
                replay = await store.replay(session.id, last_event_id) if store is not None else None
                resumed = session.streams.get(replay[0]) if replay is not None else None
                if resumed is None and replay is not None:
                    resumed = await self._stream_not_open(session, replay[0], last_event_id)
            except Exception as exc:  # a networked store or directory in an outage: this request only
                logger.warning("cannot resume a stream of session %s: %s", session.id[:8], type(exc).__name__)
                await refuse(response, unavailable())
                return
            if resumed is None:
                await refuse(
                    response, Rejection(Refusal.UNKNOWN_LAST_EVENT_ID, f"Unknown Last-Event-ID {last_event_id!r}")
                )
                return
            stream = resumed
        else:
            try:
                stream.check(Step.READ)
            except ClientMistake as mistake:
                await refuse(response, mistake.rejection)
                return
        await response.start(200, session.sse_head)
        writer = SseWriter(response)
        try:
            if not await session.attach(stream, writer, last_event_id=last_event_id):
                return
        except ClientMistake:  # another GET began reading the stream meanwhile
            return
        # Not "nothing pending": an answer leaves ``pending`` before it is written (it may be waiting for the lock
        # attach just held), and this response is then where it goes.
        if stream is not session.standalone and stream.over:
            stream.left(writer)
            await writer.end()
            return
        await self._stream_until_done(session, stream, writer, response)

    async def delete(self, request: HttpRequest, response: HttpResponse, route: Route) -> None:
        session = await self._session_for(route, response)
        if session is None:
            return
        if session.roams:  # ended for every process: its record and its events go first
            try:
                await self._forget_everywhere(session)
            except Exception as exc:  # kept in the directory, the session goes on: the client may try again
                logger.warning("session %s not ended: %s", session.id[:8], type(exc).__name__)
                await refuse(response, unavailable())
                return
            await session.directory.publish(session.id, {"kind": "end"})
        session.end()
        if session.roams:
            await self._ended(session.id)
        await response.send(200)

    async def _ended(self, session_id: str) -> None:
        """A roaming session ended: so do its tasks running here (a failure only logs)."""
        if self._tasks is None:
            return
        try:
            await self._tasks.session_ended(session_id)
        except Exception as exc:  # the task store's own failure: each task records its end when its work stops
            logger.warning("session %s ended; its tasks not all recorded so: %s", session_id[:8], type(exc).__name__)

    async def _end_tasks_of_gone_sessions(self) -> None:
        """End the tasks running here of the roaming sessions not held here whose record is gone: ended while this
        process did not listen, or expired (no request for the directory's ``ttl``)."""
        if self._tasks is None or not self._directory.origin:  # no roaming sessions, no directory to ask
            return
        for session_id in list(self._tasks.shared_sessions()):
            if session_id in self.sessions:  # held: its end is heard, or found at a rejoin
                continue
            try:
                record = await self._directory.load(session_id)
            except Exception as exc:  # the directory's own failure: the next sweep asks again
                logger.warning("session %s of a task here not looked up: %s", session_id[:8], type(exc).__name__)
                return
            if record is None:
                await self._ended(session_id)

    async def _forget_everywhere(self, session: HttpSession) -> None:
        """Drop what the directory and the event store keep of a roaming session that ended."""
        await session.directory.forget(session.id)
        if self.options.event_store is not None:
            await self.options.event_store.forget(session.id)

    async def _session_for(self, route: Route, response: HttpResponse) -> HttpSession | None:
        if route.session_id is None:
            await refuse(response, Rejection(Refusal.SESSION_NOT_FOUND, "Session not found"))
            return None
        return await self._lookup(route.session_id, response)

    async def _lookup(self, session_id: str, response: HttpResponse, message: Any = None) -> HttpSession | None:
        """The caller's session with this id, taken over from the directory if another process opened it;
        None after answering 404 (or 503 when the directory cannot be reached) to ``message``."""
        session = self.find(session_id)
        if session is None and session_id not in self.sessions:
            try:
                session = await self._adopt(session_id)
            except Exception as exc:  # the directory's own failure (Redis down, say): this request only
                logger.warning("session directory unavailable for session %s: %s", session_id[:8], type(exc).__name__)
                await refuse(response, unavailable(_single_id(message)))
                return None
        if session is None:
            await refuse(response, Rejection(Refusal.SESSION_NOT_FOUND, "Session not found", _single_id(message)))
        return session

    async def _adopt(self, session_id: str) -> HttpSession | None:
        """Serve here a session another process opened, rebuilt from its record (no handshake again)."""
        adopting = self._adopting.get(session_id)
        if adopting is not None:
            await adopting.wait()
            return self.find(session_id)
        self._adopting[session_id] = done = trio.Event()
        try:
            record = await self._directory.load(session_id)
            if record is None or record.caller != caller_key(request_principal.get()):
                return None
            if session_id in self._ended_while_adopting:  # its end was heard while its record was on the way
                return None
            if len(self.sessions) >= self.options.max_sessions:
                self.reap_idle()
            if len(self.sessions) >= self.options.max_sessions:
                logger.warning("cannot take over HTTP session %s: max_sessions reached", session_id[:8])
                return None
            return await self._start(session_id, sse_only=False, restored=record.state)
        finally:
            del self._adopting[session_id]
            self._ended_while_adopting.discard(session_id)
            done.set()

    async def _stream_not_open(self, session: HttpSession, stream_id: str, last_event_id: str) -> SessionStream | None:
        """A stored stream this session does not hold open: one answered already, whose stored events are all
        there is to send, or one another process serves, followed here (stored events now, routed ones as they
        come)."""
        origin = origin_of(stream_id)
        if origin == session.directory.origin:
            answered = SessionStream(stream_id, set())
            answered.completed()
            return answered
        requests = await session.directory.stream_requests(session.id, stream_id)
        if requests is None:
            return None
        stream = SessionStream(stream_id, set(requests), origin=origin)
        stream.last_id = last_event_id  # where catching up from the store starts
        session.streams[stream_id] = stream
        return stream

    async def _stream_until_done(
        self,
        session: HttpSession,
        stream: SessionStream,
        writer: SseWriter,
        response: HttpResponse,
        *,
        head_held: bool = False,
    ) -> None:
        """Hold the response open until its stream is complete, the client leaves, or the server drains (then
        the stream is ended cleanly: a client of this era resumes it elsewhere). Idle streams get ``:``
        keep-alive comments; a head started with ``hold`` goes after ``_HEAD_HOLD`` if no event took it. No task
        is spawned for any of this."""
        open_ = True
        if head_held and not stream.over:
            # A quick answer comes within the hold: the watch's own deadline times it, one scope in all.
            with trio.CancelScope(relative_deadline=_HEAD_HOLD) as watch:
                stream.watch = watch
                response.cancel_on_disconnect(watch, or_shutdown=True)
                await stream.wait_complete()
            if stream.watch is watch:
                stream.watch = None
            if not stream.over:  # no answer yet: the client gets the head, and the priming event, now
                open_ = await writer.raw(b"")
        if open_ and not stream.over:
            await self._keep_open(session, stream, writer, response)
            session.touch()  # the end of a stream held open is traffic too (a quick one began moments ago)
        stream.left(writer)
        await writer.end()

    async def _keep_open(
        self, session: HttpSession, stream: SessionStream, writer: SseWriter, response: HttpResponse
    ) -> None:
        """``_stream_until_done`` for a stream that is still open after its head went: ticks until it ends."""
        with trio.CancelScope() as watch:
            stream.watch = watch
            response.cancel_on_disconnect(watch, or_shutdown=True)
            # A stream followed from another process is checked on while it is quiet: it ends if that process died.
            quiet = (
                self.options.keepalive_interval if stream.origin is None else min(self.options.keepalive_interval, 1.0)
            )
            while True:
                with trio.move_on_after(quiet):
                    await stream.wait_complete()
                if stream.over:
                    break
                if stream.origin is not None:
                    if await session.catch_up(stream):
                        break
                    if not await session.directory.alive(stream.origin):
                        await session.orphaned(stream)
                        break
                if not await writer.raw(encode_comment()):
                    break
        if stream.watch is watch:
            stream.watch = None

    # -- the sessions --------------------------------------------------------------------------------------

    async def open_session(self, response: HttpResponse, *, sse_only: bool) -> HttpSession | None:
        """A new session served by a connection of its own, or None after answering 503 (too many)."""
        if len(self.sessions) >= self.options.max_sessions:
            self.reap_idle()
        if len(self.sessions) >= self.options.max_sessions:
            await refuse(
                response,
                Rejection(
                    Refusal.TOO_MANY_SESSIONS, "Too many sessions; try again later", headers=(("retry-after", "5"),)
                ),
            )
            return None
        return await self._start(secrets.token_urlsafe(32), sse_only=sse_only)

    async def _start(self, session_id: str, *, sse_only: bool, restored: SessionState | None = None) -> HttpSession:
        """A session and its connection, which runs in the session's ``tasks`` (no task waits while it idles)."""
        session = HttpSession(
            session_id,
            self.options,
            self._nursery,
            self._local if sse_only else self._directory,
            sse_only=sse_only,
            principal=request_principal.get(),
            on_end=self._forget,
            restored=restored,
        )
        self.sessions[session.id] = session
        try:
            await self._connect(session, principal=session.principal, control=session, runner=Spawn(session.tasks))
        except BaseException:
            session.end()
            raise
        return session

    def find(self, session_id: str) -> HttpSession | None:
        """The session with this id, if it belongs to this caller (another principal's session is not found)."""
        session = self.sessions.get(session_id)
        principal = request_principal.get()
        if session is None or (principal is not session.principal and session.caller != caller_key(principal)):
            return None
        session.principal = principal  # the same caller; its latest token (refreshed, stepped up)
        return session

    def _forget(self, session: HttpSession) -> None:
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
        store = self.options.event_store
        # A roaming session may still be served elsewhere: its stored events expire on their own.
        if store is not None and not session.sse_only and not session.roams:
            self._nursery.start_soon(store.forget, session.id)

    def reap_idle(self) -> None:
        """End sessions that have had no traffic for ``session_idle_timeout`` and are not in use."""
        limit = trio.current_time() - self.options.session_idle_timeout
        for session in list(self.sessions.values()):
            if session.last_activity < limit and not _in_use(session):
                logger.info("ending idle HTTP session %s", session.id[:8])
                session.end()

    async def maintain(self) -> NoReturn:
        """Reap idle sessions periodically and hear the other processes sharing the directory, if any (runs for
        the life of the endpoint)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._directory.run, self._routed, self._joined)  # reaping never waits for it
            interval = max(min(self.options.session_idle_timeout / 4, 60.0), 0.05)
            while True:
                swept = trio.current_time()
                await trio.sleep(interval)
                self.reap_idle()
                await self._touch_used(swept)
                await self._end_tasks_of_gone_sessions()
        raise AssertionError("unreachable")

    async def _touch_used(self, since: float) -> None:
        """Keep the directory records of the sessions used here since ``since``, or in use now (an outage only
        logs): a session does not expire while a call of it runs, however long."""
        used = [session.id for session in self.sessions.values() if session.last_activity >= since or _in_use(session)]
        try:
            await self._directory.touch(used)
        except Exception as exc:  # the directory's own failure: the records may expire early, nothing more
            logger.warning("session records not refreshed: %s", type(exc).__name__)

    async def _joined(self) -> None:
        """Routing is (back) on, and what was published before is lost: take each held session's state from its
        record again, and end those that ended elsewhere (their record is gone)."""
        for session in list(self.sessions.values()):
            if not session.recorded:  # no record yet (its initialize is under way): nothing to refresh from
                continue
            try:
                record = await self._directory.load(session.id)
            except Exception as exc:  # the directory's own failure: the next rejoin tries again
                logger.warning("session %s not refreshed: %s", session.id[:8], type(exc).__name__)
                return
            if record is None:
                session.end()
                await self._ended(session.id)
            elif session.apply_state is not None:
                session.apply_state(record.state)
        await self._end_tasks_of_gone_sessions()

    async def _routed(self, session_id: str, routed: Mapping[str, Any]) -> None:
        """What another process published for a session: a client message, an event, or the session's end."""
        session = self.sessions.get(session_id)
        kind = routed.get("kind")
        if session is None:
            if kind == "end":
                if session_id in self._adopting:  # not taken over yet: it must not be, now
                    self._ended_while_adopting.add(session_id)
                await self._ended(session_id)  # a copy let go here may have left tasks running here
            return
        if kind == "inbound":
            here, _ = session.book.split(routed.get("message"))
            if here is not None:
                with trio.move_on_after(self.options.keepalive_interval):  # a stuck session never stalls routing
                    await session.deliver(here)
        elif kind == "event":
            await session.routed_event(
                str(routed.get("stream")), routed.get("id"), routed.get("message"), last=bool(routed.get("last"))
            )
        elif kind == "state" and session.apply_state is not None:
            try:
                state = SessionState.from_json(routed.get("state"))
            except ValueError as exc:
                logger.warning("ignored an unreadable state routed for session %s: %s", session_id[:8], exc)
                return
            session.apply_state(state)
        elif kind == "end":
            session.end()
            await self._ended(session_id)
            # What this process recorded of the session after it ended elsewhere (a request served here before the
            # end was heard) goes too: nothing of it outlives its DELETE.
            try:
                await self._forget_everywhere(session)
            except Exception as exc:  # the directory's own failure: what is left expires with the session's TTL
                logger.warning("session %s: its records here not dropped: %s", session_id[:8], type(exc).__name__)


def _in_use(session: HttpSession) -> bool:
    """Whether a session has a stream open or a request of its own being served here (a JSON response's, whose
    POST reads no stream meanwhile, included): it is not idle, whatever the time since its last request."""
    return bool(session.owner) or session.busy()


def _single_id(message: Any) -> RequestId | None:
    request_id = message.get("id") if type(message) is dict else None
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None
