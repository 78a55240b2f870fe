"""The client API end to end: typed calls, auto-paging, callbacks, output validation, x-mcp-header vetting,
``ClientGroup``, cancellation, timeouts and closing.

Most tests run against ``tests/servers/client_test_server.py`` both in memory and over a real subprocess;
what our own server never does (loop its cursors, send bad tool schemas, stall on purpose) comes from
``RawServer``, a hand-written JSON-RPC peer on an in-memory pair. Every test is bounded by ``fail_after``;
timing tests run under ``MockClock(autojump_threshold=0)`` (the ``autojump_clock`` fixture).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable

import pytest
import trio
import trio.testing
from paths import TESTS
from transport_helpers import initialize_result

import trio_mcp
from trio_mcp import ConnectionClosed, McpError, RequestTimeout
from trio_mcp.client import (
    Client,
    ClientGroup,
    StructuredContentError,
    fill_elicitation_defaults,
    open_client,
    report_progress,
)
from trio_mcp.errors import RemoteProtocolError
from trio_mcp.testing import open_in_memory
from trio_mcp.transports import memory_stream_pair
from trio_mcp.transports._base import MemoryMessageStream
from trio_mcp.types import (
    CompletionArgument,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    PromptReference,
    Root,
    TextContent,
    TextResourceContents,
    ToolUseContent,
)

SERVERS = TESTS / "servers"
SERVER_SCRIPT = SERVERS / "client_test_server.py"
_spec = importlib.util.spec_from_file_location("client_test_server", SERVER_SCRIPT)
assert _spec is not None and _spec.loader is not None
test_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(test_server)

TRANSPORTS = pytest.mark.parametrize("transport", ["memory", "stdio"])


@asynccontextmanager
async def connect(transport: str, *, page_size: int | None = None, **options: Any) -> AsyncIterator[Client]:
    """A client of the test server, in memory or over stdio."""
    if transport == "memory":
        async with open_in_memory(
            test_server.make_server(page_size), **options, protocol_version="2025-11-25"
        ) as client:
            yield client
    else:
        command = [sys.executable, str(SERVER_SCRIPT)] + (["--page-size", str(page_size)] if page_size else [])
        async with trio_mcp.open_stdio_client(command, **options, protocol_version="2025-11-25") as client:
            yield client


def text(block: Any) -> str:
    assert isinstance(block, TextContent), block
    return block.text


def result_text(result: Any) -> str:
    return text(result.content[0])


@pytest.fixture(autouse=True)
def _clear_server_events() -> None:
    test_server.events.clear()


# -- a hand-written peer ---------------------------------------------------------------------------------

NO_ANSWER = object()


class RawServer:
    """A JSON-RPC peer written by hand: answers ``initialize``, then each method from ``handlers``.

    A handler gets the params and returns the result, raises ``McpError``, or returns ``NO_ANSWER`` to leave
    the request hanging. Everything the client sends is kept in ``received``.
    """

    def __init__(
        self,
        handlers: dict[str, Callable[[Any], Any]] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
    ) -> None:
        self.handlers: dict[str, Callable[[Any], Any]] = {"ping": lambda params: {}}
        self.handlers.update(handlers or {})
        self.capabilities = capabilities if capabilities is not None else {"tools": {}, "prompts": {}, "resources": {}}
        self.received: list[dict[str, Any]] = []
        self.stream: MemoryMessageStream | None = None
        self._changed = trio.Event()
        self._next_id = 1000

    async def serve(self, stream: MemoryMessageStream, *, task_status: trio.TaskStatus[None]) -> None:
        self.stream = stream
        task_status.started()
        while True:
            try:
                message = await stream.receive()
            except ConnectionClosed:
                return
            self.received.append(message)
            self._changed.set()
            self._changed = trio.Event()
            if "method" not in message or "id" not in message:
                continue
            method, params = message["method"], message.get("params")
            try:
                if method == "initialize":
                    result: Any = initialize_result(params["protocolVersion"], capabilities=self.capabilities)
                elif method in self.handlers:
                    result = self.handlers[method](params)
                else:
                    raise McpError(-32601, f"Method not found: {method}")
            except McpError as exc:
                await self.send(
                    {"jsonrpc": "2.0", "id": message["id"], "error": {"code": exc.code, "message": exc.message}}
                )
                continue
            if result is not NO_ANSWER:
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    async def send(self, message: dict[str, Any]) -> None:
        assert self.stream is not None
        await self.stream.send(message)

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("method") == method]

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        seen = 0
        while True:
            for message in self.received[seen:]:
                if predicate(message):
                    return message
            seen = len(self.received)
            await self._changed.wait()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request to the client and return its whole response message."""
        request_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.wait_for(lambda m: m.get("id") == request_id and "method" not in m)


