"""Every server feature through the public API over the in-memory transport, on each revision where it
exists: tools, resources, templates, prompts, completion, logging, pagination, the Context, lifespan."""

from __future__ import annotations

import logging
import time
from contextlib import asynccontextmanager
from typing import Annotated, Any, AsyncIterator, Literal, TypedDict

import attrs
import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import Context, Field, Server
from trio_mcp.server import McpLogHandler
from trio_mcp.testing import open_in_memory
from trio_mcp.types import (
    AudioContent,
    BlobResourceContents,
    CompletionArgument,
    CompletionContext,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    Icon,
    ImageContent,
    LoggingMessageNotificationParams,
    PromptMessage,
    PromptReference,
    ResourceLink,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def text(block: Any) -> str:
    assert isinstance(block, TextContent), block
    return block.text


# -- tools ---------------------------------------------------------------------------------------


class Address(TypedDict):
    street: str
    city: str


@attrs.frozen
class Weather:
    city: str
    celsius: float


def make_tool_server() -> Server:
    server = Server("tools", version="1.2.3", title="Tool Server", icons=[Icon(src="https://x/icon.png")])

    @server.tool(title="Forecast", annotations={"read_only_hint": True}, icons=[Icon(src="https://x/sun.png")])
    async def forecast(
        city: Annotated[str, Field(description="City name")],
        days: int = 1,
        unit: Literal["c", "f"] = "c",
    ) -> Weather:
        """Weather for a city."""
        return Weather(city=city, celsius=21.5)

    @server.tool()
    async def ship(to: Address, express: bool = False) -> str:
        """Ship a parcel."""
        return f"to {to['street']}, {to['city']}{' (express)' if express else ''}"

    @server.tool(
        input_schema={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0}},
            "additionalProperties": False,
        }
    )
    async def hand_written(n: int) -> str:
        """A tool with a hand-written schema."""
        return str(n * 2)

    @server.tool()
    async def media() -> list[TextContent | ImageContent | AudioContent | ResourceLink]:
        """Return every content type."""
        return [
            TextContent(text="hello"),
            ImageContent(data="aW1n", mime_type="image/png"),
            AudioContent(data="YXVk", mime_type="audio/wav"),
            ResourceLink(uri="file:///a.txt", name="a.txt"),
        ]

    @server.tool()
    def blocking(seconds: float) -> str:
        """A sync tool: it runs in a worker thread."""
        time.sleep(seconds)
        return "woke"

    @server.tool()
    async def broken() -> str:
        """Always fails."""
        raise ValueError("no luck today")

    return server


@pytest.mark.parametrize("version", VERSIONS)
async def test_tool_listing_follows_the_revision(version: str) -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_tool_server(), protocol_version=version) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == ["forecast", "ship", "hand_written", "media", "blocking", "broken"]
    forecast = tools["forecast"]
    assert forecast.description == "Weather for a city."
    assert forecast.input_schema["properties"]["city"] == {"type": "string", "description": "City name"}
    assert forecast.input_schema["properties"]["unit"] == {"type": "string", "enum": ["c", "f"], "default": "c"}
    assert forecast.input_schema["required"] == ["city"]
    assert (forecast.title == "Forecast") is (version >= "2025-06-18")
    assert (forecast.output_schema is not None) is (version >= "2025-06-18")
    assert (forecast.annotations is not None and forecast.annotations.read_only_hint) is (version >= "2025-03-26")
    assert (forecast.icons is not None) is (version >= "2025-11-25")
    assert tools["hand_written"].input_schema == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0}},
        "additionalProperties": False,
    }
    ship_schema = tools["ship"].input_schema
    assert ship_schema["properties"]["to"] == {"$ref": "#/$defs/Address"}
    assert ship_schema["$defs"]["Address"]["required"] == ["street", "city"]


