"""Tasks end to end through the public API: a trio_mcp client and server in both wire forms (2025-11-25 core
tasks, the 2026-07-28 extension), cancellation, questions mid-task, TTLs, limits, ownership, restarts and
shutdown. Timing runs on trio's MockClock wherever the behaviour allows."""

from __future__ import annotations

import functools
import json
import random
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio
import trio.testing

from trio_mcp import Context, McpError, Server
from trio_mcp.client import Client, TaskCancelled
from trio_mcp.server import FileTaskStore, MemoryTaskStore, TaskManager
from trio_mcp.transports import memory_stream_pair
from trio_mcp.types import ElicitResult

CORE = "2025-11-25"
MODERN = "2026-07-28"
ERAS = [CORE, MODERN]
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def make_server(tasks: TaskManager | None = None) -> tuple[Server, dict[str, Any]]:
    server = Server("tasks", tasks=tasks or TaskManager(poll_interval=0.5))
    seen: dict[str, Any] = {"started": trio.Event(), "cancelled": 0}

    @server.tool(task_support="optional")
    async def slow(ctx: Context, seconds: float) -> str:
        seen["started"].set()
        try:
            for step in range(4):
                await trio.sleep(seconds / 4)
                await ctx.report_progress(step + 1, 4, f"step {step + 1}")
        except trio.Cancelled:
            seen["cancelled"] += 1
            raise
        return f"slept {seconds:g}"

    @server.tool(task_support="required")
    async def ask(ctx: Context) -> str:
        await trio.sleep(1)
        answer = await ctx.elicit("Your name?", NAME_FORM)
        await trio.sleep(1)
        return f"Hello, {(answer.content or {}).get('name')}"

    @server.tool(task_support="optional")
    async def broken() -> str:
        raise McpError(-32603, "Internal error: no disk")

    @server.tool(task_support="optional")
    async def tool_error() -> str:
        raise ValueError("bad input")

    @server.tool()
    async def plain() -> str:
        return "plain"

    return server, seen