@asynccontextmanager
async def raw_client(raw: RawServer, **options: Any) -> AsyncIterator[Client]:
    client_end, server_end = memory_stream_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(raw.serve, server_end)
        async with open_client(client_end, **options) as client:
            yield client
        nursery.cancel_scope.cancel()


# -- typed calls -------------------------------------------------------------------------------------------


@TRANSPORTS
async def test_every_typed_method(transport: str) -> None:
    with trio.fail_after(10):
        async with connect(transport) as client:
            assert client.server_info.name == "client-test"
            assert client.instructions == "client tests"
            await client.ping()
            assert await client.request("ping") == {}
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"echo", "add", "nap", "ask_model"} <= set(tools)
            assert result_text(await client.call_tool("echo", {"text": "hi \u2603"})) == "hi \u2603"
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured_content == {"result": 5}
            assert (await client.call_tool("add", {"a": "x", "b": 3})).is_error is True

            resources = (await client.list_resources()).resources
            assert [r.uri for r in resources] == ["memo://one", "memo://two", "memo://three"]
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["users://{user_id}/profile", "files://{path}"]
            memo = (await client.read_resource("memo://one")).contents[0]
            assert isinstance(memo, TextResourceContents) and memo.text == "first memo"
            profile = (await client.read_resource("users://7/profile")).contents[0]
            assert isinstance(profile, TextResourceContents) and json.loads(profile.text) == {"id": 7}
            with pytest.raises(McpError) as missing:
                await client.read_resource("memo://nope")
            assert missing.value.code == -32002
            await client.subscribe_resource("memo://one")
            await client.unsubscribe_resource("memo://one")

            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == ["greet", "review", "plain"]
            greeting = await client.get_prompt("greet", {"name": "Ada"})
            assert text(greeting.messages[0].content) == "Hello, Ada!"
            completion = await client.complete(
                PromptReference(name="review"), CompletionArgument(name="language", value="p")
            )
            assert completion.completion.values == ["python", "pascal", "perl"]
            await client.set_logging_level("warning")
            await client.notify("notifications/custom", {"x": 1})  # unknown notifications are ignored
            await client.ping()


async def test_readme_client_still_works() -> None:
    updates: list[float] = []
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(
            [sys.executable, "-m", "trio_mcp.examples.bookshop"], protocol_version="2025-11-25"
        ) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "search_books" in names
            with trio.move_on_after(5):
                result = await client.call_tool(
                    "search_books", {"query": "dune"}, on_progress=lambda p: updates.append(p.progress)
                )
                assert result.structured_content is not None
    assert updates == sorted(updates) and updates


# -- paging --------------------------------------------------------------------------------------------------


@TRANSPORTS
async def test_iterators_walk_every_page(transport: str) -> None:
    with trio.fail_after(10):
        async with connect(transport, page_size=2) as client:
            first = await client.list_tools()
            assert len(first.tools) == 2 and first.next_cursor
            tools = [tool.name async for tool in client.iter_tools()]
            assert tools[:3] == ["echo", "add", "lying"] and "grow" in tools and len(tools) == len(set(tools))
            assert [r.uri async for r in client.iter_resources()] == ["memo://one", "memo://two", "memo://three"]
            assert [t.name async for t in client.iter_resource_templates()] == ["profile", "files"]
            assert [p.name async for p in client.iter_prompts()] == ["greet", "review", "plain"]
            with pytest.raises(RemoteProtocolError, match="tools/list.*after 2 pages"):
                async for _ in client.iter_tools(max_pages=2):
                    pass


