"""Tasks with a peer nobody here wrote: trio_mcp's client runs ``@modelcontextprotocol/server-everything``'s
task tool ``simulate-research-query`` (2025-11-25 tasks, TypeScript SDK) to completion, answers its question
mid-task, and cancels one. Needs the interop set-up (``bash tests/interop/setup.sh``), like test_interop_stdio."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from test_interop_stdio import EVERYTHING, texts

import trio_mcp
from trio_mcp.types import ElicitResult

pytestmark = pytest.mark.interop


async def test_research_task_runs_to_completion_with_a_question_answered() -> None:
    asked: list[Any] = []
    statuses: list[str] = []

    async def clarify(request: Any) -> ElicitResult:
        asked.append(request)
        schema = request.requested_schema["properties"]["interpretation"]
        return ElicitResult(action="accept", content={"interpretation": schema["oneOf"][0]["const"]})

    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(
            EVERYTHING, stderr="capture", protocol_version="2025-11-25", elicitation=clarify
        ) as client:
            result = await client.call_tool_as_task(
                "simulate-research-query",
                {"topic": "python", "ambiguous": True},
                on_status=lambda task: statuses.append(task["status"]),
            )
    assert len(asked) == 1
    report = "\n".join(texts(result))
    assert "Research Report: python" in report and "Clarification" in report
    assert statuses[0] == "working"


async def test_cancelling_the_call_cancels_the_research_task() -> None:
    created: list[str] = []
    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(EVERYTHING, stderr="capture", protocol_version="2025-11-25") as client:
            with trio.CancelScope() as scope:

                def on_status(task: dict[str, Any]) -> None:
                    created.append(task["taskId"])
                    if task.get("statusMessage"):  # it is working on a stage: stop it
                        scope.cancel()

                await client.call_tool_as_task(
                    "simulate-research-query", {"topic": "trio"}, on_status=on_status, poll_interval=0.05
                )
            assert scope.cancelled_caught
            task = await client.request("tasks/get", {"taskId": created[0]})
    assert task["status"] == "cancelled"


async def test_server_everything_runs_its_sampling_request_as_a_task_on_our_client() -> None:
    """The other direction: the server asks with a task-augmented sampling/createMessage; the client answers
    with a task, and the server polls it (tasks/get) and fetches the result (tasks/result)."""
    from trio_mcp.types import CreateMessageResult, TextContent

    sampled: list[Any] = []

    async def sample(request: Any) -> CreateMessageResult:
        sampled.append(request)
        await trio.sleep(1.5)  # long enough for the server to poll a working task
        return CreateMessageResult(role="assistant", content=TextContent(text="forty-two"), model="test-model")

    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(
            EVERYTHING, stderr="capture", protocol_version="2025-11-25", sampling=sample, host_tasks=True
        ) as client:
            assert client.initialize_result is not None
            result = await client.call_tool("trigger-sampling-request-async", {"prompt": "the answer?"})
    text = "\n".join(texts(result))
    assert len(sampled) == 1
    assert "[COMPLETED]" in text and "forty-two" in text, text
