"""Task state without I/O: the status table, the record a task store keeps, and its two wire forms.

A task moves ``working`` ⇄ ``input_required`` until it reaches one of three terminal statuses, and a
terminal status absorbs every later event: whichever of "finished", "failed" and "cancelled" is applied
first is the task's one final state. ``TRANSITIONS`` is the whole rule; ``apply`` is the only way a status
changes.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

import attrs

__all__ = [
    "TaskEvent",
    "TaskStatus",
    "STATUSES",
    "TERMINAL",
    "TRANSITIONS",
    "apply",
    "may_replace",
    "lease_seconds",
    "MAX_QUEUED",
    "Nudged",
    "TaskRecord",
    "iso_time",
    "task_wire",
    "detailed_task_wire",
]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]

STATUSES: Final[tuple[TaskStatus, ...]] = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL: Final[frozenset[str]] = frozenset({"completed", "failed", "cancelled"})


class TaskEvent(enum.Enum):
    """What can happen to a task."""

    INPUT_NEEDED = "input_needed"  #: the work asked the client for something
    INPUT_ANSWERED = "input_answered"  #: every outstanding question has its answer
    COMPLETED = "completed"  #: the work returned a result (a tool's ``isError`` result included)
    FAILED = "failed"  #: the work ended in a JSON-RPC error, or its server went away
    CANCELLED = "cancelled"  #: the requestor cancelled it, or the server is stopping


_TERMINAL_EVENT: Final[dict[TaskEvent, TaskStatus]] = {
    TaskEvent.COMPLETED: "completed",
    TaskEvent.FAILED: "failed",
    TaskEvent.CANCELLED: "cancelled",
}

#: ``(status, event) -> new status``. Pairs not listed leave the status unchanged (a terminal status absorbs
#: everything: the first final event wins, every later one is ignored).
TRANSITIONS: Final[dict[tuple[str, TaskEvent], TaskStatus]] = {
    ("working", TaskEvent.INPUT_NEEDED): "input_required",
    ("input_required", TaskEvent.INPUT_ANSWERED): "working",
    **{(status, event): final for status in ("working", "input_required") for event, final in _TERMINAL_EVENT.items()},
}


def apply(status: str, event: TaskEvent) -> str | None:
    """The status after ``event``, or None when the event changes nothing (already there, or terminal)."""
    return TRANSITIONS.get((status, event))


#: Messages kept for one task (``TaskStore.request``) before the oldest are dropped (a task nobody runs any more).
MAX_QUEUED: Final = 100

#: Called with a task's id whenever a process nudged about it (``TaskStore.announce``).
Nudged = Callable[[str], Awaitable[None]]


def lease_seconds(lease: float) -> float:
    """A task store's ``lease`` as seconds, or ``ValueError`` naming it."""
    if isinstance(lease, bool) or not isinstance(lease, (int, float)) or not (0 < lease and math.isfinite(lease)):
        raise ValueError(f"lease must be a positive number of seconds, not {lease!r}")
    return float(lease)


def may_replace(stored: TaskRecord | None, record: TaskRecord, *, lapsed_only: bool, lapsed: bool) -> bool:
    """Whether a task store may replace ``stored`` (None: there is none) with ``record``: the compare-and-set
    every store applies, so that a final status is written once and only by the process running the task, or
    by the liveness rule.

    A final record is never replaced (but writing the same record again is allowed: a retried write).
    ``lapsed_only`` is the liveness rule (finalizing, or taking over, a task whose process stopped renewing its
    lease): it may write only a task whose lease ``lapsed``. Otherwise only the instance that runs the task may
    write it (one that was taken over from it may not).
    """
    if stored is None:
        return not lapsed_only
    if stored == record:
        return True
    if stored.terminal:
        return False
    return lapsed if lapsed_only else stored.instance == record.instance


def iso_time(timestamp: float) -> str:
    """An ISO 8601 UTC timestamp with milliseconds, as tasks carry them (``2025-11-25T10:30:00.000Z``)."""
    import datetime  # not at import: only a server or client that uses tasks needs it

    moment = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.define(kw_only=True)
class TaskRecord:
    """Everything a task store keeps about one task: enough to answer a poll after the process that ran it died.

    ``owner`` is a digest of the principal that created the task and ``session`` the session it was created
    in (None on 2026-07-28, which has none); a poll from anyone else finds nothing. ``instance`` names the
    task manager that runs it: a record left non-terminal by an instance that is gone is reported failed.
    Times are wall-clock seconds since the epoch; ``ttl_ms`` None means unlimited.
    """

    task_id: str
    owner: str
    session: str | None = None
    form: Literal["core", "extension"]  #: 2025-11-25 core tasks, or the 2026-07-28 extension
    instance: str
    status: str = "working"
    status_message: str | None = None
    created_at: float
    last_updated_at: float
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    #: The underlying request's result (``completed``), or its JSON-RPC error object (``failed``).
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: Outstanding questions to the client, by key (extension form: what ``tasks/get`` shows).
    input_requests: dict[str, Any] = attrs.field(factory=dict)
    #: Which run of the work this is, and how many are allowed (a tool's ``retry_on_loss`` plus one).
    attempt: int = 1
    attempts: int = 1
    #: The ``tools/call`` params, kept to run the work again elsewhere (only for a tool with ``retry_on_loss``).
    call: dict[str, Any] | None = None

    def attempt_note(self, message: str) -> str:
        """``message`` naming the attempt, when the task may run more than once."""
        return message if self.attempts == 1 else f"attempt {self.attempt} of {self.attempts}: {message}"

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def expires_at(self) -> float | None:
        """When the task may be purged (wall clock), or None if never."""
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000

    def to_json(self) -> dict[str, Any]:
        """The record as plain JSON (what a durable store writes)."""
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskRecord:
        return cls(**data)


def _times(record: TaskRecord) -> dict[str, Any]:
    task: dict[str, Any] = {"taskId": record.task_id, "status": record.status}
    if record.status_message is not None:
        task["statusMessage"] = record.status_message
    task["createdAt"] = iso_time(record.created_at)
    task["lastUpdatedAt"] = iso_time(record.last_updated_at)
    return task


def task_wire(record: TaskRecord) -> dict[str, Any]:
    """The 2025-11-25 ``Task`` object (``ttl``/``pollInterval`` in milliseconds; ``ttl`` null when unlimited)."""
    task = _times(record)
    task["ttl"] = record.ttl_ms
    if record.poll_interval_ms is not None:
        task["pollInterval"] = record.poll_interval_ms
    return task


def detailed_task_wire(record: TaskRecord, *, detail: bool = True) -> dict[str, Any]:
    """The extension's ``Task`` (``detail=False``: what ``CreateTaskResult`` carries) or ``DetailedTask``.

    The detail is what the status calls for: ``inputRequests`` when ``input_required``, the underlying
    ``result`` when ``completed``, the JSON-RPC ``error`` when ``failed``.
    """
    task = _times(record)
    task["ttlMs"] = record.ttl_ms
    if record.poll_interval_ms is not None:
        task["pollIntervalMs"] = record.poll_interval_ms
    if detail:
        if record.status == "input_required":
            task["inputRequests"] = dict(record.input_requests)
        elif record.status == "completed" and record.result is not None:
            task["result"] = record.result
        elif record.status == "failed" and record.error is not None:
            task["error"] = record.error
    return task
