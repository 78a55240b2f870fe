"""The "everything server" the official MCP conformance suite runs its server scenarios against.

Built only on trio_mcp's public API. It mirrors the names and contents the server scenarios of
``@modelcontextprotocol/conformance`` 0.1.16 and 0.2.0-alpha.12 check, on the legacy revisions and on
2026-07-28 (stateless requests, multi round-trip input, Mcp-Param headers). tests/conformance/run_suites.py
runs both suite versions against it; docs/conformance.md says which runs and what is not covered yet.

    python tests/conformance/everything_server.py --transport stdio
    python tests/conformance/everything_server.py --transport http --host 127.0.0.1 --port 3001

Over HTTP, ``--port 0`` binds a free port; the endpoint is then printed on stdout as
``everything_server: serving http://HOST:PORT/mcp`` (tests/conformance/run_suites.py reads it).

``--watched-interval`` sets how often ``test://watched-resource`` changes (and subscribers are told).
"""

from __future__ import annotations

import argparse
import base64
import functools
import json
import signal
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, AsyncIterator, Awaitable, Callable, Sequence

import trio

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]  # on 3.10

from trio_mcp import Context, Field, McpError, Server, ToolError
from trio_mcp.types import (
    AudioContent,
    CompletionArgument,
    CompletionContext,
    EmbeddedResource,
    ImageContent,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
)

# -- fixture data (the same bytes as the reference fixtures) -------------------------------------------

#: A 1x1 PNG.
IMG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
#: A tiny WAV.
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

#: Listed verbatim by ``tools/list`` (scenario json-schema-2020-12). One schema serves both suite versions:
#: 0.1.16 checks ``$schema``, ``$defs.address`` and ``additionalProperties: false`` (SEP-1613); 0.2.0-alpha
#: also checks that ``$anchor``, ``allOf``/``anyOf`` and ``if``/``then``/``else`` survive (SEP-2106).
JSON_SCHEMA_2020_12: dict[str, Any] = {
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

#: The form tools-call-elicitation describes; the harness answers ``accept {username, email}``.
ELICITATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

#: SEP-1034: a default for every primitive type (``age`` is an integer, not a number).
SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

#: SEP-1330: the five enum shapes.
SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}

#: Suggestions ``completion/complete`` filters by prefix.
#: The skill folders the fixture serves (one, with a subdirectory for resources/directory/read).
SKILLS = Path(__file__).resolve().parent / "skills"
PROMPT_ARGUMENT_SUGGESTIONS = ("hello", "help", "test", "testing", "world")
TEMPLATE_ID_SUGGESTIONS = ("1", "2", "3", "123")


def _string_form(*names: str) -> dict[str, Any]:
    """A flat elicitation form of required string fields."""
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}, "required": list(names)}


_BOOLEAN_FORM: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _sampled_text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    texts = [block.text for block in blocks if isinstance(block, TextContent)]
    return " ".join(texts) if texts else "(no text in the model's reply)"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


async def ask_concurrently(*asks: Callable[[], Awaitable[Any]]) -> list[Any]:
    """Run ``asks`` concurrently in one nursery; their results in order.

    A refusal (``McpError``, e.g. a capability the client did not declare) wins over everything else and is
    raised on its own, so the request fails with that error. Otherwise whatever the asks raised propagates as
    the nursery's group: on 2026-07-28 a group of ``InputRequired`` is how trio_mcp learns to put every
    unanswered ask into one InputRequiredResult.
    """
    results: list[Any] = [None] * len(asks)
    refusals: dict[int, McpError] = {}

    async def run(index: int, ask: Callable[[], Awaitable[Any]]) -> None:
        try:
            results[index] = await ask()
        except McpError as exc:
            refusals[index] = exc
            raise

    try:
        async with trio.open_nursery() as nursery:
            for index, ask in enumerate(asks):
                nursery.start_soon(run, index, ask)
    except BaseExceptionGroup:
        if not refusals:
            raise
        # the refusal of the earliest ask in argument order, whichever task happened to run first
        raise refusals[min(refusals)] from None
    return results


