"""``trio-mcp run``: serve a ``Server`` found in a file or module, and ``--reload`` for development."""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import logging
import os
import socket
import sys
import traceback
from collections.abc import Iterator

import trio

from .._tls import server_tls_context
from .._util import first_leaf
from ..server import Server
from ._exit import CONNECTION, OK, USAGE, CliError, say
from ._lifeline import while_lifeline_holds
from ._reload import Watcher, run_reloading
from ._signals import until_interrupted, until_stopped
from ._target import import_spec, load_server, watched_root

__all__ = ["run_command"]

#: How ``run`` shows the server's log records on stderr (a crashed tool's is an error, with its traceback).
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"
_BIND_ERRORS = frozenset({errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL})


def _load(args: argparse.Namespace) -> Server:
    """The target's server, then the console set up for its logs (unless the target set up logging itself)."""
    try:
        server = load_server(args.target)
    except CliError as error:
        if args.log_level == "debug" and error.__cause__ is not None:
            traceback.print_exception(error.__cause__)
        raise
    level = getattr(logging, (args.log_level or "warning").upper())
    logging.basicConfig(level=level, format=LOG_FORMAT)  # does nothing if the target configured logging
    if args.log_level is not None:
        logging.getLogger().setLevel(level)
    return server


@contextlib.contextmanager
def _listening(args: argparse.Namespace) -> Iterator[None]:
    """A port that cannot be bound (in use, privileged, no such address) is one line, not a traceback."""
    try:
        yield
    except BaseException as exc:
        error = first_leaf(exc, OSError)
        if error is None or not (isinstance(error, socket.gaierror) or error.errno in _BIND_ERRORS):
            raise
        reason = os.strerror(error.errno) if error.errno is not None and error.errno > 0 else str(error)
        raise CliError(
            f"cannot listen on {_authority(args.host, args.port)}: {reason} "
            "(is another server using the port? pick another with --port)",
            CONNECTION,
        ) from None


async def _serve(args: argparse.Namespace) -> int:
    server = _load(args)
    name = f"{server.info.name} {server.info.version}"
    if args.transport == "stdio":
        await server.serve_stdio()
        return OK
    async with contextlib.AsyncExitStack() as stack:
        options = None
        if args.redis is not None:
            from ..scale._shared import shared_through_redis
            from ..transports.streamable_http import HttpTransportOptions

            options = await stack.enter_async_context(shared_through_redis(server, HttpTransportOptions(), args.redis))
        nursery = await stack.enter_async_context(trio.open_nursery())
        if args.transport == "ws":
            with _listening(args):
                port = await nursery.start(server.serve_websocket, args.host, args.port)
            say(f"serving {name} on ws://{_authority(args.host, port)}/ (Ctrl-C to stop)")
        else:
            tls = server_tls_context(args.certfile, args.keyfile) if args.certfile else None
            serve = functools.partial(server.serve_http, args.host, args.port, ssl_context=tls, options=options)
            with _listening(args):
                port = await nursery.start(serve)
            path = "/sse" if args.transport == "sse" else "/mcp"
            scheme = "https" if tls is not None else "http"
            say(f"serving {name} on {scheme}://{_authority(args.host, port)}{path} (Ctrl-C to stop)")
    return OK


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _reload_loop(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the server in a child process; restart it whenever a ``.py`` file under the target's folder changes."""
    child_argv = [sys.executable, "-m", "trio_mcp", *[arg for arg in argv if arg != "--reload"]]
    await run_reloading(child_argv, Watcher(watched_root(args.target), say=say), say=say)


async def _serve_with_workers(args: argparse.Namespace) -> int:
    """``--workers N``: a supervisor here, the server in N processes (``trio_mcp.scale``). The supervisor handles
    SIGTERM and Ctrl-C itself, as a drain: it returns 0 once the workers have finished, 1 after a crash loop."""
    from ..scale.workers import WorkerSettings, supervise_workers

    server = _load(args)
    spec, folder = import_spec(args.target, server)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")]))
    settings = WorkerSettings(
        server=spec,
        workers=args.workers,
        host=args.host,
        port=args.port,
        drain_timeout=args.drain_timeout,
        certfile=args.certfile,
        keyfile=args.keyfile,
        log_level=args.log_level or "warning",
        redis=args.redis,
    )
    if settings.unshared is not None:
        say(f"warning: {settings.unshared}")
    status = OK

    async def supervise(task_status: trio.TaskStatus[int]) -> None:
        nonlocal status
        status = await supervise_workers(settings, task_status=task_status)

    async with trio.open_nursery() as nursery:
        with _listening(args):
            port = await nursery.start(supervise)
        say(
            f"serving {server.info.name} {server.info.version} on {settings.scheme}://{_authority(args.host, port)}/mcp "
            f"from {args.workers} workers (Ctrl-C or SIGTERM drains them)"
        )
    return status


def _check_tls(args: argparse.Namespace) -> None:
    if (args.certfile is None) != (args.keyfile is None):
        raise CliError("--certfile and --keyfile go together: give both to serve HTTPS, or neither", USAGE)
    if args.certfile is not None and args.transport not in ("http", "sse"):
        raise CliError("--certfile needs --transport http or sse (HTTPS)", USAGE)
    if args.certfile is not None:
        try:
            server_tls_context(args.certfile, args.keyfile)
        except ValueError as exc:
            raise CliError(str(exc), USAGE) from None


def _check_workers(args: argparse.Namespace) -> None:
    if args.workers < 1:
        raise CliError(f"--workers must be at least 1, not {args.workers}", USAGE)
    if args.drain_timeout <= 0:
        raise CliError(f"--drain-timeout must be positive, not {args.drain_timeout}", USAGE)
    if args.workers > 1 and (args.transport != "http" or args.reload):
        raise CliError("--workers needs --transport http and no --reload (worker processes share one HTTP port)", USAGE)
    if args.redis is not None and args.transport != "http":
        raise CliError("--redis needs --transport http (it shares the sessions of the Streamable HTTP endpoint)", USAGE)
    if args.redis is not None and not args.redis.startswith(("redis://", "rediss://")):
        raise CliError(f"--redis must be a redis:// or rediss:// URL, not {args.redis!r}", USAGE)


async def run_command(args: argparse.Namespace, argv: list[str]) -> int:
    """Entry point of ``run`` inside ``trio.run``; with the hidden ``--lifeline`` (a server that ``dev`` or
    ``--reload`` started), it stops as on Ctrl-C once the process holding the pipe on its stdin has ended."""
    _check_workers(args)
    _check_tls(args)
    if not args.lifeline:
        return await _run(args, argv)
    if args.transport == "stdio":
        raise CliError("--lifeline needs a network transport: over stdio, stdin is the connection", USAGE)
    return await while_lifeline_holds(lambda: _run(args, argv))


async def _run(args: argparse.Namespace, argv: list[str]) -> int:
    if args.workers > 1:
        return await _serve_with_workers(args)
    if args.reload:
        if args.transport == "stdio":
            raise CliError(
                "--reload needs a network transport (--transport http, sse or ws): a stdio server's "
                "client would lose its session on every restart",
                USAGE,
            )
        return await until_stopped(lambda: _reload_loop(args, argv))
    return await until_interrupted(lambda: _serve(args))
