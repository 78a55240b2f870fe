"""Calling a tool as a task from the client: start it, poll at the server's pace, answer its questions, get
the result; cancelling the scope around the call cancels the task on the server (``tasks/cancel``).

Both wire forms: on 2025-11-25 the call carries ``params.task`` and the result comes from ``tasks/result``;
on 2026-07-28 the call declares the ``io.modelcontextprotocol/tasks`` extension for itself alone (the
server decides), ``tasks/get`` carries the result, and questions in ``inputRequests`` are answered with
the client's callbacks through ``tasks/update``. A server that answers inline is fine too: its result is
returned as is.
"""

from __future__ import annotations

import inspect
import logging
import secrets
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, Protocol

import trio

from .._core.tasks import TaskEvent, TaskRecord, apply, task_wire
from .._session import Session
from .._wire.methods import METHODS, declared, task_requests
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ConnectionClosed,
    McpError,
    RemoteProtocolError,
    RequestTimeout,
    TrioMcpError,
)
from ..types import META_CLIENT_CAPABILITIES, META_RELATED_TASK, RESULT_TASK, CallToolResult, ServerCapabilities, Tool
from ..types.tasks import TASKS_EXTENSION_ID
from ._requests import MAX_INPUT_ROUNDS, parse_result


class TaskClient(Protocol):
    """What tasks use of a ``Client`` (typed here, so this module and the client's need not import each other)."""

    session: Session

    @property
    def era(self) -> str | None: ...

    @property
    def protocol_version(self) -> str: ...

    @property
    def server_capabilities(self) -> ServerCapabilities: ...

    def iter_tools(self) -> AsyncIterator[Tool]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult: ...

    async def _gather_input(self, requests: Any) -> dict[str, Any]: ...

    def _envelope(self) -> dict[str, Any]: ...


__all__ = ["call_tool_as_task", "get_task", "resume_task", "TaskCancelled", "TaskStatusHandler", "TaskHost"]

logger = logging.getLogger("trio_mcp.client")

TaskStatusHandler = Callable[[dict[str, Any]], Any]
"""Called with the task's wire object each time a poll shows it changed (may return an awaitable)."""

#: Bound on the courtesy ``tasks/cancel`` sent when the awaiting scope is cancelled.
CANCEL_TIMEOUT: Final = 5.0
#: Poll interval when the server suggests none, and the bounds put on what it suggests (seconds).
DEFAULT_POLL: Final = 1.0
MIN_POLL: Final = 0.01
MAX_POLL: Final = 60.0
_TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})


class TaskCancelled(TrioMcpError):
    """The server cancelled the task (it expired, the server stopped, ...): there is no result."""

    def __init__(self, task_id: str, message: str | None) -> None:
        super().__init__(f"task {task_id} was cancelled by the server" + (f": {message}" if message else ""))
        self.task_id = task_id
        self.status_message = message


async def call_tool_as_task(
    client: TaskClient,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    ttl: float | None = None,
    on_status: TaskStatusHandler | None = None,
    poll_interval: float | None = None,
) -> CallToolResult:
    """Call a tool as a task and wait for its result (see the module docstring).

    ``ttl`` asks the server to keep the task that many seconds (2025-11-25; the server may grant less).
    ``poll_interval`` overrides the server's suggested pace. Raises ``McpError`` when the task failed with a
    JSON-RPC error (or the call was refused), ``TaskCancelled`` when the server cancelled it.
    """
    if ttl is not None and not ttl > 0:
        raise ValueError(f"ttl must be positive, not {ttl!r}")
    if poll_interval is not None and not poll_interval > 0:
        raise ValueError(f"poll_interval must be positive, not {poll_interval!r}")
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if client.era == "modern":
        raw = await _modern_call(client, params)
        if raw.get("resultType") != RESULT_TASK:
            return parse_result(raw, CallToolResult, "tools/call")
        task = raw
    else:
        if not await _runs_as_task(client, name):
            return await client.call_tool(name, arguments)
        params["task"] = {"ttl": round(ttl * 1000)} if ttl is not None else {}
        raw = await client.session.request("tools/call", params)
        if type(raw) is not dict or type(raw.get("task")) is not dict:
            return parse_result(raw, CallToolResult, "tools/call")  # the server ran it inline
        task = raw["task"]
    task_id = task.get("taskId")
    if type(task_id) is not str:
        raise RemoteProtocolError("the server created a task without a string taskId")
    return await _follow_or_cancel(client, task_id, task, on_status, poll_interval)