async def test_a_server_that_repeats_its_cursor_is_caught() -> None:
    raw = RawServer(
        {
            "tools/list": lambda params: {
                "tools": [{"name": f"t{len(raw.requests('tools/list'))}", "inputSchema": {"type": "object"}}],
                "nextCursor": "again",
            },
            "prompts/list": lambda params: {
                "prompts": [],
                "nextCursor": {None: "A", "A": "B", "B": "A"}[(params or {}).get("cursor")],
            },
            "resources/list": lambda params: {"resources": [], "nextCursor": f"c{len(raw.requests('resources/list'))}"},
        }
    )
    with trio.fail_after(5):
        async with raw_client(raw, max_pages=5) as client:
            seen: list[str] = []
            with pytest.raises(RemoteProtocolError, match=r"tools/list: the server sent cursor 'again' a second time"):
                async for tool in client.iter_tools():
                    seen.append(tool.name)
            assert seen == ["t1"]
            assert len(raw.requests("tools/list")) == 2
            with pytest.raises(RemoteProtocolError, match="prompts/list.*'A' a second time"):
                [p async for p in client.iter_prompts()]
            assert [m.get("params", {}).get("cursor") for m in raw.requests("prompts/list")] == [None, "A", "B"]
            with pytest.raises(RemoteProtocolError, match="resources/list.*after 5 pages"):
                [r async for r in client.iter_resources()]
            assert len(raw.requests("resources/list")) == 5  # the cap is exact: no sixth request
            with pytest.raises(RemoteProtocolError, match="after 1 pages"):
                [r async for r in client.iter_resources(max_pages=1)]
    with pytest.raises(ValueError):
        Client(memory_stream_pair()[0], max_pages=0)


# -- structured output ---------------------------------------------------------------------------------------


@TRANSPORTS
async def test_structured_content_is_checked_against_the_output_schema(transport: str) -> None:
    with trio.fail_after(10):
        async with connect(transport) as client:
            # Not listed yet: the client knows no schema and does not list behind the caller's back.
            assert (await client.call_tool("lying")).structured_content == {"result": "nope"}
            await client.list_tools()
            with pytest.raises(StructuredContentError) as info:
                await client.call_tool("lying")
            assert info.value.tool == "lying"
            assert len(info.value.errors) == 1 and info.value.errors[0].startswith("$.result: expected integer")
            assert info.value.result.structured_content == {"result": "nope"}
            assert isinstance(info.value, RemoteProtocolError)
            unchecked = await client.call_tool("lying", validate_output=False)
            assert unchecked.structured_content == {"result": "nope"}
            assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}


async def test_output_schema_edge_cases() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    answers = iter(
        [
            {"content": []},  # no structuredContent at all
            {"content": [{"type": "text", "text": "broke"}], "isError": True},  # errors are not checked
            {"content": [], "structuredContent": {"n": 1}},
            {"content": [], "structuredContent": {"n": 2}},
        ]
    )
    raw = RawServer(
        {
            "tools/list": lambda params: {
                "tools": [{"name": "typed", "inputSchema": {"type": "object"}, "outputSchema": schema}]
            },
            "tools/call": lambda params: next(answers),
        }
    )
    with trio.fail_after(5):
        async with raw_client(raw) as client:
            assert [tool.name async for tool in client.iter_tools()] == ["typed"]
            with pytest.raises(StructuredContentError, match="returned no structuredContent"):
                await client.call_tool("typed")
            assert (await client.call_tool("typed")).is_error is True
            assert (await client.call_tool("typed")).structured_content == {"n": 1}
            # tools/list_changed forgets the schemas: they may no longer be true.
            await raw.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            await client.ping()
            assert client._output_schemas == {}
            assert (await client.call_tool("typed")).structured_content == {"n": 2}


# -- x-mcp-header ------------------------------------------------------------------------------------------


def _tool(name: str, properties: dict[str, Any], **schema: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties, **schema}}


