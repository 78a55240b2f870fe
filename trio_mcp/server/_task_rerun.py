"""A task run again, here, after the process running it died (a tool with ``retry_on_loss``).

The task manager takes the task over through the store (``TaskManager.settle``) and runs its work again from the
start, with the ``tools/call`` params the store kept, through a connection of its own: no client request is
behind it. Its context reports as a task's does: on 2026-07-28 through the record (``tasks/get`` shows the
attempt's status message, and its questions are answered through ``tasks/update`` as any task's); on 2025-11-25
its notifications go to the task's session through this process's connection to it, when it serves one, and
it cannot ask the client anything. ``ctx.principal`` is None: the store keeps no token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import trio

from .._core.tasks import TaskRecord
from .._session import InboundRequest
from .._wire.versions import V2025_11_25
from ..errors import ConnectionClosed
from ._connection import ServerConnection
from ._modern import modern_meta
from ._task_requests import TaskContext
from ._tasks import LiveTask, Work

if TYPE_CHECKING:
    from ._registry import ServerCore
    from ._tools import ToolDefinition

__all__ = ["rerun_task"]


def rerun_task(server: ServerCore, record: TaskRecord) -> Callable[[], tuple[Any, ToolDefinition, Work]] | None:
    """What starts the task's work again here (``Rerun``), or None when this server has no such tool to rerun."""
    call = record.call or {}
    name = call.get("name")
    tool = server.tools.get(name) if type(name) is str else None
    if tool is None or not tool.retry_on_loss:
        return None

    def start() -> tuple[ServerConnection, ToolDefinition, Work]:
        modern = record.form == "extension"
        connection = ServerConnection(server, _SessionNotifier(server, record.session), modern_only=modern)
        if not modern:
            connection.past_handshake(V2025_11_25)
        request = InboundRequest(f"rerun-{record.task_id}", "tools/call", call)
        request.session = connection.session
        request.cancel_scope = trio.CancelScope()
        envelope = modern_meta(call) if modern else None
        arguments = call.get("arguments")

        def work(live: LiveTask) -> Any:
            context = TaskContext(request, connection, envelope, live, server.tasks)
            return connection.run_tool(tool, arguments if type(arguments) is dict else None, context)

        return connection, tool, work

    return start


class _SessionNotifier:
    """The ``MessageStream`` of a rerun: notifications go to the task's session through this process's connection
    to it (if any); a request to the client fails."""

    def __init__(self, server: ServerCore, session_id: str | None) -> None:
        self._server = server
        self._session_id = session_id

    async def send(self, message: Any, *, related_request_id: Any = None, final: bool = False) -> None:
        if type(message) is not dict or "id" in message:
            raise ConnectionClosed("a task run again after its process died cannot ask the client")
        if self._session_id is None:
            return
        for connection in list(self._server.connections):
            if isinstance(connection, ServerConnection) and connection.session_id == self._session_id:
                await connection.session.notify(message["method"], message.get("params"))
                return

    async def receive(self) -> NoReturn:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        pass
