"""Tasks on the server: work that outlives the request that started it, in both wire forms.

A tool registered with ``task_support="optional"`` or ``"required"`` may run as a task: the ``tools/call``
is answered at once with the task, and the same handler goes on in a nursery the ``TaskManager`` owns (opened
by ``Server.running()``), under a cancel scope of its own. ``tasks/cancel`` records the task cancelled and
cancels that scope; whichever final status is recorded first is the only one (``_core.tasks``). While the
handler runs as a task, ``ctx.elicit``/``ctx.sample``/``ctx.list_roots`` move it to ``input_required``
until the client answers, and progress and logs go where the wire form allows.

* 2025-11-25 (``form="core"``): the client asks with ``params.task``; ``tasks/get``, ``tasks/result``
  (waits for the end), ``tasks/list``, ``tasks/cancel`` and ``notifications/tasks/status``; questions to the
  client are ordinary requests carrying the related-task ``_meta``. Tasks belong to the principal and session.
* 2026-07-28 (``form="extension"``, ``io.modelcontextprotocol/tasks``): the server decides, for clients that
  declare the extension; ``tasks/get`` inlines the result, ``tasks/update`` answers ``inputRequests``.
  Tasks belong to the principal.
"""

from __future__ import annotations

import hashlib
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, Literal

import trio

from .._core.tasks import TaskEvent, TaskRecord, apply, detailed_task_wire, task_wire
from .._pagination import InvalidCursor, paginate
from .._session import InboundRequest
from .._wire.versions import V2025_11_25
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SERVER_BUSY,
    ConnectionClosed,
    McpError,
)
from ..types import META_RELATED_TASK, RESULT_TASK, ServerTasksCapability
from ..types.tasks import TASKS_EXTENSION_ID
from ._context import Context
from ._logging import LEVELS
from ._modern import ModernRequest
from ._task_store import MemoryTaskStore, TaskStore

if TYPE_CHECKING:
    from ._connection import ServerConnection
    from ._tools import ToolDefinition

__all__ = ["TaskManager", "TaskContext", "task_capabilities", "CORE_TASK_METHODS", "EXTENSION_TASK_METHODS"]

logger = logging.getLogger("trio_mcp.server")

TaskSupport = Literal["forbidden", "optional", "required"]
#: Seconds a status notification may take to write before it is given up.
_NOTIFY_TIMEOUT: Final = 5.0
_REQUIRES_EXTENSION: Final[dict[str, Any]] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}}


def task_support(tool: ToolDefinition) -> TaskSupport:
    execution = tool.execution
    return (execution.task_support if execution is not None else None) or "forbidden"


def task_capabilities(tools: Iterable[ToolDefinition], version: str) -> dict[str, Any]:
    """The capability entries that announce tasks on ``version``, when any tool can run as one."""
    if not any(task_support(tool) != "forbidden" for tool in tools):
        return {}
    if version == V2025_11_25:
        return {"tasks": ServerTasksCapability(list={}, cancel={}, requests={"tools": {"call": {}}})}
    if version > V2025_11_25:
        return {"extensions": {TASKS_EXTENSION_ID: {}}}
    return {}


def _owner_key(principal: Any) -> str:
    """A digest of who created a task: stores never hold a principal (or the token behind it) itself."""
    return hashlib.sha256(repr(principal).encode("utf-8", "backslashreplace")).hexdigest()


def _not_found(task_id: Any) -> McpError:
    return McpError(INVALID_PARAMS, f"Failed to retrieve task: Task not found ({task_id!r})")


class _Question:
    """One outstanding question of an extension-form task, answered through ``tasks/update``."""

    __slots__ = ("answered", "answer")

    def __init__(self) -> None:
        self.answered = trio.Event()
        self.answer: Any = None