async def test_tool_calls_validate_convert_and_structure() -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_tool_server(), protocol_version="2025-11-25") as client:
            result = await client.call_tool("forecast", {"city": "Oslo"})
            assert result.structured_content == {"city": "Oslo", "celsius": 21.5}
            assert text(result.content[0]) == '{"city":"Oslo","celsius":21.5}'
            shipped = await client.call_tool("ship", {"to": {"street": "1 Main St", "city": "Oslo"}, "express": True})
            assert text(shipped.content[0]) == "to 1 Main St, Oslo (express)"
            bad = await client.call_tool("forecast", {"city": "Oslo", "days": "two", "unit": "k"})
            assert bad.is_error is True
            message = text(bad.content[0])
            assert "days: expected integer" in message and "unit:" in message
            missing = await client.call_tool("ship", {"to": {"street": "x"}})
            assert missing.is_error and "city" in text(missing.content[0])
            schema_checked = await client.call_tool("hand_written", {"n": -1})
            assert schema_checked.is_error
            assert text((await client.call_tool("hand_written", {"n": 4})).content[0]) == "8"
            failed = await client.call_tool("broken")
            assert failed.is_error and "Tool broken failed (error id " in text(failed.content[0])
            assert "no luck today" not in text(failed.content[0])
            with pytest.raises(trio_mcp.McpError) as info:
                await client.call_tool("nope")
            assert info.value.code == -32602


@pytest.mark.parametrize("version", VERSIONS)
async def test_content_types_are_downgraded_for_older_revisions(version: str) -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_tool_server(), protocol_version=version) as client:
            content = (await client.call_tool("media")).content
    kinds = [type(block).__name__ for block in content]
    expected_audio = "AudioContent" if version >= "2025-03-26" else "TextContent"
    expected_link = "ResourceLink" if version >= "2025-06-18" else "TextContent"
    assert kinds == ["TextContent", "ImageContent", expected_audio, expected_link]


async def test_sync_tools_run_in_threads_and_do_not_block_others() -> None:
    finished: list[str] = []
    with trio.fail_after(5):
        async with open_in_memory(make_tool_server(), protocol_version="2025-11-25") as client:

            async def slow() -> None:
                await client.call_tool("blocking", {"seconds": 0.5})
                finished.append("blocking")

            async def fast() -> None:
                for _ in range(20):
                    await client.call_tool("hand_written", {"n": 1})
                finished.append("fast")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow)
                nursery.start_soon(fast)
    assert finished == ["fast", "blocking"]


async def test_adding_and_removing_tools_notifies_clients() -> None:
    server = make_tool_server()
    changes: list[str] = []
    with trio.fail_after(5):
        async with open_in_memory(server, on_list_changed=changes.append, protocol_version="2025-11-25") as client:

            async def extra() -> str:
                """Added later."""
                return "x"

            server.add_tool(extra)
            await client.ping()
            await trio.testing.wait_all_tasks_blocked()
            assert changes == ["tools"]
            assert "extra" in [tool.name for tool in (await client.list_tools()).tools]
            server.remove_tool("extra")
            await trio.testing.wait_all_tasks_blocked()
            assert changes == ["tools", "tools"]
            assert "extra" not in [tool.name for tool in (await client.list_tools()).tools]


async def call_wait_then_give_up(server: Server) -> None:
    """Call the ``wait`` tool and cancel the call once it waits (the client sends ``notifications/cancelled``),
    then let the server finish reacting."""
    with trio.fail_after(5):
        async with open_in_memory(server, protocol_version="2025-11-25") as client:
            with trio.CancelScope(shield=True):  # no deadline: it would travel, and stop the handler first
                async with trio.open_nursery() as nursery:

                    async def give_up() -> None:
                        await trio.testing.wait_all_tasks_blocked()  # in memory: the handler is waiting
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(give_up)
                    await client.call_tool("wait")
            await client.ping()
            await trio.testing.wait_all_tasks_blocked()


async def test_peer_cancel_is_visible_in_the_context() -> None:
    server = Server("cancel")
    seen: list[str] = []

    @server.tool()
    async def wait(ctx: Context) -> str:
        """Wait until cancelled."""
        try:
            await trio.sleep_forever()
        finally:
            # The peer's cancel cancels the scope around the handler; its own scope is its own to cancel.
            seen.append(f"cancel_requested={ctx.cancel_requested.is_set()} own={ctx.cancel_scope.cancel_called}")
        return "unreachable"

    await call_wait_then_give_up(server)
    assert seen == ["cancel_requested=True own=False"]