async def test_tools_with_invalid_x_mcp_header_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(150):
        deep = {"anyOf": [deep]}
    tools = [
        _tool(
            "good",
            {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "X-Count!#$%&'*+.^_`|~"},
                "flag": {"type": ["boolean", "null"], "x-mcp-header": "Flag"},
                "nested": {"type": "object", "properties": {"id": {"type": "string", "x-mcp-header": "Id"}}},
                "x-mcp-header": {"type": "number"},  # a property *named* x-mcp-header is no annotation
                "doc": {"type": "object", "default": {"x-mcp-header": "in data"}},
            },
        ),
        _tool("plain", {"q": {"type": "string"}}),
        _tool("spaced", {"r": {"type": "string", "x-mcp-header": "Bad Name"}}),
        _tool("colon", {"r": {"type": "string", "x-mcp-header": "a:b"}}),
        _tool("empty", {"r": {"type": "string", "x-mcp-header": ""}}),
        _tool("not_text", {"r": {"type": "string", "x-mcp-header": 7}}),
        _tool("non_ascii", {"r": {"type": "string", "x-mcp-header": "Régión"}}),
        _tool(
            "twice",
            {"a": {"type": "string", "x-mcp-header": "Region"}, "b": {"type": "string", "x-mcp-header": "REGION"}},
        ),
        _tool("number", {"r": {"type": "number", "x-mcp-header": "Rate"}}),
        _tool("untyped", {"r": {"x-mcp-header": "Any"}}),
        _tool("array", {"r": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "List"}}),
        _tool("in_items", {"r": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}),
        _tool("in_anyof", {"r": {"anyOf": [{"type": "string", "x-mcp-header": "Alt"}]}}),
        _tool("in_defs", {"r": {"$ref": "#/$defs/R"}}, **{"$defs": {"R": {"type": "string", "x-mcp-header": "R"}}}),
        _tool("on_root", {}, **{"x-mcp-header": "Root"}),
        _tool("too_deep", {"r": deep}),
    ]
    raw = RawServer({"tools/list": lambda params: {"tools": tools}})
    with trio.fail_after(5):
        async with raw_client(raw) as client:
            with caplog.at_level(logging.WARNING, logger="trio_mcp.client"):
                listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == ["good", "plain"]
    warnings = {
        r.getMessage().split("'")[1]: r.getMessage() for r in caplog.records if "dropping tool" in r.getMessage()
    }
    assert set(warnings) == {t["name"] for t in tools} - {"good", "plain"}
    assert "not an RFC 9110 token" in warnings["spaced"]
    assert "not an RFC 9110 token" in warnings["colon"]
    assert "non-empty string" in warnings["empty"] and "non-empty string" in warnings["not_text"]
    assert "used twice" in warnings["twice"]
    assert "of type 'number'" in warnings["number"] and "of type None" in warnings["untyped"]
    for name in ("in_items", "in_anyof", "in_defs", "on_root"):
        assert "reachable through 'properties' alone" in warnings[name]
    assert "nests more than" in warnings["too_deep"]


# -- callbacks -----------------------------------------------------------------------------------------------


@TRANSPORTS
async def test_sampling_callback_with_and_without_tools(transport: str) -> None:
    seen: list[CreateMessageRequestParams] = []

    async def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
        seen.append(params)
        if params.tools:
            call = ToolUseContent(id="call-1", name=params.tools[0].name, input={"city": "Paris"})
            return CreateMessageResult(role="assistant", content=call, model="m", stop_reason="toolUse")
        return CreateMessageResult(role="assistant", content=TextContent(text="42"), model="m")

    with trio.fail_after(10):
        async with connect(transport, sampling=sampling, sampling_tools=True) as client:
            assert result_text(await client.call_tool("ask_model", {"prompt": "meaning?"})) == "42"
            used = await client.call_tool("ask_model_with_tools")
            assert used.structured_content == {
                "type": "tool_use",
                "name": "get_weather",
                "input": {"city": "Paris"},
                "stop": "toolUse",
            }
        assert seen[0].system_prompt == "be brief" and text(seen[0].messages[0].content) == "meaning?"
        assert seen[1].tools is not None and seen[1].tool_choice is not None and seen[1].tool_choice.mode == "auto"
        # Without sampling_tools the server may not send tools; ours refuses before asking.
        async with connect(transport, sampling=sampling) as client:
            with pytest.raises(McpError, match="sampling.tools"):
                await client.call_tool("ask_model_with_tools")


@TRANSPORTS
async def test_elicitation_form_with_defaults_and_url_mode(transport: str) -> None:
    requests: list[ElicitRequestParams] = []

    async def elicitation(params: ElicitRequestParams) -> ElicitResult:
        requests.append(params)
        if isinstance(params, ElicitRequestURLParams):
            return ElicitResult(action="accept")
        return ElicitResult(
            action="accept", content=fill_elicitation_defaults(params.requested_schema, {"name": "Ada"})
        )

    with trio.fail_after(10):
        async with connect(transport, elicitation=elicitation, elicitation_url=True) as client:
            answer = json.loads(result_text(await client.call_tool("ask_user")))
            assert answer == {
                "action": "accept",
                "content": {
                    "name": "Ada",
                    "age": 30,
                    "score": 95.5,
                    "status": "active",
                    "verified": True,
                    "tags": ["a", "c"],
                },
            }
            assert result_text(await client.call_tool("ask_url")) == "accept"
        form, url = requests
        assert isinstance(form, ElicitRequestFormParams) and form.message == "Tell us about yourself"
        assert isinstance(url, ElicitRequestURLParams)
        assert (url.url, url.elicitation_id) == ("https://example.com/login", "el-1")
        # Without elicitation_url the client does not declare URL mode, and the server does not ask.
        async with connect(transport, elicitation=elicitation) as client:
            with pytest.raises(McpError, match="elicitation.url"):
                await client.call_tool("ask_url")


