"""Tasks as requests meet them: the ``tasks/*`` methods, and the ``Context`` of a handler that runs as a task.

The engine they drive, ``TaskManager``, is in ``_tasks`` (which also says how tasks work in each wire form).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from .._core.tasks import TaskRecord, detailed_task_wire, task_wire
from .._identity import caller_key
from .._pagination import page_result
from .._session import InboundRequest, progress_params
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ConnectionClosed,
    McpError,
)
from ..types import META_RELATED_TASK
from ..types.tasks import TASKS_EXTENSION_ID
from ._context import Context, RequestConnection
from ._logging import LEVELS
from ._modern import ModernRequest
from ._tasks import REQUIRES_EXTENSION, LiveTask, TaskManager

__all__ = ["TaskContext", "TASK_HANDLERS"]


def _record(found: LiveTask | TaskRecord) -> TaskRecord:
    return found.record if isinstance(found, LiveTask) else found


def _manager(connection: RequestConnection, modern: ModernRequest | None) -> TaskManager:
    """The server's task manager, once the request may use tasks at all (else the wire form's refusal)."""
    server = connection.server
    if modern is not None:
        if TASKS_EXTENSION_ID not in (modern.capabilities.extensions or {}):
            raise McpError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: tasks/* need the {TASKS_EXTENSION_ID} extension",
                REQUIRES_EXTENSION,
            )
    return server.tasks


async def _tasks_get(connection: RequestConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    manager = _manager(connection, modern)
    record = _record(await manager.find(connection, modern, (request.params or {}).get("taskId")))
    return task_wire(record) if modern is None else detailed_task_wire(record)


async def _tasks_result(connection: RequestConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    """Core ``tasks/result``: wait for the end, then answer exactly as the tool call would have."""
    manager = _manager(connection, modern)
    found = await manager.find(connection, modern, (request.params or {}).get("taskId"))
    record = await manager.wait_final(connection, modern, found, request.id)
    related = {META_RELATED_TASK: {"taskId": record.task_id}}
    if record.status == "cancelled":
        raise McpError(INVALID_REQUEST, f"Invalid Request: task {record.task_id!r} was cancelled", related)
    if record.error is not None:
        error = record.error
        raise McpError(error.get("code", INTERNAL_ERROR), error.get("message", "Internal error"), error.get("data"))
    result = dict(record.result or {})
    result["_meta"] = {**(result.get("_meta") or {}), **related}
    return result


async def _tasks_list(connection: RequestConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    manager = _manager(connection, modern)
    records = await manager.listed(caller_key(connection.principal), manager.session_key(connection), "core")
    return page_result(
        "tasks",
        [task_wire(r) for r in records],
        (request.params or {}).get("cursor"),
        page_size=connection.server.page_size or 100,
        scope="tasks/list",
        codec=connection.server.cursors,
    )


async def _tasks_cancel(connection: RequestConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    manager = _manager(connection, modern)
    found = await manager.find(connection, modern, (request.params or {}).get("taskId"))
    record = _record(found)
    if record.terminal:
        if modern is None:
            raise McpError(INVALID_PARAMS, f"Invalid params: task {record.task_id!r} already ended ({record.status})")
        return {}
    if isinstance(found, LiveTask):
        manager.cancel(found, "cancelled by request")
        await manager.save(found)
    else:  # it runs in another process: the answer waits for what that process (or the liveness rule) recorded
        record = await manager.cancel_elsewhere(record)
        if record.status != "cancelled" and modern is None:
            raise McpError(
                INVALID_PARAMS,
                f"Invalid params: task {record.task_id!r} ended ({record.status}) before it could be cancelled",
            )
    return task_wire(record) if modern is None else {}


async def _tasks_update(connection: RequestConnection, request: InboundRequest, modern: ModernRequest | None) -> Any:
    manager = _manager(connection, modern)
    params = request.params or {}
    responses = params.get("inputResponses")
    if type(responses) is not dict:
        raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
    found = await manager.find(connection, modern, params.get("taskId"))
    if isinstance(found, LiveTask):
        if not found.record.terminal:
            await manager.update(found, responses)
    elif not found.terminal:  # it runs in another process: the answers go to it
        await manager.store.request(found.task_id, {"kind": "update", "responses": responses})
    return {}


#: The handlers of the 2025-11-25 core task methods and of the tasks extension's (2026-07-28): the method
#: table says which revision has which.
TASK_HANDLERS: Final[dict[str, Callable[[RequestConnection, InboundRequest, ModernRequest | None], Awaitable[Any]]]] = {
    "tasks/get": _tasks_get,
    "tasks/result": _tasks_result,
    "tasks/list": _tasks_list,
    "tasks/cancel": _tasks_cancel,
    "tasks/update": _tasks_update,
}


class TaskContext(Context):
    """The ``Context`` of a handler running as a task: cancellation, questions, progress and logs go
    through the task rather than through the request that started it (which has been answered)."""

    __slots__ = ("_live", "_manager", "_last_progress")

    def __init__(
        self,
        request: InboundRequest,
        connection: RequestConnection,
        modern: ModernRequest | None,
        live: LiveTask,
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
                live.record.status_message = live.record.attempt_note(message)
                live.record.last_updated_at = self._manager.now()
                await self._manager.save(live)
            return
        token = live.progress_token
        if token is None or (self._last_progress is not None and not progress > self._last_progress):
            return
        self._last_progress = progress
        await self._send_related("notifications/progress", progress_params(token, progress, total, message))

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
