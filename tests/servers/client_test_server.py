"""A trio_mcp server for the client tests: every feature a client can reach, in memory or over stdio.

``make_server()`` builds it (the in-memory tests import this file); run as a script it serves stdio, with
``--page-size N`` to paginate every list.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import trio

from trio_mcp import Context, McpError, Server
from trio_mcp.types import (
    CallToolResult,
    PromptMessage,
    TextContent,
    Tool,
    ToolChoice,
    ToolUseContent,
)

#: What the in-memory tests can observe of the server's side ("nap start", "nap cancelled", ...).
events: list[str] = []

#: The SEP-1034 form the conformance scenario ``elicitation-sep1034-client-defaults`` uses.
DEFAULTS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "default": ["a", "c"]},
    },
    "required": ["name"],
}


def make_server(page_size: int | None = None) -> Server:
    """The test server; ``page_size`` splits every list into pages of that many items."""
    server = Server("client-test", version="1.0.0", instructions="client tests", page_size=page_size)

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers (structured output)."""
        return a + b

    @server.tool()
    async def lying() -> int:
        """Declare an integer result, then return a string in structuredContent."""
        return CallToolResult(content=[TextContent(text="nope")], structured_content={"result": "nope"})  # type: ignore[return-value]

    @server.tool()
    async def nap(seconds: float, ctx: Context) -> str:
        """Sleep, recording in ``events`` whether the sleep ended or was cancelled."""
        events.append("nap start")
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            events.append("nap cancelled")
            raise
        events.append("nap done")
        return "rested"

    @server.tool()
    async def progress(steps: int, interval: float, ctx: Context) -> int:
        """Report progress every ``interval`` seconds, ``steps`` times."""
        events.append("progress start")
        try:
            for step in range(1, steps + 1):
                await trio.sleep(interval)
                await ctx.report_progress(step, total=steps, message=f"step {step}")
        except trio.Cancelled:
            events.append("progress cancelled")
            raise
        return steps

    @server.tool()
    async def ask_model(prompt: str, ctx: Context) -> str:
        """Ask the client's model; a JSON-RPC error from the client comes back as text."""
        try:
            result = await ctx.sample(prompt, max_tokens=100, system_prompt="be brief")
        except McpError as exc:
            return f"error {exc.code}: {exc.message}"
        block = result.content[0] if isinstance(result.content, list) else result.content
        return block.text if isinstance(block, TextContent) else f"{block.type} from {result.model}"

    @server.tool()
    async def ask_model_with_tools(ctx: Context) -> dict[str, Any]:
        """Sample with a tool the model may call (2025-11-25); report what came back."""
        weather = Tool(
            name="get_weather",
            description="Weather for a city",
            input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        )
        result = await ctx.sample(
            "What is the weather in Paris?", max_tokens=100, tools=[weather], tool_choice=ToolChoice(mode="auto")
        )
        block = result.content[0] if isinstance(result.content, list) else result.content
        if isinstance(block, ToolUseContent):
            return {"type": block.type, "name": block.name, "input": block.input, "stop": result.stop_reason}
        return {"type": getattr(block, "type", "?"), "stop": result.stop_reason}

    @server.tool()
    async def ask_user(ctx: Context) -> str:
        """Elicit the SEP-1034 form; return the action and content as JSON."""
        try:
            answer = await ctx.elicit("Tell us about yourself", DEFAULTS_FORM)
        except McpError as exc:
            return f"error {exc.code}: {exc.message}"
        return json.dumps({"action": answer.action, "content": answer.content}, sort_keys=True)

    @server.tool()
    async def ask_url(ctx: Context) -> str:
        """URL-mode elicitation (2025-11-25)."""
        answer = await ctx.elicit_url("Sign in, please", "https://example.com/login", elicitation_id="el-1")
        return answer.action

    @server.tool()
    async def where(ctx: Context) -> str:
        """The client's roots, comma-separated; a JSON-RPC error comes back as text."""
        try:
            roots = await ctx.list_roots()
        except McpError as exc:
            return f"error {exc.code}: {exc.message}"
        return ",".join(root.uri for root in roots)

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log at three levels."""
        await ctx.debug("debug line")
        await ctx.info({"event": "info line"})
        await ctx.warning("warning line", logger="chatty")
        return "logged"

    @server.tool()
    async def touch(uri: str) -> str:
        """Tell subscribers that ``uri`` changed."""
        server.notify_resource_updated(uri)
        return "touched"

    @server.tool()
    async def grow(name: str) -> str:
        """Register another tool, which sends tools/list_changed."""

        async def extra() -> str:
            return name

        server.add_tool(extra, name=name, description="added at run time")
        return "grown"

    @server.resource("memo://one", mime_type="text/plain", description="The first memo")
    async def memo_one() -> str:
        return "first memo"

    @server.resource("memo://two", mime_type="text/plain")
    async def memo_two() -> str:
        return "second memo"

    @server.resource("memo://three", mime_type="text/plain")
    async def memo_three() -> str:
        return "third memo"

    @server.resource("users://{user_id}/profile", mime_type="application/json")
    async def profile(user_id: int) -> dict[str, Any]:
        return {"id": user_id}

    @server.resource("files://{path}", mime_type="text/plain")
    async def files(path: str) -> str:
        return f"file {path}"

    @server.prompt()
    async def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello, {name}!"

    @server.prompt()
    async def review(code: str, language: str = "python") -> list[PromptMessage]:
        """Review code."""
        return [PromptMessage(role="user", content=TextContent(text=f"Review this {language}: {code}"))]

    @server.prompt()
    async def plain() -> str:
        """No arguments."""
        return "plain"

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        options = ["python", "pascal", "perl", "rust"]
        return [option for option in options if option.startswith(argument.value)]

    return server


if __name__ == "__main__":
    size = int(sys.argv[sys.argv.index("--page-size") + 1]) if "--page-size" in sys.argv else None
    trio.run(make_server(size).serve_stdio)
