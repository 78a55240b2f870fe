"""``Server.mount``: another server's tools, prompts and resources served as one's own, kept in step, with its
lifespan nested and its handlers seeing their own server."""

from __future__ import annotations

import functools
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import pytest
import trio

from trio_mcp import Context, Server, open_http_client
from trio_mcp.client import Client
from trio_mcp.testing import open_in_memory
from trio_mcp.types import CompletionArgument, PromptReference, ResourceTemplateReference, Root, TextContent

events: list[str] = []


def build() -> tuple[Server, Server]:
    @asynccontextmanager
    async def weather_life(server: Server) -> AsyncIterator[str]:
        events.append("weather up")
        yield "weather-db"
        events.append("weather down")

    @asynccontextmanager
    async def app_life(server: Server) -> AsyncIterator[str]:
        events.append("app up")
        yield "app-db"
        events.append("app down")

    weather = Server("weather", lifespan=weather_life)

    @weather.tool()
    async def forecast(city: str, ctx: Context) -> str:
        """Tomorrow's weather."""
        return f"sunny in {city} ({ctx.lifespan_state}, served by {ctx.server.info.name})"

    @weather.tool()
    def humidity(city: str) -> int:
        """A sync tool, run in a thread."""
        return 40

    @weather.prompt()
    def report(city: str) -> str:
        return f"Write a weather report for {city}."

    @weather.resource("weather://stations")
    def stations() -> str:
        return "north, south"

    @weather.resource("weather://city/{name}")
    def city(name: str, ctx: Context) -> str:
        return f"{name} via {ctx.server.info.name}"

    app = Server("app", lifespan=app_life)

    @app.tool()
    async def state(ctx: Context) -> str:
        return str(ctx.lifespan_state)

    app.mount("weather", weather)
    return app, weather


@pytest.fixture
def mcp_server() -> Server:
    events.clear()
    return build()[0]


def text(result: Any) -> str:
    block = result.content[0] if hasattr(result, "content") else result.messages[0].content
    assert isinstance(block, TextContent)
    return block.text


async def test_everything_is_served_under_the_prefix(mcp_client: Client) -> None:
    tools = {tool.name: tool async for tool in mcp_client.iter_tools()}
    assert list(tools) == ["state", "weather_forecast", "weather_humidity"]
    assert tools["weather_forecast"].description == "Tomorrow's weather."
    assert tools["weather_forecast"].input_schema["required"] == ["city"]
    assert (
        text(await mcp_client.call_tool("weather_forecast", {"city": "Oslo"}))
        == "sunny in Oslo (weather-db, served by weather)"
    )
    assert (await mcp_client.call_tool("weather_humidity", {"city": "Oslo"})).structured_content == {"result": 40}
    assert text(await mcp_client.call_tool("state")) == "app-db"
    assert [prompt.name async for prompt in mcp_client.iter_prompts()] == ["weather_report"]
    assert text(await mcp_client.get_prompt("weather_report", {"city": "Rome"})) == "Write a weather report for Rome."
    assert [r.uri async for r in mcp_client.iter_resources()] == ["weather://stations"]
    read = await mcp_client.read_resource("weather://city/Lima")
    assert read.contents[0].text == "Lima via weather"  # type: ignore[union-attr]


async def test_a_mounted_tool_run_as_a_task_keeps_its_task_context_and_its_server() -> None:
    """A mounted handler's ``Context`` is still the task's (progress and cancellation go through the task) while
    ``ctx.server`` and ``ctx.lifespan_state`` are the mounted server's."""
    child = Server("child", lifespan=lambda server: _state("child-db"))

    @child.tool(task_support="optional")
    async def work(ctx: Context) -> str:
        await ctx.report_progress(1, 1)
        return f"{ctx.server.info.name} {ctx.lifespan_state} {ctx.task_id}"  # type: ignore[attr-defined]

    parent = Server("parent")
    parent.mount("c", child)
    with trio.fail_after(10):
        async with parent.running(), open_in_memory(parent, protocol_version="2025-11-25") as client:
            result = await client.call_tool_as_task("c_work", {})
    name, state, task_id = text(result).split()
    assert (name, state) == ("child", "child-db")
    assert result.meta is not None and result.meta["io.modelcontextprotocol/related-task"]["taskId"] == task_id


@asynccontextmanager
async def _state(value: str) -> AsyncIterator[str]:
    yield value


