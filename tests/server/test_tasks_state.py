"""The task status table (trio_mcp._core.tasks), checked pair by pair against the spec's lifecycle rules, and
the wire forms of a record."""

from __future__ import annotations

import itertools

import pytest

from trio_mcp._core.tasks import (
    STATUSES,
    TERMINAL,
    TaskEvent,
    TaskRecord,
    apply,
    detailed_task_wire,
    iso_time,
    task_wire,
)

# The spec (2025-11-25 tasks.mdx "Task Status Lifecycle"; the extension's state diagram): from working to
# input_required or any terminal status; from input_required back to working or to any terminal status;
# terminal statuses never change.
ALLOWED = {
    "working": {"input_required", "completed", "failed", "cancelled"},
    "input_required": {"working", "completed", "failed", "cancelled"},
    "completed": set(),
    "failed": set(),
    "cancelled": set(),
}


@pytest.mark.parametrize("status,event", list(itertools.product(STATUSES, TaskEvent)))
def test_every_status_event_pair(status: str, event: TaskEvent) -> None:
    after = apply(status, event)
    if status in TERMINAL:
        assert after is None, "a terminal status absorbs every event"
        return
    if after is None:  # no change: only "input needed" while already waiting, or "answered" while working
        assert (status, event) in {("input_required", TaskEvent.INPUT_NEEDED), ("working", TaskEvent.INPUT_ANSWERED)}
        return
    assert after in ALLOWED[status]
    expected = {
        TaskEvent.INPUT_NEEDED: "input_required",
        TaskEvent.INPUT_ANSWERED: "working",
        TaskEvent.COMPLETED: "completed",
        TaskEvent.FAILED: "failed",
        TaskEvent.CANCELLED: "cancelled",
    }[event]
    assert after == expected


@pytest.mark.parametrize(
    "events", list(itertools.permutations([TaskEvent.COMPLETED, TaskEvent.FAILED, TaskEvent.CANCELLED]))
)
def test_first_final_event_wins(events: tuple[TaskEvent, ...]) -> None:
    status = "working"
    finals = []
    for event in events:
        after = apply(status, event)
        if after is not None:
            status = after
            finals.append(after)
    assert finals == [events[0].value]


def record(**changes: object) -> TaskRecord:
    base = TaskRecord(
        task_id="t" * 20,
        owner="o",
        form="extension",
        instance="i",
        created_at=0.0,
        last_updated_at=1.5,
        ttl_ms=60000,
        poll_interval_ms=500,
    )
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def test_wire_forms_use_each_revision_field_names() -> None:
    core = task_wire(record(ttl_ms=None))
    assert core == {
        "taskId": "t" * 20,
        "status": "working",
        "createdAt": "1970-01-01T00:00:00.000Z",
        "lastUpdatedAt": "1970-01-01T00:00:01.500Z",
        "ttl": None,
        "pollInterval": 500,
    }
    extension = detailed_task_wire(record())
    assert extension["ttlMs"] == 60000 and extension["pollIntervalMs"] == 500
    assert "ttl" not in extension and "pollInterval" not in extension


def test_detail_follows_the_status() -> None:
    asking = detailed_task_wire(record(status="input_required", input_requests={"k": {"method": "elicitation/create"}}))
    assert asking["inputRequests"] == {"k": {"method": "elicitation/create"}}
    done = detailed_task_wire(record(status="completed", result={"content": []}))
    assert done["result"] == {"content": []} and "error" not in done
    failed = detailed_task_wire(record(status="failed", error={"code": -32603, "message": "x"}, result={"x": 1}))
    assert failed["error"]["code"] == -32603 and "result" not in failed
    created = detailed_task_wire(record(status="completed", result={"content": []}), detail=False)
    assert "result" not in created


def test_record_round_trips_through_json() -> None:
    original = record(status="failed", error={"code": 1, "message": "m"}, session="s")
    assert TaskRecord.from_json(original.to_json()) == original
    assert iso_time(0.25).endswith("00:00:00.250Z")