async def test_a_handler_without_a_context_is_cancelled_by_the_peer_all_the_same() -> None:
    """A handler that takes no ``Context`` runs without a scope of its own (nothing could cancel one): the
    peer's cancel still ends it at once."""
    server = Server("cancel")
    seen: list[str] = []

    @server.tool()
    async def wait() -> str:
        """Wait until cancelled."""
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            seen.append("cancelled")
            raise
        return "unreachable"

    await call_wait_then_give_up(server)
    assert seen == ["cancelled"]


# -- resources -----------------------------------------------------------------------------------


def make_resource_server() -> Server:
    server = Server("resources")

    @server.resource("test://static-text", mime_type="text/plain", title="Static", description="Some text")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", mime_type="image/png")
    async def static_binary() -> bytes:
        return b"\x89PNG"

    @server.resource("users://{user_id}/profile", mime_type="application/json")
    async def profile(user_id: int) -> dict[str, Any]:
        """A user's profile."""
        return {"id": user_id, "double": user_id * 2}

    @server.resource("files://{+path}")
    async def files(path: str) -> str:
        return f"file at {path}"

    @server.resource("test://many")
    async def many() -> list[TextResourceContents]:
        return [
            TextResourceContents(uri="test://many#1", text="one"),
            TextResourceContents(uri="test://many#2", text="two"),
        ]

    return server


@pytest.mark.parametrize("version", VERSIONS)
async def test_resources_list_and_read(version: str) -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_resource_server(), protocol_version=version) as client:
            resources = (await client.list_resources()).resources
            assert [r.uri for r in resources] == ["test://static-text", "test://static-binary", "test://many"]
            assert (resources[0].title == "Static") is (version >= "2025-06-18")
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["users://{user_id}/profile", "files://{+path}"]
            assert templates[0].description == "A user's profile."
            text_contents = (await client.read_resource("test://static-text")).contents
            assert text_contents == [
                TextResourceContents(
                    uri="test://static-text",
                    mime_type="text/plain",
                    text="This is the content of the static text resource.",
                )
            ]
            blob = (await client.read_resource("test://static-binary")).contents[0]
            assert isinstance(blob, BlobResourceContents) and blob.blob == "iVBORw==" and blob.mime_type == "image/png"
            profile = (await client.read_resource("users://42/profile")).contents[0]
            assert isinstance(profile, TextResourceContents) and profile.text == '{"id": 42, "double": 84}'
            nested = (await client.read_resource("files://docs/readme.md")).contents[0]
            assert isinstance(nested, TextResourceContents) and nested.text == "file at docs/readme.md"
            assert len((await client.read_resource("test://many")).contents) == 2
            with pytest.raises(trio_mcp.McpError) as info:
                await client.read_resource("test://missing")
            assert info.value.code == -32002 and info.value.data == {"uri": "test://missing"}


async def test_template_arguments_are_typed_and_traversal_is_rejected() -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_resource_server(), protocol_version="2025-11-25") as client:
            with pytest.raises(trio_mcp.McpError) as info:
                await client.read_resource("users://abc/profile")
            assert info.value.code == -32602 and "user_id" in info.value.message
            for uri in ("files://../etc/passwd", "files://a/%2E%2E/b", "files://a/../../b"):
                with pytest.raises(trio_mcp.McpError) as info:
                    await client.read_resource(uri)
                assert info.value.code == -32002, uri


async def test_subscriptions_deliver_updates_until_unsubscribed() -> None:
    server = make_resource_server()
    updates: list[str] = []
    with trio.fail_after(5):
        async with open_in_memory(server, on_resource_updated=updates.append, protocol_version="2025-11-25") as client:
            await client.subscribe_resource("test://static-text")
            server.notify_resource_updated("test://static-text")
            server.notify_resource_updated("test://static-binary")  # not subscribed
            await client.ping()
            await trio.testing.wait_all_tasks_blocked()
            assert updates == ["test://static-text"]
            await client.unsubscribe_resource("test://static-text")
            server.notify_resource_updated("test://static-text")
            await client.ping()
            await trio.testing.wait_all_tasks_blocked()
            assert updates == ["test://static-text"]
            with pytest.raises(trio_mcp.McpError):
                await client.subscribe_resource("test://nowhere")