async def test_lifespans_nest() -> None:
    events.clear()
    app, _ = build()
    async with app.running():
        assert events == ["app up", "weather up"]
    assert events == ["app up", "weather up", "weather down", "app down"]


async def test_changes_and_updates_in_the_child_reach_the_parents_clients() -> None:
    app, weather = build()
    changed: list[str] = []
    updated: list[str] = []
    list_changed = trio.Event()
    resource_updated = trio.Event()

    def on_list_changed(kind: str) -> None:
        changed.append(kind)
        list_changed.set()

    def on_resource_updated(uri: str) -> None:
        updated.append(uri)
        resource_updated.set()

    with trio.fail_after(10):
        async with (
            app.running(),
            open_in_memory(
                app,
                protocol_version="2025-11-25",
                on_list_changed=on_list_changed,
                on_resource_updated=on_resource_updated,
            ) as client,
        ):
            await client.list_tools()

            async def alerts() -> str:
                return "none"

            weather.add_tool(alerts)
            await list_changed.wait()
            assert changed == ["tools"]
            assert "weather_alerts" in [tool.name async for tool in client.iter_tools()]
            weather.remove_tool("humidity")
            assert "weather_humidity" not in [tool.name async for tool in client.iter_tools()]

            await client.subscribe_resource("weather://stations")
            weather.notify_resource_updated("weather://stations")
            await resource_updated.wait()
            assert updated == ["weather://stations"]


def test_mount_refuses_clashes_bad_prefixes_and_cycles() -> None:
    app, weather = build()
    other = Server("other")

    @other.tool()
    async def forecast() -> str:
        return ""

    with pytest.raises(ValueError, match="already has 'weather_forecast'"):
        app.mount("weather", other)
    with pytest.raises(ValueError, match="prefix 'bad prefix'"):
        app.mount("bad prefix", Server("x"))
    with pytest.raises(ValueError, match="cycle"):
        weather.mount("app", app)
    with pytest.raises(ValueError, match="cycle"):
        app.mount("self", app)


def build_completing() -> tuple[Server, Server, list[tuple[str, Any]], list[list[str]]]:
    """A parent with a child that completes its own prompt and template and watches the client's roots."""
    seen_refs: list[tuple[str, Any]] = []
    seen_roots: list[list[str]] = []
    docs = Server("docs")

    @docs.prompt()
    def summarize(topic: str) -> str:
        return f"Summarize {topic}."

    @docs.resource("docs://page/{slug}")
    def page(slug: str) -> str:
        return slug

    @docs.completion()
    def complete_docs(ref: Any, argument: CompletionArgument, context: Any) -> list[str]:
        seen_refs.append(("docs", ref))
        return [v for v in ("intro", "install", "api") if v.startswith(argument.value)]

    @docs.on_roots_changed()
    def docs_roots(roots: list[Root]) -> None:
        seen_roots.append(["docs", *(root.uri for root in roots)])

    app = Server("app")

    @app.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}."

    @app.completion()
    def complete_app(ref: Any, argument: CompletionArgument, context: Any) -> list[str]:
        seen_refs.append(("app", ref))
        return ["Ada", "Alan"]

    @app.on_roots_changed()
    async def app_roots(roots: list[Root]) -> None:
        seen_roots.append(["app", *(root.uri for root in roots)])

    app.mount("docs", docs)
    return app, docs, seen_refs, seen_roots


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_a_mounted_servers_completion_handler_completes_its_prompts_and_templates(
    nursery: trio.Nursery, version: str
) -> None:
    app, _, seen_refs, _ = build_completing()
    port = await nursery.start(functools.partial(app.serve_http, "127.0.0.1", 0))
    with trio.fail_after(10):
        async with open_http_client(f"http://127.0.0.1:{port}/mcp", protocol_version=version) as client:
            assert client.server_capabilities.completions is not None
            prompt = await client.complete(
                PromptReference(name="docs_summarize"), CompletionArgument(name="topic", value="in")
            )
            assert prompt.completion.values == ["intro", "install"]
            template = await client.complete(
                ResourceTemplateReference(uri="docs://page/{slug}"), CompletionArgument(name="slug", value="a")
            )
            assert template.completion.values == ["api"]
            own = await client.complete(PromptReference(name="greet"), CompletionArgument(name="name", value="A"))
            assert own.completion.values == ["Ada", "Alan"]
    # the child saw its own names, never the parent's prefixed ones
    assert seen_refs == [
        ("docs", PromptReference(name="summarize")),
        ("docs", ResourceTemplateReference(uri="docs://page/{slug}")),
        ("app", PromptReference(name="greet")),
    ]


