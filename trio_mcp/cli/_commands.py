"""The commands that talk to a server: ``list``, ``call``, ``read``, ``prompt`` and ``info``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._wire.convert import to_wire
from .._wire.methods import methods_for, send_refusal
from ..client import Client
from ..types import LoggingMessageNotificationParams, ProgressNotificationParams, Tool
from ._arguments import string_arguments, tool_arguments
from ._connect import open_target_client
from ._exit import INTERRUPTED, OK, TOOL_ERROR, USAGE, CliError
from ._render import Progress, describe_content, describe_contents, emit_json, schema_summary
from ._signals import watch_interrupts
from ._skills import skills_command

__all__ = ["client_command"]


async def _find_tool(client: Client, name: str) -> Tool:
    names: list[str] = []
    async for tool in client.iter_tools():
        if tool.name == name:
            return tool
        names.append(tool.name)
    listed = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
    raise CliError(f"the server has no tool {name!r}; it has: {listed or 'none'}", USAGE)


async def _list(client: Client, args: argparse.Namespace) -> int:
    if args.what == "tools":
        items: list[Any] = [tool async for tool in client.iter_tools()]
    elif args.what == "resources":
        items = [resource async for resource in client.iter_resources()]
    elif args.what == "templates":
        items = [template async for template in client.iter_resource_templates()]
    else:
        items = [prompt async for prompt in client.iter_prompts()]
    if args.json:
        emit_json(items)
        return OK
    if not items:
        print(f"(no {args.what})")
    for item in items:
        key = getattr(item, "uri", None) or getattr(item, "uri_template", None) or item.name
        description = (item.description or "").strip().splitlines()
        label = key if key == item.name else f"{key}  ({item.name})"
        print(label + (f"  — {description[0]}" if description else ""))
        if isinstance(item, Tool):
            for line in schema_summary(item.input_schema):
                print(f"    {line}")
        for argument in getattr(item, "arguments", None) or []:
            print(
                f"    {argument.name}"
                + (" (required)" if argument.required else "")
                + (f" — {argument.description}" if argument.description else "")
            )
    return OK


async def _call(client: Client, args: argparse.Namespace) -> int:
    tool = await _find_tool(client, args.tool)
    arguments = tool_arguments(args.arguments, tool.input_schema)
    progress = Progress()

    def on_progress(update: ProgressNotificationParams) -> None:
        progress.update(update.progress, update.total, update.message)

    try:
        # Progress restarts the per-request timeout; --timeout stays the cap on the whole call all the same.
        result = await client.call_tool(tool.name, arguments, on_progress=on_progress, max_total_timeout=args.timeout)
    finally:
        progress.done()
    if args.json:
        emit_json(result)
    else:
        texts = [describe_content(block) for block in result.content]
        if result.structured_content is not None and not any(texts):
            texts = [json.dumps(result.structured_content, indent=2, ensure_ascii=False)]
        for text in texts:
            print(text, file=sys.stderr if result.is_error else sys.stdout)
    return TOOL_ERROR if result.is_error else OK


async def _read(client: Client, args: argparse.Namespace) -> int:
    result = await client.read_resource(args.uri)
    if args.json:
        emit_json(result)
        return OK
    for item in result.contents:
        print(describe_contents(item))
    return OK


async def _prompt(client: Client, args: argparse.Namespace) -> int:
    result = await client.get_prompt(args.name, string_arguments(args.arguments))
    if args.json:
        emit_json(result)
        return OK
    if result.description:
        print(f"# {result.description}")
    for message in result.messages:
        print(f"{message.role}: {describe_content(message.content)}")
    return OK


def _methods(client: Client) -> list[str]:
    """The requests this client may send the server on the revision in use: the method table's, less those
    whose capability the server did not declare."""
    version = client.protocol_version
    return [
        method
        for method in methods_for(version)
        if send_refusal(method, version, "client", client.server_capabilities) is None
    ]


async def _info(client: Client, args: argparse.Namespace) -> int:
    capabilities = to_wire(client.server_capabilities)
    info = to_wire(client.server_info)
    methods = _methods(client)
    if args.json:
        emit_json(
            {
                "era": client.era,
                "protocolVersion": client.protocol_version,
                "serverInfo": info,
                "capabilities": capabilities,
                "methods": methods,
                "instructions": client.instructions,
            }
        )
        return OK
    print(
        f"server:       {info.get('name')} {info.get('version')}" + (f" ({info['title']})" if info.get("title") else "")
    )
    print(f"era:          {client.era}")
    print(f"revision:     {client.protocol_version}")
    offered = []
    for name, value in capabilities.items():
        flags = [flag for flag, on in value.items() if on is True] if isinstance(value, dict) else []
        offered.append(name + (f" ({', '.join(flags)})" if flags else ""))
    print(f"capabilities: {', '.join(offered) or 'none'}")
    print(f"methods:      {', '.join(methods)}")
    if client.instructions:
        print("instructions:")
        for line in client.instructions.splitlines():
            print(f"  {line}")
    return OK


def _show_log(message: LoggingMessageNotificationParams) -> None:
    """A server's log message, on stderr: ``[warning] announcer: text``."""
    data = message.data if isinstance(message.data, str) else json.dumps(message.data, ensure_ascii=False)
    print(f"[{message.level}]" + (f" {message.logger}:" if message.logger else "") + f" {data}", file=sys.stderr)


_COMMANDS = {"list": _list, "call": _call, "read": _read, "prompt": _prompt, "info": _info, "skills": skills_command}


async def client_command(args: argparse.Namespace) -> int:
    """Connect to the named server and run one command against it; Ctrl-C cancels whatever is in flight."""
    command = _COMMANDS[args.command]
    status = INTERRUPTED
    async with watch_interrupts() as interrupts:
        with interrupts.cancellable() as connection:  # a Ctrl-C while connecting, or a second one while closing
            async with open_target_client(args, on_log=_show_log) as client:
                with interrupts.cancellable():  # the first Ctrl-C cancels the command; the client tells the server
                    if args.log_level and client.server_capabilities.logging is not None:
                        await client.set_logging_level(args.log_level)
                    status = await command(client, args)
                if interrupts.fired:  # the server was told; the user asked to stop, so close the urgent way
                    connection.cancel()
    return INTERRUPTED if interrupts.fired else status