def test_fill_elicitation_defaults() -> None:
    schema = test_server.DEFAULTS_FORM
    given = {"name": "Ada", "verified": False}
    filled = fill_elicitation_defaults(schema, given)
    assert filled == {
        "name": "Ada",
        "verified": False,
        "age": 30,
        "score": 95.5,
        "status": "active",
        "tags": ["a", "c"],
    }
    assert given == {"name": "Ada", "verified": False}  # not modified
    assert fill_elicitation_defaults(schema)["name"] == "John Doe"
    filled["tags"].append("b")
    assert schema["properties"]["tags"]["default"] == ["a", "c"]  # defaults are copied, not shared
    odd = {
        "properties": {
            "bad_enum": {"type": "string", "enum": ["x", "y"], "default": "z"},
            "bad_type": {"type": "integer", "default": "thirty"},
            "titled": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}], "default": "r"},
            "legacy": {"type": "string", "enum": ["a"], "enumNames": ["A"], "default": "a"},
            "none": {"type": "string"},
        }
    }
    assert fill_elicitation_defaults(odd) == {"titled": "r", "legacy": "a"}
    assert fill_elicitation_defaults({"type": "object"}, {"a": 1}) == {"a": 1}


@TRANSPORTS
async def test_roots_callback(transport: str) -> None:
    async def roots() -> list[Root]:
        return [Root(uri="file:///work", name="work"), Root(uri="file:///tmp")]

    with trio.fail_after(10):
        async with connect(transport, roots=roots) as client:
            assert result_text(await client.call_tool("where")) == "file:///work,file:///tmp"
            await client.notify_roots_changed()
            await client.ping()
        async with connect(transport) as client:
            with pytest.raises(RuntimeError, match="no roots handler"):
                await client.notify_roots_changed()


async def test_roots_list_changed_reaches_the_server() -> None:
    async def roots() -> list[Root]:
        return [Root(uri="file:///a")]

    raw = RawServer()
    with trio.fail_after(5):
        async with raw_client(raw, roots=roots) as client:
            await client.notify_roots_changed()
            await raw.wait_for(lambda m: m.get("method") == "notifications/roots/list_changed")
            answer = await raw.request("roots/list")
            assert answer["result"] == {"roots": [{"uri": "file:///a"}]}


@TRANSPORTS
async def test_log_resource_and_list_changed_callbacks(transport: str) -> None:
    logs: list[LoggingMessageNotificationParams] = []
    updated: list[str] = []
    changed: list[str] = []
    got_update = trio.Event()
    got_change = trio.Event()

    def on_resource_updated(uri: str) -> None:
        updated.append(uri)
        got_update.set()

    async def on_list_changed(kind: str) -> None:  # async callbacks are awaited
        changed.append(kind)
        got_change.set()

    with trio.fail_after(10):
        async with connect(
            transport, on_log=logs.append, on_resource_updated=on_resource_updated, on_list_changed=on_list_changed
        ) as client:
            await client.set_logging_level("debug")
            await client.call_tool("chatty")
            assert [(m.level, m.data, m.logger) for m in logs] == [
                ("debug", "debug line", None),
                ("info", {"event": "info line"}, None),
                ("warning", "warning line", "chatty"),
            ]
            await client.subscribe_resource("memo://two")
            await client.call_tool("touch", {"uri": "memo://two"})
            await got_update.wait()
            assert updated == ["memo://two"]
            await client.call_tool("grow", {"name": "late"})
            await got_change.wait()
            assert changed == ["tools"]
            assert result_text(await client.call_tool("late")) == "late"


@TRANSPORTS
async def test_a_raising_callback_answers_with_an_error_and_the_session_survives(transport: str) -> None:
    async def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
        raise RuntimeError("model offline")

    async def elicitation(params: ElicitRequestParams) -> ElicitResult:
        raise McpError(-32099, "user walked away", {"retry": False})

    async def roots() -> list[Root]:
        raise ValueError("no roots today")

    def on_log(params: LoggingMessageNotificationParams) -> None:
        raise KeyError("log sink broken")  # notification callbacks: logged, never raised

    with trio.fail_after(10):
        async with connect(transport, sampling=sampling, elicitation=elicitation, roots=roots, on_log=on_log) as client:
            reply = result_text(await client.call_tool("ask_model", {"prompt": "hi"}))
            # The server learns that the callback failed and the id the client logged it under, not its text.
            assert reply.startswith("error -32603: Internal error: the handler for sampling/createMessage")
            assert "model offline" not in reply
            assert result_text(await client.call_tool("ask_user")) == "error -32099: user walked away"
            where = result_text(await client.call_tool("where"))
            assert where.startswith("error -32603: Internal error: the handler for roots/list")
            assert "no roots today" not in where
            await client.set_logging_level("debug")
            assert result_text(await client.call_tool("chatty")) == "logged"
            assert result_text(await client.call_tool("echo", {"text": "still here"})) == "still here"
            assert client.session.statistics().inbound_in_flight == 0


