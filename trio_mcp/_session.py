"""The trio session engine: one nursery per session, one cancel scope per inbound request.

It correlates requests and responses, maps ``notifications/cancelled`` onto cancel scopes in both
directions, routes ``notifications/progress`` to the caller that asked for it, bounds every wait, and
turns a closed transport into ``ConnectionClosed`` for every caller at once. It is symmetric: the same
engine runs the client and the server side. It knows nothing of MCP beyond cancellation and progress;
what a method means is the ``RequestHandler``'s business. Over a transport that can queue a write (stdio's
``send_later``) a request starts in the reader's task and gets a task of its own only if it blocks.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal, Protocol

import attrs
import trio

from ._core.jsonrpc import (
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    RequestId,
    Response,
    UnencodableMessage,
    classify,
    encode,
    error_message,
    is_request_id,
    notification_message,
    request_message,
    result_message,
)
from ._deadline import serve_within, waited_out, with_deadline
from ._failures import Fate, failure_text, fate_of, report_failure
from ._runner import InCaller, Inline, Reader, RequestRunner, Spawn
from ._task_set import TaskSet
from ._util import Sentinel
from .errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    SERVER_BUSY,
    ConnectionClosed,
    McpError,
    RequestTimeout,
)
from .transports._base import MessageStream

__all__ = ["Session", "InboundRequest", "RequestHandler", "ProgressCallback", "SessionStatistics", "progress_params"]

logger = logging.getLogger("trio_mcp.session")

#: How long a courtesy ``notifications/cancelled`` may take to write before we give up on it.
CANCEL_NOTIFY_TIMEOUT: Final = 5.0

ProgressCallback = Callable[[dict[str, Any]], Any]
"""Called with the params of each ``notifications/progress`` for a request (may return an awaitable)."""

PeerCancelMode = Literal["interrupt", "signal"]


class RequestHandler(Protocol):
    """What a session calls for inbound traffic. Raise ``McpError`` to answer a request with an error; any
    other exception is that request's failure alone (a logged -32603 with an error id, see ``_failures``)."""

    @property
    def inline_methods(self) -> frozenset[str]:
        """Requests served in the reader task, in arrival order, before anything after them is read."""

    async def handle_request(self, request: InboundRequest) -> Any: ...

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None: ...


class _Ended:
    """The handler of a session whose connection is gone (``Session.release_handler``): it serves nothing."""

    inline_methods: frozenset[str] = frozenset()

    async def handle_request(self, request: InboundRequest) -> Any:
        raise ConnectionClosed("session ended")

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        return None


_ENDED: Final = _Ended()


def progress_params(token: RequestId, progress: float, total: float | None, message: str | None) -> dict[str, Any]:
    """The params of ``notifications/progress``: the optional fields only when given."""
    params: dict[str, Any] = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message is not None:
        params["message"] = message
    return params


#: The scope a request has until its runner gives it one, at once (``RequestRunner.run``); never entered.
_RUNNER_GIVES_SCOPE: Final = trio.CancelScope()