class _LiveTask:
    """A task whose work runs in this process (or is about to)."""

    def __init__(self, record: TaskRecord, connection: ServerConnection, progress_token: Any) -> None:
        self.record = record
        self.connection = connection
        self.progress_token = progress_token
        self.scope = trio.CancelScope()
        self.cancel_requested = trio.Event()
        self.created = False  #: stored and announced: the request was (or will be) answered with the task
        self.decided = trio.Event()  #: the request knows whether it answers with the task or inline
        self.prelude: tuple[dict[str, Any] | None, BaseException | None] = (None, None)
        self.done = trio.Event()  #: the work has ended (its coroutine returned)
        self.changed = trio.Event()  #: replaced on every status change
        self.questions: dict[str, _Question] = {}
        self.keys_used: set[str] = set()  #: an input request key is never reused within a task
        self.asking = 0  #: core form: requests to the client in flight
        #: Core form: ids of the ``tasks/result`` requests waiting on this task; questions travel with them.
        self.result_waiters: list[Any] = []
        self.save_lock = trio.Lock()
        self.purged = False  #: expired and deleted: nothing may write its record again


class TaskManager:
    """Owns every task of one ``Server``: their nursery, their records, the limits and the TTL purge.

    Args:
        store: where records live (default: ``MemoryTaskStore``, which does not survive a restart).
        default_ttl: seconds a task and its result are kept when the client asks for no TTL (None: forever).
        max_ttl: the longest TTL granted, whatever the client asks.
        poll_interval: seconds suggested between polls (sent as ``pollInterval``/``pollIntervalMs``).
        max_tasks_per_principal, max_tasks: running tasks allowed per principal and in all; past either, a
            new task is refused with -32000 naming the limit.
        stop_timeout: seconds the server may spend recording running tasks as cancelled when it stops.
    """

    def __init__(
        self,
        *,
        store: TaskStore | None = None,
        default_ttl: float | None = 3600.0,
        max_ttl: float = 86400.0,
        poll_interval: float = 1.0,
        max_tasks_per_principal: int = 100,
        max_tasks: int = 1000,
        stop_timeout: float = 5.0,
    ) -> None:
        for name, value in (("max_ttl", max_ttl), ("poll_interval", poll_interval), ("stop_timeout", stop_timeout)):
            if not value > 0:
                raise ValueError(f"{name} must be positive, not {value!r}")
        if default_ttl is not None and not 0 < default_ttl <= max_ttl:
            raise ValueError(f"default_ttl must be None or in (0, max_ttl], not {default_ttl!r}")
        for name, count in (("max_tasks_per_principal", max_tasks_per_principal), ("max_tasks", max_tasks)):
            if count < 1:
                raise ValueError(f"{name} must be at least 1, not {count!r}")
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.default_ttl_ms = None if default_ttl is None else round(default_ttl * 1000)
        self.max_ttl_ms = round(max_ttl * 1000)
        self.poll_interval_ms = max(1, round(poll_interval * 1000))
        self.max_tasks_per_principal = max_tasks_per_principal
        self.max_tasks = max_tasks
        self.stop_timeout = stop_timeout
        #: Names this manager's life: a record it did not write and that is not finished was left by a
        #: process that is gone.
        self.instance = secrets.token_hex(8)
        self._live: dict[str, _LiveTask] = {}
        self._nursery: trio.Nursery | None = None
        self._sessions: dict[int, str] = {}
        self._epoch: float | None = None

    # -- lifetime ---------------------------------------------------------------------------------

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Open the nursery tasks run in; on exit every running task is cancelled and recorded cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._purge_loop)
            try:
                yield
            finally:
                self._nursery = None
                nursery.cancel_scope.cancel()

    def _now(self) -> float:
        """Wall-clock seconds, advancing with trio's clock (so TTLs follow a ``MockClock`` in tests)."""
        if self._epoch is None:
            self._epoch = time.time() - trio.current_time()
        return self._epoch + trio.current_time()

    def running_tasks(self) -> int:
        """How many tasks have work running in this process."""
        return len(self._live)

    def session_key(self, connection: ServerConnection) -> str:
        key = self._sessions.get(id(connection))
        if key is None:
            key = self._sessions[id(connection)] = secrets.token_hex(16)
        return key

    def connection_closed(self, connection: ServerConnection) -> None:
        """A session ended: nobody can reach its tasks any more, so they are cancelled."""
        key = self._sessions.pop(id(connection), None)
        if key is None:
            return
        for live in list(self._live.values()):
            if live.record.session == key:
                self._cancel(live, "the session ended")

    # -- starting a task from tools/call ----------------------------------------------------------

    def wants_task(
        self, connection: ServerConnection, request: InboundRequest, modern: ModernRequest | None, tool: ToolDefinition
    ) -> dict[str, Any] | None:
        """Whether this ``tools/call`` runs as a task: its ``task`` params ({} if none given) or None.

        Raises the refusal the wire form prescribes when the tool and the request disagree.
        """
        support = task_support(tool)
        if modern is not None:
            declared = TASKS_EXTENSION_ID in (modern.capabilities.extensions or {})
            if support == "required" and not declared:
                raise McpError(
                    MISSING_REQUIRED_CLIENT_CAPABILITY,
                    f"Missing required client capability: tool {tool.name!r} runs only as a task "
                    f"({TASKS_EXTENSION_ID})",
                    _REQUIRES_EXTENSION,
                )
            return {} if declared and support != "forbidden" else None
        if connection.version != V2025_11_25:
            return None  # no tasks before 2025-11-25: a stray `task` param is ignored
        asked = (request.params or {}).get("task")
        if asked is not None and type(asked) is not dict:
            raise McpError(INVALID_PARAMS, "Invalid params: task must be an object")
        if asked is not None and support == "forbidden":
            raise McpError(METHOD_NOT_FOUND, f"Method not found: tool {tool.name!r} does not run as a task")
        if asked is None and support == "required":
            raise McpError(METHOD_NOT_FOUND, f"Method not found: tool {tool.name!r} must be called as a task")
        return asked

    async def start(
        self,
        connection: ServerConnection,
        request: InboundRequest,
        modern: ModernRequest | None,
        tool: ToolDefinition,
        arguments: dict[str, Any] | None,
        asked: dict[str, Any],
        defer: bool,
    ) -> dict[str, Any]:
        """Start the handler as a task; answer with the task, or (deferred start) with what it did inline."""
        owner = _owner_key(connection.principal)
        self._check_limits(owner)
        now = self._now()
        record = TaskRecord(
            task_id=secrets.token_urlsafe(24),
            owner=owner,
            session=self.session_key(connection) if modern is None else None,
            form="core" if modern is None else "extension",
            instance=self.instance,
            created_at=now,
            last_updated_at=now,
            ttl_ms=self._ttl_ms(asked.get("ttl")),
            poll_interval_ms=self.poll_interval_ms,
        )
        live = _LiveTask(record, connection, request.progress_token)
        context = TaskContext(request, connection, modern, live, self)
        self._live[record.task_id] = live
        try:
            if not defer:
                await self.create(live)
        except BaseException:
            self._live.pop(record.task_id, None)
            raise
        nursery = self._nursery or connection.task_nursery()
        nursery.start_soon(self._run, live, tool, arguments, context)
        try:
            await live.decided.wait()
        except BaseException:
            # The request went away before it could answer: nobody will ever learn of this task, so its work
            # stops too.
            self._cancel(live, "the request that started it was cancelled")
            raise
        if live.created:
            if modern is None:
                return {"task": task_wire(record)}
            return {"resultType": RESULT_TASK, **detailed_task_wire(record, detail=False)}
        result, error = live.prelude
        if error is not None:
            raise error
        assert result is not None
        return result

    def _check_limits(self, owner: str) -> None:
        if len(self._live) >= self.max_tasks:
            raise McpError(SERVER_BUSY, f"Server busy: {self.max_tasks} tasks are running (the server's limit)")
        mine = sum(1 for live in self._live.values() if live.record.owner == owner)
        if mine >= self.max_tasks_per_principal:
            raise McpError(
                SERVER_BUSY,
                f"Server busy: you have {mine} running tasks, the most allowed per client; "
                "wait for one to finish or cancel one",
            )

    def _ttl_ms(self, asked: Any) -> int | None:
        if isinstance(asked, (int, float)) and not isinstance(asked, bool) and asked > 0:
            return min(int(asked), self.max_ttl_ms)
        return self.default_ttl_ms

    async def create(self, live: _LiveTask) -> None:
        """Make the task durable, then let the request answer with it."""
        if live.created:
            return
        await self._save(live, notify=False)
        live.created = True
        live.decided.set()

    async def _run(
        self, live: _LiveTask, tool: ToolDefinition, arguments: dict[str, Any] | None, context: TaskContext
    ) -> None:
        event = TaskEvent.FAILED
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        message: str | None = None
        try:
            with live.scope:
                try:
                    result = await live.connection.run_tool(tool, arguments, context)
                    event = TaskEvent.COMPLETED
                except McpError as exc:
                    error = exc.to_error()
                    if not live.created:
                        live.prelude = (None, exc)
                except Exception as exc:
                    logger.exception("task %s (tool %s) failed", live.record.task_id, tool.name)
                    error = {"code": INTERNAL_ERROR, "message": f"Internal error: {type(exc).__name__}"}
                    if not live.created:
                        live.prelude = (None, McpError(INTERNAL_ERROR, error["message"]))
                except BaseException as exc:
                    if live.created or isinstance(exc, trio.Cancelled):
                        raise
                    live.prelude = (None, exc)  # an InputRequired (group) before the task exists: MRTR
            if live.scope.cancelled_caught:
                event, message = TaskEvent.CANCELLED, live.record.status_message or "cancelled"
        except trio.Cancelled:
            event, message = TaskEvent.CANCELLED, "the server stopped"
            raise
        finally:
            if not live.created:
                if live.prelude == (None, None):
                    live.prelude = (
                        (result, None)
                        if result is not None
                        else (None, McpError(INTERNAL_ERROR, "Internal error: the tool call was cancelled"))
                    )
                self._live.pop(live.record.task_id, None)
                live.decided.set()
            else:
                with trio.CancelScope(shield=True) as shield:
                    shield.deadline = trio.current_time() + self.stop_timeout
                    await self._finish(live, event, result=result, error=error, message=message)
                self._live.pop(live.record.task_id, None)
            live.done.set()

    # -- status changes ---------------------------------------------------------------------------

    def _change(self, live: _LiveTask, event: TaskEvent, message: str | None = None) -> bool:
        """Apply ``event`` to the record now (synchronously); False if it changed nothing."""
        record = live.record
        status = apply(record.status, event)
        if status is None:
            return False
        record.status = status
        if event in (TaskEvent.COMPLETED, TaskEvent.FAILED, TaskEvent.CANCELLED):
            record.input_requests.clear()
            record.status_message = message
        record.last_updated_at = self._now()
        changed, live.changed = live.changed, trio.Event()
        changed.set()
        return True

    async def _finish(
        self,
        live: _LiveTask,
        event: TaskEvent,
        *,
        result: dict[str, Any] | None,
        error: dict[str, Any] | None,
        message: str | None,
    ) -> None:
        if not self._change(live, event, message):
            await self._save(live, notify=False)  # it ended earlier (cancelled): store that final state
            return
        if event is TaskEvent.COMPLETED:
            live.record.result = result
            if live.record.form == "core" and result is not None and result.get("isError"):
                live.record.status = "failed"  # 2025-11-25 counts a tool's isError result as failed
        elif event is TaskEvent.FAILED:
            live.record.error = error
        await self._save(live)

    def _cancel(self, live: _LiveTask, message: str) -> bool:
        """Record the task cancelled now (unless it already ended) and cancel its work; the work's end
        stores the record."""
        changed = self._change(live, TaskEvent.CANCELLED, message)
        live.cancel_requested.set()
        live.scope.cancel()
        return changed

    async def _save(self, live: _LiveTask, *, notify: bool = True) -> None:
        if live.purged:
            return
        async with live.save_lock:
            try:
                await self.store.save(live.record)
            except Exception:
                logger.exception("could not store task %s", live.record.task_id)
        if not (notify and live.created):
            return
        if live.record.form == "core":
            await self._notify_status(live)
        else:
            detailed = detailed_task_wire(live.record)
            for connection in list(live.connection.server.connections):
                connection.task_changed(live.record.task_id, detailed)

    def listen_filter(
        self, connection: ServerConnection, modern: ModernRequest | None, wanted: list[str] | None
    ) -> list[str] | None:
        """The ``taskIds`` a ``subscriptions/listen`` stream gets ``notifications/tasks`` for: those of the
        requested tasks that belong to the caller and still run. Asking without the extension is -32021."""
        if not wanted:
            return None
        if modern is None or TASKS_EXTENSION_ID not in (modern.capabilities.extensions or {}):
            raise McpError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: taskIds need the {TASKS_EXTENSION_ID} extension",
                _REQUIRES_EXTENSION,
            )
        owner = _owner_key(connection.principal)
        honoured = [
            task_id
            for task_id in dict.fromkeys(wanted)
            if (live := self._live.get(task_id)) is not None
            and live.created
            and live.record.owner == owner
            and live.record.form == "extension"
        ]
        return honoured or None

    async def _notify_status(self, live: _LiveTask) -> None:
        session = live.connection.session
        if session.closed:
            return
        with trio.move_on_after(_NOTIFY_TIMEOUT):  # optional: a client that does not read must not stall the task
            try:
                await session.notify("notifications/tasks/status", task_wire(live.record))
            except (ConnectionClosed, McpError):
                pass

    # -- questions to the client ------------------------------------------------------------------

    async def ask_extension(self, live: _LiveTask, key: str, embedded: dict[str, Any], timeout: float | None) -> Any:
        """Publish a question in ``inputRequests`` and wait for ``tasks/update`` to answer it."""
        if key in live.keys_used:
            raise ValueError(f"input request key {key!r} was already used by this task")
        live.keys_used.add(key)
        question = live.questions[key] = _Question()
        live.record.input_requests[key] = embedded
        if not self._change(live, TaskEvent.INPUT_NEEDED):
            live.record.last_updated_at = self._now()
        await self._save(live)
        try:
            with trio.fail_after(timeout if timeout is not None else math.inf):
                await question.answered.wait()
            return question.answer
        finally:
            live.questions.pop(key, None)
            live.record.input_requests.pop(key, None)
            if not live.record.input_requests and self._change(live, TaskEvent.INPUT_ANSWERED):
                with trio.CancelScope(shield=True):
                    await self._save(live)

    async def ask_core(self, live: _LiveTask, method: str, params: dict[str, Any], timeout: float | None) -> Any:
        """Send a request to the client on the task's behalf, the task ``input_required`` meanwhile."""
        meta = dict(params.get("_meta") or {})
        meta[META_RELATED_TASK] = {"taskId": live.record.task_id}
        live.asking += 1
        if self._change(live, TaskEvent.INPUT_NEEDED):
            await self._save(live)
        try:
            related = live.result_waiters[-1] if live.result_waiters else None
            return await live.connection.session.request(
                method, {**params, "_meta": meta}, timeout=timeout, related_request_id=related
            )
        finally:
            live.asking -= 1
            if not live.asking and self._change(live, TaskEvent.INPUT_ANSWERED):
                with trio.CancelScope(shield=True):
                    await self._save(live)

    # -- the tasks/* methods ----------------------------------------------------------------------

    async def find(
        self, connection: ServerConnection, modern: ModernRequest | None, task_id: Any
    ) -> _LiveTask | TaskRecord:
        """The caller's task (live, or its record); anyone else's, an expired or an unknown one is -32602."""
        if type(task_id) is not str:
            raise McpError(INVALID_PARAMS, "Invalid params: taskId must be a string")
        form = "core" if modern is None else "extension"
        session = self.session_key(connection) if modern is None else None
        live = self._live.get(task_id)
        record = live.record if live is not None else await self.store.load(task_id)
        if (
            record is None
            or record.owner != _owner_key(connection.principal)
            or record.session != session
            or record.form != form
            or (live is not None and not live.created)
        ):
            raise _not_found(task_id)
        expires = record.expires_at()
        if expires is not None and expires <= self._now():
            if live is not None:
                self._cancel(live, "the task expired")
                live.purged = True
            await self.store.delete([task_id])
            raise McpError(INVALID_PARAMS, f"Failed to retrieve task: Task has expired ({task_id!r})")
        if live is None and not record.terminal:
            # Not finished, yet no work runs for it here: the process that ran it is gone.
            record.status = "failed"
            record.status_message = "the server restarted while the task was running"
            record.error = {"code": INTERNAL_ERROR, "message": "Internal error: the server restarted"}
            record.input_requests = {}
            record.last_updated_at = self._now()
            await self.store.save(record)
        return live if live is not None else record

    async def update(self, live: _LiveTask, responses: dict[str, Any]) -> None:
        """Answer outstanding questions; keys that are not outstanding are ignored."""
        for key, answer in responses.items():
            question = live.questions.get(key)
            if question is None or question.answered.is_set() or type(answer) is not dict:
                continue
            question.answer = answer
            question.answered.set()
            live.record.input_requests.pop(key, None)
        if not live.record.input_requests and self._change(live, TaskEvent.INPUT_ANSWERED):
            await self._save(live)

    async def purge(self) -> int:
        """Delete every record whose TTL ran out (cancelling its work if it still runs); returns how many."""
        expired = await self.store.expired(self._now())
        for task_id in expired:
            live = self._live.get(task_id)
            if live is not None:
                self._cancel(live, "the task expired")
                live.purged = True
        if expired:
            await self.store.delete(expired)
        return len(expired)

    async def _purge_loop(self) -> None:
        interval = min(60.0, max(1.0, self.max_ttl_ms / 1000 / 10))
        while True:
            await trio.sleep(interval)
            try:
                await self.purge()
            except Exception:
                logger.exception("purging expired tasks failed")