def create_server(*, watched_interval: float | None = 3.0) -> Server:
    """Build the fixture; ``watched_interval`` (seconds, None: never) paces updates of the watched resource."""
    watched: dict[str, Any] = {"content": "Watched resource content", "version": 0}

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        async with trio.open_nursery() as nursery:
            if watched_interval is not None:
                nursery.start_soon(update_watched_resource, server)
            yield None
            nursery.cancel_scope.cancel()

    async def update_watched_resource(server: Server) -> None:
        assert watched_interval is not None
        while True:
            await trio.sleep(watched_interval)
            watched["version"] += 1
            watched["content"] = f"Watched resource content (update {watched['version']})"
            server.notify_resource_updated("test://watched-resource")

    # 2026-07-28 `caching`: trio_mcp adds ttlMs/cacheScope to list and read results; the default ttlMs of 0
    # suits this fixture, whose tool and prompt lists change under test_trigger_*_change.
    server = Server("trio-mcp-conformance-everything-server", "1.0.0", lifespan=lifespan)

    # ===== tools: 0.1.16 scenarios ======================================================================

    @server.tool("test_simple_text", description="Tests simple text content response")
    async def simple_text() -> str:
        return "This is a simple text response for testing."

    @server.tool("test_image_content", description="Tests image content response")
    async def image_content() -> ImageContent:
        return ImageContent(data=IMG, mime_type="image/png")

    @server.tool("test_audio_content", description="Tests audio content response")
    async def audio_content() -> AudioContent:
        return AudioContent(data=WAV, mime_type="audio/wav")

    @server.tool("test_embedded_resource", description="Tests embedded resource content response")
    async def embedded_resource() -> EmbeddedResource:
        return EmbeddedResource(
            resource=TextResourceContents(
                uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
            )
        )

    @server.tool(
        "test_multiple_content_types", description="Tests response with multiple content types (text, image, resource)"
    )
    async def multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        return [
            TextContent(text="Multiple content types test:"),
            ImageContent(data=IMG, mime_type="image/png"),
            EmbeddedResource(
                resource=TextResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text=_dumps({"test": "data", "value": 123}),
                )
            ),
        ]

    @server.tool("test_tool_with_logging", description="Tests tool that emits log messages during execution")
    async def tool_with_logging(ctx: Context) -> str:
        await ctx.info("Tool execution started")
        await trio.sleep(0.05)
        await ctx.info("Tool processing data")
        await trio.sleep(0.05)
        await ctx.info("Tool execution completed")
        return "Tool with logging executed successfully"

    @server.tool("test_tool_with_progress", description="Tests tool that reports progress notifications")
    async def tool_with_progress(ctx: Context) -> str:
        # report_progress echoes the request's progressToken (an integer from the TypeScript client) and
        # sends nothing when the request carries none.
        for step in (0, 50, 100):
            if step:
                await trio.sleep(0.05)
            await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        return f"Progress reported for token {ctx.meta.get('progressToken')!r}"

    @server.tool("test_error_handling", description="Tests error response handling")
    async def error_handling() -> str:
        # A ToolError becomes an isError result with its message (not a JSON-RPC error); any other exception
        # would become one too, saying only that the tool failed and the error id.
        raise ToolError("This tool intentionally returns an error for testing")

    @server.tool(
        "test_reconnection",
        description="Tests SSE stream disconnection and client reconnection (SEP-1699): the call takes about "
        "half a second, long enough for the server to close the stream mid-call.",
    )
    async def reconnection(ctx: Context) -> str:
        # SEP-1699 polling: end the POST's SSE stream mid-call; the client resumes with GET + Last-Event-ID
        # and gets the result from the event store. Over stdio (or stateless HTTP) this is just a slow call.
        await trio.sleep(0.1)
        await ctx.close_sse_stream()
        await trio.sleep(0.4)
        return (
            "Reconnection test completed successfully. If you received this, the client properly reconnected "
            "after stream closure."
        )

    @server.tool("test_sampling", description="Tests server-initiated sampling (LLM completion request)")
    async def sampling(prompt: Annotated[str, Field(description="The prompt to send to the LLM")], ctx: Context) -> str:
        # Refused with McpError when the client did not declare sampling.
        result = await ctx.sample(prompt, max_tokens=100)
        return f"LLM response: {_sampled_text(result.content)}"

    @server.tool("test_elicitation", description="Tests server-initiated elicitation (user input request)")
    async def elicitation(
        message: Annotated[str, Field(description="The message to show the user")], ctx: Context
    ) -> str:
        # Refused with McpError when the client did not declare elicitation.
        result = await ctx.elicit(message, ELICITATION_SCHEMA)
        return f"User response: action={result.action}, content={_dumps(result.content or {})}"

    @server.tool("test_elicitation_sep1034_defaults", description="Tests elicitation with default values per SEP-1034")
    async def elicitation_sep1034_defaults(ctx: Context) -> str:
        result = await ctx.elicit("Please review and update the form fields with defaults", SEP1034_SCHEMA)
        return f"Elicitation completed: action={result.action}, content={_dumps(result.content or {})}"

    @server.tool(
        "test_elicitation_sep1330_enums", description="Tests elicitation with enum schema improvements per SEP-1330"
    )
    async def elicitation_sep1330_enums(ctx: Context) -> str:
        result = await ctx.elicit("Please select options from the enum fields", SEP1330_SCHEMA)
        return f"Elicitation completed: action={result.action}, content={_dumps(result.content or {})}"

    @server.tool(
        "json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        input_schema=JSON_SCHEMA_2020_12,
    )
    async def json_schema_2020_12_tool(**arguments: Any) -> str:
        return f"JSON Schema 2020-12 tool called with: {_dumps(arguments)}"

    # ===== tools: 2026-07-28 diagnostics (server-stateless) ===============================================
    # On a 2026-07-28 request (protocol version in _meta) trio_mcp takes everything from that request's
    # envelope, and ctx.sample()/elicit()/list_roots() answer with an InputRequiredResult instead of sending
    # a request; on the legacy revisions the same code sends the requests to the client.

    @server.tool("test_missing_capability", description="Needs the client's sampling capability to run")
    async def missing_capability(ctx: Context) -> str:
        # Without sampling declared: -32021 with data.requiredCapabilities {"sampling": {}} on 2026-07-28,
        # -32601 on the legacy revisions (both from ctx.sample()). HTTP 400 is the transport's part.
        result = await ctx.sample("Reply with anything.", max_tokens=16, key="needs_sampling")
        return f"Sampling capability was declared; the model said: {_sampled_text(result.content)}"

    @server.tool("test_logging_tool", description="Logs one info message through the request's logger")
    async def logging_tool(ctx: Context) -> str:
        # 2026-07-28: sent only if this request's _meta carries a logLevel; before: the logging/setLevel level.
        await ctx.info("test_logging_tool ran")
        return "Logging tool executed."

    @server.tool("test_streaming_elicitation", description="Asks the user for a value while the call is open")
    async def streaming_elicitation(ctx: Context) -> str:
        # 2026-07-28: an InputRequiredResult, never an elicitation/create request on the response stream.
        result = await ctx.elicit("Provide a value.", _string_form("value"), key="stream_input")
        if result.action != "accept" or result.content is None:
            return f"No value received (action={result.action})."
        return f"Received: {result.content['value']}"

    async def dynamic() -> str:
        return "A dynamic entry, registered and removed by the change triggers."

    @server.tool("test_trigger_tool_change", description="Changes the tool list (adds and removes test_dynamic_tool)")
    async def trigger_tool_change() -> str:
        # list_changed goes to handshake sessions and to subscriptions/listen streams that asked for it.
        server.add_tool(dynamic, name="test_dynamic_tool", description="Exists only while a trigger runs")
        server.remove_tool("test_dynamic_tool")
        return "Tool list change published."

    @server.tool(
        "test_trigger_prompt_change", description="Changes the prompt list (adds and removes test_dynamic_prompt)"
    )
    async def trigger_prompt_change() -> str:
        server.add_prompt(dynamic, name="test_dynamic_prompt", description="Exists only while a trigger runs")
        server.remove_prompt("test_dynamic_prompt")
        return "Prompt list change published."

    # ===== tools: 2026-07-28 HTTP headers (SEP-2243) =======================================================

    @server.tool(
        "test_custom_header",
        description="Echoes a parameter the client also sends in the Mcp-Param-Region HTTP header (SEP-2243)",
    )
    async def custom_header(
        region: Annotated[str, Field(description="Any region name; mirrored into Mcp-Param-Region", header="Region")],
    ) -> str:
        # On 2026-07-28 HTTP requests trio_mcp checks the header against this argument (Base64 wrapper
        # decoded) and answers 400 + -32020 on a missing, malformed or mismatching header before this runs.
        return f"Region: {region}"

    # ===== tools: 2026-07-28 multi round-trip requests (SEP-2322) =========================================
    # Each ctx.elicit()/sample()/list_roots() with a `key` becomes inputRequests[key] of an InputRequiredResult;
    # the answers come back as inputResponses, and those of earlier rounds in trio_mcp's HMAC-signed
    # requestState (a tampered or foreign state is refused with -32602 before the tool runs).

    @server.tool("test_input_required_result_elicitation", description="Asks for the user's name, then greets them")
    async def irr_elicitation(ctx: Context) -> str:
        result = await ctx.elicit("What is your name?", _string_form("name"), key="user_name")
        if result.action != "accept" or result.content is None:
            return f"No name given (action={result.action})."
        return f"Hello, {result.content['name']}!"

    @server.tool("test_input_required_result_sampling", description="Asks the client's model a question")
    async def irr_sampling(ctx: Context) -> str:
        result = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
        return f"The model answered: {_sampled_text(result.content)}"

    @server.tool("test_input_required_result_list_roots", description="Asks the client for its roots")
    async def irr_list_roots(ctx: Context) -> str:
        roots = await ctx.list_roots(key="client_roots")
        return f"Client roots ({len(roots)}): {', '.join(root.uri for root in roots) or 'none'}"

    async def confirm(ctx: Context) -> str:
        result = await ctx.elicit("Please confirm", _BOOLEAN_FORM, key="confirm")
        ok = result.action == "accept" and bool(result.content and result.content.get("ok"))
        if not ctx.stateless:
            return f"Confirmed: {ok} (no request state before 2026-07-28)."
        # Gap: Context cannot tell whether this retry echoed a requestState at all; one that was echoed
        # passed trio_mcp's integrity check before this ran.
        return f"state-ok: confirmed={ok}"

    @server.tool(
        "test_input_required_result_request_state", description="Round-trips integrity-protected request state"
    )
    async def irr_request_state(ctx: Context) -> str:
        return await confirm(ctx)

    @server.tool(
        "test_input_required_result_tampered_state", description="Rejects request state that fails its integrity check"
    )
    async def irr_tampered_state(ctx: Context) -> str:
        return await confirm(ctx)

    @server.tool(
        "test_input_required_result_multiple_inputs", description="Asks for a name, a greeting and the client's roots"
    )
    async def irr_multiple_inputs(ctx: Context) -> str:
        # The three asks run concurrently: on 2026-07-28 they all go into one InputRequiredResult, on the
        # legacy revisions they are three requests to the client in flight at once.
        name, greeting, roots = await ask_concurrently(
            lambda: ctx.elicit("What is your name?", _string_form("name"), key="user_name"),
            lambda: ctx.sample("Generate a greeting", max_tokens=50, key="greeting"),
            lambda: ctx.list_roots(key="client_roots"),
        )
        who = name.content["name"] if name.action == "accept" and name.content else f"(action={name.action})"
        return f"Name: {who}; greeting: {_sampled_text(greeting.content)}; roots: {len(roots)}"

    @server.tool("test_input_required_result_multi_round", description="Asks two questions, one after the other")
    async def irr_multi_round(ctx: Context) -> str:
        # Round 2's InputRequiredResult carries step1's answer in its (new) requestState.
        step1 = await ctx.elicit("Step 1: What is your name?", _string_form("name"), key="step1")
        if step1.action != "accept" or step1.content is None:
            return f"Stopped at step 1 (action={step1.action})."
        step2 = await ctx.elicit("Step 2: What is your favorite color?", _string_form("color"), key="step2")
        if step2.action != "accept" or step2.content is None:
            return f"Stopped at step 2 (action={step2.action})."
        return f"{step1.content['name']} likes {step2.content['color']}."

    @server.tool(
        "test_input_required_result_capabilities", description="Asks only for what the client declared it can answer"
    )
    async def irr_capabilities(ctx: Context) -> str:
        # Only what this request's clientCapabilities allow (called with sampling only: no elicitation).
        capabilities = ctx.client_capabilities
        answers: list[str] = []
        if capabilities.elicitation is not None:
            result = await ctx.elicit("What is your name?", _string_form("name"), key="user_name")
            answers.append(f"elicitation: {result.action}")
        if capabilities.sampling is not None:
            sampled = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
            answers.append(f"sampling: {_sampled_text(sampled.content)}")
        if capabilities.roots is not None:
            answers.append(f"roots: {len(await ctx.list_roots(key='client_roots'))}")
        return "; ".join(answers) if answers else "The client declared no capability to ask it through."

    # ===== tools: tasks (2025-11-25 core tasks; the 2026-07-28 io.modelcontextprotocol/tasks extension) =======
    # A tool with task_support runs as a task when the client asks (2025-11-25 `task` param) or declares the
    # extension (2026-07-28); tasks/cancel cancels the handler's scope, so a sleeping handler ends cancelled.

    @server.tool("greet", description="Greets someone (never a task)")
    async def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool("slow_compute", description="Sleeps `seconds`, then reports the label", task_support="optional")
    async def slow_compute(ctx: Context, seconds: float, label: str = "compute") -> str:
        steps = max(1, int(seconds * 4))
        for step in range(steps):
            await trio.sleep(seconds / steps)
            await ctx.report_progress(step + 1, steps, f"{label}: step {step + 1} of {steps}")
        return f"{label}: done after {seconds} s"

    @server.tool("failing_job", description="Fails with a tool error after about a second", task_support="required")
    async def failing_job() -> str:
        await trio.sleep(1.0)
        raise ValueError("the job failed")

    @server.tool("protocol_error_job", description="Ends in a JSON-RPC error", task_support="optional")
    async def protocol_error_job() -> str:
        await trio.sleep(0.2)
        raise McpError(-32603, "Internal error: the job could not run")

    @server.tool("confirm_delete", description="Asks the user to confirm, then deletes", task_support="optional")
    async def confirm_delete(filename: str, ctx: Context) -> str:
        form = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
        answer = await ctx.elicit(f"Delete {filename}?", form)
        confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
        return f"{filename} deleted" if confirmed else f"{filename} kept"

    @server.tool("multi_input", description="Asks two questions at once", task_support="optional")
    async def multi_input(ctx: Context) -> str:
        form = {"type": "object", "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}}
        answers: dict[str, str] = {}

        async def ask(key: str) -> None:
            result = await ctx.elicit(f"Question {key}?", form, key=key)
            answers[key] = str((result.content or {}).get("name"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first")
            nursery.start_soon(ask, "second")
        return f"first: {answers['first']}, second: {answers['second']}"

    @server.tool(
        "test_tool_with_task",
        description="Asks for a name inline, then becomes a task that greets",
        task_support="required",
        defer_task=True,
    )
    async def tool_with_task(ctx: Context) -> str:
        result = await ctx.elicit("What is your name?", _string_form("name"), key="user_name")
        name = (result.content or {}).get("name", "stranger")
        await ctx.start_task()
        await trio.sleep(0.2)
        return f"Hello, {name}! (from a task)"

    # ===== resources ====================================================================================

    @server.resource(
        "test://static-text",
        name="static-text",
        title="Static Text Resource",
        description="A static text resource for testing",
        mime_type="text/plain",
    )
    async def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource(
        "test://static-binary",
        name="static-binary",
        title="Static Binary Resource",
        description="A static binary resource (image) for testing",
        mime_type="image/png",
    )
    async def static_binary() -> bytes:
        return base64.b64decode(IMG)

    @server.resource(
        "test://template/{id}/data",
        name="template",
        title="Resource Template",
        description="A resource template with parameter substitution",
        mime_type="application/json",
    )
    async def template_data(id: str) -> str:
        return _dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource(
        "test://watched-resource",
        name="watched-resource",
        title="Watched Resource",
        description="A resource that changes periodically; subscribers are notified",
        mime_type="text/plain",
    )
    async def watched_resource() -> str:
        return str(watched["content"])

    # sep-2164-resource-not-found reads test://nonexistent-resource-for-conformance-testing: nothing is
    # registered there on purpose, and trio_mcp answers -32002 (legacy revisions) or -32602 (2026-07-28)
    # with data.uri.

    # ===== skills (SEP-2640) ============================================================================

    # The sep-2640-* scenarios find it through skills/list; references/ is the subdirectory they descend into.
    server.add_skill_folder(SKILLS / "pdf-processing")

    # ===== prompts ======================================================================================

    @server.prompt("test_simple_prompt", title="Simple Test Prompt", description="A simple prompt without arguments")
    async def simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @server.prompt(
        "test_prompt_with_arguments", title="Prompt With Arguments", description="A prompt with required arguments"
    )
    async def prompt_with_arguments(
        arg1: Annotated[str, Field(description="First test argument")],
        arg2: Annotated[str, Field(description="Second test argument")],
    ) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(
        "test_prompt_with_embedded_resource",
        title="Prompt With Embedded Resource",
        description="A prompt that includes an embedded resource",
    )
    async def prompt_with_embedded_resource(
        resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
    ) -> list[Any]:
        return [
            EmbeddedResource(
                resource=TextResourceContents(
                    uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
                )
            ),
            "Please process the embedded resource above.",
        ]

    @server.prompt(
        "test_prompt_with_image", title="Prompt With Image", description="A prompt that includes image content"
    )
    async def prompt_with_image() -> list[Any]:
        return [ImageContent(data=IMG, mime_type="image/png"), "Please analyze the image above."]

    @server.prompt("test_input_required_result_prompt", description="A prompt that first asks the user for context")
    async def irr_prompt(ctx: Context) -> str:
        # 2026-07-28: prompts/get answers with an InputRequiredResult (user_context) first.
        result = await ctx.elicit("What context should the prompt use?", _string_form("context"), key="user_context")
        if result.action != "accept" or result.content is None:
            return "Answer without any particular context."
        return f"Answer in this context: {result.content['context']}"

    # ===== completion ===================================================================================

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> list[str]:
        if isinstance(ref, PromptReference) and ref.name == "test_prompt_with_arguments":
            candidates: Sequence[str] = PROMPT_ARGUMENT_SUGGESTIONS
        elif isinstance(ref, ResourceTemplateReference) and argument.name == "id":
            candidates = TEMPLATE_ID_SUGGESTIONS
        else:
            candidates = ()
        return [value for value in candidates if value.startswith(argument.value)]

    return server


async def serve_http(server: Server, host: str, port: int) -> None:
    """Serve Streamable HTTP on ``host:port`` (0: a free port) and print the endpoint once it accepts.

    SIGINT or SIGTERM stops it gracefully (in-flight responses get trio_mcp's shutdown grace period).
    """
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(functools.partial(server.serve_http, host, port))
            # run_suites.py waits for this line to learn the port; it is the only thing written to stdout.
            print(f"everything_server: serving http://{host}:{bound}/mcp", flush=True)
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break


async def serve_asgi(server: Server, host: str, port: int) -> None:
    """The same endpoint mounted as an ASGI app (``trio_mcp.asgi``) under Hypercorn's trio worker."""
    from hypercorn.config import Config
    from hypercorn.trio import serve

    from trio_mcp.asgi import McpAsgiApp

    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.graceful_timeout = 1
    stop = trio.Event()
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(
                functools.partial(serve, McpAsgiApp(server), config, shutdown_trigger=stop.wait)
            )
            bound = binds[0].rsplit(":", 1)[1]
            print(f"everything_server: serving http://{host}:{bound}/mcp", flush=True)
            async for _ in signals:
                stop.set()
                break


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=("stdio", "http", "asgi"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP only (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3001, help="HTTP only (default 3001; 0 picks a free port)")
    parser.add_argument(
        "--watched-interval",
        type=float,
        default=3.0,
        help="seconds between updates of test://watched-resource (0: never; default 3)",
    )
    args = parser.parse_args(argv)
    server = create_server(watched_interval=args.watched_interval or None)
    if args.transport == "stdio":
        trio.run(server.serve_stdio)
    else:
        trio.run(serve_http if args.transport == "http" else serve_asgi, server, args.host, args.port)


if __name__ == "__main__":
    main()
