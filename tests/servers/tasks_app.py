"""The server the task-roaming tests run in several processes (``tasks_app:server`` with ``--options
tasks_app:options``): sessions, events and tasks shared through the Redis at ``$TRIO_MCP_TEST_REDIS``, with a
one-second task lease so that a dead process's tasks are noticed quickly."""

from __future__ import annotations

import json
import os

import trio

from trio_mcp import Context, HttpTransportOptions, Server
from trio_mcp._core.tasks import TaskRecord
from trio_mcp.scale import RedisClient, RedisEventStore, RedisSessionDirectory, RedisTaskStore
from trio_mcp.server import TaskManager

_redis = RedisClient(os.environ["TRIO_MCP_TEST_REDIS"], command_timeout=2.0, retries=2)


class WitnessedStore(RedisTaskStore):
    """Appends every final record it wrote, as written, to ``test:finals:<task>``: a task has one final
    status when that list holds one distinct record (a retried write repeats it)."""

    async def save(self, record: TaskRecord, *, lapsed_only: bool = False) -> bool:
        kept = await super().save(record, lapsed_only=lapsed_only)
        if kept and record.terminal:
            body = json.dumps(record.to_json(), sort_keys=True)
            await self.redis.execute("RPUSH", f"test:finals:{record.task_id}", body, idempotent=False)
        return kept


server = Server("tasks", tasks=TaskManager(store=WitnessedStore(_redis, lease=1.0), poll_interval=0.1))
#: A process lets its copy of a session idle for 1.5 s go: the session, and its tasks here, live on.
options = HttpTransportOptions(
    event_store=RedisEventStore(_redis),
    session_directory=RedisSessionDirectory(_redis),
    retry_ms=100,
    session_idle_timeout=1.5,
)


@server.tool()
async def pid() -> int:
    """The id of the process serving this call."""
    return os.getpid()


async def work(ctx: Context, seconds: float) -> str:
    """Work for ``seconds`` in tenths, reporting progress; records in Redis which process runs it
    (``test:runner:<task>``) and, if cancelled, that its work really stopped (``test:stopped:<task>``)."""
    task_id = getattr(ctx, "task_id", "inline")
    await _redis.execute("SET", f"test:runner:{task_id}", os.getpid())
    steps = max(1, round(seconds * 10))
    try:
        for step in range(1, steps + 1):
            await trio.sleep(seconds / steps)
            await ctx.report_progress(step, steps, f"step {step} on {os.getpid()}")
    except trio.Cancelled:
        with trio.CancelScope(shield=True):
            await _redis.execute("INCR", f"test:stopped:{task_id}", idempotent=False)
        raise
    return f"done on {os.getpid()}"


@server.tool(task_support="optional")
async def job(ctx: Context, seconds: float = 1.0) -> str:
    """``work``, lost with its process."""
    return await work(ctx, seconds)


@server.tool(task_support="optional", retry_on_loss=2)
async def resilient_job(ctx: Context, seconds: float = 1.0) -> str:
    """``work``, run again elsewhere (twice at most) when its process dies."""
    return await work(ctx, seconds)