def _record(found: _LiveTask | TaskRecord) -> TaskRecord:
    return found.record if isinstance(found, _LiveTask) else found


def _manager(connection: ServerConnection, modern: ModernRequest | None) -> TaskManager:
    """The server's task manager, once the request may use tasks at all (else the wire form's refusal)."""
    server = connection.server
    if modern is not None:
        if TASKS_EXTENSION_ID not in (modern.capabilities.extensions or {}):
            raise McpError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: tasks/* need the {TASKS_EXTENSION_ID} extension",
                _REQUIRES_EXTENSION,
            )
    elif connection.version != V2025_11_25 or not task_capabilities(server.tools.values(), V2025_11_25):
        raise McpError(METHOD_NOT_FOUND, "Method not found: this server does not offer tasks")
    return server.tasks


async def _tasks_get(connection: ServerConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    manager = _manager(connection, modern)
    record = _record(await manager.find(connection, modern, (request.params or {}).get("taskId")))
    return task_wire(record) if modern is None else detailed_task_wire(record)


async def _tasks_result(connection: ServerConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    """Core ``tasks/result``: wait for the end, then answer exactly as the tool call would have."""
    manager = _manager(connection, modern)
    task_id = (request.params or {}).get("taskId")
    found = await manager.find(connection, modern, task_id)
    if isinstance(found, _LiveTask):
        found.result_waiters.append(request.id)
        try:
            while not found.record.terminal:
                await found.changed.wait()
        finally:
            found.result_waiters.remove(request.id)
        record = found.record
    else:
        record = found
    related = {META_RELATED_TASK: {"taskId": record.task_id}}
    if record.status == "cancelled":
        raise McpError(INVALID_REQUEST, f"Invalid Request: task {record.task_id!r} was cancelled", related)
    if record.error is not None:
        error = record.error
        raise McpError(error.get("code", INTERNAL_ERROR), error.get("message", "Internal error"), error.get("data"))
    result = dict(record.result or {})
    result["_meta"] = {**(result.get("_meta") or {}), **related}
    return result


async def _tasks_list(connection: ServerConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    manager = _manager(connection, modern)
    session = manager.session_key(connection)
    records = [
        r
        for r in await manager.store.records(_owner_key(connection.principal))
        if r.session == session and r.form == "core"
    ]
    cursor = (request.params or {}).get("cursor")
    try:
        page, next_cursor = paginate(
            [task_wire(r) for r in records],
            cursor,
            page_size=connection.server.page_size or 100,
            scope="tasks/list",
            codec=connection.server.cursors,
        )
    except InvalidCursor as exc:
        raise McpError(INVALID_PARAMS, f"Invalid params: bad cursor ({exc})") from None
    result: dict[str, Any] = {"tasks": page}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


async def _tasks_cancel(connection: ServerConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    manager = _manager(connection, modern)
    found = await manager.find(connection, modern, (request.params or {}).get("taskId"))
    record = _record(found)
    if isinstance(found, _LiveTask) and not record.terminal:
        manager._cancel(found, "cancelled by request")
        await manager._save(found)
    elif modern is None:
        raise McpError(INVALID_PARAMS, f"Invalid params: task {record.task_id!r} already ended ({record.status})")
    return task_wire(record) if modern is None else {}


async def _tasks_update(connection: ServerConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    manager = _manager(connection, modern)
    params = request.params or {}
    responses = params.get("inputResponses")
    if type(responses) is not dict:
        raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
    found = await manager.find(connection, modern, params.get("taskId"))
    if isinstance(found, _LiveTask) and not found.record.terminal:
        await manager.update(found, responses)
    return {}


MethodEntry = tuple[Callable[["ServerConnection", InboundRequest, "ModernRequest | None"], Any], None]

#: The 2025-11-25 task methods (handshake era).
CORE_TASK_METHODS: Final[dict[str, MethodEntry]] = {
    "tasks/get": (_tasks_get, None),
    "tasks/result": (_tasks_result, None),
    "tasks/list": (_tasks_list, None),
    "tasks/cancel": (_tasks_cancel, None),
}

#: The extension's methods (2026-07-28): no tasks/result or tasks/list (they answer -32601).
EXTENSION_TASK_METHODS: Final[dict[str, MethodEntry]] = {
    "tasks/get": (_tasks_get, None),
    "tasks/update": (_tasks_update, None),
    "tasks/cancel": (_tasks_cancel, None),
}


class TaskContext(Context):
    """The ``Context`` of a handler running as a task: cancellation, questions, progress and logs go
    through the task rather than through the request that started it (which has been answered)."""

    __slots__ = ("_live", "_manager", "_last_progress")

    def __init__(
        self,
        request: InboundRequest,
        connection: ServerConnection,
        modern: ModernRequest | None,
        live: _LiveTask,
        manager: TaskManager,
    ) -> None:
        super().__init__(request, connection, modern)
        self._live = live
        self._manager = manager
        self._last_progress: float | None = None

    @property
    def task_id(self) -> str:
        """The id of the task this handler runs as."""
        return self._live.record.task_id

    @property
    def cancel_scope(self) -> trio.CancelScope:
        """The task's own scope (``tasks/cancel`` cancels it); the handler runs inside it from the start."""
        return self._live.scope

    @property
    def cancel_requested(self) -> trio.Event:
        return self._live.cancel_requested

    async def start_task(self) -> bool:
        await self._manager.create(self._live)
        return True

    async def close_sse_stream(self) -> bool:
        return False if self._live.created else await super().close_sse_stream()

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        live = self._live
        if not live.created:
            await super().report_progress(progress, total, message)
            return
        if live.record.form == "extension":  # the extension has no progress: the status message says it
            if message is not None and not live.record.terminal:
                live.record.status_message = message
                live.record.last_updated_at = self._manager._now()
                await self._manager._save(live)
            return
        token = live.progress_token
        if token is None or (self._last_progress is not None and not progress > self._last_progress):
            return
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._send_related("notifications/progress", params)

    async def log(self, level: Any, data: Any, *, logger: str | None = None) -> None:
        live = self._live
        if not live.created:
            await super().log(level, data, logger=logger)
            return
        if level not in LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LEVELS)}")
        if live.record.form == "extension":
            return  # the extension sends no logs for tasks (no stream outlives the request)
        params = self._connection.log_params(level, data, logger, self._connection.log_level)
        if params is not None:
            await self._send_related("notifications/message", params)

    def _log_soon(self, level: str, data: Any, logger: str | None) -> None:
        if not self._live.created:
            super()._log_soon(level, data, logger)
        elif self._live.record.form == "core":  # the request is answered: the record goes out on its own
            self._connection.queue_log(level, data, logger, None, self._connection.log_level)

    async def _send_related(self, method: str, params: dict[str, Any]) -> None:
        params["_meta"] = {META_RELATED_TASK: {"taskId": self._live.record.task_id}}
        try:
            await self._connection.session.notify(method, params)
        except ConnectionClosed:
            pass

    async def _ask(self, method: str, params: dict[str, Any] | None, timeout: float | None, key: str | None) -> Any:
        live = self._live
        if not live.created:
            return await super()._ask(method, params, timeout, key)
        self._asked += 1
        embedded: dict[str, Any] = {"method": method, "params": params if params is not None else {}}
        if live.record.form == "extension":
            key = key or f"{method.replace('/', '-')}-{self._asked}"
            return await self._manager.ask_extension(live, key, embedded, timeout)
        refusal = self._connection.lifecycle.server_request_refusal(method)
        if refusal is not None:
            raise McpError(INVALID_REQUEST, refusal)
        return await self._manager.ask_core(live, method, embedded["params"], timeout)