async def get_task(client: TaskClient, task_id: str) -> dict[str, Any]:
    """The task's state as the server reports it (``tasks/get``): its wire object, in the client's era."""
    raw = await _request(client, "tasks/get", {"taskId": task_id})
    if type(raw) is not dict:
        raise RemoteProtocolError("tasks/get answered with something that is not an object")
    return raw


async def resume_task(
    client: TaskClient,
    task_id: str,
    *,
    on_status: TaskStatusHandler | None = None,
    poll_interval: float | None = None,
) -> CallToolResult:
    """Follow a task started earlier (a task id the application kept, across its own restart say) to its
    result, exactly as ``call_tool_as_task`` does after starting one."""
    if poll_interval is not None and not poll_interval > 0:
        raise ValueError(f"poll_interval must be positive, not {poll_interval!r}")
    return await _follow_or_cancel(client, task_id, await get_task(client, task_id), on_status, poll_interval)


async def _follow_or_cancel(
    client: TaskClient,
    task_id: str,
    task: dict[str, Any],
    on_status: TaskStatusHandler | None,
    poll_interval: float | None,
) -> CallToolResult:
    try:
        return await _follow(client, task_id, task, on_status, poll_interval)
    except trio.Cancelled:
        with trio.CancelScope(shield=True, deadline=trio.current_time() + CANCEL_TIMEOUT):
            try:
                await _request(client, "tasks/cancel", {"taskId": task_id})
            except (McpError, ConnectionClosed, RequestTimeout):
                pass  # already ended, or the server is gone: nothing left to cancel
        raise


async def _runs_as_task(client: TaskClient, name: str) -> bool:
    """2025-11-25: only a tool the server lists with task support may be called as a task."""
    augmented = METHODS["tools/call"].task_capability_in(client.protocol_version)  # tasks.requests.tools.call
    if augmented is None or not declared(client.server_capabilities, augmented):
        return False
    async for tool in client.iter_tools():
        if tool.name == name:
            support = tool.execution.task_support if tool.execution is not None else None
            return support in ("optional", "required")
    return False


async def _modern_call(client: TaskClient, params: dict[str, Any]) -> dict[str, Any]:
    """``tools/call`` declaring the extension for this request only, with the multi round-trip loop."""
    for _ in range(MAX_INPUT_ROUNDS):
        raw = await _request(client, "tools/call", params)
        if type(raw) is not dict:
            raise RemoteProtocolError("tools/call answered with something that is not an object")
        if raw.get("resultType") != "input_required":
            return raw
        params = {key: value for key, value in params.items() if key not in ("inputResponses", "requestState")}
        params["inputResponses"] = await client._gather_input(raw.get("inputRequests") or {})
        if "requestState" in raw:
            params["requestState"] = raw["requestState"]
    raise RemoteProtocolError(f"server asked for input more than {MAX_INPUT_ROUNDS} times for one tools/call")


async def _request(client: TaskClient, method: str, params: dict[str, Any]) -> Any:
    """A request in the client's era; on 2026-07-28 with the envelope and the tasks extension declared."""
    if client.era != "modern":
        return await client.session.request(method, params)
    envelope = client._envelope()
    capabilities = dict(envelope[META_CLIENT_CAPABILITIES])
    capabilities["extensions"] = {**(capabilities.get("extensions") or {}), TASKS_EXTENSION_ID: {}}
    envelope[META_CLIENT_CAPABILITIES] = capabilities
    return await client.session.request(method, {**params, "_meta": envelope})


#: Per client, the task ids being followed and the event a ``notifications/tasks/status`` for each sets.
_WATCHED: weakref.WeakKeyDictionary[TaskClient, dict[str, trio.Event]] = weakref.WeakKeyDictionary()


def task_status_notified(client: TaskClient, params: dict[str, Any] | None) -> None:
    """A 2025-11-25 ``notifications/tasks/status`` arrived: wake the poll of that task at once."""
    task_id = params.get("taskId") if params else None
    event = _WATCHED.get(client, {}).get(task_id) if isinstance(task_id, str) else None
    if event is not None:
        event.set()


