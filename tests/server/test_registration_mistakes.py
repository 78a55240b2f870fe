"""Mistakes in declaring a server fail where they are written, in one line that says what to write, instead of
a server that registers nothing or a tool every call of which fails."""

from __future__ import annotations

from typing import Any

import pytest

from trio_mcp import Context, Server


def test_a_decorator_without_its_call_is_refused_at_decoration() -> None:
    server = Server("bare")
    with pytest.raises(TypeError, match=r"^@server.tool needs its call: write @server.tool\(\) above def add$"):

        @server.tool  # type: ignore[arg-type]
        def add(a: int, b: int) -> int:
            return a + b

    with pytest.raises(TypeError, match=r"^@server.prompt needs its call: write @server.prompt\(\) above def hi$"):

        @server.prompt  # type: ignore[arg-type]
        def hi() -> str:
            return "hi"

    with pytest.raises(TypeError, match=r'write @server.resource\("scheme://..."\) above def readme$'):

        @server.resource  # type: ignore[arg-type]
        def readme() -> str:
            return "read me"

    with pytest.raises(TypeError, match=r'write @server.request_handler\("vendor/method"\) above def ping$'):

        @server.request_handler  # type: ignore[arg-type]
        async def ping(params: Any, ctx: Context) -> dict[str, Any]:
            return {}

    assert not (server.tools or server.prompts or server.resources or server.custom.requests)


def test_the_called_decorators_still_register() -> None:
    server = Server("called")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.prompt("greet")
    def hi() -> str:
        return "hi"

    assert list(server.tools) == ["add"] and list(server.prompts) == ["greet"]


@pytest.mark.parametrize("parameter", ["ctx", "context"])
def test_a_context_parameter_without_its_annotation_is_refused_at_registration(parameter: str) -> None:
    server = Server("forgot")
    namespace: dict[str, Any] = {}
    exec(f"async def lookup(key: str, {parameter}):\n    return key", namespace)
    with pytest.raises(TypeError) as caught:
        server.add_tool(namespace["lookup"])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"tool 'lookup': parameter {parameter!r} has no annotation")
    assert f"`{parameter}: Context`" in message
    with pytest.raises(TypeError, match="prompt 'lookup': parameter"):
        server.add_prompt(namespace["lookup"])
    with pytest.raises(TypeError, match="resource 'kv://{key}': parameter"):
        server.add_resource(namespace["lookup"], "kv://{key}")
    assert not (server.tools or server.prompts or server.templates)


def test_annotated_context_parameters_are_injected_and_typed_ones_stay_arguments() -> None:
    server = Server("fine")

    @server.tool()
    async def lookup(key: str, ctx: Context, context: str = "default") -> str:
        return key

    schema = server.tools["lookup"].wire("2025-11-25")["inputSchema"]
    assert sorted(schema["properties"]) == ["context", "key"] and schema["required"] == ["key"]
