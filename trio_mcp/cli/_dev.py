"""``trio-mcp dev``: the server restarted on every change to its source, and the official MCP Inspector open on it.

Over HTTP (the default) the server is a ``trio-mcp run`` child on 127.0.0.1 at one port for the whole session, so
the Inspector's connection survives a restart (it reconnects). Over stdio the Inspector itself starts the server,
anew on each Connect: nothing is watched, and connecting again is what loads a change.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import trio

from ._exit import CONNECTION, OK, USAGE, CliError, say
from ._inspector import Inspector, find_node, free_port, install_inspector
from ._reload import Watcher, run_reloading
from ._signals import until_stopped
from ._target import watched_root

__all__ = ["dev_command"]


def _check(args: argparse.Namespace) -> None:
    if args.transport != "stdio":
        return
    why = "over stdio the Inspector starts the server itself, anew on each Connect"
    if args.no_inspector:
        raise CliError(f"--no-inspector needs --transport http: {why}", USAGE)
    if args.watch or args.port is not None:
        raise CliError(f"--{'watch' if args.watch else 'port'} needs --transport http: {why}", USAGE)


def _run_words(args: argparse.Namespace, *options: str) -> list[str]:
    """The ``trio-mcp run`` line that serves the target (this interpreter, this working directory)."""
    words = [sys.executable, "-m", "trio_mcp", "run", args.target, *options]
    return [*words, "--log-level", args.log_level] if args.log_level else words


async def _launcher() -> tuple[str, Path]:
    """Node and the Inspector's launcher (installed first if need be): checked before anything is started."""
    node = await find_node()
    return node, await install_inspector(node, say)


async def _inspect(launcher: tuple[str, Path], server: Sequence[str], *, open_browser: bool, note: str) -> None:
    """Run the Inspector until cancelled; its exit is an error naming its last words."""
    node, entry = launcher
    inspector = await Inspector.start(node, entry, server, open_browser=open_browser)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(inspector.read_output)
            say(f"MCP Inspector: {await inspector.wait_address()} ({note})")
            await inspector.process.wait()
            nursery.cancel_scope.cancel()
        raise CliError(
            f"the MCP Inspector exited with status {inspector.process.returncode}: {inspector.last_line()}", CONNECTION
        )
    finally:
        await inspector.stop()


async def _dev_http(args: argparse.Namespace) -> int:
    port = args.port or free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    serve = _run_words(args, "--transport", "http", "--host", "127.0.0.1", "--port", str(port))
    watcher = Watcher(watched_root(args.target), [Path(path) for path in args.watch], say=say)
    launcher = None if args.no_inspector else await _launcher()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(functools.partial(run_reloading, serve, watcher, say=say))
        if launcher is not None:
            await _inspect(
                launcher,
                ["--server-url", url, "--transport", "http"],
                open_browser=not args.no_open,
                note=f"server {url}",
            )
    return OK


async def _dev_stdio(args: argparse.Namespace) -> int:
    words = ["--transport", "stdio", "--cwd", os.getcwd()]
    if os.environ.get("PYTHONPATH"):  # the Inspector starts a server with a minimal environment
        words += ["-e", f"PYTHONPATH={os.environ['PYTHONPATH']}"]
    await _inspect(
        await _launcher(),
        [*words, "--", *_run_words(args)],
        open_browser=not args.no_open,
        note="it starts the server on each Connect; connect again to load a change",
    )
    return OK


async def dev_command(args: argparse.Namespace) -> int:
    """Entry point of ``dev`` inside ``trio.run``; Ctrl-C or SIGTERM ends the server, the Inspector and what they
    started. If this process is killed outright, they end on their lifeline (``_lifeline``)."""
    _check(args)
    return await until_stopped(lambda: (_dev_stdio if args.transport == "stdio" else _dev_http)(args))
