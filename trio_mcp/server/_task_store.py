"""Where task records live: the ``TaskStore`` interface, an in-memory store and a directory of JSON files.

The task manager writes a record when the task is created (before ``CreateTaskResult`` is sent: a
``tasks/get`` right after it must find the task), at every status change, and when it ends. Every write is a
compare-and-set (``_core.tasks.may_replace``): a final record is never replaced, only the process running a
task writes it, and a task whose lease lapsed (its process stopped renewing it) may be finalized, or taken
over, by any process. The store also carries what other processes tell the one running a task (a
cancellation, answers), and nudges them when a record changes. The stores of this module serve one process:
their leases, messages and nudges live in its memory, so after a restart every unfinished task has lapsed.
``trio_mcp.scale.RedisTaskStore`` serves several.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol

import trio

from .._core.tasks import MAX_QUEUED, Nudged, TaskRecord, lease_seconds, may_replace

__all__ = ["TaskStore", "MemoryTaskStore", "FileTaskStore"]

_TASK_ID = re.compile(r"^[A-Za-z0-9_-]{16,128}$")


class TaskStore(Protocol):
    """Durable task records, each task's lease, and the messages between the processes sharing the store.

    Every method may block on I/O; none may lose a record it acknowledged.
    """

    @property
    def lease(self) -> float:
        """Seconds a task's lease lasts: its process renews it every third of that; once it lapsed, the task's
        process is taken for gone."""

    async def save(self, record: TaskRecord, *, lapsed_only: bool = False) -> bool:
        """Create or replace the record if ``may_replace`` allows it (``lapsed_only``: the liveness rule); returns
        whether it did. Saving an unfinished record leases it to ``record.instance``; a final one ends the lease.
        """

    async def load(self, task_id: str) -> TaskRecord | None:
        """The record for ``task_id``, or None if there is none (never created, or deleted)."""

    async def records(self, owner: str) -> list[TaskRecord]:
        """Every record created by ``owner``, oldest first."""

    async def delete(self, task_ids: list[str]) -> None:
        """Forget these records (expired); unknown ids are ignored."""

    async def expired(self, now: float) -> list[str]:
        """The ids of records whose TTL had run out at wall-clock time ``now``."""

    async def renew(self, instance: str, task_ids: Sequence[str]) -> dict[str, list[Any]]:
        """``instance`` still runs these tasks: those it holds the live lease of are leased for another ``lease``
        seconds and returned with the messages queued for them (``request``, each once; often none). A task left
        out is no longer held: its lease lapsed, or another process took the task."""

    async def lapsed(self) -> list[str]:
        """The ids of unfinished tasks whose lease lapsed."""

    async def request(self, task_id: str, message: Any) -> None:
        """Queue ``message`` (JSON) for the process running the task (its next ``renew`` gets it) and nudge it."""

    async def announce(self, task_id: str) -> None:
        """Nudge every process listening about this task (its record changed, or a message waits); at most once:
        a lost nudge only delays what polling finds anyway."""

    async def listen(self, nudged: Nudged, *, task_status: trio.TaskStatus[None] = ...) -> NoReturn:
        """Hand the task id of every nudge to ``nudged``, for the life of the task manager; an outage is waited
        out, never raised. ``task_status.started()`` once listening."""


class _Local:
    """Leases, queued messages and nudges of a store that serves one process: they live in its memory."""

    def __init__(self, lease: float) -> None:
        self._lease = lease_seconds(lease)
        self._leases: dict[str, tuple[str, float]] = {}  #: task id -> (instance, deadline on trio's clock)
        self._queues: dict[str, list[Any]] = {}
        self._listeners: set[trio.MemorySendChannel[str]] = set()

    @property
    def lease(self) -> float:
        return self._lease

    def _lapsed(self, task_id: str) -> bool:
        held = self._leases.get(task_id)
        return held is None or held[1] <= trio.current_time()

    def _leased(self, record: TaskRecord) -> None:
        """A record was written: lease it to its instance while unfinished, else end its lease."""
        if record.terminal:
            self._leases.pop(record.task_id, None)
            self._queues.pop(record.task_id, None)
        else:
            self._leases[record.task_id] = (record.instance, trio.current_time() + self._lease)

    def _forgotten(self, task_ids: list[str]) -> None:
        for task_id in task_ids:
            self._leases.pop(task_id, None)
            self._queues.pop(task_id, None)

    async def renew(self, instance: str, task_ids: Sequence[str]) -> dict[str, list[Any]]:
        messages: dict[str, list[Any]] = {}
        for task_id in task_ids:
            if self._leases.get(task_id, ("", 0.0))[0] != instance or self._lapsed(task_id):
                continue
            self._leases[task_id] = (instance, trio.current_time() + self._lease)
            messages[task_id] = self._queues.pop(task_id, [])
        return messages

    async def lapsed(self) -> list[str]:
        return [task_id for task_id in await self._unfinished() if self._lapsed(task_id)]

    async def _unfinished(self) -> list[str]:
        raise NotImplementedError

    async def request(self, task_id: str, message: Any) -> None:
        queue = self._queues.setdefault(task_id, [])
        queue.append(json.loads(json.dumps(message)))  # what a shared store would carry: JSON
        del queue[:-MAX_QUEUED]
        await self.announce(task_id)

    async def announce(self, task_id: str) -> None:
        for channel in list(self._listeners):
            try:
                channel.send_nowait(task_id)
            except trio.WouldBlock:  # a listener that does not keep up loses nudges, as over pub/sub
                pass

    async def listen(
        self, nudged: Nudged, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        send, receive = trio.open_memory_channel[str](MAX_QUEUED)
        self._listeners.add(send)
        try:
            task_status.started()
            async for task_id in receive:
                await nudged(task_id)
        finally:
            self._listeners.discard(send)
        raise AssertionError("unreachable")


def _copy(record: TaskRecord) -> TaskRecord:
    """A record that shares nothing with ``record`` (the task manager changes its own in place)."""
    return TaskRecord.from_json(record.to_json())


class MemoryTaskStore(_Local):
    """Records in a dict: fast, and gone with the process (a restarted server has never heard of a task).

    Use ``FileTaskStore`` (or a store of your own) when a client polling across a server restart must hear
    "failed" rather than "not found". ``lease``: see ``TaskStore.lease``.
    """

    def __init__(self, *, lease: float = 3.0) -> None:
        super().__init__(lease)
        self._records: dict[str, TaskRecord] = {}

    async def save(self, record: TaskRecord, *, lapsed_only: bool = False) -> bool:
        stored = self._records.get(record.task_id)
        lapsed = self._lapsed(record.task_id)
        if not may_replace(stored, record, lapsed_only=lapsed_only, lapsed=lapsed):
            return False
        self._records[record.task_id] = _copy(record)
        self._leased(record)
        return True

    async def load(self, task_id: str) -> TaskRecord | None:
        record = self._records.get(task_id)
        return None if record is None else _copy(record)

    async def records(self, owner: str) -> list[TaskRecord]:
        mine = (_copy(r) for r in self._records.values() if r.owner == owner)
        return sorted(mine, key=lambda r: r.created_at)

    async def delete(self, task_ids: list[str]) -> None:
        for task_id in task_ids:
            self._records.pop(task_id, None)
        self._forgotten(task_ids)

    async def expired(self, now: float) -> list[str]:
        return [r.task_id for r in self._records.values() if (r.expires_at() or now + 1) <= now]

    async def _unfinished(self) -> list[str]:
        return [r.task_id for r in self._records.values() if not r.terminal]


class FileTaskStore(_Local):
    """One JSON file per task in ``directory`` (created if missing), each written whole or not at all.

    It survives a restart of its process, so a task that was running then is later reported failed rather
    than unknown. File I/O runs in worker threads; meant for one process and modest numbers of tasks.
    """

    def __init__(self, directory: str | os.PathLike[str], *, lease: float = 3.0) -> None:
        super().__init__(lease)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._writing = trio.Lock()  # one compare-and-set at a time

    def _path(self, task_id: str) -> Path | None:
        return self.directory / f"{task_id}.json" if _TASK_ID.match(task_id) else None

    async def save(self, record: TaskRecord, *, lapsed_only: bool = False) -> bool:
        path = self._path(record.task_id)
        if path is None:
            raise ValueError(f"not a task id this store can keep: {record.task_id!r}")
        data = json.dumps(record.to_json(), separators=(",", ":")).encode("utf-8")
        async with self._writing:
            stored = await trio.to_thread.run_sync(_read, path)
            if not may_replace(stored, record, lapsed_only=lapsed_only, lapsed=self._lapsed(record.task_id)):
                return False
            await trio.to_thread.run_sync(_write_whole, path, data)
            self._leased(record)
        return True

    async def load(self, task_id: str) -> TaskRecord | None:
        path = self._path(task_id)
        if path is None:
            return None
        return await trio.to_thread.run_sync(_read, path)

    async def records(self, owner: str) -> list[TaskRecord]:
        found = await trio.to_thread.run_sync(self._read_all)
        return sorted((r for r in found if r.owner == owner), key=lambda r: r.created_at)

    async def delete(self, task_ids: list[str]) -> None:
        def remove() -> None:
            for task_id in task_ids:
                path = self._path(task_id)
                if path is not None:
                    path.unlink(missing_ok=True)

        await trio.to_thread.run_sync(remove)
        self._forgotten(task_ids)

    async def expired(self, now: float) -> list[str]:
        found = await trio.to_thread.run_sync(self._read_all)
        return [r.task_id for r in found if (r.expires_at() or now + 1) <= now]

    async def _unfinished(self) -> list[str]:
        found = await trio.to_thread.run_sync(self._read_all)
        return [r.task_id for r in found if not r.terminal]

    def _read_all(self) -> list[TaskRecord]:
        records = (_read(path) for path in self.directory.glob("*.json"))
        return [record for record in records if record is not None]


def _write_whole(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def _read(path: Path) -> TaskRecord | None:
    try:
        return TaskRecord.from_json(json.loads(path.read_bytes()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):  # a damaged file is treated as no record rather than crashing every poll
        return None