async def answer_name(request: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


@asynccontextmanager
async def connect(server: Server, version: str, *, principal: Any = None, **options: Any) -> AsyncIterator[Client]:
    """A trio_mcp client talking to ``server`` over an in-memory pair (the server's lifespan running)."""
    async with trio.open_nursery() as nursery:
        client_end, server_end = memory_stream_pair()
        await nursery.start(functools.partial(server.serve_connection, server_end, principal=principal))
        client = Client(client_end, protocol_version=version, elicitation=answer_name, **options)
        await client.start(nursery)
        try:
            yield client
        finally:
            await client.aclose()
            nursery.cancel_scope.cancel()


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


# -- the happy paths -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
async def test_task_runs_to_its_result_with_status_updates(version: str, clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    statuses: list[str] = []
    with trio.fail_after(60):
        async with server.running(), connect(server, version) as client:
            result = await client.call_tool_as_task(
                "slow", {"seconds": 2}, on_status=lambda t: statuses.append(t["status"])
            )
    assert result.content[0].text == "slept 2"  # type: ignore[union-attr]
    assert statuses[0] == "working" and statuses[-1] in ("completed",)


@pytest.mark.parametrize("version", ERAS)
async def test_question_mid_task_is_answered_by_the_client(version: str, clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    statuses: list[str] = []
    with trio.fail_after(60):
        async with server.running(), connect(server, version) as client:
            result = await client.call_tool_as_task("ask", on_status=lambda t: statuses.append(t["status"]))
    assert result.content[0].text == "Hello, Ada"  # type: ignore[union-attr]
    if version == MODERN:  # the core form asks with a plain request; polls may not catch the short wait
        assert "input_required" in statuses


@pytest.mark.parametrize("version", ERAS)
async def test_protocol_error_fails_the_task_and_tool_errors_keep_their_result(version: str) -> None:
    server, _ = make_server()
    with trio.fail_after(10):
        async with server.running(), connect(server, version) as client:
            with pytest.raises(McpError) as caught:
                await client.call_tool_as_task("broken", poll_interval=0.01)
            assert caught.value.code == -32603 and "no disk" in caught.value.message
            result = await client.call_tool_as_task("tool_error", poll_interval=0.01)
    assert result.is_error is True


@pytest.mark.parametrize("version", ERAS)
async def test_same_handler_runs_inline_when_not_called_as_a_task(version: str) -> None:
    server, seen = make_server()
    with trio.fail_after(10):
        async with server.running(), connect(server, version) as client:
            result = await client.call_tool("slow", {"seconds": 0})
            plain = await client.call_tool_as_task("plain")  # a tool that is never a task answers inline
    assert result.content[0].text == "slept 0"  # type: ignore[union-attr]
    assert plain.content[0].text == "plain"  # type: ignore[union-attr]


# -- cancellation --------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
async def test_cancelling_the_awaiting_scope_cancels_the_task(version: str, clock: trio.testing.MockClock) -> None:
    manager = TaskManager(poll_interval=0.5)
    server, seen = make_server(manager)
    with trio.fail_after(60):
        async with server.running(), connect(server, version) as client:
            with trio.move_on_after(3):
                await client.call_tool_as_task("slow", {"seconds": 100})
            while manager.running_tasks():
                await trio.sleep(0.01)
            records = await manager.store.records(_any_owner(manager))
    assert seen["cancelled"] == 1
    assert [r.status for r in records] == ["cancelled"]


def _any_owner(manager: TaskManager) -> str:
    store = manager.store
    assert isinstance(store, MemoryTaskStore)
    owners = {record.owner for record in store._records.values()}
    assert len(owners) == 1
    return owners.pop()


async def test_server_cancelling_a_task_raises_task_cancelled(clock: trio.testing.MockClock) -> None:
    manager = TaskManager(poll_interval=0.5)
    server, seen = make_server(manager)
    with trio.fail_after(60):
        async with server.running(), connect(server, MODERN) as client:
            async with trio.open_nursery() as nursery:

                async def cancel_soon() -> None:
                    await seen["started"].wait()
                    for live in list(manager._live.values()):
                        manager.cancel(live, "operator stopped it")

                nursery.start_soon(cancel_soon)
                with pytest.raises(TaskCancelled, match="operator stopped it"):
                    await client.call_tool_as_task("slow", {"seconds": 100})


async def test_a_thousand_tasks_cancelled_at_random_points_each_end_once(clock: trio.testing.MockClock) -> None:
    """Every task ends in exactly one terminal status, stored once as such, and no work is left running."""
    finals: dict[str, list[str]] = {}

    class CountingStore(MemoryTaskStore):
        async def save(self, record: Any, *, lapsed_only: bool = False) -> bool:
            kept = await super().save(record, lapsed_only=lapsed_only)
            if kept and record.terminal:
                history = finals.setdefault(record.task_id, [])
                if not history or history[-1] != record.status:
                    history.append(record.status)
            return kept

    manager = TaskManager(store=CountingStore(), poll_interval=0.05, max_tasks=2000, max_tasks_per_principal=2000)
    server, _ = make_server(manager)
    rng = random.Random(1729)
    outcomes = {"done": 0, "cancelled": 0}
    with trio.fail_after(600):
        async with server.running(), connect(server, MODERN) as client:

            async def one(delay: float, length: float) -> None:
                with trio.move_on_after(delay):
                    await client.call_tool_as_task("slow", {"seconds": length})
                    outcomes["done"] += 1
                    return
                outcomes["cancelled"] += 1

            async with trio.open_nursery() as nursery:
                for _ in range(1000):
                    nursery.start_soon(one, rng.uniform(0, 2), rng.choice([0.0, 0.5, 1.0, 1.5]))
            while manager.running_tasks():
                await trio.sleep(0.01)
            records = (server.tasks.store)._records.values()  # type: ignore[attr-defined]
            # A call whose deadline had passed by the time it arrived is refused unserved: it made no task.
            assert 900 < len(records) <= 1000
            assert all(record.terminal for record in records)
    assert len(finals) == len(records)
    assert all(len(history) == 1 for history in finals.values()), "a task reached two final statuses"
    assert outcomes["done"] + outcomes["cancelled"] == 1000
    assert outcomes["cancelled"] > 100 and outcomes["done"] > 100


async def test_core_cancel_answers_cancelled_and_refuses_a_finished_task(clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    with trio.fail_after(60):
        async with server.running(), connect(server, CORE) as client:
            created = await client.session.request(
                "tools/call", {"name": "slow", "arguments": {"seconds": 50}, "task": {}}
            )
            task_id = created["task"]["taskId"]
            cancelled = await client.session.request("tasks/cancel", {"taskId": task_id})
            assert cancelled["status"] == "cancelled"
            with pytest.raises(McpError) as caught:
                await client.session.request("tasks/cancel", {"taskId": task_id})
            assert caught.value.code == -32602
            listed = await client.session.request("tasks/list", {})
            assert [task["taskId"] for task in listed["tasks"]] == [task_id]


async def test_finishing_while_being_cancelled_ends_in_one_state(clock: trio.testing.MockClock) -> None:
    """The cancel arrives in the same instant the handler returns: one final status, whichever came first."""
    manager = TaskManager()
    server = Server("race", tasks=manager)
    release = trio.Event()

    @server.tool(task_support="optional")
    async def quick() -> str:
        await release.wait()
        return "done"

    with trio.fail_after(30):
        async with server.running(), connect(server, MODERN) as client:
            for _ in range(20):
                created = await _modern(client, "tools/call", {"name": "quick"})
                task_id = created.get("taskId")
                assert task_id
                release.set()  # the handler returns at the next checkpoint ...
                live = manager._live.get(task_id)
                if live is not None:
                    manager.cancel(live, "raced")  # ... and the cancel lands in the same tick
                while manager.running_tasks():
                    await trio.sleep(0)
                record = await manager.store.load(task_id)
                assert record is not None and record.status in ("completed", "cancelled")
                release = trio.Event()


# -- ownership, limits, TTL, restart, shutdown -----------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
async def test_another_caller_cannot_see_a_task(version: str, clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    with trio.fail_after(60):
        async with server.running():
            async with (
                connect(server, version, principal="alice") as alice,
                connect(server, version, principal="bob") as bob,
            ):
                params: dict[str, Any] = {"name": "slow", "arguments": {"seconds": 50}}
                if version == CORE:
                    task_id = (await alice.session.request("tools/call", {**params, "task": {}}))["task"]["taskId"]
                else:
                    task_id = (await _modern(alice, "tools/call", params))["taskId"]
                for method in ("tasks/get", "tasks/cancel"):
                    with pytest.raises(McpError) as caught:
                        if version == CORE:
                            await bob.session.request(method, {"taskId": task_id})
                        else:
                            await _modern(bob, method, {"taskId": task_id})
                    assert caught.value.code == -32602 and "not found" in caught.value.message


async def _modern(client: Client, method: str, params: dict[str, Any]) -> Any:
    from trio_mcp.client._tasks import _request

    return await _request(client, method, params)


async def test_live_task_limits_refuse_with_a_clear_error(clock: trio.testing.MockClock) -> None:
    server, _ = make_server(TaskManager(max_tasks_per_principal=2, max_tasks=3))
    with trio.fail_after(60):
        async with server.running():
            async with connect(server, MODERN, principal="a") as a, connect(server, MODERN, principal="b") as b:
                for _ in range(2):
                    await _modern(a, "tools/call", {"name": "slow", "arguments": {"seconds": 50}})
                with pytest.raises(McpError, match="most allowed per client") as caught:
                    await _modern(a, "tools/call", {"name": "slow", "arguments": {"seconds": 50}})
                assert caught.value.code == -32010  # SERVER_BUSY
                await _modern(b, "tools/call", {"name": "slow", "arguments": {"seconds": 50}})
                with pytest.raises(McpError, match="server's limit"):
                    await _modern(b, "tools/call", {"name": "slow", "arguments": {"seconds": 50}})


async def test_ttl_keeps_the_result_then_purges_it(clock: trio.testing.MockClock) -> None:
    manager = TaskManager(default_ttl=60, max_ttl=120)
    server, _ = make_server(manager)
    with trio.fail_after(600):
        async with server.running(), connect(server, CORE) as client:
            created = await client.session.request(
                "tools/call", {"name": "slow", "arguments": {"seconds": 1}, "task": {"ttl": 10_000_000}}
            )
            assert created["task"]["ttl"] == 120_000  # the server's maximum, not what was asked
            task_id = created["task"]["taskId"]
            await trio.sleep(100)
            got = await client.session.request("tasks/get", {"taskId": task_id})
            assert got["status"] == "completed"
            await trio.sleep(30)
            with pytest.raises(McpError, match="not found|expired") as caught:
                await client.session.request("tasks/get", {"taskId": task_id})
            assert caught.value.code == -32602
            assert await manager.store.load(task_id) is None  # purged, not just hidden


async def test_a_running_task_past_its_ttl_is_cancelled_and_stays_purged(clock: trio.testing.MockClock) -> None:
    manager = TaskManager(default_ttl=10, max_ttl=10)
    server, seen = make_server(manager)
    with trio.fail_after(600):
        async with server.running(), connect(server, MODERN) as client:
            task_id = (await _modern(client, "tools/call", {"name": "slow", "arguments": {"seconds": 100}}))["taskId"]
            await trio.sleep(15)  # the purge runs every second here
            assert manager.running_tasks() == 0 and seen["cancelled"] == 1
            assert await manager.store.load(task_id) is None  # the ending work did not write it back
            with pytest.raises(McpError) as caught:
                await _modern(client, "tasks/get", {"taskId": task_id})
            assert caught.value.code == -32602


async def test_client_polls_at_the_servers_interval(clock: trio.testing.MockClock) -> None:
    server, _ = make_server(TaskManager(poll_interval=2.0))
    polls: list[float] = []

    with trio.fail_after(120):
        async with server.running(), connect(server, MODERN) as client:
            original = client.session.request

            async def counting(method: str, *args: Any, **kwargs: Any) -> Any:
                if method == "tasks/get":
                    polls.append(trio.current_time())
                return await original(method, *args, **kwargs)

            client.session.request = counting  # type: ignore[method-assign]
            await client.call_tool_as_task("slow", {"seconds": 9})
    gaps = [later - earlier for earlier, later in zip(polls, polls[1:])]
    assert len(polls) == 5 and all(gap == pytest.approx(2.0) for gap in gaps)


async def test_shutdown_cancels_running_tasks_and_records_them(tmp_path: Path) -> None:
    # Real time: a MockClock would jump ahead while the file store waits for its worker thread.
    manager = TaskManager(store=FileTaskStore(tmp_path))
    server, seen = make_server(manager)
    with trio.fail_after(60):
        async with connect(server, MODERN) as client:
            async with server.running():
                task = await _modern(client, "tools/call", {"name": "slow", "arguments": {"seconds": 500}})
                await seen["started"].wait()
            # server.running() has returned: the work was cancelled and the record says so
            record = await manager.store.load(task["taskId"])
    assert seen["cancelled"] == 1
    assert record is not None and record.status == "cancelled" and record.status_message == "the server stopped"


async def test_a_task_left_running_by_a_dead_server_reads_failed(tmp_path: Path) -> None:
    """A record a previous server process left 'working' is reported failed after the restart, not unknown."""
    first = TaskManager(store=FileTaskStore(tmp_path))
    server, seen = make_server(first)
    with trio.fail_after(60):
        async with server.running(), connect(server, MODERN, principal="p") as client:
            task = await _modern(client, "tools/call", {"name": "slow", "arguments": {"seconds": 500}})
            record = await first.store.load(task["taskId"])
            assert record is not None and record.status == "working"
        restarted, _ = make_server(TaskManager(store=FileTaskStore(tmp_path)))
        # Simulate the crash: the file as the dead process left it, while the task was running (a store never
        # replaces a final record, so it is written behind the store's back).
        (tmp_path / f"{record.task_id}.json").write_text(json.dumps(record.to_json()))
        async with restarted.running(), connect(restarted, MODERN, principal="p") as client:
            got = await _modern(client, "tasks/get", {"taskId": task["taskId"]})
    assert got["status"] == "failed" and "stopped" in got["statusMessage"]
    assert got["error"]["code"] == -32603


# -- wire-level rules ------------------------------------------------------------------------------------


async def test_capabilities_announce_tasks_in_each_form() -> None:
    server, _ = make_server()
    async with server.running():
        async with connect(server, CORE) as core:
            caps = core.initialize_result.capabilities
            assert caps.tasks is not None and caps.tasks.requests == {"tools": {"call": {}}}
            tools = {tool.name: tool for tool in (await core.list_tools()).tools}
            assert tools["ask"].execution is not None and tools["ask"].execution.task_support == "required"
        async with connect(server, MODERN) as modern:
            assert "io.modelcontextprotocol/tasks" in (modern.discover_result.capabilities.extensions or {})


async def test_required_task_refusals() -> None:
    server, _ = make_server()
    async with server.running():
        async with connect(server, CORE) as core:
            with pytest.raises(McpError) as caught:
                await core.call_tool("ask")
            assert caught.value.code == -32601
            with pytest.raises(McpError) as caught:
                await core.session.request("tools/call", {"name": "plain", "task": {}})
            assert caught.value.code == -32601
        async with connect(server, MODERN) as modern:
            with pytest.raises(McpError) as caught:
                await modern.call_tool("ask")
            assert caught.value.code == -32021
            assert caught.value.data == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
            with pytest.raises(McpError) as caught:
                await modern.request("tasks/get", {"taskId": "x" * 20})
            assert caught.value.code == -32021


def test_invalid_options_are_refused_at_the_call() -> None:
    with pytest.raises(ValueError, match="max_tasks"):
        TaskManager(max_tasks=0)
    with pytest.raises(ValueError, match="default_ttl"):
        TaskManager(default_ttl=10, max_ttl=5)
    server = Server("x")
    with pytest.raises(ValueError, match="task_support"):
        server.tool("t", task_support="sometimes")(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="defer_task"):
        server.tool("t", defer_task=True)(lambda: None)


@pytest.mark.parametrize("version", ERAS)
async def test_client_group_passes_tasks_through(version: str, clock: trio.testing.MockClock) -> None:
    from trio_mcp.client import ClientGroup

    manager = TaskManager(poll_interval=0.5)
    server, seen = make_server(manager)
    with trio.fail_after(60):
        async with server.running(), trio.open_nursery() as nursery:
            async with ClientGroup() as group:
                client_end, server_end = memory_stream_pair()
                nursery.start_soon(server.serve_connection, server_end)
                await group.connect("jobs", client_end, protocol_version=version, elicitation=answer_name)
                asked = await group.call_tool_as_task("jobs.ask")
                assert asked.content[0].text == "Hello, Ada"  # type: ignore[union-attr]
                with trio.move_on_after(2):
                    await group.call_tool_as_task("jobs.slow", {"seconds": 100})
                while manager.running_tasks():
                    await trio.sleep(0.1)
            nursery.cancel_scope.cancel()
    assert seen["cancelled"] == 1


@pytest.mark.parametrize("version", ERAS)
async def test_resume_task_follows_a_kept_task_id(version: str, clock: trio.testing.MockClock) -> None:
    from trio_mcp.client import get_task, resume_task

    server, _ = make_server()
    with trio.fail_after(60):
        async with server.running(), connect(server, version) as client:
            params: dict[str, Any] = {"name": "slow", "arguments": {"seconds": 4}}
            if version == CORE:
                task_id = (await client.session.request("tools/call", {**params, "task": {}}))["task"]["taskId"]
            else:
                task_id = (await _modern(client, "tools/call", params))["taskId"]
            assert (await get_task(client, task_id))["status"] == "working"
            result = await resume_task(client, task_id)
            assert (await get_task(client, task_id))["status"] == "completed"
    assert result.content[0].text == "slept 4"  # type: ignore[union-attr]


async def test_core_status_notifications_wake_the_client_before_its_next_poll(clock: trio.testing.MockClock) -> None:
    server, _ = make_server(TaskManager(poll_interval=300))  # polls alone would take five minutes
    with trio.fail_after(600):
        async with server.running(), connect(server, CORE) as client:
            started = trio.current_time()
            result = await client.call_tool_as_task("slow", {"seconds": 2})
            took = trio.current_time() - started
    assert result.content[0].text == "slept 2"  # type: ignore[union-attr]
    assert took < 10, f"the client waited {took} s: it did not listen to notifications/tasks/status"


@pytest.mark.parametrize("version", ERAS)
async def test_deferred_task_asks_inline_first_then_becomes_a_task(version: str, clock: trio.testing.MockClock) -> None:
    manager = TaskManager(poll_interval=0.5)
    server = Server("deferred", tasks=manager)
    became: list[bool] = []

    @server.tool(task_support="optional", defer_task=True)
    async def interview(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", NAME_FORM)  # before the task exists: inline
        became.append(await ctx.start_task())
        assert manager.running_tasks() == (1 if became[-1] else 0)
        await trio.sleep(5)  # the call has been answered with the task by now
        return f"Thanks, {(answer.content or {}).get('name')}"

    with trio.fail_after(60):
        async with server.running(), connect(server, version) as client:
            statuses: list[str] = []
            result = await client.call_tool_as_task("interview", on_status=lambda t: statuses.append(t["status"]))
            inline = await client.call_tool("interview")  # not as a task: start_task() does nothing
    assert result.content[0].text == "Thanks, Ada" and inline.content[0].text == "Thanks, Ada"  # type: ignore[union-attr]
    assert became == [True, False]
    assert statuses[0] == "working" and statuses[-1] == "completed"


async def test_logs_and_progress_of_a_core_task_reach_the_client(clock: trio.testing.MockClock) -> None:
    import logging

    from trio_mcp.server import McpLogHandler

    server = Server("chatty", tasks=TaskManager(poll_interval=0.5))
    stdlib = logging.getLogger("tests.tasks.chatty")
    stdlib.addHandler(McpLogHandler())
    stdlib.setLevel(logging.INFO)

    @server.tool(task_support="optional")
    async def chatty(ctx: Context) -> str:
        await trio.sleep(1)  # long after the call was answered with the task
        await ctx.info("through the context")
        stdlib.warning("through the stdlib")
        await ctx.report_progress(1, 2, "half")
        await trio.sleep(1)
        return "done"

    logs: list[Any] = []
    try:
        with trio.fail_after(60):
            async with server.running(), connect(server, CORE, on_log=logs.append) as client:
                progress: list[Any] = []
                created = await client.session.request(
                    "tools/call", {"name": "chatty", "task": {}, "_meta": {"progressToken": "p1"}}
                )
                task_id = created["task"]["taskId"]
                original = client.session._receive_progress  # type: ignore[attr-defined]

                async def spy(params: Any) -> None:
                    progress.append(params)
                    await original(params)

                client.session._receive_progress = spy  # type: ignore[attr-defined]
                await client.session.request("tasks/result", {"taskId": task_id})
                await trio.sleep(0.1)
    finally:
        stdlib.handlers.clear()
    assert {entry.data for entry in logs} >= {"through the context", "through the stdlib"}
    assert [p["progressToken"] for p in progress] == ["p1"] and progress[0]["message"] == "half"
    assert progress[0]["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}


async def test_a_core_task_belongs_to_its_session_too(clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    with trio.fail_after(60):
        async with server.running():
            async with (
                connect(server, CORE, principal="alice") as first,
                connect(server, CORE, principal="alice") as second,
            ):
                created = await first.session.request(
                    "tools/call", {"name": "slow", "arguments": {"seconds": 50}, "task": {}}
                )
                task_id = created["task"]["taskId"]
                with pytest.raises(McpError, match="not found"):
                    await second.session.request("tasks/get", {"taskId": task_id})
                assert (await second.session.request("tasks/list", {}))["tasks"] == []
                assert (await first.session.request("tasks/get", {"taskId": task_id}))["status"] == "working"


async def test_listen_stream_carries_task_notifications(clock: trio.testing.MockClock) -> None:
    """The extension's optional push: ``subscriptions/listen`` with ``taskIds`` gets ``notifications/tasks``
    (a full DetailedTask) for the caller's tasks; without the extension the filter is -32021."""
    from trio_mcp.server._connection import ServerConnection

    server, _ = make_server(TaskManager(poll_interval=0.5))
    extension = {"extensions": {"io.modelcontextprotocol/tasks": {}}}

    def message(id: int, method: str, params: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
        return {"jsonrpc": "2.0", "id": id, "method": method, "params": {**params, "_meta": meta}}

    async def reply(peer: Any) -> dict[str, Any]:
        while True:
            received = await peer.receive()
            if "id" in received:
                return received

    with trio.fail_after(60):
        async with server.running(), trio.open_nursery() as nursery:
            peers = []
            for _ in range(2):
                ours, theirs = memory_stream_pair()
                await nursery.start(ServerConnection(server, ours).serve)
                peers.append(theirs)
            caller, listener = peers
            await caller.send(message(1, "tools/call", {"name": "slow", "arguments": {"seconds": 2}}, extension))
            task_id = (await reply(caller))["result"]["taskId"]

            await listener.send(message(2, "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}, {}))
            refused = await reply(listener)
            assert refused["error"]["code"] == -32021

            await listener.send(
                message(3, "subscriptions/listen", {"notifications": {"taskIds": [task_id, "not-a-task"]}}, extension)
            )
            acknowledged = await listener.receive()
            assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
            assert acknowledged["params"]["notifications"]["taskIds"] == [task_id]
            seen: list[dict[str, Any]] = []
            while not seen or seen[-1]["status"] != "completed":
                notice = await listener.receive()
                assert notice["method"] == "notifications/tasks"
                seen.append(notice["params"])
            assert seen[-1]["taskId"] == task_id and seen[-1]["result"]["content"][0]["text"] == "slept 2"
            assert seen[-1]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 3}
            nursery.cancel_scope.cancel()
