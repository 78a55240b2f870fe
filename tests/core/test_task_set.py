"""``TaskSet``: one owner's tasks in a nursery it does not own, cancelled together, failing alone."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from trio_mcp._task_set import TaskSet
from trio_mcp._util import first_leaf


async def test_cancel_ends_every_task_of_the_set_and_any_started_later_but_no_other() -> None:
    failures: list[BaseException] = []
    ended: list[str] = []

    async def park(name: str) -> None:
        try:
            await trio.sleep_forever()
        finally:
            ended.append(name)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            ours = TaskSet(nursery, on_failure=failures.append)
            theirs = TaskSet(nursery, on_failure=failures.append)
            calls: list[str] = []
            ours.on_cancel(lambda: calls.append("cancelled"))
            ours.start_soon(park, "a")
            ours.start_soon(park, "b")
            theirs.start_soon(park, "other")
            await trio.testing.wait_all_tasks_blocked()
            ours.cancel()
            ours.cancel()  # once is enough; the callbacks ran once
            await trio.testing.wait_all_tasks_blocked()
            assert sorted(ended) == ["a", "b"] and calls == ["cancelled"]
            ours.start_soon(park, "late")  # a task started after the cancel never runs on
            await trio.testing.wait_all_tasks_blocked()
            assert "late" in ended
            theirs.cancel()
    assert failures == [] and "other" in ended


async def test_a_failing_task_goes_to_on_failure_and_the_nursery_goes_on() -> None:
    failures: list[BaseException] = []
    survivor_done = trio.Event()

    async def fail() -> None:
        raise RuntimeError("boom")

    async def survive() -> None:
        await trio.sleep(0.01)
        survivor_done.set()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            tasks = TaskSet(nursery, on_failure=failures.append)
            tasks.start_soon(fail)
            tasks.start_soon(survive)
            await survivor_done.wait()
    assert [type(exc) for exc in failures] == [RuntimeError]


async def test_ctrl_c_and_the_nursery_s_own_cancellation_go_on_up() -> None:
    failures: list[BaseException] = []

    async def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(BaseException) as raised:  # noqa: PT011 - the nursery's group, checked below
        async with trio.open_nursery() as nursery:
            TaskSet(nursery, on_failure=failures.append).start_soon(interrupt)
    assert first_leaf(raised.value, KeyboardInterrupt) is not None
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            TaskSet(nursery, on_failure=failures.append).start_soon(trio.sleep_forever)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert failures == []


async def test_a_task_that_enters_its_own_scope_is_cancelled_through_it() -> None:
    failures: list[BaseException] = []
    scope = trio.CancelScope()
    steps: list[str] = []

    async def request() -> None:
        with scope:
            await trio.sleep_forever()
        steps.append("cancelled inside")
        await trio.lowlevel.checkpoint()  # past its scope, the task runs on to its end
        steps.append("finished")

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            tasks = TaskSet(nursery, on_failure=failures.append)
            tasks.start_soon(request, scope=scope)
            await trio.testing.wait_all_tasks_blocked()
            tasks.cancel()
    assert scope.cancelled_caught and steps == ["cancelled inside", "finished"] and failures == []


async def test_a_callback_asked_for_after_the_cancel_runs_at_once() -> None:
    async with trio.open_nursery() as nursery:
        tasks = TaskSet(nursery, on_failure=lambda exc: None)
        tasks.cancel()
        calls: list[str] = []
        tasks.on_cancel(lambda: calls.append("late"))
        assert calls == ["late"]
        tasks.cancel()  # once only
        assert calls == ["late"]
