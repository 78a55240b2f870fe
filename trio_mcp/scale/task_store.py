"""Task records in Redis, shared by every process on that Redis: any of them answers ``tasks/*`` for any task.

Each record is one JSON value at ``<prefix>:task:<task id>``; a sorted set per owner (scored by creation time)
lists an owner's tasks, oldest first, one sorted set (scored by expiry time) lists the tasks that have a TTL,
and one lists the unfinished tasks. Every write is a compare-and-set in one Lua script (``may_replace``): a
final record is never replaced, only the instance holding a task's lease writes it, and a task whose lease
``<prefix>:lease:<task id>`` (``PX lease``, renewed by its process) lapsed may be finalized or taken over by any
process. What other processes tell the one running a task (a cancellation, answers) is queued in a list
``<prefix>:queue:<task id>`` that its lease renewals drain; a nudge on the pub/sub channel ``<prefix>:nudges``
makes that immediate, and wakes processes waiting on the task (at most once: polling finds what a lost nudge
did not say).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Final, NoReturn

import trio

from .._core.tasks import MAX_QUEUED, Nudged, TaskRecord, lease_seconds
from .pubsub import follow
from .redis import RedisClient, RedisUnavailable

__all__ = ["RedisTaskStore"]

logger = logging.getLogger("trio_mcp.scale")

#: How long after its expiry Redis itself drops a record the task manager did not delete (a stopped server).
_GRACE_MS: Final = 24 * 3600 * 1000
#: How long messages queued for a task nobody drains are kept.
_QUEUE_MS: Final = 3600 * 1000

# KEYS: record, lease, owner index, expiry index, unfinished index, queue.
# ARGV: body, instance, task id, created at, expires at ('' for none), record PEXPIREAT ('' for none),
#       lapsed only ('1'/'0'), lease ms, final ('1'/'0').
_SAVE: Final = """
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[1] then
  if current then
    local stored = cjson.decode(current)
    local status = stored['status']
    if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
    if ARGV[7] == '1' then
      if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
    elseif stored['instance'] ~= ARGV[2] then
      return 0
    end
  elseif ARGV[7] == '1' then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
if ARGV[5] == '' then
  redis.call('PERSIST', KEYS[1])
  redis.call('ZREM', KEYS[4], ARGV[3])
else
  redis.call('PEXPIREAT', KEYS[1], ARGV[6])
  redis.call('ZADD', KEYS[4], ARGV[5], ARGV[3])
end
if ARGV[9] == '1' then
  redis.call('DEL', KEYS[2], KEYS[6])
  redis.call('ZREM', KEYS[5], ARGV[3])
else
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[8])
  redis.call('ZADD', KEYS[5], ARGV[4], ARGV[3])
end
return 1
"""

# KEYS: the leases, then the queues, of the tasks. ARGV: instance, lease ms. Per task: 0 if not held, else its
# messages.
_RENEW: Final = """
local count = #KEYS / 2
local drained = {}
for i = 1, count do
  drained[i] = 0
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    drained[i] = redis.call('LRANGE', KEYS[count + i], 0, -1)
    if #drained[i] > 0 then redis.call('DEL', KEYS[count + i]) end
  end