async def test_callbacks_report_progress_and_are_refused_outside_capabilities() -> None:
    async def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
        await report_progress(0.5, 1.0, "thinking")
        await report_progress(1.0, 1.0)
        return CreateMessageResult(role="assistant", content=TextContent(text="done"), model="m")

    raw = RawServer()
    with trio.fail_after(5):
        async with raw_client(raw, sampling=sampling) as client:
            params = {
                "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
                "maxTokens": 5,
                "_meta": {"progressToken": "tok"},
            }
            answer = await raw.request("sampling/createMessage", params)
            assert answer["result"]["content"] == {"type": "text", "text": "done"}
            progress = [m["params"] for m in raw.requests("notifications/progress")]
            assert progress == [
                {"progressToken": "tok", "progress": 0.5, "total": 1.0, "message": "thinking"},
                {"progressToken": "tok", "progress": 1.0, "total": 1.0},
            ]
            # No progressToken: report_progress is a no-op.
            del params["_meta"]
            assert "result" in await raw.request("sampling/createMessage", params)
            # Tools in a sampling request need the sampling.tools capability, which was not declared.
            refused = await raw.request(
                "sampling/createMessage", {**params, "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
            )
            assert refused["error"]["code"] == -32602
            # Nothing registered for these: method not found.
            for method in ("elicitation/create", "roots/list"):
                assert (await raw.request(method, {"message": "m", "requestedSchema": {}}))["error"]["code"] == -32601
            assert client.session.statistics().inbound_in_flight == 0
    with pytest.raises(RuntimeError, match="only works inside a callback"):
        await report_progress(1.0)


@pytest.mark.parametrize(
    ("version", "options", "expected"),
    [
        ("2025-11-25", {}, {}),
        (
            "2025-11-25",
            {"roots": "r", "sampling": "s", "sampling_tools": True, "elicitation": "e", "elicitation_url": True},
            {"roots": {"listChanged": True}, "sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}}},
        ),
        ("2025-11-25", {"sampling": "s", "elicitation": "e"}, {"sampling": {}, "elicitation": {}}),
        (
            "2025-06-18",
            {"sampling": "s", "sampling_tools": True, "elicitation": "e", "elicitation_url": True},
            {"sampling": {}, "elicitation": {}},
        ),
        ("2025-03-26", {"roots": "r", "elicitation": "e"}, {"roots": {"listChanged": True}}),
        (
            "2025-11-25",
            {"sampling": "s", "elicitation": "e", "host_tasks": True},
            {
                "sampling": {},
                "elicitation": {},
                "tasks": {
                    "list": {},
                    "cancel": {},
                    "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}},
                },
            },
        ),
        (
            "2025-11-25",
            {"roots": "r", "sampling": "s", "host_tasks": True},
            {
                "roots": {"listChanged": True},
                "sampling": {},
                "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}},
            },
        ),
        ("2025-11-25", {"roots": "r", "host_tasks": True}, {"roots": {"listChanged": True}}),
        ("2025-06-18", {"sampling": "s", "host_tasks": True}, {"sampling": {}}),
    ],
)
async def test_capabilities_are_exactly_what_was_registered(
    version: str, options: dict[str, Any], expected: dict[str, Any]
) -> None:
    async def handler(*args: Any) -> Any:
        raise AssertionError("not called")

    callbacks = {key: handler if value in ("r", "s", "e") else value for key, value in options.items()}
    raw = RawServer()
    with trio.fail_after(5):
        async with raw_client(raw, protocol_version=version, **callbacks):
            pass
    assert raw.requests("initialize")[0]["params"]["capabilities"] == expected


# -- cancellation, timeouts, closing -------------------------------------------------------------------------


async def test_a_cancelled_call_sends_notifications_cancelled_and_returns_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(30):
        async with open_in_memory(test_server.make_server(), protocol_version="2025-11-25") as client:
            start = trio.current_time()
            with trio.move_on_after(1) as scope:
                await client.call_tool("nap", {"seconds": 60})
            assert scope.cancelled_caught
            assert trio.current_time() - start == pytest.approx(1)
            await client.ping()
            assert test_server.events == ["nap start", "nap cancelled"]


async def test_cancel_and_late_response_against_a_raw_peer() -> None:
    raw = RawServer({"tools/call": lambda params: NO_ANSWER})
    with trio.fail_after(5):
        async with raw_client(raw) as client:
            async with trio.open_nursery() as nursery:
                scope = trio.CancelScope()

                async def call() -> None:
                    with scope:
                        await client.call_tool("stuck")

                nursery.start_soon(call)
                request = await raw.wait_for(lambda m: m.get("method") == "tools/call")
                scope.cancel()
            cancel = await raw.wait_for(lambda m: m.get("method") == "notifications/cancelled")
            assert cancel["params"]["requestId"] == request["id"]
            assert len(raw.requests("notifications/cancelled")) == 1
            # The late answer is dropped; so are responses for ids never used and progress for unknown tokens.
            await raw.send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})
            await raw.send({"jsonrpc": "2.0", "id": 424242, "result": {}})
            await raw.send(
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 99, "progress": 1}}
            )
            await client.ping()
            assert client.session.statistics().outbound_pending == 0


