"""Where task records live: the ``TaskStore`` interface, an in-memory store and a directory of JSON files.

The task manager writes a record when the task is created (before ``CreateTaskResult`` is sent: a
``tasks/get`` right after it must find the task), at every status change, and when it ends. The running
work itself stays in the process; the record is what survives it. A store shared by several processes must
make sure ``tasks/*`` requests reach the process running the task (the ``Mcp-Name`` routing header carries
the task id for exactly that); this module's stores serve one process.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path
from typing import Protocol

import trio

from .._core.tasks import TaskRecord

__all__ = ["TaskStore", "MemoryTaskStore", "FileTaskStore"]

_TASK_ID = re.compile(r"^[A-Za-z0-9_-]{16,128}$")


class TaskStore(Protocol):
    """Durable task records. Every method may block on I/O; none may lose a record it acknowledged."""

    async def save(self, record: TaskRecord) -> None:
        """Create or replace the record for ``record.task_id``; returns once a ``load`` would see it."""

    async def load(self, task_id: str) -> TaskRecord | None:
        """The record for ``task_id``, or None if there is none (never created, or deleted)."""

    async def records(self, owner: str) -> list[TaskRecord]:
        """Every record created by ``owner``, oldest first."""

    async def delete(self, task_ids: list[str]) -> None:
        """Forget these records (expired); unknown ids are ignored."""

    async def expired(self, now: float) -> list[str]:
        """The ids of records whose TTL had run out at wall-clock time ``now``."""


class MemoryTaskStore:
    """Records in a dict: fast, and gone with the process (a restarted server has never heard of a task).

    Use ``FileTaskStore`` (or a store of your own) when a client polling across a server restart must hear
    "failed: the server restarted" rather than "not found".
    """

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}

    async def save(self, record: TaskRecord) -> None:
        self._records[record.task_id] = record

    async def load(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    async def records(self, owner: str) -> list[TaskRecord]:
        return sorted((r for r in self._records.values() if r.owner == owner), key=lambda r: r.created_at)

    async def delete(self, task_ids: list[str]) -> None:
        for task_id in task_ids:
            self._records.pop(task_id, None)

    async def expired(self, now: float) -> list[str]:
        return [r.task_id for r in self._records.values() if (r.expires_at() or now + 1) <= now]


class FileTaskStore:
    """One JSON file per task in ``directory`` (created if missing), each written whole or not at all.

    It survives a restart of its process, so a task that was running then is later reported failed rather
    than unknown. File I/O runs in worker threads; meant for one process and modest numbers of tasks.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, task_id: str) -> Path | None:
        return self.directory / f"{task_id}.json" if _TASK_ID.match(task_id) else None

    async def save(self, record: TaskRecord) -> None:
        path = self._path(record.task_id)
        if path is None:
            raise ValueError(f"not a task id this store can keep: {record.task_id!r}")
        data = json.dumps(record.to_json(), separators=(",", ":")).encode("utf-8")
        await trio.to_thread.run_sync(_write_whole, path, data)

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

    async def expired(self, now: float) -> list[str]:
        found = await trio.to_thread.run_sync(self._read_all)
        return [r.task_id for r in found if (r.expires_at() or now + 1) <= now]

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
