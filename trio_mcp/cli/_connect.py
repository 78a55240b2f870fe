"""Open a ``Client`` for the server a command names: ``--url URL`` (HTTP, or ``ws://``), ``-- command args…``, or
``--config FILE --server NAME`` (a server of a host's configuration file)."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import trio

from ..client import Client, open_stdio_client
from ..errors import CapabilityError, McpError, RequestTimeout, TrioMcpError
from ._configured import configured_server
from ._exit import CONNECTION, TOOL_ERROR, USAGE, CliError

__all__ = ["open_target_client", "parse_headers"]


def parse_headers(values: list[str]) -> dict[str, str]:
    """``["Authorization: Bearer x"]`` → ``{"Authorization": "Bearer x"}``; ``CliError`` for a malformed one."""
    headers: dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise CliError(f"--header {value!r}: expected 'Name: value'")
        headers[name.strip()] = content.strip()
    return headers


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@asynccontextmanager
async def _open(args: argparse.Namespace, options: dict[str, Any]) -> AsyncIterator[Client]:
    if args.url and args.server_command:
        raise CliError("name the server either with --url or with '-- command args...', not both")
    url, command, headers = args.url, args.server_command, parse_headers(args.header)
    env: dict[str, str] | None = None
    cwd: str | None = None
    if args.config:
        if url or command:
            raise CliError("name the server with one of --config, --url or '-- command args...'")
        configured = configured_server(Path(args.config), args.server)
        url, command, cwd = configured.url, configured.command, configured.cwd
        headers = {**configured.headers, **headers}
        env = None if configured.env is None else {**os.environ, **configured.env}  # added to ours, as hosts do
    elif args.server:
        raise CliError("--server picks a server of a --config file")
    if url:
        if url.startswith(("ws://", "wss://")):
            from ..client import open_websocket_client

            async with open_websocket_client(url, headers=headers, **options) as client:
                yield client
        else:
            from ..client import open_http_client

            async with open_http_client(url, headers=headers, **options) as client:
                yield client
    elif command:
        if headers:
            raise CliError("--header applies to --url servers only")
        stderr: Any = _stderr_line if args.verbose else "capture"
        async with open_stdio_client(command, env=env, cwd=cwd, stderr=stderr, **options) as client:
            yield client
    else:
        raise CliError(
            "which server? give --url URL, the command that starts it after '--' "
            "(e.g. trio-mcp list tools -- python server.py), or --config mcp.json --server NAME"
        )


def _authorization_hint(error: McpError, headers: list[str]) -> str:
    """For a 401 at connection time: how to pass a token, or that the one passed was refused."""
    if not (isinstance(error.data, dict) and error.data.get("status") == 401):
        return ""
    if any(header.partition(":")[0].strip().lower() == "authorization" for header in headers):
        return " (the token given was refused)"
    return " (the server requires authorization: pass a token with -H 'Authorization: Bearer TOKEN')"


def _path_hint(url: str | None) -> str:
    """For a server that answered but spoke no MCP at a URL without the usual endpoint path: where it usually is."""
    if not url or url.startswith(("ws://", "wss://")):
        return ""
    parts = urlsplit(url)
    if parts.path.rstrip("/").endswith(("/mcp", "/sse")):
        return ""
    return (
        f" (did you mean {urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip('/') + '/mcp', parts.query, ''))}?)"
    )


@asynccontextmanager
async def open_target_client(args: argparse.Namespace, **options: Any) -> AsyncIterator[Client]:
    """Connect (bounded by ``--connect-timeout``) and yield the client; protocol failures become ``CliError``.

    An ``McpError`` raised by the command's own calls exits 1 (the server answered with an error); anything
    that means there is no conversation (cannot start, cannot connect, timed out, broke the protocol) exits 3.
    """
    options.setdefault("request_timeout", args.timeout)
    if args.protocol_version:
        options["protocol_version"] = args.protocol_version
    connected = False
    try:
        with trio.CancelScope(deadline=trio.current_time() + args.connect_timeout) as connecting:
            async with _open(args, options) as client:
                connecting.deadline = math.inf
                connected = True
                yield client
        if connecting.cancelled_caught:
            raise CliError(f"could not connect within {args.connect_timeout:g} s (--connect-timeout)", CONNECTION)
    except McpError as exc:
        status = TOOL_ERROR if connected else CONNECTION
        hint = "" if connected else _authorization_hint(exc, args.header)
        raise CliError(f"the server answered with an error: {exc}{hint}", status) from None
    except CapabilityError as exc:  # refused before sending: the server does not offer it on this revision
        raise CliError(f"{exc} (`trio-mcp info` lists the methods this server offers)", USAGE) from None
    except RequestTimeout as exc:
        raise CliError(f"timed out: {exc} (--timeout)", CONNECTION) from None
    except BrokenPipeError:  # our own stdout was closed (`| head`); the server's pipe fails as ConnectionClosed
        raise
    except TrioMcpError as exc:  # ConnectionClosed, RemoteProtocolError...
        raise CliError(str(exc) + ("" if connected else _path_hint(args.url)), CONNECTION) from None
    except OSError as exc:  # refused connections, unknown hosts...
        raise CliError(str(exc), CONNECTION) from None
    except ValueError as exc:  # a malformed URL or option, refused by the transport up front
        if connected:
            raise
        raise CliError(str(exc), USAGE) from None