async def test_timeouts_reset_on_progress_up_to_the_total(autojump_clock: trio.testing.MockClock) -> None:
    updates: list[ProgressNotificationParams] = []
    with trio.fail_after(100):
        async with open_in_memory(test_server.make_server(), protocol_version="2025-11-25") as client:
            # 10 updates 0.5 s apart: a 1 s timeout survives because each update restarts it.
            result = await client.call_tool(
                "progress", {"steps": 10, "interval": 0.5}, timeout=1, on_progress=updates.append
            )
            assert result.structured_content == {"result": 10}
            assert [u.progress for u in updates] == list(range(1, 11))
            assert updates[0].message == "step 1" and updates[0].total == 10

            # Without a progress callback nothing resets it.
            start = trio.current_time()
            with pytest.raises(RequestTimeout) as info:
                await client.call_tool("progress", {"steps": 10, "interval": 0.5}, timeout=1)
            assert trio.current_time() - start == pytest.approx(1)
            assert info.value.method == "tools/call" and info.value.timeout == 1

            # max_total_timeout caps the resets.
            start = trio.current_time()
            with pytest.raises(RequestTimeout):
                await client.call_tool(
                    "progress",
                    {"steps": 10, "interval": 0.5},
                    timeout=1,
                    on_progress=lambda p: None,
                    max_total_timeout=2.2,
                )
            assert trio.current_time() - start == pytest.approx(2.2)
            await client.ping()
            assert test_server.events.count("progress cancelled") == 2  # each timeout sent a courtesy cancel

            # A progress callback that raises is isolated: the call still completes.
            def explode(update: ProgressNotificationParams) -> None:
                raise RuntimeError("bad callback")

            done = await client.call_tool("progress", {"steps": 3, "interval": 0.1}, timeout=1, on_progress=explode)
            assert done.structured_content == {"result": 3}