async def test_a_list_change_made_elsewhere_is_announced_by_notify_list_changed() -> None:
    server = make_resource_server()
    changed: list[str] = []
    with trio.fail_after(5):
        async with open_in_memory(server, on_list_changed=changed.append, protocol_version="2025-11-25") as client:
            server.notify_list_changed("resources")
            await client.ping()
            await trio.testing.wait_all_tasks_blocked()
            assert changed == ["resources"]
    with pytest.raises(ValueError, match="kind must be"):
        server.notify_list_changed("tool")


# -- prompts and completion ------------------------------------------------------------------------


def make_prompt_server() -> Server:
    server = Server("prompts")

    @server.prompt(title="Review")
    def review(code: Annotated[str, Field(description="The code")], style: str = "terse") -> str:
        """Review some code."""
        return f"Review this ({style}):\n{code}"

    @server.prompt()
    async def with_image() -> list[Any]:
        """A prompt with an image and an assistant turn."""
        return [
            PromptMessage(role="user", content=ImageContent(data="aW1n", mime_type="image/png")),
            {"role": "assistant", "content": {"type": "text", "text": "I see it."}},
        ]

    @server.prompt()
    async def counted(times: int) -> str:
        """Arguments are strings on the wire but typed here."""
        return "x" * times

    @server.resource("db://{table}/{row}")
    async def row(table: str, row: str) -> str:
        return f"{table}:{row}"

    @server.completion()
    async def complete(ref: Any, argument: CompletionArgument, context: CompletionContext | None) -> list[str]:
        if isinstance(ref, PromptReference):
            return [s for s in ("terse", "thorough", "tutorial") if s.startswith(argument.value)]
        assert isinstance(ref, ResourceTemplateReference)
        if argument.name == "row":
            table = (context.arguments or {}).get("table") if context else None
            return [f"{table}-{n}" for n in range(150)]
        return ["users", "orders"]

    return server


async def test_prompts_list_and_get() -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_prompt_server(), protocol_version="2025-11-25") as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            review = prompts["review"]
            assert review.description == "Review some code."
            assert review.title == "Review"
            assert [(a.name, a.description, a.required) for a in review.arguments or []] == [
                ("code", "The code", True),
                ("style", None, False),
            ]
            result = await client.get_prompt("review", {"code": "print(1)"})
            assert result.description == "Review some code."
            assert [m.role for m in result.messages] == ["user"]
            assert text(result.messages[0].content) == "Review this (terse):\nprint(1)"
            image = await client.get_prompt("with_image")
            assert isinstance(image.messages[0].content, ImageContent)
            assert image.messages[1].role == "assistant"
            assert text((await client.get_prompt("counted", {"times": "3"})).messages[0].content) == "xxx"
            for name, arguments in (("review", {}), ("counted", {"times": "many"}), ("missing", {})):
                with pytest.raises(trio_mcp.McpError) as info:
                    await client.get_prompt(name, arguments)
                assert info.value.code == -32602


async def test_completion_with_context_and_the_100_value_limit() -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_prompt_server(), protocol_version="2025-06-18") as client:
            assert client.server_capabilities.completions is not None
            styles = await client.complete(PromptReference(name="review"), CompletionArgument(name="style", value="t"))
            assert styles.completion.values == ["terse", "thorough", "tutorial"]
            rows = await client.complete(
                ResourceTemplateReference(uri="db://{table}/{row}"),
                CompletionArgument(name="row", value=""),
                CompletionContext(arguments={"table": "users"}),
            )
            assert rows.completion.values[:2] == ["users-0", "users-1"]
            assert len(rows.completion.values) == 100
            assert rows.completion.total == 150 and rows.completion.has_more is True
            with pytest.raises(trio_mcp.McpError) as info:
                await client.complete(PromptReference(name="review"), CompletionArgument(name="nope", value=""))
            assert info.value.code == -32602
        async with open_in_memory(make_prompt_server(), protocol_version="2024-11-05") as old:
            assert old.server_capabilities.completions is None  # no such capability on 2024-11-05
            answer = await old.complete(PromptReference(name="review"), CompletionArgument(name="style", value="tu"))
            assert answer.completion.values == ["tutorial"]


# -- logging -------------------------------------------------------------------------------------


