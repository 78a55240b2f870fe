"""Tasks on the server: work that outlives the request that started it, in both wire forms.

A tool registered with ``task_support="optional"`` or ``"required"`` may run as a task: the ``tools/call``
is answered at once with the task, and the same handler goes on in a nursery the ``TaskManager`` owns (opened
by ``Server.running()``), under a cancel scope of its own. ``tasks/cancel`` records the task cancelled and
cancels that scope; whichever final status is recorded first is the only one (``_core.tasks``). While the
handler runs as a task, ``ctx.elicit``/``ctx.sample``/``ctx.list_roots`` move it to ``input_required``
until the client answers, and progress and logs go where the wire form allows.

* 2025-11-25 (``form="core"``): the client asks with ``params.task``; ``tasks/get``, ``tasks/result``
  (waits for the end), ``tasks/list``, ``tasks/cancel`` and ``notifications/tasks/status``; questions to the
  client are ordinary requests carrying the related-task ``_meta``. Tasks belong to the caller and session.
* 2026-07-28 (``form="extension"``, ``io.modelcontextprotocol/tasks``): the server decides, for clients that
  declare the extension; ``tasks/get`` inlines the result, ``tasks/update`` answers ``inputRequests``.
  Tasks belong to the caller.

The record in the store is the truth, and any process sharing the store answers for any task: the process
running a task renews its lease and alone writes its record; a task whose lease lapsed (its process died) is
finalized ``failed`` by whichever process notices first (a poll, or the sweep every lease). A cancellation
or answers for a task that runs elsewhere are queued for its process (``TaskStore.request``).

This module is the engine, ``TaskManager``: records, limits, TTLs and the work of each task. The ``tasks/*``
methods and the ``Context`` of a handler running as a task are in ``_task_requests``.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import attrs
import trio

from .._core.tasks import TaskEvent, TaskRecord, apply, detailed_task_wire, task_wire
from .._identity import caller_key
from .._session import InboundRequest, Session
from .._task_set import TaskSet
from .._wire.features import Feature, has
from .._wire.methods import task_requests
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SERVER_BUSY,
    ConnectionClosed,
    McpError,
)
from ..types import META_RELATED_TASK, RESULT_TASK, ServerTasksCapability
from ..types.tasks import TASKS_EXTENSION_ID
from ._modern import ModernRequest
from ._task_store import MemoryTaskStore, TaskStore

if TYPE_CHECKING:
    from ._tools import ToolDefinition

__all__ = ["TaskManager", "TaskConnection", "LiveTask", "Rerun", "Work", "task_capabilities", "REQUIRES_EXTENSION"]

logger = logging.getLogger("trio_mcp.server")

TaskSupport = Literal["forbidden", "optional", "required"]
#: Seconds a status notification may take to write before it is given up.
_NOTIFY_TIMEOUT: Final = 5.0
REQUIRES_EXTENSION: Final[dict[str, Any]] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}}

#: What runs a task's tool: given the task, its result (``ServerConnection.run_tool`` with the task's context).
Work = Callable[["LiveTask"], Awaitable[dict[str, Any]]]
#: How the server runs again, here, a task taken over from a process that died (``retry_on_loss``): None when
#: this server cannot run it, else what makes (once the task is taken) the connection the work runs through,
#: the tool and its work.
Rerun = Callable[[TaskRecord], "Callable[[], tuple[TaskConnection, ToolDefinition, Work]] | None"]


def task_support(tool: ToolDefinition) -> TaskSupport:
    execution = tool.execution
    return (execution.task_support if execution is not None else None) or "forbidden"


def task_capabilities(tools: Iterable[ToolDefinition], version: str) -> dict[str, Any]:
    """The capability entries that announce tasks on ``version``, when any tool can run as one."""
    if not any(task_support(tool) != "forbidden" for tool in tools):
        return {}
    if has(version, Feature.TASKS):
        return {"tasks": ServerTasksCapability(list={}, cancel={}, requests=task_requests(version, "server"))}
    if has(version, Feature.TASKS_EXTENSION):
        return {"extensions": {TASKS_EXTENSION_ID: {}}}
    return {}


def _not_found(task_id: Any) -> McpError:
    return McpError(INVALID_PARAMS, f"Failed to retrieve task: Task not found ({task_id!r})")


class TaskConnection(Protocol):
    """What the engine uses of a connection that starts a task or asks about one (a ``ServerConnection``)."""

    @property
    def principal(self) -> Any: ...

    @property
    def version(self) -> str: ...

    @property
    def session(self) -> Session: ...

    @property
    def session_id(self) -> str | None: ...

    def task_nursery(self) -> trio.Nursery | TaskSet: ...

    def task_changed(self, task_id: str, params: dict[str, Any]) -> None: ...


class _Question:
    """One outstanding question of an extension-form task, answered through ``tasks/update``."""

    __slots__ = ("answered", "answer")

    def __init__(self) -> None:
        self.answered = trio.Event()
        self.answer: Any = None


class LiveTask:
    """A task whose work runs in this process (or is about to)."""

    def __init__(self, record: TaskRecord, connection: TaskConnection, progress_token: Any) -> None:
        self.record = record
        self.connection = connection
        #: Extension form: the connections whose ``subscriptions/listen`` streams follow this task.
        self.followers: weakref.WeakSet[TaskConnection] = weakref.WeakSet()
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
        #: Expired and deleted, or lost: nothing may write its record.
        self.purged = False
        #: Finalized or taken over by another process (its lease lapsed): the store tells what became of it.
        self.lost = False


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
        self._live: dict[str, LiveTask] = {}
        self._nursery: trio.Nursery | None = None
        self._sessions: dict[int, str] = {}
        self._epoch: float | None = None
        #: Tasks running elsewhere that requests here wait on, woken by the store's nudges.
        self._waiters: dict[str, trio.Event] = {}
        self._rerun: Rerun | None = None

    # -- lifetime ---------------------------------------------------------------------------------

    @asynccontextmanager
    async def serving(self, rerun: Rerun | None = None) -> AsyncIterator[None]:
        """Open the nursery tasks run in; on exit every running task is cancelled and recorded cancelled.
        ``rerun``: how the server runs a task taken over from a process that died (``retry_on_loss``)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._rerun = rerun
            nursery.start_soon(self._purge_loop)
            nursery.start_soon(self._lease_loop)
            await nursery.start(self.store.listen, self._nudged)
            try:
                yield
            finally:
                self._nursery = self._rerun = None
                nursery.cancel_scope.cancel()

    def now(self) -> float:
        """Wall-clock seconds, advancing with trio's clock (so TTLs follow a ``MockClock`` in tests)."""
        if self._epoch is None:
            self._epoch = time.time() - trio.current_time()
        return self._epoch + trio.current_time()

    def running_tasks(self) -> int:
        """How many tasks have work running in this process."""
        return len(self._live)

    def session_key(self, connection: TaskConnection) -> str:
        """The 2025-11-25 session a task belongs to: the session's id where other processes may serve it too, else
        a key of this manager's for the connection."""
        shared = connection.session_id
        if shared is not None:
            return shared
        key = self._sessions.get(id(connection))
        if key is None:
            key = self._sessions[id(connection)] = secrets.token_hex(16)
        return key

    def connection_closed(self, connection: TaskConnection) -> None:
        """A session ended: nobody can reach the tasks it started here any more, so they are cancelled. Not a
        session other processes serve too: this process only let its copy go (idle), the tasks run on until the
        session itself ends (``session_ended``)."""
        self._sessions.pop(id(connection), None)
        if connection.session_id is not None:
            return
        for live in list(self._live.values()):
            if live.connection is connection and live.record.form == "core":
                self.cancel(live, "the session ended")

    def shared_sessions(self) -> set[str]:
        """The ids of the sessions other processes may serve too with a task running here (not this manager's own
        keys): the transport asks whether each still exists."""
        own = set(self._sessions.values())
        return {
            live.record.session
            for live in self._live.values()
            if live.record.session is not None and live.record.session not in own
        }

    async def session_ended(self, session_id: str) -> None:
        """A session other processes serve too ended (its DELETE on any process, or its record expired): its tasks
        running here are cancelled and recorded so, as ``tasks/cancel`` does, whether or not this process still
        serves the session."""
        ended = [live for live in self._live.values() if live.record.session == session_id]
        for live in ended:
            self.cancel(live, "the session ended")
        for live in ended:
            if live.created:
                await self.save(live)

    # -- starting a task from tools/call ----------------------------------------------------------

    def wants_task(
        self, connection: TaskConnection, request: InboundRequest, modern: ModernRequest | None, tool: ToolDefinition
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
                    REQUIRES_EXTENSION,
                )
            return {} if declared and support != "forbidden" else None
        if not has(connection.version, Feature.TASKS):
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
        connection: TaskConnection,
        request: InboundRequest,
        modern: ModernRequest | None,
        tool: ToolDefinition,
        asked: dict[str, Any],
        work: Work,
    ) -> dict[str, Any]:
        """Start ``work`` (the tool's handler, run with the task's context) as a task; answer with the task, or
        (``defer_task``) with what it did inline."""
        owner = caller_key(connection.principal)
        self._check_limits(owner)
        now = self.now()
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
            attempts=1 + tool.retry_on_loss,
            call=dict(request.params or {}) if tool.retry_on_loss else None,
        )
        live = LiveTask(record, connection, request.progress_token)
        self._live[record.task_id] = live
        try:
            if not tool.defer_task:
                await self.create(live)
        except BaseException:
            self._live.pop(record.task_id, None)
            raise
        nursery = self._nursery or connection.task_nursery()
        nursery.start_soon(self._run, live, tool, work)
        try:
            await live.decided.wait()
        except BaseException:
            # The request went away before it could answer: nobody will ever learn of this task, so its work
            # stops too.
            self.cancel(live, "the request that started it was cancelled")
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

    async def create(self, live: LiveTask) -> None:
        """Make the task durable, then let the request answer with it."""
        if live.created:
            return
        await self.save(live, notify=False)
        live.created = True
        live.decided.set()

    async def _run(self, live: LiveTask, tool: ToolDefinition, work: Work) -> None:
        event = TaskEvent.FAILED
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        message: str | None = None
        try:
            with live.scope:
                try:
                    result = await work(live)
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
                self._forget(live)
                live.decided.set()
            else:
                with trio.CancelScope(shield=True) as shield:
                    shield.deadline = trio.current_time() + self.stop_timeout
                    await self._finish(live, event, result=result, error=error, message=message)
                self._forget(live)
            live.done.set()

    # -- status changes ---------------------------------------------------------------------------

    def _change(self, live: LiveTask, event: TaskEvent, message: str | None = None) -> bool:
        """Apply ``event`` to the record now (synchronously); False if it changed nothing."""
        record = live.record
        status = apply(record.status, event)
        if status is None:
            return False
        record.status = status
        if event in (TaskEvent.COMPLETED, TaskEvent.FAILED, TaskEvent.CANCELLED):
            record.input_requests.clear()
            # A rerun's final status still names its attempt.
            record.status_message = message if record.attempt == 1 else record.attempt_note(message or status)
        record.last_updated_at = self.now()
        changed, live.changed = live.changed, trio.Event()
        changed.set()
        return True

    async def _finish(
        self,
        live: LiveTask,
        event: TaskEvent,
        *,
        result: dict[str, Any] | None,
        error: dict[str, Any] | None,
        message: str | None,
    ) -> None:
        if not self._change(live, event, message):
            await self.save(live, notify=False)  # it ended earlier (cancelled): store that final state
            return
        if event is TaskEvent.COMPLETED:
            live.record.result = result
            if live.record.form == "core" and result is not None and result.get("isError"):
                live.record.status = "failed"  # 2025-11-25 counts a tool's isError result as failed
        elif event is TaskEvent.FAILED:
            live.record.error = error
        await self.save(live)

    def cancel(self, live: LiveTask, message: str) -> bool:
        """Record the task cancelled now (unless it already ended) and cancel its work; the work's end
        stores the record."""
        changed = self._change(live, TaskEvent.CANCELLED, message)
        live.cancel_requested.set()
        live.scope.cancel()
        return changed

    async def save(self, live: LiveTask, *, notify: bool = True) -> None:
        """Store the task's record; once the task exists, tell the client (core form) or the listen streams that
        follow it (extension form) of its new state."""
        if live.purged:
            return
        async with live.save_lock:
            try:
                kept = await self.store.save(live.record)
            except Exception:
                logger.exception("could not store task %s", live.record.task_id)
                kept = True  # what it could not store stays here; the next write tries again
        if not kept:
            await self._lost(live)
            return
        if live.record.terminal:
            await self.store.announce(live.record.task_id)
        if not (notify and live.created):
            return
        if live.record.form == "core":
            await self._notify_status(live)
        else:
            detailed = detailed_task_wire(live.record)
            for connection in list(live.followers):
                connection.task_changed(live.record.task_id, detailed)

    def listen_filter(
        self, connection: TaskConnection, modern: ModernRequest | None, wanted: list[str] | None
    ) -> list[str] | None:
        """The ``taskIds`` a ``subscriptions/listen`` stream gets ``notifications/tasks`` for, which ``connection``
        now follows: those of the requested tasks that belong to the caller and still run. Asking without the
        extension is -32021."""
        if not wanted:
            return None
        if modern is None or TASKS_EXTENSION_ID not in (modern.capabilities.extensions or {}):
            raise McpError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: taskIds need the {TASKS_EXTENSION_ID} extension",
                REQUIRES_EXTENSION,
            )
        owner = caller_key(connection.principal)
        honoured = []
        for task_id in dict.fromkeys(wanted):
            live = self._live.get(task_id)
            if live is not None and live.created and live.record.owner == owner and live.record.form == "extension":
                live.followers.add(connection)
                honoured.append(task_id)
        return honoured or None

    async def _notify_status(self, live: LiveTask) -> None:
        session = live.connection.session
        if session.closed:
            return
        with trio.move_on_after(_NOTIFY_TIMEOUT):  # optional: a client that does not read must not stall the task
            try:
                await session.notify("notifications/tasks/status", task_wire(live.record))
            except (ConnectionClosed, McpError):
                pass

    # -- questions to the client ------------------------------------------------------------------

    async def ask_extension(self, live: LiveTask, key: str, embedded: dict[str, Any], timeout: float | None) -> Any:
        """Publish a question in ``inputRequests`` and wait for ``tasks/update`` to answer it."""
        if key in live.keys_used:
            raise ValueError(f"input request key {key!r} was already used by this task")
        live.keys_used.add(key)
        question = live.questions[key] = _Question()
        live.record.input_requests[key] = embedded
        if not self._change(live, TaskEvent.INPUT_NEEDED):
            live.record.last_updated_at = self.now()
        await self.save(live)
        try:
            with trio.fail_after(timeout if timeout is not None else math.inf):
                await question.answered.wait()
            return question.answer
        finally:
            live.questions.pop(key, None)
            live.record.input_requests.pop(key, None)
            if not live.record.input_requests and self._change(live, TaskEvent.INPUT_ANSWERED):
                with trio.CancelScope(shield=True):
                    await self.save(live)

    async def ask_core(self, live: LiveTask, method: str, params: dict[str, Any], timeout: float | None) -> Any:
        """Send a request to the client on the task's behalf, the task ``input_required`` meanwhile."""
        meta = dict(params.get("_meta") or {})
        meta[META_RELATED_TASK] = {"taskId": live.record.task_id}
        live.asking += 1
        if self._change(live, TaskEvent.INPUT_NEEDED):
            await self.save(live)
        try:
            related = live.result_waiters[-1] if live.result_waiters else None
            return await live.connection.session.request(
                method, {**params, "_meta": meta}, timeout=timeout, related_request_id=related
            )
        finally:
            live.asking -= 1
            if not live.asking and self._change(live, TaskEvent.INPUT_ANSWERED):
                with trio.CancelScope(shield=True):
                    await self.save(live)

    # -- the tasks/* methods ----------------------------------------------------------------------

    async def find(
        self, connection: TaskConnection, modern: ModernRequest | None, task_id: Any
    ) -> LiveTask | TaskRecord:
        """The caller's task (live, or its record); anyone else's, an expired or an unknown one is -32602."""
        if type(task_id) is not str:
            raise McpError(INVALID_PARAMS, "Invalid params: taskId must be a string")
        form = "core" if modern is None else "extension"
        session = self.session_key(connection) if modern is None else None
        live = self._live.get(task_id)
        record = live.record if live is not None else await self.store.load(task_id)
        if (
            record is None
            or record.owner != caller_key(connection.principal)
            or record.session != session
            or record.form != form
            or (live is not None and not live.created)
        ):
            raise _not_found(task_id)
        expires = record.expires_at()
        if expires is not None and expires <= self.now():
            if live is not None:
                self.cancel(live, "the task expired")
                live.purged = True
            await self.store.delete([task_id])
            raise McpError(INVALID_PARAMS, f"Failed to retrieve task: Task has expired ({task_id!r})")
        if live is None and not record.terminal:
            return await self.settle(record)
        return live if live is not None else record

    # -- tasks that run in another process --------------------------------------------------------

    async def settle(self, record: TaskRecord) -> TaskRecord:
        """The record of an unfinished task that runs elsewhere, finalized ``failed`` first if its lease lapsed
        (the liveness rule: its process stopped renewing it), or taken over and run again here if its tool has
        ``retry_on_loss`` and attempts left. Never while the lease is live."""
        rerun = self._rerun(record) if self._rerun is not None and record.attempt < record.attempts else None
        if rerun is not None:
            taken = attrs.evolve(
                record,
                instance=self.instance,
                attempt=record.attempt + 1,
                status="working",
                input_requests={},
                last_updated_at=self.now(),
            )
            taken.status_message = taken.attempt_note("the process running the task stopped; running it again")
            if not await self.store.save(taken, lapsed_only=True):
                return record
            logger.warning("task %s: its process stopped; attempt %d runs here", taken.task_id[:8], taken.attempt)
            self._start_again(taken, *rerun())
            return taken
        failed = attrs.evolve(
            record,
            status="failed",
            status_message=record.attempt_note("the process running the task stopped before it finished"),
            error={"code": INTERNAL_ERROR, "message": "Internal error: the process running the task stopped"},
            input_requests={},
            last_updated_at=self.now(),
        )
        if not await self.store.save(failed, lapsed_only=True):
            return record
        logger.warning("task %s: its process stopped renewing its lease; recorded failed", record.task_id)
        await self.store.announce(record.task_id)
        return failed

    async def wait_final(
        self, connection: TaskConnection, modern: ModernRequest | None, found: LiveTask | TaskRecord, request_id: Any
    ) -> TaskRecord:
        """The task's final record, once there is one, wherever the task runs (``tasks/result``)."""
        while True:
            if isinstance(found, LiveTask):
                found.result_waiters.append(request_id)
                try:
                    while not (found.record.terminal or found.lost):
                        await found.changed.wait()
                finally:
                    found.result_waiters.remove(request_id)
                if not found.lost:
                    return found.record
                found = await self.find(connection, modern, found.record.task_id)
                continue
            if found.terminal:
                return found
            await self._nudge_or_poll(found.task_id)
            found = await self.find(connection, modern, found.task_id)

    async def cancel_elsewhere(self, record: TaskRecord) -> TaskRecord:
        """Have the process running the task cancel it, and return its record once final. Bounded: a process that
        is alive cancels at its next renewal at the latest, a dead one's lease lapses; past two leases, -32603."""
        await self.store.request(record.task_id, {"kind": "cancel"})
        with trio.move_on_after(2 * self.store.lease + 1):
            while not record.terminal:
                await self._nudge_or_poll(record.task_id)
                found = await self.store.load(record.task_id)
                if found is None:
                    raise _not_found(record.task_id)
                record = found if found.terminal else await self.settle(found)
        if not record.terminal:
            raise McpError(
                INTERNAL_ERROR,
                f"Internal error: the process running task {record.task_id!r} did not confirm its cancellation "
                f"within {2 * self.store.lease + 1:g} s; poll tasks/get",
            )
        return record

    async def listed(self, owner: str, session: str | None, form: str) -> list[TaskRecord]:
        """The caller's tasks (``tasks/list``), each as it is now."""
        records = []
        for record in await self.store.records(owner):
            if record.session != session or record.form != form:
                continue
            live = self._live.get(record.task_id)
            if live is not None:
                record = live.record
            elif not record.terminal:
                record = await self.settle(record)
            records.append(record)
        return records

    async def _nudge_or_poll(self, task_id: str) -> None:
        """Wait for a nudge about the task, or a third of a lease (a nudge may be lost)."""
        event = self._waiters.setdefault(task_id, trio.Event())
        with trio.move_on_after(self.store.lease / 3):
            await event.wait()
        if self._waiters.get(task_id) is event:  # not nudged: nothing is kept for a task nobody waits on
            del self._waiters[task_id]

    async def _nudged(self, task_id: str) -> None:
        event = self._waiters.pop(task_id, None)
        if event is not None:
            event.set()
        if task_id in self._live:  # a message waits for it: take it now rather than at the next renewal
            try:
                await self._renew([task_id])
            except Exception as exc:
                logger.warning("task %s: its messages wait for the next renewal: %s", task_id[:8], exc)

    async def _renew(self, task_ids: Sequence[str]) -> None:
        """Renew these tasks' leases and act on their messages; a task whose lease is not held any more is
        written again, which leases it anew unless another process finalized or took it (then it is lost)."""
        held = await self.store.renew(self.instance, task_ids)
        for task_id in task_ids:
            live = self._live.get(task_id)
            if task_id not in held and live is not None and not live.purged:
                await self.save(live, notify=False)
        await self._deliver(held)

    async def _deliver(self, messages: dict[str, list[Any]]) -> None:
        for task_id, items in messages.items():
            live = self._live.get(task_id)
            if live is None:
                continue  # it ended here meanwhile
            for item in items:
                if live.record.terminal or type(item) is not dict:
                    continue
                if item.get("kind") == "cancel":
                    self.cancel(live, "cancelled by request")
                    await self.save(live)
                elif item.get("kind") == "update" and type(item.get("responses")) is dict:
                    await self.update(live, item["responses"])

    async def _lease_loop(self) -> None:
        """Renew the leases of the tasks running here (taking their messages) every third of a lease, and
        finalize, every lease, the tasks whose lease lapsed."""
        rounds = 0
        while True:
            await trio.sleep(self.store.lease / 3)
            rounds += 1
            try:
                await self._renew(self._running_ids())
                if rounds % 3 == 0:
                    for task_id in await self.store.lapsed():
                        record = None if task_id in self._live else await self.store.load(task_id)
                        if record is not None and not record.terminal:
                            await self.settle(record)
            except Exception as exc:
                logger.warning("task leases not renewed: %s", exc)

    def _start_again(self, record: TaskRecord, connection: TaskConnection, tool: ToolDefinition, work: Work) -> None:
        """Run here the work of a task taken over (``settle``), as ``start`` runs a new one."""
        meta = (record.call or {}).get("_meta")
        live = LiveTask(record, connection, meta.get("progressToken") if type(meta) is dict else None)
        live.created = True
        live.decided.set()
        self._live[record.task_id] = live
        assert self._nursery is not None  # a rerun is only offered while serving
        self._nursery.start_soon(self._run, live, tool, work)

    def _forget(self, live: LiveTask) -> None:
        """No work of this task runs here any more (another may run it again here later: it stays)."""
        if self._live.get(live.record.task_id) is live:
            del self._live[live.record.task_id]

    def _running_ids(self) -> Sequence[str]:
        return [task_id for task_id, live in self._live.items() if live.created and not live.purged]

    async def _lost(self, live: LiveTask) -> None:
        """The store refused a write: another process finalized the task (its lease lapsed while this process
        could not renew it). Its record here becomes the stored one, its work stops, and requests here about it
        read the store from now on."""
        live.purged = live.lost = True
        self._forget(live)
        stored = await self.store.load(live.record.task_id)
        logger.warning("task %s was finalized by another process; its work here stops", live.record.task_id)
        if stored is not None:
            for field in attrs.fields(TaskRecord):
                setattr(live.record, field.name, getattr(stored, field.name))
        changed, live.changed = live.changed, trio.Event()
        changed.set()
        live.cancel_requested.set()
        live.scope.cancel()

    async def update(self, live: LiveTask, responses: dict[str, Any]) -> None:
        """Answer outstanding questions; keys that are not outstanding are ignored."""
        for key, answer in responses.items():
            question = live.questions.get(key)
            if question is None or question.answered.is_set() or type(answer) is not dict:
                continue
            question.answer = answer
            question.answered.set()
            live.record.input_requests.pop(key, None)
        if not live.record.input_requests and self._change(live, TaskEvent.INPUT_ANSWERED):
            await self.save(live)

    async def purge(self) -> int:
        """Delete every record whose TTL ran out (cancelling its work if it still runs); returns how many."""
        expired = await self.store.expired(self.now())
        for task_id in expired:
            live = self._live.get(task_id)
            if live is not None:
                self.cancel(live, "the task expired")
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