async def test_a_parent_without_a_completion_handler_offers_its_childs(nursery: trio.Nursery) -> None:
    app, docs, _, _ = build_completing()
    app.completion_handler = None
    port = await nursery.start(functools.partial(app.serve_http, "127.0.0.1", 0))
    with trio.fail_after(10):
        async with open_http_client(f"http://127.0.0.1:{port}/mcp", protocol_version="2025-11-25") as client:
            assert client.server_capabilities.completions is not None
            answer = await client.complete(
                PromptReference(name="docs_summarize"), CompletionArgument(name="topic", value="a")
            )
            assert answer.completion.values == ["api"]
            nothing = await client.complete(PromptReference(name="greet"), CompletionArgument(name="name", value="A"))
            assert nothing.completion.values == []


async def test_roots_changes_reach_the_parent_and_every_mounted_server(nursery: trio.Nursery) -> None:
    app, _, _, seen_roots = build_completing()
    port = await nursery.start(functools.partial(app.serve_http, "127.0.0.1", 0))
    current = [Root(uri="file:///a")]

    async def roots() -> list[Root]:
        return current

    with trio.fail_after(10):
        async with open_http_client(
            f"http://127.0.0.1:{port}/mcp", protocol_version="2025-11-25", roots=roots
        ) as client:
            current = [Root(uri="file:///a"), Root(uri="file:///b")]
            await client.notify_roots_changed()
            while len(seen_roots) < 2:
                await client.ping()  # each round trip lets the server's roots/list exchange progress
    assert sorted(seen_roots) == [["app", "file:///a", "file:///b"], ["docs", "file:///a", "file:///b"]]


def notes_server(name: str) -> Server:
    notes = Server(name)

    @notes.resource("notes://index")
    def index() -> str:
        return f"index of {name}"

    @notes.resource("notes://note/{key}")
    def note(key: str) -> str:
        return f"{name}:{key}"

    @notes.completion()
    def keys(ref: Any, argument: CompletionArgument, context: Any) -> list[str]:
        assert ref == ResourceTemplateReference(uri="notes://note/{key}")  # the child's own template
        return [f"{name}-key"]

    return notes


async def test_prefixed_uris_let_two_servers_with_the_same_uris_be_mounted(nursery: trio.Nursery) -> None:
    app, work, home = Server("app"), notes_server("work"), notes_server("home")
    with pytest.raises(ValueError, match="notes://index"):
        app.mount("work", work)
        app.mount("home", home)  # the same URIs, unprefixed
    app = Server("app")
    app.mount("work", work, prefix_uris=True)
    app.mount("home", home, prefix_uris=True)
    updated: list[str] = []
    got_update = trio.Event()

    def on_resource_updated(uri: str) -> None:
        updated.append(uri)
        got_update.set()

    port = await nursery.start(functools.partial(app.serve_http, "127.0.0.1", 0))
    with trio.fail_after(10):
        async with open_http_client(
            f"http://127.0.0.1:{port}/mcp", protocol_version="2025-11-25", on_resource_updated=on_resource_updated
        ) as client:
            assert [r.uri async for r in client.iter_resources()] == ["notes://work/index", "notes://home/index"]
            templates = [t.uri_template async for t in client.iter_resource_templates()]
            assert templates == ["notes://work/note/{key}", "notes://home/note/{key}"]
            index = await client.read_resource("notes://home/index")
            assert index.contents[0].text == "index of home"  # type: ignore[union-attr]
            assert index.contents[0].uri == "notes://home/index"
            note = await client.read_resource("notes://work/note/42")
            assert note.contents[0].text == "work:42"  # type: ignore[union-attr]
            completed = await client.complete(
                ResourceTemplateReference(uri="notes://home/note/{key}"), CompletionArgument(name="key", value="")
            )
            assert completed.completion.values == ["home-key"]

            await client.subscribe_resource("notes://work/note/7")
            home.notify_resource_updated("notes://note/7")  # not subscribed under home's prefix
            work.notify_resource_updated("notes://note/7")
            await got_update.wait()
            assert updated == ["notes://work/note/7"]


def test_prefixing_needs_a_scheme() -> None:
    child = Server("child")

    @child.resource("plain-name")
    def plain() -> str:
        return ""

    with pytest.raises(ValueError, match="no scheme://"):
        Server("app").mount("child", child, prefix_uris=True)