async def test_logging_levels_filter_and_the_stdlib_bridge() -> None:
    server = Server("logging")
    stdlib_logger = logging.getLogger("tests.bridge")
    stdlib_logger.setLevel(logging.DEBUG)
    handler = McpLogHandler()
    stdlib_logger.addHandler(handler)

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log at several levels."""
        await ctx.debug("debug detail")
        await ctx.info({"stage": "start"}, logger="chatty")
        await ctx.warning("careful")
        stdlib_logger.info("from the stdlib")
        return "done"

    @server.tool()
    def chatty_sync() -> str:
        """Log through the stdlib from a worker thread."""
        stdlib_logger.warning("from a thread")
        return "done"

    messages: list[LoggingMessageNotificationParams] = []
    try:
        with trio.fail_after(5):
            async with open_in_memory(server, on_log=messages.append, protocol_version="2025-11-25") as client:
                await client.call_tool("chatty")  # default level info: debug is filtered
                await client.call_tool("chatty_sync")
                await trio.testing.wait_all_tasks_blocked()
                await client.ping()
                assert [(m.level, m.data) for m in messages] == [
                    ("info", {"stage": "start"}),
                    ("warning", "careful"),
                    ("info", "from the stdlib"),
                    ("warning", "from a thread"),
                ]
                assert messages[0].logger == "chatty" and messages[2].logger == "tests.bridge"
                messages.clear()
                await client.set_logging_level("warning")
                await client.call_tool("chatty")
                await trio.testing.wait_all_tasks_blocked()
                await client.ping()
                assert [m.data for m in messages] == ["careful"]
                with pytest.raises(trio_mcp.McpError) as info:
                    await client.set_logging_level("loud")
                assert info.value.code == -32602
    finally:
        stdlib_logger.removeHandler(handler)


async def test_log_flood_is_rate_limited() -> None:
    server = Server("flood")

    @server.tool()
    async def flood(ctx: Context) -> str:
        """Log far more than the rate limit allows."""
        for n in range(1000):
            await ctx.info(n)
        return "done"

    messages: list[LoggingMessageNotificationParams] = []
    with trio.fail_after(5):
        async with open_in_memory(server, on_log=messages.append, protocol_version="2025-11-25") as client:
            await client.call_tool("flood")
    assert 150 <= len(messages) <= 400


# -- pagination ----------------------------------------------------------------------------------


async def test_list_pagination_with_tamper_evident_cursors() -> None:
    server = Server("pages", page_size=2)
    for n in range(5):
        server.add_tool(lambda: "x", name=f"tool_{n}", description=f"tool {n}")
    with trio.fail_after(5):
        async with open_in_memory(server, protocol_version="2025-11-25") as client:
            names: list[str] = []
            cursor = None
            pages = 0
            while True:
                page = await client.list_tools(cursor)
                pages += 1
                names += [tool.name for tool in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert names == [f"tool_{n}" for n in range(5)] and pages == 3
            first = await client.list_tools()
            assert first.next_cursor is not None
            for bad in (first.next_cursor[:-2] + "AA", "garbage", "x" * 600):
                with pytest.raises(trio_mcp.McpError) as info:
                    await client.list_tools(bad)
                assert info.value.code == -32602
            with pytest.raises(trio_mcp.CapabilityError):  # no prompts here: the client does not even ask
                await client.list_prompts(first.next_cursor)


# -- the Context: requests to the client, lifespan -----------------------------------------------


def make_context_server() -> Server:
    server = Server("context")

    @server.tool()
    async def ask_model(question: str, ctx: Context) -> str:
        """Ask the client's model."""
        result = await ctx.sample(question, max_tokens=50, system_prompt="be brief")
        return text(result.content)

    @server.tool()
    async def ask_user(ctx: Context) -> str:
        """Ask the user for a name."""
        answer = await ctx.elicit(
            "Who are you?", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        )
        return f"{answer.action}:{(answer.content or {}).get('name')}"

    @server.tool()
    async def where(ctx: Context) -> str:
        """List the client's roots."""
        return ",".join(root.uri for root in await ctx.list_roots())

    return server