async def _pause(client: TaskClient, task_id: str, seconds: float) -> None:
    """Wait until the next poll is due, or until the server says the task changed."""
    watched = _WATCHED.setdefault(client, {})
    event = watched[task_id] = trio.Event()
    try:
        with trio.move_on_after(seconds):
            await event.wait()
    finally:
        watched.pop(task_id, None)


async def _follow(
    client: TaskClient,
    task_id: str,
    task: dict[str, Any],
    on_status: TaskStatusHandler | None,
    poll_interval: float | None,
) -> CallToolResult:
    modern = client.era == "modern"
    answered: set[str] = set()
    seen: tuple[Any, Any] | None = None
    while True:
        status = task.get("status")
        if on_status is not None and (status, task.get("statusMessage")) != seen:
            seen = (status, task.get("statusMessage"))
            outcome = on_status(task)
            if inspect.isawaitable(outcome):
                await outcome
        if status in _TERMINAL or (not modern and status == "input_required"):
            break  # 2025-11-25: tasks/result waits for the end and carries the server's questions meanwhile
        if modern and status == "input_required":
            pending = {k: v for k, v in (task.get("inputRequests") or {}).items() if k not in answered}
            if pending:
                answers = await client._gather_input(pending)
                answered.update(answers)
                await _request(client, "tasks/update", {"taskId": task_id, "inputResponses": answers})
                task = await _request(client, "tasks/get", {"taskId": task_id})
                continue
        await _pause(client, task_id, _pace(task, modern, poll_interval))
        task = await _request(client, "tasks/get", {"taskId": task_id})
    if modern:
        if status != "cancelled" and "result" not in task and "error" not in task:
            task = await _request(client, "tasks/get", {"taskId": task_id})  # it ended before it was created
            status = task.get("status")
        if status == "completed":
            return parse_result(task.get("result"), CallToolResult, "tasks/get")
        if status == "failed":
            raise McpError.from_error(task.get("error") or {"code": INTERNAL_ERROR, "message": "task failed"})
        raise TaskCancelled(task_id, task.get("statusMessage"))
    if status == "cancelled":
        raise TaskCancelled(task_id, task.get("statusMessage"))
    raw = await client.session.request("tasks/result", {"taskId": task_id})
    return parse_result(raw, CallToolResult, "tasks/result")


def _pace(task: dict[str, Any], modern: bool, override: float | None) -> float:
    if override is not None:
        return override
    suggested = task.get("pollIntervalMs" if modern else "pollInterval")
    if isinstance(suggested, (int, float)) and not isinstance(suggested, bool) and suggested > 0:
        return min(max(suggested / 1000, MIN_POLL), MAX_POLL)
    return DEFAULT_POLL


# -- the client as the receiver of task-augmented requests (2025-11-25) ----------------------------------

#: Hosted tasks kept at once (running or finished and not yet expired); past it a request runs inline.
MAX_HOSTED: Final = 64
#: The longest a finished hosted task is kept, whatever TTL the server asks for (seconds).
MAX_HOSTED_TTL: Final = 3600.0
#: The server requests a client may run as tasks (2025-11-25), from the method table.
_HOSTED_METHODS: Final = tuple(
    sorted(method for method, spec in METHODS.items() if spec.task_capability is not None and spec.by_server)
)


class _Hosted:
    __slots__ = ("record", "scope", "changed")

    def __init__(self, record: TaskRecord) -> None:
        self.record = record
        self.scope = trio.CancelScope()
        self.changed = trio.Event()