end
return drained
"""

# KEYS: unfinished index. ARGV: the lease keys' prefix.
_LAPSED: Final = """
local lapsed = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('EXISTS', ARGV[1] .. id) == 0 then table.insert(lapsed, id) end
end
return lapsed
"""


class RedisTaskStore:
    """Implements ``trio_mcp.server.TaskStore`` on a ``RedisClient``; the same ``prefix`` on every process.

    ``lease``: seconds a task's lease lasts (its process renews it every third of that); a task whose process
    died is finalized ``failed`` (or run again, for a tool with ``retry_on_loss``) by the other processes within
    two leases. Raises ``RedisUnavailable`` when Redis cannot be reached in time and
    ``RedisCommandError`` if it refuses a command.
    """

    def __init__(self, redis: RedisClient, *, prefix: str = "trio_mcp:tasks", lease: float = 3.0) -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"prefix must be a non-empty string, not {prefix!r}")
        self.redis = redis
        self.prefix = prefix
        self._lease = lease_seconds(lease)
        self._lease_ms = max(1, round(self._lease * 1000))

    @property
    def lease(self) -> float:
        return self._lease

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}:{kind}:{name}"

    @property
    def _expiry_key(self) -> str:
        return f"{self.prefix}:expiry"

    @property
    def _unfinished_key(self) -> str:
        return f"{self.prefix}:unfinished"

    async def save(self, record: TaskRecord, *, lapsed_only: bool = False) -> bool:
        """Create or replace the record if the compare-and-set allows it; returns once Redis has stored it."""
        task_id = record.task_id
        body = json.dumps(record.to_json(), separators=(",", ":"), ensure_ascii=False)
        expires_at = record.expires_at()
        keys = [
            self._key("task", task_id),
            self._key("lease", task_id),
            self._key("owner", record.owner),
            self._expiry_key,
            self._unfinished_key,
            self._key("queue", task_id),
        ]
        arguments: list[str | int | float] = [
            body,
            record.instance,
            task_id,
            record.created_at,
            "" if expires_at is None else expires_at,
            "" if expires_at is None else int(expires_at * 1000) + _GRACE_MS,
            "1" if lapsed_only else "0",
            self._lease_ms,
            "1" if record.terminal else "0",
        ]
        # Idempotent: the same body again is written again (a retry after a lost reply succeeds).
        return bool(await self.redis.execute("EVAL", _SAVE, len(keys), *keys, *arguments))

    async def load(self, task_id: str) -> TaskRecord | None:
        """The record, or None if there is none (never created, deleted, or dropped by Redis long after expiry)."""
        return _parse(await self.redis.execute("GET", self._key("task", task_id)))

    async def records(self, owner: str) -> list[TaskRecord]:
        """Every record ``owner`` created, oldest first; ids whose record is gone leave the owner's list."""
        owner_key = self._key("owner", owner)
        task_ids = [raw.decode("utf-8") for raw in await self.redis.execute("ZRANGE", owner_key, 0, -1)]
        if not task_ids:
            return []
        bodies = await self.redis.execute("MGET", *(self._key("task", task_id) for task_id in task_ids))
        found = [_parse(body) for body in bodies]
        gone = [task_id for task_id, record in zip(task_ids, found) if record is None]
        if gone:
            await self.redis.execute("ZREM", owner_key, *gone)
        return [record for record in found if record is not None]

    async def delete(self, task_ids: list[str]) -> None:
        """Forget these records; unknown ids are ignored (an owner's list drops them when it is next read)."""
        if task_ids:
            keys = [self._key(kind, task_id) for task_id in task_ids for kind in ("task", "lease", "queue")]
            await self.redis.pipeline(
                [["DEL", *keys], ["ZREM", self._expiry_key, *task_ids], ["ZREM", self._unfinished_key, *task_ids]]
            )

    async def expired(self, now: float) -> list[str]:
        """The ids of the records whose TTL had run out at wall-clock time ``now``."""
        return [raw.decode("utf-8") for raw in await self.redis.execute("ZRANGEBYSCORE", self._expiry_key, "-inf", now)]

    async def renew(self, instance: str, task_ids: Sequence[str]) -> dict[str, list[Any]]:
        if not task_ids:
            return {}
        keys = [self._key("lease", task_id) for task_id in task_ids] + [
            self._key("queue", task_id) for task_id in task_ids
        ]
        replies = await self.redis.execute("EVAL", _RENEW, len(keys), *keys, instance, self._lease_ms)
        messages: dict[str, list[Any]] = {}
        for task_id, items in zip(task_ids, replies):
            if isinstance(items, list):  # 0: not held
                messages[task_id] = [message for message in map(_message, items) if message is not None]
        return messages

    async def lapsed(self) -> list[str]:
        replies = await self.redis.execute("EVAL", _LAPSED, 1, self._unfinished_key, self._key("lease", ""))
        return [raw.decode("utf-8") for raw in replies]

    async def request(self, task_id: str, message: Any) -> None:
        key = self._key("queue", task_id)
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        await self.redis.pipeline(
            [["RPUSH", key, body], ["LTRIM", key, -MAX_QUEUED, -1], ["PEXPIRE", key, _QUEUE_MS]], idempotent=False
        )
        await self.announce(task_id)

    async def announce(self, task_id: str) -> None:
        try:
            await self.redis.execute("PUBLISH", f"{self.prefix}:nudges", task_id, idempotent=False)
        except RedisUnavailable as exc:
            logger.warning("task %s: nudge not sent: %s", task_id[:8], exc)

    async def listen(
        self, nudged: Nudged, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        async def deliver(data: bytes) -> None:
            await nudged(data.decode("utf-8", "replace"))

        while True:
            try:
                await follow(self.redis, f"{self.prefix}:nudges", deliver, what="task nudges", task_status=task_status)
            except RedisUnavailable as exc:  # the first subscription failed: polling covers until Redis is back
                logger.warning("task nudges wait for Redis: %s", exc)
                task_status.started()
                task_status = trio.TASK_STATUS_IGNORED
                await trio.sleep(self._lease)


def _message(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _parse(body: bytes | None) -> TaskRecord | None:
    if body is None:
        return None
    try:
        return TaskRecord.from_json(json.loads(body))
    except (ValueError, TypeError, KeyError):  # damaged: treated as no record, like the file store
        return None
