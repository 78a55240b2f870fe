"""The conformance fixture (tests/conformance/everything_server.py), checked over stdio with trio_mcp's client.

These are the expectations of the server scenarios that need no HTTP (``make conformance`` runs the official
suite itself against the fixture over HTTP: tests/conformance/run_suites.py), plus the 2026-07-28 diagnostic
tools, both on the legacy revisions and with 2026-07-28 requests (the per-request ``_meta`` envelope) sent
raw over the same connection. The last tests cover the fixture's HTTP start-up and run_suites.py's baseline
rules, without Node.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import signal
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio
from paths import ROOT
from transport_helpers import initialize_request
from waiting import Arrivals

import trio_mcp
from trio_mcp import McpError
from trio_mcp.types import (
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    AudioContent,
    BlobResourceContents,
    CompletionArgument,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)

REPO = ROOT
FIXTURE = REPO / "tests" / "conformance" / "everything_server.py"
RUN_SUITES = REPO / "tests" / "conformance" / "run_suites.py"
WATCHED_INTERVAL = 0.1

IMG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
#: 0.1.16 checks $schema, $defs.address and additionalProperties; 0.2.0-alpha also $anchor, allOf/anyOf, if/then/else.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
ROOT = Root(uri="file:///tmp/conformance-root", name="conformance root")

TOOLS_0_1_16 = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_reconnection",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
}
TOOLS_2026_07_28 = {
    "test_custom_header",
    "test_missing_capability",
    "test_logging_tool",
    "test_streaming_elicitation",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
}
PROMPTS = {
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
    "test_input_required_result_prompt",
}


class Recorder:
    """What the server sent outside responses, in arrival order."""

    def __init__(self) -> None:
        self.logs: list[LoggingMessageNotificationParams] = []
        self.list_changes: list[str] = []
        self.list_changed = Arrivals()
        self.updates: list[str] = []
        self.update_arrived = trio.Event()

    async def roots(self) -> list[Root]:
        return [ROOT]

    def on_log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    def on_list_changed(self, kind: str) -> None:
        self.list_changes.append(kind)
        self.list_changed.arrive()

    def on_resource_updated(self, uri: str) -> None:
        self.updates.append(uri)
        self.update_arrived.set()


@asynccontextmanager
async def fixture(recorder: Recorder | None = None, **options: Any) -> AsyncIterator[trio_mcp.Client]:
    recorder = recorder or Recorder()
    command = [sys.executable, str(FIXTURE), "--transport", "stdio", "--watched-interval", str(WATCHED_INTERVAL)]
    async with trio_mcp.open_stdio_client(
        command,
        cwd=REPO,
        roots=recorder.roots,
        on_log=recorder.on_log,
        on_list_changed=recorder.on_list_changed,
        on_resource_updated=recorder.on_resource_updated,
        # the legacy era, as the suite's 2025-11-25 scenarios speak it; 2026-07-28 requests are sent raw
        protocol_version=options.pop("protocol_version", "2025-11-25"),
        **options,
    ) as client:
        yield client


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


# -- lifecycle and utilities ------------------------------------------------------------------------------


async def test_initialize_capabilities_ping_and_set_level() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            # server-initialize; every scenario assumes these capabilities
            assert client.protocol_version == "2025-11-25"
            capabilities = client.server_capabilities
            assert capabilities.tools is not None
            assert capabilities.resources is not None and capabilities.resources.subscribe is True
            assert capabilities.prompts is not None
            assert capabilities.logging is not None
            assert capabilities.completions is not None
            # ping and logging-set-level: the results are exactly {}
            await client.ping()
            assert await client.request("ping") == {}
            await client.set_logging_level("info")
            assert await client.request("logging/setLevel", {"level": "info"}) == {}


# -- tools ------------------------------------------------------------------------------------------------


async def test_tools_list() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            listed = await client.list_tools()
            assert listed.next_cursor is None
            tools = {tool.name: tool for tool in listed.tools}
            assert TOOLS_0_1_16 | TOOLS_2026_07_28 <= set(tools)
            for tool in tools.values():
                assert tool.description, f"{tool.name} needs a non-empty description"
                assert tool.input_schema.get("type") == "object", tool.name
            # json-schema-2020-12: $schema, $defs and additionalProperties survive, verbatim
            assert tools["json_schema_2020_12_tool"].input_schema == JSON_SCHEMA_2020_12
            raw = await client.request("tools/list")
            [wire] = [tool for tool in raw["tools"] if tool["name"] == "json_schema_2020_12_tool"]
            assert wire["inputSchema"] == JSON_SCHEMA_2020_12
            assert list(wire["inputSchema"]) == list(JSON_SCHEMA_2020_12)
            assert tools["test_sampling"].input_schema["required"] == ["prompt"]
            assert tools["test_elicitation"].input_schema["required"] == ["message"]


async def test_content_tools() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            # tools-call-simple-text: called with no `arguments` key at all
            simple = await client.call_tool("test_simple_text")
            assert simple.content == [TextContent(text="This is a simple text response for testing.")]
            assert not simple.is_error

            image = await client.call_tool("test_image_content", {})
            assert image.content == [ImageContent(data=IMG, mime_type="image/png")]

            audio = await client.call_tool("test_audio_content", {})
            assert audio.content == [AudioContent(data=WAV, mime_type="audio/wav")]

            embedded = await client.call_tool("test_embedded_resource", {})
            assert embedded.content == [
                EmbeddedResource(
                    resource=TextResourceContents(
                        uri="test://embedded-resource",
                        mime_type="text/plain",
                        text="This is an embedded resource content.",
                    )
                )
            ]

            mixed = await client.call_tool("test_multiple_content_types", {})
            assert [block.type for block in mixed.content] == ["text", "image", "resource"]
            assert mixed.content[1] == ImageContent(data=IMG, mime_type="image/png")
            resource = mixed.content[2]
            assert isinstance(resource, EmbeddedResource)
            assert isinstance(resource.resource, TextResourceContents)
            assert resource.resource.uri == "test://mixed-content-resource"
            assert resource.resource.mime_type == "application/json"
            assert json.loads(resource.resource.text) == {"test": "data", "value": 123}

            # the exact wire shape the TypeScript client validates
            raw = await client.request("tools/call", {"name": "test_audio_content", "arguments": {}})
            assert raw["content"] == [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]


async def test_error_handling_is_a_tool_error_not_a_protocol_error() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            result = await client.call_tool("test_error_handling", {})
            assert result.is_error is True
            [text] = texts(result)
            assert "This tool intentionally returns an error for testing" in text


async def test_tool_with_logging() -> None:
    recorder = Recorder()
    with trio.fail_after(15):
        async with fixture(recorder) as client:
            # as the scenario does: setLevel debug must not filter the info messages out
            await client.set_logging_level("debug")
            recorder.logs.clear()
            start = trio.current_time()
            result = await client.call_tool("test_tool_with_logging", {})
            elapsed = trio.current_time() - start
            # arrived before the result, not merely within the harness's 200 ms grace
            assert [(log.level, log.data) for log in recorder.logs] == [
                ("info", "Tool execution started"),
                ("info", "Tool processing data"),
                ("info", "Tool execution completed"),
            ]
            assert elapsed >= 0.1  # two pauses of about 50 ms
            assert texts(result) == ["Tool with logging executed successfully"]


async def test_tool_with_progress() -> None:
    updates: list[ProgressNotificationParams] = []
    with trio.fail_after(15):
        async with fixture() as client:
            result = await client.call_tool("test_tool_with_progress", {}, on_progress=updates.append)
            assert [(update.progress, update.total) for update in updates] == [(0, 100), (50, 100), (100, 100)]
            # the token is the request id, a JSON integer, echoed unchanged
            tokens = {update.progress_token for update in updates}
            assert len(tokens) == 1 and type(tokens.pop()) is int
            assert texts(result)
            # without a token the tool still runs and sends nothing
            assert texts(await client.call_tool("test_tool_with_progress", {}))


async def test_reconnection_tool_takes_about_half_a_second() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            start = trio.current_time()
            result = await client.call_tool("test_reconnection", {})
            assert trio.current_time() - start >= 0.45
            [text] = texts(result)
            assert text.startswith("Reconnection test completed successfully")


async def test_json_schema_2020_12_tool_validates_with_its_own_schema() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            arguments = {
                "name": "Ada",
                "address": {"street": "1 Main St", "city": "London"},
                "email": "ada@example.org",
            }
            ok = await client.call_tool("json_schema_2020_12_tool", arguments)
            assert not ok.is_error
            [text] = texts(ok)
            assert json.loads(text.split(": ", 1)[1]) == arguments
            phone = {"name": "Ada", "contactMethod": "phone", "phone": "+44 20 0000 0000"}
            assert not (await client.call_tool("json_schema_2020_12_tool", phone)).is_error
            for bad in [
                {"name": "Ada", "email": "ada@example.org", "nickname": "A"},  # additionalProperties: false
                {"name": "Ada"},  # allOf/anyOf: a phone or an email
                {"name": "Ada", "contactMethod": "phone", "email": "ada@example.org"},  # if/then: needs the phone
            ]:
                assert (await client.call_tool("json_schema_2020_12_tool", bad)).is_error is True, bad


# Sampling and elicitation callbacks come with the client issue; until then the client declares neither
# capability, and the fixture's tools are refused by ctx.sample()/ctx.elicit() with an McpError.
async def test_sampling_and_elicitation_need_the_client_capability() -> None:
    cases = [
        ("test_sampling", {"prompt": "Test prompt for sampling"}, "sampling"),
        ("test_elicitation", {"message": "Please provide your information"}, "elicitation"),
        ("test_elicitation_sep1034_defaults", {}, "elicitation"),
        ("test_elicitation_sep1330_enums", {}, "elicitation"),
    ]
    with trio.fail_after(15):
        async with fixture() as client:
            for tool, arguments, capability in cases:
                with pytest.raises(McpError) as caught:
                    await client.call_tool(tool, arguments)
                assert f"did not declare the {capability} capability" in caught.value.message, tool


# -- resources --------------------------------------------------------------------------------------------


async def test_resources_list_and_read() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            listed = {resource.uri: resource for resource in (await client.list_resources()).resources}
            # The skill's two files are resources too (the sep-2640-* scenarios read them).
            skill = {"skill://pdf-processing/SKILL.md", "skill://pdf-processing/references/FORMS.md"}
            resources = {uri: resource for uri, resource in listed.items() if uri not in skill}
            assert set(listed) - set(resources) == skill
            assert set(resources) == {"test://static-text", "test://static-binary", "test://watched-resource"}
            for resource in resources.values():
                assert resource.name and resource.description and resource.mime_type

            text = await client.read_resource("test://static-text")
            assert text.contents == [
                TextResourceContents(
                    uri="test://static-text",
                    mime_type="text/plain",
                    text="This is the content of the static text resource.",
                )
            ]

            binary = await client.read_resource("test://static-binary")
            assert binary.contents == [
                BlobResourceContents(uri="test://static-binary", mime_type="image/png", blob=IMG)
            ]

            watched = await client.read_resource("test://watched-resource")
            [contents] = watched.contents
            assert isinstance(contents, TextResourceContents)
            assert contents.text.startswith("Watched resource content")


async def test_resource_template() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            [template] = (await client.list_resource_templates()).resource_templates
            assert template.uri_template == "test://template/{id}/data"
            assert template.name and template.mime_type == "application/json"

            read = await client.read_resource("test://template/123/data")
            assert read.contents == [
                TextResourceContents(
                    uri="test://template/123/data",
                    mime_type="application/json",
                    text='{"id":"123","templateTest":true,"data":"Data for ID: 123"}',
                )
            ]


async def test_unknown_resource_is_an_error_with_the_uri() -> None:
    # sep-2164: never an empty `contents`; -32002 on the legacy revisions (-32602 on 2026-07-28)
    uri = "test://nonexistent-resource-for-conformance-testing"
    with trio.fail_after(15):
        async with fixture() as client:
            with pytest.raises(McpError) as caught:
                await client.read_resource(uri)
            assert caught.value.code == -32002
            assert caught.value.data == {"uri": uri}


async def test_subscribe_and_unsubscribe_watched_resource() -> None:
    recorder = Recorder()
    uri = "test://watched-resource"
    with trio.fail_after(15):
        async with fixture(recorder) as client:
            # resources-subscribe / resources-unsubscribe: both answer exactly {}
            assert await client.request("resources/subscribe", {"uri": uri}) == {}
            await recorder.update_arrived.wait()
            assert set(recorder.updates) == {uri}
            first = await client.read_resource(uri)
            await client.unsubscribe_resource(uri)
            assert await client.request("resources/unsubscribe", {"uri": uri}) == {}
            await trio.sleep(WATCHED_INTERVAL * 4)  # let any update already on the wire arrive
            seen = len(recorder.updates)
            await trio.sleep(WATCHED_INTERVAL * 4)
            assert len(recorder.updates) == seen, "updates kept coming after unsubscribe"
            # the resource really changed
            assert (await client.read_resource(uri)).contents != first.contents
            # the typed method works too
            await client.subscribe_resource(uri)
            await client.unsubscribe_resource(uri)


# -- prompts ----------------------------------------------------------------------------------------------


async def test_prompts_list() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
            assert set(prompts) == PROMPTS
            for prompt in prompts.values():
                assert prompt.description, f"{prompt.name} needs a non-empty description"
            arguments = prompts["test_prompt_with_arguments"].arguments or []
            assert [(a.name, a.required, bool(a.description)) for a in arguments] == [
                ("arg1", True, True),
                ("arg2", True, True),
            ]
            [resource_uri] = prompts["test_prompt_with_embedded_resource"].arguments or []
            assert (resource_uri.name, resource_uri.required) == ("resourceUri", True)
            assert not prompts["test_simple_prompt"].arguments
            assert not prompts["test_prompt_with_image"].arguments


async def test_prompts_get() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            simple = await client.get_prompt("test_simple_prompt")
            assert [(m.role, m.content) for m in simple.messages] == [
                ("user", TextContent(text="This is a simple prompt for testing."))
            ]

            with_args = await client.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
            [message] = with_args.messages
            assert message.content == TextContent(text="Prompt with arguments: arg1='hello', arg2='world'")
            with pytest.raises(McpError):  # both arguments are required
                await client.get_prompt("test_prompt_with_arguments", {"arg1": "hello"})

            embedded = await client.get_prompt(
                "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
            )
            assert [m.content for m in embedded.messages] == [
                EmbeddedResource(
                    resource=TextResourceContents(
                        uri="test://example-resource",
                        mime_type="text/plain",
                        text="Embedded resource content for testing.",
                    )
                ),
                TextContent(text="Please process the embedded resource above."),
            ]

            image = await client.get_prompt("test_prompt_with_image")
            assert [m.content for m in image.messages] == [
                ImageContent(data=IMG, mime_type="image/png"),
                TextContent(text="Please analyze the image above."),
            ]
            assert all(m.role == "user" for m in image.messages + embedded.messages)


# -- completion -------------------------------------------------------------------------------------------


async def test_completion() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            # completion-complete sends exactly this; any list (even empty) passes
            ref = PromptReference(name="test_prompt_with_arguments")
            result = await client.complete(ref, CompletionArgument(name="arg1", value="test"))
            assert result.completion.values == ["test", "testing"]
            raw = await client.request(
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                    "argument": {"name": "arg1", "value": "test"},
                },
            )
            assert isinstance(raw["completion"]["values"], list)
            assert (await client.complete(ref, CompletionArgument(name="arg2", value="wo"))).completion.values == [
                "world"
            ]
            assert (await client.complete(ref, CompletionArgument(name="arg1", value="zzz"))).completion.values == []
            template = ResourceTemplateReference(uri="test://template/{id}/data")
            ids = await client.complete(template, CompletionArgument(name="id", value="1"))
            assert ids.completion.values == ["1", "123"]


# -- 2026-07-28 diagnostic tools on the legacy revisions --------------------------------------------------


async def test_list_change_triggers() -> None:
    recorder = Recorder()
    with trio.fail_after(15):
        async with fixture(recorder) as client:
            before = {tool.name for tool in (await client.list_tools()).tools}
            assert texts(await client.call_tool("test_trigger_tool_change", {})) == ["Tool list change published."]
            assert texts(await client.call_tool("test_trigger_prompt_change", {})) == ["Prompt list change published."]
            with trio.fail_after(5):
                while not {"tools", "prompts"} <= set(recorder.list_changes):
                    await recorder.list_changed.wait_for(len(recorder.list_changes) + 1)
            # the dynamic entries come and go within the call
            assert {tool.name for tool in (await client.list_tools()).tools} == before
            assert {prompt.name for prompt in (await client.list_prompts()).prompts} == PROMPTS


async def test_logging_tool_follows_the_session_level() -> None:
    recorder = Recorder()
    with trio.fail_after(15):
        async with fixture(recorder) as client:
            assert texts(await client.call_tool("test_logging_tool", {})) == ["Logging tool executed."]
            assert [(log.level, log.data) for log in recorder.logs] == [("info", "test_logging_tool ran")]
            await client.set_logging_level("warning")
            await client.call_tool("test_logging_tool", {})
            assert len(recorder.logs) == 1


async def test_input_tools_on_the_legacy_revisions() -> None:
    # The client declares roots only: roots questions are asked as roots/list requests, the rest refused.
    refused = [
        ("test_missing_capability", "sampling"),
        ("test_streaming_elicitation", "elicitation"),
        ("test_input_required_result_elicitation", "elicitation"),
        ("test_input_required_result_sampling", "sampling"),
        ("test_input_required_result_request_state", "elicitation"),
        ("test_input_required_result_tampered_state", "elicitation"),
        ("test_input_required_result_multiple_inputs", "elicitation"),
        ("test_input_required_result_multi_round", "elicitation"),
    ]
    with trio.fail_after(15):
        async with fixture() as client:
            roots = await client.call_tool("test_input_required_result_list_roots", {})
            assert texts(roots) == [f"Client roots (1): {ROOT.uri}"]
            capabilities = await client.call_tool("test_input_required_result_capabilities", {})
            assert texts(capabilities) == ["roots: 1"]
            for tool, capability in refused:
                with pytest.raises(McpError) as caught:
                    await client.call_tool(tool, {})
                assert caught.value.code == -32601, tool
                assert f"did not declare the {capability} capability" in caught.value.message, tool
            with pytest.raises(McpError) as caught:
                await client.get_prompt("test_input_required_result_prompt")
            assert "did not declare the elicitation capability" in caught.value.message


async def test_multiple_inputs_are_asked_concurrently_on_the_legacy_revisions() -> None:
    # The three asks run at once: each callback waits until all three requests have arrived.
    arrived: list[str] = []
    all_arrived = trio.Event()

    async def wait_for_the_others(method: str) -> None:
        arrived.append(method)
        if len(arrived) == 3:
            all_arrived.set()
        await all_arrived.wait()

    async def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
        await wait_for_the_others("sampling")
        assert params.max_tokens == 50
        return CreateMessageResult(role="assistant", content=TextContent(text="Hello there!"), model="test-model")

    async def elicitation(params: ElicitRequestParams) -> ElicitResult:
        await wait_for_the_others("elicitation")
        return ElicitResult(action="accept", content={"name": "Alice"})

    class WaitingRecorder(Recorder):
        async def roots(self) -> list[Root]:
            await wait_for_the_others("roots")
            return [ROOT]

    with trio.fail_after(15):
        async with fixture(WaitingRecorder(), sampling=sampling, elicitation=elicitation) as client:
            result = await client.call_tool("test_input_required_result_multiple_inputs", {})
    assert sorted(arrived) == ["elicitation", "roots", "sampling"]
    assert texts(result) == ["Name: Alice; greeting: Hello there!; roots: 1"]


# -- 2026-07-28 requests (the per-request _meta envelope), sent over the same stdio connection ---------------


async def modern(
    client: trio_mcp.Client,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
    log_level: str | None = None,
) -> Any:
    meta: dict[str, Any] = {
        META_PROTOCOL_VERSION: "2026-07-28",
        META_CLIENT_CAPABILITIES: capabilities if capabilities is not None else {},
    }
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    return await client.request(method, {**(params or {}), "_meta": meta})


def call(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "arguments": {}, **extra}


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def sampled(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "test-model"}


def complete_texts(result: dict[str, Any]) -> list[str]:
    assert result["resultType"] == "complete", result
    return [block["text"] for block in result["content"] if block["type"] == "text"]


def name_form(field: str) -> dict[str, Any]:
    return {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}


async def test_modern_missing_capability_and_logging() -> None:
    recorder = Recorder()
    with trio.fail_after(15):
        async with fixture(recorder) as client:
            with pytest.raises(McpError) as caught:
                await modern(client, "tools/call", call("test_missing_capability"))
            assert caught.value.code == -32021
            assert caught.value.data == {"requiredCapabilities": {"sampling": {}}}

            # no log message for a request without a logLevel, one with it
            assert complete_texts(await modern(client, "tools/call", call("test_logging_tool"))) == [
                "Logging tool executed."
            ]
            assert recorder.logs == []
            await modern(client, "tools/call", call("test_logging_tool"), log_level="info")
            assert [(log.level, log.data) for log in recorder.logs] == [("info", "test_logging_tool ran")]


async def test_modern_caching_hints_and_missing_resource() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            for method, params in [
                ("tools/list", {}),
                ("prompts/list", {}),
                ("resources/list", {}),
                ("resources/templates/list", {}),
                ("resources/read", {"uri": "test://static-text"}),
            ]:
                result = await modern(client, method, params)
                assert type(result["ttlMs"]) is int and result["ttlMs"] >= 0, method
                assert result["cacheScope"] in ("public", "private"), method
            uri = "test://nonexistent-resource-for-conformance-testing"
            with pytest.raises(McpError) as caught:
                await modern(client, "resources/read", {"uri": uri})
            assert caught.value.code == -32602
            assert caught.value.data == {"uri": uri}


async def test_modern_elicitation_round_trip() -> None:
    tool = "test_input_required_result_elicitation"
    with trio.fail_after(15):
        async with fixture() as client:
            first = await modern(client, "tools/call", call(tool), capabilities={"elicitation": {}})
            assert first["resultType"] == "input_required"
            assert first["inputRequests"] == {
                "user_name": {
                    "method": "elicitation/create",
                    "params": {"message": "What is your name?", "requestedSchema": name_form("name")},
                }
            }
            state = first["requestState"]
            assert isinstance(state, str)
            done = await modern(
                client,
                "tools/call",
                call(tool, inputResponses={"user_name": accept(name="Alice")}, requestState=state),
                capabilities={"elicitation": {}},
            )
            assert complete_texts(done) == ["Hello, Alice!"]
            # a wrong key: asked again, not an error
            again = await modern(
                client,
                "tools/call",
                call(tool, inputResponses={"other": accept(name="Bob")}, requestState=state),
                capabilities={"elicitation": {}},
            )
            assert again["resultType"] == "input_required" and set(again["inputRequests"]) == {"user_name"}
            # extra keys are ignored
            extra = await modern(
                client,
                "tools/call",
                call(tool, inputResponses={"user_name": accept(name="Eve"), "unrelated": accept(x=1)}),
                capabilities={"elicitation": {}},
            )
            assert complete_texts(extra) == ["Hello, Eve!"]


async def test_modern_sampling_and_roots_round_trips() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            first = await modern(
                client, "tools/call", call("test_input_required_result_sampling"), capabilities={"sampling": {}}
            )
            assert first["inputRequests"] == {
                "capital_question": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [
                            {"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}
                        ],
                        "maxTokens": 100,
                    },
                }
            }
            done = await modern(
                client,
                "tools/call",
                call(
                    "test_input_required_result_sampling",
                    inputResponses={"capital_question": sampled("Paris")},
                    requestState=first["requestState"],
                ),
                capabilities={"sampling": {}},
            )
            assert complete_texts(done) == ["The model answered: Paris"]

            roots = await modern(
                client, "tools/call", call("test_input_required_result_list_roots"), capabilities={"roots": {}}
            )
            assert roots["inputRequests"] == {"client_roots": {"method": "roots/list", "params": {}}}
            listed = await modern(
                client,
                "tools/call",
                call(
                    "test_input_required_result_list_roots",
                    inputResponses={"client_roots": {"roots": [{"uri": ROOT.uri}]}},
                    requestState=roots["requestState"],
                ),
                capabilities={"roots": {}},
            )
            assert complete_texts(listed) == [f"Client roots (1): {ROOT.uri}"]

            # only what this request declared: sampling, no elicitation
            only_sampling = await modern(
                client, "tools/call", call("test_input_required_result_capabilities"), capabilities={"sampling": {}}
            )
            [(key, request)] = only_sampling["inputRequests"].items()
            assert request["method"] == "sampling/createMessage"


async def test_modern_request_state() -> None:
    with trio.fail_after(15):
        async with fixture() as client:
            caps: dict[str, Any] = {"elicitation": {}}
            for tool in ("test_input_required_result_request_state", "test_input_required_result_tampered_state"):
                first = await modern(client, "tools/call", call(tool), capabilities=caps)
                assert first["inputRequests"]["confirm"]["method"] == "elicitation/create"
                state = first["requestState"]
                answer = {"confirm": accept(ok=True)}
                done = await modern(
                    client, "tools/call", call(tool, inputResponses=answer, requestState=state), capabilities=caps
                )
                assert complete_texts(done) == ["state-ok: confirmed=True"]
                with pytest.raises(McpError) as caught:
                    await modern(
                        client,
                        "tools/call",
                        call(tool, inputResponses=answer, requestState=state + "-TAMPERED"),
                        capabilities=caps,
                    )
                assert caught.value.code == -32602, tool


async def test_modern_multi_round_and_prompt() -> None:
    tool = "test_input_required_result_multi_round"
    caps: dict[str, Any] = {"elicitation": {}}
    with trio.fail_after(15):
        async with fixture() as client:
            round1 = await modern(client, "tools/call", call(tool), capabilities=caps)
            assert round1["inputRequests"] == {
                "step1": {
                    "method": "elicitation/create",
                    "params": {"message": "Step 1: What is your name?", "requestedSchema": name_form("name")},
                }
            }
            round2 = await modern(
                client,
                "tools/call",
                call(tool, inputResponses={"step1": accept(name="Ada")}, requestState=round1["requestState"]),
                capabilities=caps,
            )
            assert list(round2["inputRequests"]) == ["step2"]
            assert round2["requestState"] != round1["requestState"]
            round3 = await modern(
                client,
                "tools/call",
                call(tool, inputResponses={"step2": accept(color="green")}, requestState=round2["requestState"]),
                capabilities=caps,
            )
            assert complete_texts(round3) == ["Ada likes green."]

            prompt = await modern(
                client, "prompts/get", {"name": "test_input_required_result_prompt"}, capabilities=caps
            )
            assert prompt["resultType"] == "input_required"
            assert prompt["inputRequests"]["user_context"]["params"]["message"] == "What context should the prompt use?"
            rendered = await modern(
                client,
                "prompts/get",
                {
                    "name": "test_input_required_result_prompt",
                    "inputResponses": {"user_context": accept(context="testing")},
                    "requestState": prompt["requestState"],
                },
                capabilities=caps,
            )
            assert rendered["resultType"] == "complete"
            assert rendered["messages"][0]["content"]["text"] == "Answer in this context: testing"


async def test_modern_multiple_inputs_in_one_round() -> None:
    # input-required-result-multiple-input-requests: all three questions in the first InputRequiredResult.
    tool = "test_input_required_result_multiple_inputs"
    caps: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
    answers = {
        "user_name": accept(name="Alice"),
        "greeting": sampled("Hello there!"),
        "client_roots": {"roots": [{"uri": ROOT.uri}]},
    }
    with trio.fail_after(15):
        async with fixture() as client:
            first = await modern(client, "tools/call", call(tool), capabilities=caps)
            assert first["resultType"] == "input_required"
            assert first["inputRequests"] == {
                "user_name": {
                    "method": "elicitation/create",
                    "params": {"message": "What is your name?", "requestedSchema": name_form("name")},
                },
                "greeting": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                        "maxTokens": 50,
                    },
                },
                "client_roots": {"method": "roots/list", "params": {}},
            }
            state = first["requestState"]
            done = await modern(
                client, "tools/call", call(tool, inputResponses=answers, requestState=state), capabilities=caps
            )
            assert complete_texts(done) == ["Name: Alice; greeting: Hello there!; roots: 1"]

            # a partial answer: the next round asks for what is still missing, and keeps the answer given
            partial = await modern(
                client,
                "tools/call",
                call(tool, inputResponses={"user_name": answers["user_name"]}, requestState=state),
                capabilities=caps,
            )
            assert set(partial["inputRequests"]) == {"greeting", "client_roots"}
            rest = {key: answers[key] for key in ("greeting", "client_roots")}
            finished = await modern(
                client,
                "tools/call",
                call(tool, inputResponses=rest, requestState=partial["requestState"]),
                capabilities=caps,
            )
            assert complete_texts(finished) == ["Name: Alice; greeting: Hello there!; roots: 1"]

            # a capability this request did not declare fails the whole request, not one of its questions
            with pytest.raises(McpError) as caught:
                await modern(client, "tools/call", call(tool), capabilities={"elicitation": {}, "roots": {}})
            assert caught.value.code == -32021
            assert caught.value.data == {"requiredCapabilities": {"sampling": {}}}


async def test_custom_header_tool() -> None:
    # http-custom-header-server-validation needs a tool whose string parameter carries x-mcp-header; over
    # stdio there are no headers and the tool just runs.
    with trio.fail_after(15):
        async with fixture() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            schema = tools["test_custom_header"].input_schema
            assert schema["properties"]["region"]["type"] == "string"
            assert schema["properties"]["region"]["x-mcp-header"] == "Region"
            assert schema["required"] == ["region"]
            assert texts(await client.call_tool("test_custom_header", {"region": "eu-west"})) == ["Region: eu-west"]


# -- command line and HTTP --------------------------------------------------------------------------------


async def http_post(port: int, host_header: str, body: dict[str, Any]) -> tuple[int, bytes]:
    """One raw HTTP/1.1 POST to /mcp (Connection: close); the status and everything read until EOF."""
    payload = json.dumps(body).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host_header}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(payload)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(head + payload)
        received = b""
        while chunk := await stream.receive_some(65536):
            received += chunk
    status = int(received.split(b" ", 2)[1])
    return status, received


async def test_http_mode_reports_a_free_port_and_serves() -> None:
    initialize = initialize_request(id=1, client="fixture-test")
    command = [sys.executable, str(FIXTURE), "--transport", "http", "--host", "127.0.0.1", "--port", "0"]
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            process = await nursery.start(
                functools.partial(trio.run_process, command, cwd=REPO, stdout=subprocess.PIPE, check=False)
            )
            try:
                line = b""
                while not line.endswith(b"\n"):
                    chunk = await process.stdout.receive_some(1)
                    assert chunk, "the fixture exited before reporting its port"
                    line += chunk
                match = re.fullmatch(rb"everything_server: serving http://127\.0\.0\.1:(\d+)/mcp\n", line)
                assert match, line
                port = int(match.group(1))
                assert port != 0
                status, received = await http_post(port, f"localhost:{port}", initialize)
                assert status == 200, received
                assert b'"protocolVersion":"2025-11-25"' in received.replace(b" ", b"")
                # dns-rebinding-protection: a foreign Host is refused
                status, received = await http_post(port, "evil.example.com", initialize)
                assert 400 <= status < 500, received
            finally:
                process.send_signal(signal.SIGINT)
    assert process.returncode == 0


# -- tests/conformance/run_suites.py: its baseline rules (no Node needed) --------------------------------


def load_run_suites() -> Any:
    spec = importlib.util.spec_from_file_location("run_suites", RUN_SUITES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_suites"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def check(ident: str, status: str) -> dict[str, Any]:
    return {"id": ident, "name": ident, "status": status}


def test_run_suites_baseline_rules() -> None:
    run_suites = load_run_suites()
    checks = {
        "ok": [check("a", "SUCCESS"), check("traffic", "INFO")],
        "broken": [check("a", "SUCCESS"), check("b", "FAILURE"), check("b", "SUCCESS")],
        "warns": [check("w", "WARNING")],
        "skipped": [check("s", "SKIPPED")],
        "silent": [],
        "absent": None,
    }
    scenarios = list(checks)

    bare = run_suites.evaluate(scenarios, checks, [])
    assert (bare.passed, bare.failed, bare.warnings, bare.skipped) == (3, 4, 1, 1)
    assert bare.unexpected == [
        "broken:b",
        "warns:w (WARNING)",  # a WARNING fails under a baseline, as in the suite
        "silent:(no checks recorded)",  # the "0 passed, 0 failed" trap
        "absent:(no checks recorded)",
    ]
    assert not bare.ok

    listed = run_suites.evaluate(scenarios, checks, ["broken:b", "warns", "silent", "absent"])
    assert listed.ok and listed.unexpected == [] and listed.stale == []
    assert len(listed.expected) == 4

    stale = run_suites.evaluate(
        scenarios, checks, ["broken:b", "warns", "silent", "absent", "ok", "skipped:s", "broken:a", "gone"]
    )
    assert [entry.split(" ")[0] for entry in stale.stale] == ["ok", "skipped:s", "broken:a", "gone"]
    assert "scenario not run" in stale.stale[-1]
    assert not stale.ok


def test_run_suites_baseline_files(tmp_path: Path) -> None:
    run_suites = load_run_suites()
    for run in run_suites.RUNS:
        entries = run_suites.read_baseline(
            REPO / "tests" / "conformance" / run.baseline, check_entries=run.check_entries
        )
        assert all(entry.startswith("tasks-") for entry in entries), (run.baseline, entries)

    unexplained = tmp_path / "unexplained.yml"
    unexplained.write_text("server:\n  # a reason\n  - ping\n  - tools-list\n")
    with pytest.raises(run_suites.SetupError, match="'tools-list' has no '# reason' comment"):
        run_suites.read_baseline(unexplained, check_entries=True)
    per_check = tmp_path / "per-check.yml"
    per_check.write_text("server:\n  - ping:ping  # a reason\n")
    assert run_suites.read_baseline(per_check, check_entries=True) == ["ping:ping"]
    with pytest.raises(run_suites.SetupError, match="whole scenario names only"):
        run_suites.read_baseline(per_check, check_entries=False)