class InboundRequest(Request):
    """A request from the peer while it is being served: ``classify`` makes it as it reads the request, the
    session gives it ``session`` and ``cancel_scope`` as it takes it in flight.

    ``cancel_scope`` is entered around the handler; a ``notifications/cancelled`` for this id cancels it (in
    "signal" mode it only sets ``cancel_requested``). Messages sent through ``notify()``/``request()`` are
    tagged as related to this request, so per-request streams deliver them next to its response.
    """

    # What a request starts with and most keep (no peer's cancel, no progress sent, not in a batch), as class
    # attributes: set on the request when they change, not one by one for every request.
    _cancel_requested: trio.Event | None = None  # made when first asked for: most requests never are
    cancel_reason: str | None = None
    _last_progress: float | None = None
    _batch: _Batch | None = None
    cancel_scope: trio.CancelScope = _RUNNER_GIVES_SCOPE  # until served here, or its runner gives it one

    session: Session

    @property
    def cancel_requested(self) -> trio.Event:
        """Set when the peer sends ``notifications/cancelled`` for this request."""
        if self._cancel_requested is None:
            self._cancel_requested = trio.Event()
        return self._cancel_requested

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``_meta`` object ({} when absent)."""
        params = self.params
        if params is not None:
            meta = params.get("_meta")
            if type(meta) is dict:
                return meta
        return {}

    @property
    def progress_token(self) -> str | int | None:
        """The token the peer asked progress to be reported under, if any."""
        token = self.meta.get("progressToken")
        return token if is_request_id(token) else None

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the peer asked for progress; a no-op otherwise.

        Progress must increase with every call (the spec requires it); a value that does not is dropped
        with a warning rather than sent.
        """
        token = self.progress_token
        if token is None:
            return
        if self._last_progress is not None and not progress > self._last_progress:
            logger.warning(
                "progress for request %r must increase (got %s after %s); not sent",
                self.id,
                progress,
                self._last_progress,
            )
            return
        self._last_progress = progress
        params = progress_params(token, progress, total, message)
        await self.session.notify("notifications/progress", params, related_request_id=self.id)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification that belongs with this request."""
        await self.session.notify(method, params, related_request_id=self.id)

    async def request(self, method: str, params: dict[str, Any] | None = None, **options: Any) -> Any:
        """Send a request to the peer on behalf of this one (sampling from inside a tool call, say)."""
        return await self.session.request(method, params, related_request_id=self.id, **options)

    def __repr__(self) -> str:
        return f"InboundRequest(id={self.id!r}, method={self.method!r})"


class _Pending:
    """One outbound request waiting for its response."""

    __slots__ = (
        "method",
        "event",
        "outcome",
        "scope",
        "on_progress",
        "progress_token",
        "last_progress",
        "timeout",
        "max_deadline",
        "reset_on_progress",
    )

    def __init__(self, method: str) -> None:
        self.method = method
        self.event = trio.Event()
        self.outcome: Response | ErrorResponse | ConnectionClosed | None = None
        self.scope: trio.CancelScope | None = None
        self.on_progress: ProgressCallback | None = None
        self.progress_token: RequestId | None = None
        self.last_progress: float | None = None
        self.timeout: float | None = None
        self.max_deadline = math.inf
        self.reset_on_progress = False


class _Batch:
    """Collects the responses to one inbound JSON-RPC batch so they go back as one array."""

    __slots__ = ("responses", "remaining", "unanswered")

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []
        self.remaining = 0
        #: Members that ended without an answer: the transport is told once the batch's answer went.
        self.unanswered: list[RequestId] = []


@attrs.frozen
class SessionStatistics:
    """Counters that make leaks visible: requests being served, requests awaiting answers."""

    inbound_in_flight: int
    outbound_pending: int
    closed: bool


#: The runner of a session not started yet (nothing reaches it: ``take`` refuses until one is).
_NOT_STARTED: Final = InCaller()

#: Why a session that served one message alone is closed (never raised itself: see ``_closed_error``).
_SERVED: Final = ConnectionClosed("request served")

#: "Use the default" (the session's ``request_timeout``); reads as DEFAULT in ``help()``.
_UNSET: Final[Any] = Sentinel("DEFAULT")


class Session:
    """Runs one JSON-RPC conversation over a ``MessageStream``; see the module docstring.

    Start it with ``await nursery.start(session.run)``. Everything the session spawns lives in the
    nursery ``run`` opens, so cancelling ``run`` (or ``close()``) ends every request it serves.
    """

    # What every session starts with, as class attributes: a session made for one stateless request need not set
    # them one by one. Each is set on the session when it changes.
    _next_id: int = 1
    #: Where the session's work runs: ``run()``'s nursery, or the transport's ``TaskSet`` (``attach``).
    _nursery: trio.Nursery | TaskSet | None = None
    #: Where each request runs (``_runner.py``): set by ``run``, ``attach`` or ``serve_alone``.
    _runner: RequestRunner = _NOT_STARTED
    _closed: ConnectionClosed | None = None
    #: Set by the protocol layer once a revision that has JSON-RPC batches (2025-03-26) is negotiated.
    accept_batches: bool = False

    def __init__(
        self,
        stream: MessageStream,
        handler: RequestHandler,
        *,
        max_in_flight: int = 256,
        request_timeout: float | None = None,
        peer_cancel_mode: PeerCancelMode = "interrupt",
        expose_errors: bool = False,
        request_id_prefix: str = "",
        request_ended: Callable[[RequestId], None] | None = None,
    ) -> None:
        """``expose_errors`` puts a failed handler's exception text and traceback in the error sent to the peer
        (for development); by default the peer gets a generic message and a correlation id. A
        ``request_id_prefix`` makes the ids of the requests this side sends strings that start with it, so that
        several processes serving one session (roaming HTTP sessions) never send the same id. ``request_ended``
        is told the id of each inbound request that ends without an answer (the peer cancelled it, or it was
        dropped): a transport with a stream per request ends that stream (``StreamControl.request_ended``)."""
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self._stream = stream
        self._handler = handler
        self._max_in_flight = max_in_flight
        self.request_timeout = request_timeout
        self._peer_cancel_mode = peer_cancel_mode
        self._expose_errors = expose_errors
        self._id_prefix = request_id_prefix
        self._request_ended = request_ended
        self._pending: dict[RequestId, _Pending] = {}
        self._progress: dict[RequestId, _Pending] = {}
        self._in_flight: dict[RequestId, InboundRequest] = {}
        #: How the transport queues a message for its next write, and writes the queue, if it can (stdio): the
        #: reader then serves requests inline (``Inline``).
        self._send_later: Callable[[Any], None] | None = getattr(stream, "send_later", None)
        self._flush: Callable[[], Awaitable[None]] | None = getattr(stream, "flush", None)

    # -- lifetime ---------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read and dispatch until the transport closes or ``close()`` is called."""
        if self._nursery is not None:
            raise RuntimeError("Session.run() may only be called once")
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if self._send_later is None:
                self._runner = Spawn(nursery)
            else:
                self._runner = Inline(nursery, lambda: nursery.start_soon(self._read_loop))
            task_status.started()
            await self._read_loop()

    async def serve_alone(self, message: Any, runner: InCaller) -> None:
        """Serve one message already read (a stateless HTTP request) in the caller's task, with no reader and no
        task of its own, then close: the same handling as ``run`` gives a message, without its machinery."""
        if self._nursery is not None:
            raise RuntimeError("Session.serve_alone() is for a session that does not run()")
        self._runner = runner
        try:
            await self._take(message)
        finally:
            self._shutdown(_SERVED)

    def attach(self, runner: Spawn) -> None:
        """Serve the messages handed to ``take()`` with no reader and no task of the session's own: requests run
        in ``runner.tasks``, a transport's ``TaskSet`` (the transport delivers every message itself). Cancelling
        the set closes the session; closing it cancels them."""
        tasks = runner.tasks
        if self._nursery is not None:
            raise RuntimeError("Session.attach() is for a session that does not run()")
        if type(tasks) is not TaskSet:
            raise TypeError(f"an attached session runs its requests in a TaskSet, not {type(tasks).__name__}")
        self._nursery = tasks
        self._runner = runner
        tasks.on_cancel(self.close)

    async def take(self, message: Any, runner: RequestRunner | None = None) -> None:
        """Handle one message the transport read itself, in the caller's task, as the reader would: no hop through
        ``receive()`` and the reader's task. Its request runs by ``runner`` (``InCaller``: in this task), else as
        the session's do (a batch's members always do). Only while ``run()`` runs or after ``attach()``; raises
        ``ConnectionClosed`` once the session is closed."""
        if self._nursery is None:
            raise RuntimeError("Session.take() is for a session that runs or is attached")
        if self._closed is not None:
            raise self._closed_error()
        await self._take(message, None, runner)

    def release_handler(self) -> None:
        """Forget the handler once nothing of this session runs any more. A connection and its session refer to
        each other: without this only the garbage collector frees them (a stateless request makes a pair)."""
        self._handler = _ENDED

    def close(self, reason: str = "session closed") -> None:
        """Stop the session now: fail every pending call with ``ConnectionClosed`` and cancel every handler."""
        self._shutdown(ConnectionClosed(reason))

    async def aclose(self) -> None:
        """``close()``, then close the transport (bounded, shielded)."""
        self.close()
        with trio.CancelScope(shield=True, deadline=trio.current_time() + CANCEL_NOTIFY_TIMEOUT):
            await self._stream.aclose()

    @property
    def stream(self) -> MessageStream:
        """The transport this session runs over."""
        return self._stream

    @property
    def closed(self) -> bool:
        """True once the transport closed or ``close()`` was called."""
        return self._closed is not None

    def serving(self, request_id: RequestId) -> bool:
        """Whether the request from the peer with this id is being served (not yet answered)."""
        return request_id in self._in_flight

    def statistics(self) -> SessionStatistics:
        """Current counters (cheap; for tests and monitoring)."""
        return SessionStatistics(len(self._in_flight), len(self._pending), self._closed is not None)

    def _shutdown(self, reason: ConnectionClosed) -> None:
        if self._closed is None:
            self._closed = reason
        pending, self._pending = self._pending, {}
        self._progress.clear()
        # Wake waiters synchronously: callers may be inside cancelled scopes and must not need to run first.
        for waiter in pending.values():
            if waiter.outcome is None:
                waiter.outcome = self._closed
            waiter.event.set()
        # Every request being served ends with the session, wherever it runs: in a task of the nursery or set
        # cancelled below, or in a task that handed it over (``InCaller``), which nothing else here reaches.
        for request in self._in_flight.values():
            request.cancel_scope.cancel()
        tasks = self._nursery
        if isinstance(tasks, TaskSet):
            tasks.cancel()
        elif tasks is not None:
            tasks.cancel_scope.cancel()

    # -- outbound ---------------------------------------------------------------------------------

    async def notify(
        self, method: str, params: dict[str, Any] | None = None, *, related_request_id: RequestId | None = None
    ) -> None:
        """Send a notification. Raises ``ConnectionClosed`` when the transport is gone."""
        if self._closed is not None:
            raise self._closed_error()
        await self._send(notification_message(method, params), related_request_id)

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = _UNSET,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
        related_request_id: RequestId | None = None,
        cancellable: bool = True,
        on_id: Callable[[RequestId], Any] | None = None,
    ) -> Any:
        """Send a request and wait for its result.

        Cancelling the calling task sends ``notifications/cancelled`` (once, shielded, bounded) and re-raises
        ``trio.Cancelled``; so does a timeout, which then raises ``RequestTimeout``. ``on_progress`` receives
        each ``notifications/progress`` params dict; with ``reset_timeout_on_progress`` each one restarts the
        timeout, but never past ``max_total_timeout`` from the start. ``cancellable=False`` (``initialize``)
        suppresses the cancel notification, as the spec requires.

        Raises:
            McpError: the peer answered with an error.
            RequestTimeout: no answer within the timeout.
            ConnectionClosed: the transport closed first.
        """
        if self._closed is not None:
            raise self._closed_error()
        if timeout is _UNSET:
            timeout = self.request_timeout
        request_id: RequestId = f"{self._id_prefix}{self._next_id}" if self._id_prefix else self._next_id
        self._next_id += 1
        if on_id is not None:
            on_id(request_id)
        params, caller_deadline = with_deadline(params)  # the caller's deadline travels (docs/deadlines.md)
        pending = _Pending(method)
        if on_progress is not None:
            params = dict(params) if params else {}
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = request_id
            params["_meta"] = meta
            pending.on_progress = on_progress
            pending.progress_token = request_id
            self._progress[request_id] = pending
        now = trio.current_time()
        if max_total_timeout is not None:
            pending.max_deadline = now + max_total_timeout
        pending.timeout = timeout
        pending.reset_on_progress = reset_timeout_on_progress
        self._pending[request_id] = pending
        written = False
        try:
            await self._send(request_message(request_id, method, params), related_request_id)
            written = True
            deadline = min(now + timeout if timeout is not None else math.inf, pending.max_deadline)
            with trio.CancelScope(deadline=deadline) as pending.scope:
                await pending.event.wait()
        except trio.Cancelled:
            if written and cancellable and pending.outcome is None:
                await self._send_cancel(request_id, "cancelled by the caller")
            raise
        finally:
            self._pending.pop(request_id, None)
            self._progress.pop(request_id, None)
        outcome = pending.outcome
        if outcome is None:  # the deadline fired before any answer
            if cancellable:
                await self._send_cancel(request_id, "request timed out")
            limit = timeout if timeout is not None else (max_total_timeout or 0.0)
            raise RequestTimeout(method, limit)
        if type(outcome) is Response:
            return outcome.result
        if type(outcome) is ErrorResponse:
            error = McpError.from_error(outcome.error)
            await waited_out(error, caller_deadline)
            raise error
        assert isinstance(outcome, ConnectionClosed)
        raise ConnectionClosed(outcome.reason, detail=outcome.detail) from None

    async def _send_cancel(self, request_id: RequestId, reason: str) -> None:
        if self._closed is not None:
            return
        with trio.CancelScope(shield=True, deadline=trio.current_time() + CANCEL_NOTIFY_TIMEOUT):
            try:
                await self._send(
                    notification_message("notifications/cancelled", {"requestId": request_id, "reason": reason}),
                    None,
                )
            except ConnectionClosed:
                pass

    async def _send(self, message: Any, related_request_id: RequestId | None, *, final: bool = False) -> None:
        try:
            await self._stream.send(message, related_request_id=related_request_id, final=final)
        except ConnectionClosed as exc:
            self._shutdown(exc)
            raise self._closed_error() from None

    def _closed_error(self) -> ConnectionClosed:
        closed = self._closed
        assert closed is not None
        return ConnectionClosed(closed.reason, detail=closed.detail)

    # -- inbound ----------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        """Read and dispatch until the transport closes, then close the session. A reader whose inline request
        blocked has handed reading to a new task: it returns once that request is done, leaving the session open."""
        receive = self._stream.receive
        reader = Reader()
        reason = ConnectionClosed("session closed")
        try:
            while not reader.handed_off:
                with reader.scope:
                    while not reader.handed_off:
                        await self._take(await receive(), reader)
                if not reader.handed_off:  # a request served inline cancelled its own scope: read on in a new one
                    reader.scope = trio.CancelScope()
        except ConnectionClosed as exc:
            reason = exc
        finally:
            if not reader.handed_off:
                self._shutdown(reason)

    def _take(self, message: Any, reader: Reader | None = None, runner: RequestRunner | None = None) -> Awaitable[None]:
        """What to await to handle one message read (no coroutine of this method around it)."""
        kind = type(message)
        if kind is dict:  # most messages
            event = classify(message, InboundRequest)
        elif kind is list:
            return self._receive_batch(message)
        elif kind is Request:  # one the transport classified already (a stateless POST's)
            event = InboundRequest(message.id, message.method, message.params)
        else:
            event = message if kind is InvalidMessage else classify(message, InboundRequest)
        if type(event) is InboundRequest:  # most messages: one coroutine fewer than through _dispatch
            return self._receive_request(event, None, reader, runner)
        return self._dispatch(event, None, reader, runner)

    async def _dispatch(
        self, event: Any, batch: _Batch | None, reader: Reader | None = None, runner: RequestRunner | None = None
    ) -> None:
        kind = type(event)
        if kind is InboundRequest:
            await self._receive_request(event, batch, reader, runner)
        elif kind is Notification:
            await self._receive_notification(event)
        elif kind is Response or kind is ErrorResponse:
            self._receive_response(event)
        else:
            assert kind is InvalidMessage
            logger.warning("invalid message from peer: %s", event.reason)
            if event.respond:
                await self._reply(error_message(event.id, event.code, event.reason), event.id, batch)

    async def _receive_batch(self, messages: list[Any]) -> None:
        if not self.accept_batches or not messages:
            reason = (
                "Invalid Request: empty batch"
                if not messages
                else ("Invalid Request: JSON-RPC batches are not supported in this protocol revision")
            )
            await self._reply(error_message(None, INVALID_REQUEST, reason), None, None)
            return
        batch = _Batch()
        batch.remaining = 1  # held open until every member is dispatched
        for item in messages:
            event = classify(item, InboundRequest)
            if type(event) is InboundRequest and event.method in self._handler.inline_methods:
                event = InvalidMessage(
                    INVALID_REQUEST, f"Invalid Request: {event.method} must not be batched", event.id
                )
            await self._dispatch(event, batch)
        await self._batch_member_done(batch, None)

    def _receive_request(
        self, request: InboundRequest, batch: _Batch | None, reader: Reader | None, runner: RequestRunner | None
    ) -> Awaitable[None]:
        """Take ``request`` in flight: what to await to serve it, or to refuse it (no coroutine of this method
        around either)."""
        request_id = request.id
        in_flight = self._in_flight
        if request_id in in_flight:
            logger.warning("peer reused request id %r while it is still in flight", request_id)
            return self._reply(
                error_message(
                    request_id,
                    INVALID_REQUEST,
                    f"Invalid Request: id {request_id!r} is already in use by a request in flight",
                ),
                request_id,
                batch,
            )
        if len(in_flight) >= self._max_in_flight:
            return self._reply(
                error_message(
                    request_id,
                    SERVER_BUSY,
                    f"Server busy: {self._max_in_flight} requests are already in "
                    "flight, the most this session serves at once (the max_in_flight setting)",
                ),
                request_id,
                batch,
            )
        if runner is None or batch is not None:
            runner = self._runner
        here = request.method in self._handler.inline_methods  # in the reading task, before anything read after it
        request.session = self
        if batch is not None:
            request._batch = batch
            batch.remaining += 1
        in_flight[request_id] = request
        if here:
            scope = request.cancel_scope = trio.CancelScope()
            return self._serve(request, scope, None)
        return runner.run(self._serve, request, reader)

    async def _serve(self, request: InboundRequest, scope: trio.CancelScope | None, reader: Reader | None) -> None:
        """Run one handler inside ``scope`` (None: the runner gave it one, or its task is its scope) and answer it;
        whatever it raises is its request's failure alone (see ``_failures``). ``reader``: see ``Inline``."""
        response: dict[str, Any] | None = None
        try:
            if scope is None:  # no context manager to enter and leave: most requests (stdio's, served inline)
                result = await serve_within(request, self._handler.handle_request)
                response = {"jsonrpc": "2.0", "id": request.id, "result": result}  # result_message's, with no call
            else:
                with scope:  # a cancelled scope leaves no answer
                    response = result_message(request.id, await serve_within(request, self._handler.handle_request))
        except McpError as exc:
            response = error_message(request.id, exc.code, exc.message, exc.data)
        except BaseException as exc:
            fate = fate_of(exc)
            if fate is Fate.PROPAGATE:
                raise
            what = f"the handler for {request.method} (request id {request.id!r})"
            if fate is Fate.DROP:
                report_failure(logger, what, exc)
                return  # the request is being cancelled from outside: nobody is waiting for an answer
            response = self._internal_error(request.id, what, exc)
        finally:
            self._in_flight.pop(request.id, None)
            cancelled = request._cancel_requested
            if cancelled is not None and cancelled.is_set():
                response = None  # never answer a request the peer cancelled
            if response is None:
                self._no_answer(request)
        if response is not None and reader is not None and not reader.handed_off and self._closed is None:
            self._answer_later(response, request.id)  # with the others the reader writes next, no await
            return
        await self._reply(response, request.id, request._batch, counts_as_member=request._batch is not None)

    def _no_answer(self, request: InboundRequest) -> None:
        """Tell the transport that ``request`` ended without an answer (an answer tells it by itself): at once,
        or for a batch's member once the batch's answer went (its stream carries that answer)."""
        if self._request_ended is None:
            return
        if request._batch is None:
            self._request_ended(request.id)
        else:
            request._batch.unanswered.append(request.id)

    def _answer_later(self, response: dict[str, Any], related: RequestId) -> None:
        """Queue the answer of a request served inline without blocking for the reader's next write."""
        assert self._send_later is not None
        try:
            self._send_later(response)
        except ConnectionClosed as exc:
            self._shutdown(exc)
            logger.debug("could not answer request %r: connection closed", related)
        except UnencodableMessage as exc:
            self._answer_later(self._internal_error(related, f"the answer to request {related!r}", exc), related)

    async def _reply(
        self,
        response: dict[str, Any] | None,
        related: RequestId | None,
        batch: _Batch | None,
        *,
        counts_as_member: bool = False,
    ) -> None:
        if batch is not None:
            if response is not None:
                batch.responses.append(response)
            if counts_as_member:
                await self._batch_member_done(batch, related)
            return
        if response is None or self._closed is not None:
            return
        try:
            await self._send(response, related, final=True)
        except ConnectionClosed:
            logger.debug("could not answer request %r: connection closed", related)
        except UnencodableMessage as exc:
            # The handler's result holds what JSON cannot carry: its request fails, the session goes on.
            await self._reply(self._internal_error(related, f"the answer to request {related!r}", exc), related, None)

    async def _batch_member_done(self, batch: _Batch, related: RequestId | None) -> None:
        batch.remaining -= 1
        if batch.remaining == 0 and batch.responses and self._closed is None:
            try:
                await self._send(batch.responses, related, final=True)
            except ConnectionClosed:
                logger.debug("could not answer a batch: connection closed")
            except UnencodableMessage:
                responses = [self._encodable(response) for response in batch.responses]
                with contextlib.suppress(ConnectionClosed):
                    await self._send(responses, related, final=True)
        if batch.remaining == 0 and self._request_ended is not None:
            for request_id in batch.unanswered:
                self._request_ended(request_id)

    def _encodable(self, response: dict[str, Any]) -> dict[str, Any]:
        """``response``, or an internal error in its place if JSON cannot carry it (a batch answers the rest)."""
        try:
            encode(response)
        except UnencodableMessage as exc:
            return self._internal_error(response.get("id"), f"the answer to request {response.get('id')!r}", exc)
        return response

    def _internal_error(self, request_id: RequestId | None, what: str, exc: BaseException) -> dict[str, Any]:
        """The -32603 answer for ``what`` that failed with ``exc``, logged under the error id it names (see
        ``_failures``): the one way the engine turns a failure into an error on the wire."""
        error_id = report_failure(logger, what, exc)
        message = "Internal error: " + failure_text(what, exc, error_id, expose=self._expose_errors)
        return error_message(request_id, INTERNAL_ERROR, message)

    async def _receive_notification(self, event: Notification) -> None:
        method = event.method
        params = event.params
        if method == "notifications/cancelled":
            self._receive_cancel(params)  # before the flush, a schedule point: a cancel takes effect at once
        if self._flush is not None:  # answers queued for later never wait for a handler that blocks
            await self._flush()
        if method == "notifications/progress":
            await self._receive_progress(params)
        try:
            await self._handler.handle_notification(method, params)
        except BaseException as exc:
            if fate_of(exc) is Fate.PROPAGATE:
                raise
            report_failure(logger, f"the notification handler for {method}", exc)

    def _receive_cancel(self, params: dict[str, Any] | None) -> None:
        request_id = params.get("requestId") if params else None
        request = self._in_flight.get(request_id) if is_request_id(request_id) else None
        if request is None or request.method in self._handler.inline_methods:
            return  # unknown, finished, or initialize: the spec says ignore it
        reason = params.get("reason") if params else None
        request.cancel_reason = reason if isinstance(reason, str) else None
        request.cancel_requested.set()
        if self._peer_cancel_mode == "interrupt":
            request.cancel_scope.cancel(request.cancel_reason or "cancelled by the peer")

    async def _receive_progress(self, params: dict[str, Any] | None) -> None:
        token = params.get("progressToken") if params else None
        pending = self._progress.get(token) if is_request_id(token) else None
        if pending is None or params is None:
            return
        progress = params.get("progress")
        if not isinstance(progress, (int, float)) or isinstance(progress, bool):
            return
        if pending.last_progress is not None and not progress > pending.last_progress:
            logger.debug("dropping non-increasing progress %s for %s", progress, pending.method)
            return
        pending.last_progress = progress
        if pending.reset_on_progress and pending.timeout is not None and pending.scope is not None:
            pending.scope.deadline = min(trio.current_time() + pending.timeout, pending.max_deadline)
        callback = pending.on_progress
        if callback is None:
            return
        try:
            result = callback(params)
            if inspect.isawaitable(result):
                await result
        except BaseException as exc:
            if fate_of(exc) is Fate.PROPAGATE:
                raise
            report_failure(logger, f"the progress callback for {pending.method}", exc)

    def _receive_response(self, event: Response | ErrorResponse) -> None:
        request_id = event.id
        pending = self._pending.get(request_id) if request_id is not None else None
        if pending is None:
            if request_id is None:
                logger.warning("peer reported an error it could not attribute: %r", getattr(event, "error", None))
            else:
                logger.debug("dropping response for unknown or abandoned request id %r", request_id)
            return
        if pending.outcome is None:
            pending.outcome = event
            pending.event.set()
