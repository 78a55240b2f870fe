"""Task records in Redis, so a task's record outlives the process that ran it and any worker can read it.

Each record is one JSON value at ``<prefix>:task:<task id>``; a sorted set per owner (scored by creation time)
lists an owner's tasks, oldest first, and one sorted set (scored by expiry time) lists the tasks that have a
TTL. Every write is idempotent (the same ``SET`` and ``ZADD``), so a write retried after a dropped connection
never doubles anything. The running work stays in its process: ``tasks/*`` requests must still reach the
process that runs the task for live updates (the ``Mcp-Name`` routing header carries the task id for that);
a task whose process died reads as it was last stored, and a server that restarts reports it failed.
"""

from __future__ import annotations

import json
from typing import Final

from .._core.tasks import TaskRecord
from .redis import RedisClient

__all__ = ["RedisTaskStore"]

#: How long after its expiry Redis itself drops a record the task manager did not delete (a stopped server).
_GRACE_MS: Final = 24 * 3600 * 1000


class RedisTaskStore:
    """Implements ``trio_mcp.server.TaskStore`` on a ``RedisClient``.

    Raises ``RedisUnavailable`` when Redis cannot be reached in time and ``RedisCommandError`` if it refuses a
    command; the task manager reports a record it could not store as a failed task.
    """

    def __init__(self, redis: RedisClient, *, prefix: str = "trio_mcp:tasks") -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"prefix must be a non-empty string, not {prefix!r}")
        self.redis = redis
        self.prefix = prefix

    def _record_key(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def _owner_key(self, owner: str) -> str:
        return f"{self.prefix}:owner:{owner}"

    @property
    def _expiry_key(self) -> str:
        return f"{self.prefix}:expiry"

    async def save(self, record: TaskRecord) -> None:
        """Create or replace the record; returns once Redis has stored it."""
        key = self._record_key(record.task_id)
        body = json.dumps(record.to_json(), separators=(",", ":"), ensure_ascii=False)
        expires_at = record.expires_at()
        commands: list[list[str | int | float]] = [
            ["SET", key, body],
            ["ZADD", self._owner_key(record.owner), record.created_at, record.task_id],
        ]
        if expires_at is None:
            commands += [["PERSIST", key], ["ZREM", self._expiry_key, record.task_id]]
        else:
            commands += [
                ["PEXPIREAT", key, int(expires_at * 1000) + _GRACE_MS],
                ["ZADD", self._expiry_key, expires_at, record.task_id],
            ]
        await self.redis.pipeline(commands)

    async def load(self, task_id: str) -> TaskRecord | None:
        """The record, or None if there is none (never created, deleted, or dropped by Redis long after expiry)."""
        return _parse(await self.redis.execute("GET", self._record_key(task_id)))

    async def records(self, owner: str) -> list[TaskRecord]:
        """Every record ``owner`` created, oldest first; ids whose record is gone leave the owner's list."""
        owner_key = self._owner_key(owner)
        task_ids = [raw.decode("utf-8") for raw in await self.redis.execute("ZRANGE", owner_key, 0, -1)]
        if not task_ids:
            return []
        bodies = await self.redis.execute("MGET", *(self._record_key(task_id) for task_id in task_ids))
        found = [_parse(body) for body in bodies]
        gone = [task_id for task_id, record in zip(task_ids, found) if record is None]
        if gone:
            await self.redis.execute("ZREM", owner_key, *gone)
        return [record for record in found if record is not None]

    async def delete(self, task_ids: list[str]) -> None:
        """Forget these records; unknown ids are ignored (an owner's list drops them when it is next read)."""
        if task_ids:
            await self.redis.pipeline(
                [["DEL", *(self._record_key(task_id) for task_id in task_ids)], ["ZREM", self._expiry_key, *task_ids]]
            )

    async def expired(self, now: float) -> list[str]:
        """The ids of the records whose TTL had run out at wall-clock time ``now``."""
        return [raw.decode("utf-8") for raw in await self.redis.execute("ZRANGEBYSCORE", self._expiry_key, "-inf", now)]


def _parse(body: bytes | None) -> TaskRecord | None:
    if body is None:
        return None
    try:
        return TaskRecord.from_json(json.loads(body))
    except (ValueError, TypeError, KeyError):  # damaged: treated as no record, like the file store
        return None