async def test_per_client_and_per_call_timeouts(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(100):
        async with open_in_memory(
            test_server.make_server(), request_timeout=2, protocol_version="2025-11-25"
        ) as client:
            start = trio.current_time()
            with pytest.raises(RequestTimeout):
                await client.call_tool("nap", {"seconds": 10})
            assert trio.current_time() - start == pytest.approx(2)
            assert result_text(await client.call_tool("nap", {"seconds": 10}, timeout=None)) == "rested"
            assert result_text(await client.call_tool("nap", {"seconds": 3}, timeout=5)) == "rested"
            with pytest.raises(RequestTimeout):
                await client.ping(timeout=0)


async def test_closing_fails_pending_calls_at_once(autojump_clock: trio.testing.MockClock) -> None:
    errors: list[BaseException] = []
    with trio.fail_after(30):
        async with open_in_memory(test_server.make_server(), protocol_version="2025-11-25") as client:
            async with trio.open_nursery() as nursery:

                async def call(seconds: float) -> None:
                    try:
                        await client.call_tool("nap", {"seconds": seconds})
                    except ConnectionClosed as exc:
                        errors.append(exc)

                nursery.start_soon(call, 100)
                nursery.start_soon(call, 200)
                await trio.testing.wait_all_tasks_blocked()
                start = trio.current_time()
                await client.aclose()
                assert trio.current_time() == start
            assert len(errors) == 2
            with pytest.raises(ConnectionClosed):
                await client.ping()


async def test_closing_a_stdio_client_fails_pending_calls() -> None:
    errors: list[BaseException] = []
    with trio.fail_after(10):
        async with connect("stdio") as client:
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    try:
                        await client.call_tool("nap", {"seconds": 60})
                    except ConnectionClosed as exc:
                        errors.append(exc)

                nursery.start_soon(call)
                await client.ping()  # the call is on the wire before this answer comes back
                await client.aclose()
            assert len(errors) == 1


# -- ClientGroup -------------------------------------------------------------------------------------------


async def test_client_group_routes_namespaced_tools_and_isolates_failures(caplog: pytest.LogCaptureFixture) -> None:
    memo_server = test_server.make_server()
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            async with ClientGroup() as group:
                weather = await group.connect_stdio("weather", [sys.executable, str(SERVER_SCRIPT)])
                victim = await group.connect_stdio(
                    "victim", [sys.executable, str(SERVERS / "stdio_server.py")], stderr="capture"
                )
                client_end, server_end = memory_stream_pair()
                nursery.start_soon(memo_server.serve_connection, server_end)
                await group.connect("memo", client_end)
                assert group.names == ["weather", "victim", "memo"] and len(group) == 3 and "memo" in group
                assert group["weather"] is weather

                names = [tool.name for tool in await group.list_tools()]
                assert "weather.echo" in names and "victim.kill_self" in names and "memo.echo" in names
                assert names.index("weather.echo") < names.index("victim.echo") < names.index("memo.echo")
                assert result_text(await group.call_tool("weather.echo", {"text": "sun"})) == "sun"
                assert result_text(await group.call_tool("victim.echo", {"text": "v"})) == "v"
                assert (await group.call_tool("memo.add", {"a": 1, "b": 2})).structured_content == {"result": 3}

                with pytest.raises(ConnectionClosed, match="SIGKILL"):
                    await group.call_tool("victim.kill_self")
                with pytest.raises(ConnectionClosed):
                    await victim.ping()
                assert result_text(await group.call_tool("weather.echo", {"text": "still"})) == "still"
                with caplog.at_level(logging.WARNING, logger="trio_mcp.client"):
                    names = [tool.name for tool in await group.list_tools()]
                assert not any(name.startswith("victim.") for name in names) and "memo.echo" in names
                assert any("leaving out the tools of server 'victim'" in r.getMessage() for r in caplog.records)

                with pytest.raises(KeyError, match="no server called 'nowhere'"):
                    await group.call_tool("nowhere.echo")
                with pytest.raises(ValueError):
                    await group.call_tool("no-separator")
                with pytest.raises(ValueError, match="already in the group"):
                    await group.connect_stdio("weather", [sys.executable, str(SERVER_SCRIPT)])
                with pytest.raises(ValueError, match="must not contain"):
                    await group.connect_stdio("we.ather", [sys.executable, str(SERVER_SCRIPT)])
                with pytest.raises(ConnectionClosed, match="could not start"):
                    await group.connect_stdio("ghost", ["/nonexistent/mcp-server"])
                assert "ghost" not in group

                await group.disconnect("memo")
                assert group.names == ["weather", "victim"]
            assert weather.session.closed and victim.session.closed
            assert len(group) == 0
            nursery.cancel_scope.cancel()


async def test_client_group_with_another_separator_and_misuse() -> None:
    with trio.fail_after(10):
        group = ClientGroup(separator="__")
        with pytest.raises(RuntimeError, match="async with"):
            await group.connect("a", memory_stream_pair()[0])
        server = test_server.make_server()
        async with trio.open_nursery() as nursery:
            async with group:
                client_end, server_end = memory_stream_pair()
                nursery.start_soon(server.serve_connection, server_end)
                await group.connect("a.b", client_end)  # "." is fine when the separator is "__"
                assert group.split_name("a.b__echo") == ("a.b", "echo")
                assert result_text(await group.call_tool("a.b__echo", {"text": "x"})) == "x"
                assert "a.b__echo" in [tool.name for tool in await group.list_tools()]
            nursery.cancel_scope.cancel()
        with pytest.raises(RuntimeError, match="only once"):
            async with group:
                pass
    with pytest.raises(ValueError):
        ClientGroup(separator="")
