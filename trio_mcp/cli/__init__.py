"""The ``trio-mcp`` command: ``run`` serves a trio_mcp server, ``dev`` reloads it under the MCP Inspector; ``list``,
``call``, ``read``, ``prompt`` and ``info`` talk to any MCP server; ``proxy`` serves any MCP server as ours; ``doctor``
checks an HTTP deployment; ``install`` and ``uninstall`` edit a host's configuration. Also ``python -m trio_mcp``.

Nothing here is imported by ``import trio_mcp``: the command line costs a library user nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import trio

from .._util import first_leaf
from ._exit import INTERRUPTED, OUTPUT_CLOSED, CliError

__all__ = ["main"]


async def _dispatch(args: argparse.Namespace, argv: list[str]) -> int:
    if args.command == "run":
        from ._serve import run_command

        return await run_command(args, argv)
    if args.command == "dev":
        from ._dev import dev_command

        return await dev_command(args)
    if args.command == "proxy":
        from ._proxy import proxy_command

        return await proxy_command(args)
    if args.command == "doctor":
        from ._doctor import doctor_command

        return await doctor_command(args)
    if args.command in ("install", "uninstall"):
        from ._install import install_command, uninstall_command

        return (install_command if args.command == "install" else uninstall_command)(args)
    from ._commands import client_command

    return await client_command(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status (see ``trio-mcp --help``)."""
    try:
        return _main(argv)
    except BrokenPipeError:
        return _output_closed()


def _output_closed() -> int:
    """The reader of our output went away (``| head``): stop quietly, as a program killed by SIGPIPE does.

    What is still buffered for stdout goes to /dev/null, so the interpreter's flush at exit cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return OUTPUT_CLOSED


def _main(argv: Sequence[str] | None) -> int:
    from ._parser import parse

    words = list(sys.argv[1:] if argv is None else argv)
    args = parse(words)
    try:
        return trio.run(_dispatch, args, words)
    except KeyboardInterrupt:  # Ctrl-C before the command's own handler was in place
        return INTERRUPTED
    except BaseException as exc:
        error = first_leaf(exc, CliError)
        if error is not None:
            print(f"trio-mcp: {error.message}", file=sys.stderr)
            return error.status
        if first_leaf(exc, KeyboardInterrupt) is not None:
            return INTERRUPTED
        if first_leaf(exc, BrokenPipeError) is not None:
            return _output_closed()
        raise