async def test_context_requests_reach_client_callbacks() -> None:
    seen: list[Any] = []

    async def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
        seen.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(text="42"), model="test-model")

    async def elicitation(params: ElicitRequestParams) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def roots() -> list[Root]:
        return [Root(uri="file:///src")]

    with trio.fail_after(5):
        async with open_in_memory(
            make_context_server(),
            sampling=sampling,
            elicitation=elicitation,
            roots=roots,
            protocol_version="2025-11-25",
        ) as client:
            assert text((await client.call_tool("ask_model", {"question": "meaning?"})).content[0]) == "42"
            assert text((await client.call_tool("ask_user")).content[0]) == "accept:Ada"
            assert text((await client.call_tool("where")).content[0]) == "file:///src"
    sample_params = seen[0]
    assert sample_params.max_tokens == 50 and sample_params.system_prompt == "be brief"
    assert text(sample_params.messages[0].content) == "meaning?"
    assert seen[1].message == "Who are you?"


async def test_context_requests_are_refused_without_the_capability() -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_context_server(), protocol_version="2025-11-25") as client:
            for tool in ("ask_model", "ask_user", "where"):
                with pytest.raises(trio_mcp.McpError, match="did not declare") as info:
                    await client.call_tool(tool, {"question": "q"} if tool == "ask_model" else None)
                assert info.value.code == -32601

        async def elicitation(params: ElicitRequestParams) -> ElicitResult:
            raise AssertionError("never called: elicitation does not exist on 2025-03-26")  # pragma: no cover

        async with open_in_memory(
            make_context_server(), protocol_version="2025-03-26", elicitation=elicitation
        ) as client:
            with pytest.raises(trio_mcp.McpError, match="elicitation"):
                await client.call_tool("ask_user")  # elicitation does not exist before 2025-06-18


async def test_elicitation_answer_must_match_the_schema() -> None:
    async def elicitation(params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": 7})

    with trio.fail_after(5):
        async with open_in_memory(
            make_context_server(), elicitation=elicitation, protocol_version="2025-11-25"
        ) as client:
            with pytest.raises(trio_mcp.McpError, match="does not match the requested schema"):
                await client.call_tool("ask_user")


async def test_lifespan_runs_once_around_serving() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, str]]:
        events.append("start")
        yield {"db": "connected"}
        events.append("stop")

    server = Server("lifespan", lifespan=lifespan)

    @server.tool()
    async def state(ctx: Context) -> str:
        """Show the lifespan state."""
        return str(ctx.lifespan_state["db"])

    with trio.fail_after(5):
        async with server.running():
            async with (
                open_in_memory(server, protocol_version="2025-11-25") as first,
                open_in_memory(server, protocol_version="2025-11-25") as second,
            ):
                assert text((await first.call_tool("state")).content[0]) == "connected"
                assert text((await second.call_tool("state")).content[0]) == "connected"
            assert events == ["start"]
    assert events == ["start", "stop"]


async def test_capabilities_follow_what_is_registered() -> None:
    with trio.fail_after(5):
        async with open_in_memory(Server("empty"), protocol_version="2025-11-25") as client:
            caps = client.server_capabilities
            assert caps.tools is None and caps.resources is None and caps.prompts is None
            assert caps.completions is None and caps.logging is not None
            with pytest.raises(trio_mcp.CapabilityError) as info:  # refused by the client, before sending
                await client.request("tools/list")
            assert info.value.method == "tools/list"
        async with open_in_memory(make_resource_server(), protocol_version="2025-11-25") as client:
            resources = client.server_capabilities.resources
            assert resources is not None and resources.subscribe and resources.list_changed


async def test_roots_changed_hook_receives_the_new_roots() -> None:
    server = Server("roots")
    seen: list[list[str]] = []
    got = trio.Event()

    @server.on_roots_changed()
    async def changed(roots: list[Root]) -> None:
        seen.append([root.uri for root in roots])
        got.set()

    current = [Root(uri="file:///a")]

    async def roots() -> list[Root]:
        return current

    with trio.fail_after(5):
        async with open_in_memory(server, roots=roots, protocol_version="2025-11-25") as client:
            current = [Root(uri="file:///a"), Root(uri="file:///b")]
            await client.notify_roots_changed()
            await got.wait()
    assert seen == [["file:///a", "file:///b"]]