class TaskHost:
    """Runs a 2025-11-25 server's task-augmented ``sampling/createMessage`` and ``elicitation/create`` as tasks
    on the client, and answers its ``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel``.

    The callbacks are the client's usual ones: a hosted task calls the sampling or elicitation callback in a
    task of the client's nursery under a scope ``tasks/cancel`` cancels; the request itself is answered at once.
    """

    def __init__(self) -> None:
        self.nursery: trio.Nursery | None = None
        self._tasks: dict[str, _Hosted] = {}

    @staticmethod
    def capability(capabilities: dict[str, Any], version: str) -> dict[str, Any] | None:
        """The ``tasks`` capability on ``version`` for what a client declaring ``capabilities`` can answer (None
        when it answers none of the requests that may run as tasks)."""
        requests = task_requests(
            version, "client", lambda spec: spec.capability is not None and declared(capabilities, spec.capability)
        )
        return {"list": {}, "cancel": {}, "requests": requests} if requests else None

    def close(self) -> None:
        """Cancel every hosted task (the client is closing)."""
        for hosted in self._tasks.values():
            hosted.scope.cancel()

    def wants(self, method: str, params: dict[str, Any] | None) -> bool:
        """Whether a request from the server is this host's business."""
        return method.startswith("tasks/") or (method in _HOSTED_METHODS and type((params or {}).get("task")) is dict)

    async def handle(self, request: Any, answer: Callable[[Any], Awaitable[Any]]) -> Any:
        """Serve ``request``; ``answer(request)`` runs the client's callback for it."""
        self._expire()
        method = request.method
        params = request.params or {}
        if method in _HOSTED_METHODS:
            if self.nursery is None or len(self._tasks) >= MAX_HOSTED:
                return await answer(request)  # no room for a task: answering inline is allowed
            return self._start(request, answer, params["task"].get("ttl"))
        if method == "tasks/list":
            return {"tasks": [task_wire(hosted.record) for hosted in self._tasks.values()]}
        hosted = self._tasks.get(params.get("taskId"))  # type: ignore[arg-type]
        if hosted is None or method not in ("tasks/get", "tasks/result", "tasks/cancel"):
            if hosted is None and method in ("tasks/get", "tasks/result", "tasks/cancel"):
                raise McpError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        record = hosted.record
        if method == "tasks/get":
            return task_wire(record)
        if method == "tasks/cancel":
            if record.terminal:
                raise McpError(INVALID_PARAMS, f"Invalid params: task already ended ({record.status})")
            self._settle(hosted, TaskEvent.CANCELLED, message="cancelled by request")
            hosted.scope.cancel()
            return task_wire(record)
        while not record.terminal:
            await hosted.changed.wait()
        related = {META_RELATED_TASK: {"taskId": record.task_id}}
        if record.error is not None:
            raise McpError(record.error["code"], record.error["message"], related)
        if record.result is None:
            raise McpError(INVALID_REQUEST, "Invalid Request: the task was cancelled", related)
        return {**record.result, "_meta": related}

    def _start(self, request: Any, answer: Callable[[Any], Awaitable[Any]], ttl: Any) -> dict[str, Any]:
        assert self.nursery is not None
        now = time.time()
        asked = (
            ttl / 1000 if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0 else MAX_HOSTED_TTL
        )
        record = TaskRecord(
            task_id=secrets.token_urlsafe(24),
            owner="server",
            form="core",
            instance="client",
            created_at=now,
            last_updated_at=now,
            ttl_ms=round(min(asked, MAX_HOSTED_TTL) * 1000),
            poll_interval_ms=500,
        )
        hosted = self._tasks[record.task_id] = _Hosted(record)
        self.nursery.start_soon(self._run, hosted, request, answer)
        return {"task": task_wire(record)}

    async def _run(self, hosted: _Hosted, request: Any, answer: Callable[[Any], Awaitable[Any]]) -> None:
        with hosted.scope:
            try:
                result = await answer(request)
            except McpError as exc:
                self._settle(hosted, TaskEvent.FAILED, error={"code": exc.code, "message": exc.message})
            except Exception as exc:
                logger.exception("the callback of hosted task %s failed", hosted.record.task_id)
                self._settle(hosted, TaskEvent.FAILED, error={"code": INTERNAL_ERROR, "message": str(exc) or "failed"})
            else:
                self._settle(hosted, TaskEvent.COMPLETED, result=result)
        self._settle(hosted, TaskEvent.CANCELLED, message="the client closed")  # a no-op unless cancelled

    def _settle(
        self,
        hosted: _Hosted,
        event: TaskEvent,
        *,
        result: Any = None,
        error: dict[str, Any] | None = None,
        message: str | None = None,
    ) -> None:
        record = hosted.record
        status = apply(record.status, event)
        if status is None:
            return
        record.status, record.result, record.error = status, result, error
        record.status_message = message
        record.last_updated_at = time.time()
        changed, hosted.changed = hosted.changed, trio.Event()
        changed.set()

    def _expire(self) -> None:
        now = time.time()
        for task_id, hosted in list(self._tasks.items()):
            expires = hosted.record.expires_at()
            if expires is not None and expires <= now:
                hosted.scope.cancel()
                del self._tasks[task_id]
