"""Tasks: durable, pollable request execution.

Two generations share this module:

* **2025-11-25 core tasks** (experimental): the requestor adds ``task`` to ``tools/call``,
  ``sampling/createMessage`` or ``elicitation/create``; ``tasks/get``, ``tasks/result``, ``tasks/list``,
  ``tasks/cancel`` and ``notifications/tasks/status``. Times are ``ttl``/``poll_interval``.
* **The ``io.modelcontextprotocol/tasks`` extension** (2026-07-28+): the server decides; ``tasks/get`` returns a
  :class:`DetailedTask`, ``tasks/update`` answers input requests, ``notifications/tasks`` reports changes. Times
  are ``ttl_ms``/``poll_interval_ms``. Classes whose schema name clashes with a core one carry an ``Ext`` prefix.

``ttl`` and ``ttl_ms`` are required but nullable (``None`` = unlimited), so they are always written, as ``null``
when ``None``.
"""

from typing import Any, Final, Literal, TypeAlias

import attrs

from ._base import ErrorObject, NotificationParams, PaginatedResult, RequestParams, Result, TaskMetadata, WireType
from .mrtr import InputRequests, InputResponses

__all__ = [
    "TASKS_EXTENSION_ID",
    "TaskStatus",
    "TaskMetadata",
    "RelatedTaskMetadata",
    "Task",
    "CreateTaskResult",
    "GetTaskRequestParams",
    "GetTaskPayloadRequestParams",
    "CancelTaskRequestParams",
    "GetTaskResult",
    "GetTaskPayloadResult",
    "CancelTaskResult",
    "ListTasksResult",
    "TaskStatusNotificationParams",
    "DetailedTask",
    "ExtCreateTaskResult",
    "ExtGetTaskResult",
    "UpdateTaskRequestParams",
    "ExtTaskNotificationParams",
]

#: Extension identifier under ``capabilities.extensions`` (2026-07-28+).
TASKS_EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"

#: Where a task stands; the last three values are terminal.
TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]


# --- 2025-11-25 core tasks -------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True, eq=False, repr=False)
class RelatedTaskMetadata(WireType):
    """The value of ``_meta["io.modelcontextprotocol/related-task"]``: which task a message belongs to."""

    task_id: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Task(WireType):
    """The state of a 2025-11-25 task. ``ttl`` (ms) is ``None`` for an unlimited lifetime."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None
    poll_interval: int | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CreateTaskResult(Result):
    """The immediate answer to a task-augmented request: the task that will produce the real result."""

    task: Task


@attrs.frozen(kw_only=True, eq=False, repr=False)
class GetTaskRequestParams(RequestParams):
    """Params of ``tasks/get`` (core and extension)."""

    task_id: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class GetTaskPayloadRequestParams(RequestParams):
    """Params of ``tasks/result`` (core only): wait for the task and fetch what the request returned."""

    task_id: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CancelTaskRequestParams(RequestParams):
    """Params of ``tasks/cancel`` (core and extension)."""

    task_id: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class GetTaskResult(Result):
    """The answer to core ``tasks/get``: the task's state, flattened into the result."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None
    poll_interval: int | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class GetTaskPayloadResult(Result):
    """The answer to ``tasks/result``: whatever the underlying request returned, all of it kept in ``extra``."""


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CancelTaskResult(Result):
    """The answer to core ``tasks/cancel``: the task's state after cancellation."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None
    poll_interval: int | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ListTasksResult(PaginatedResult):
    """One page of ``tasks/list``."""

    tasks: list[Task]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class TaskStatusNotificationParams(NotificationParams):
    """Params of ``notifications/tasks/status``: the task's full state after a change."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None
    poll_interval: int | None = None


# --- io.modelcontextprotocol/tasks extension (2026-07-28+) ----------------------------------------------------


@attrs.frozen(kw_only=True, eq=False, repr=False)
class DetailedTask(WireType):
    """An extension task with the detail its status calls for.

    ``input_requests`` when ``input_required``, ``result`` (the underlying result, verbatim) when ``completed``,
    ``error`` when ``failed``.
    """

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    input_requests: InputRequests | None = None
    result: dict[str, Any] | None = None
    error: ErrorObject | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ExtCreateTaskResult(Result):
    """A ``tools/call`` answered with a task (``result_type`` ``"task"``); the task fields are flattened in."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ExtGetTaskResult(Result):
    """The answer to extension ``tasks/get``: a :class:`DetailedTask` flattened into the result."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    input_requests: InputRequests | None = None
    result: dict[str, Any] | None = None
    error: ErrorObject | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class UpdateTaskRequestParams(RequestParams):
    """Params of ``tasks/update``: answers to a task's outstanding input requests."""

    task_id: str
    input_responses: InputResponses


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ExtTaskNotificationParams(NotificationParams):
    """Params of ``notifications/tasks``: a :class:`DetailedTask` pushed on a ``subscriptions/listen`` stream."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    input_requests: InputRequests | None = None
    result: dict[str, Any] | None = None
    error: ErrorObject | None = None
