"""One worker process of ``run_workers``: serves MCP over HTTP on the listening socket it inherited.

Started by the supervisor as ``python -m trio_mcp.scale._worker``; not an API. SIGTERM or SIGINT begins a
graceful drain (stop accepting, let in-flight requests finish within the drain time); so does the end of the
supervisor's pipe, so a worker never outlives its supervisor. A task writes a heartbeat byte to another pipe
now and then: if a handler blocks the event loop, the beats stop and the supervisor replaces the worker.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import socket
from contextlib import AsyncExitStack
from typing import Any

import attrs
import trio

from .._tls import server_tls_context
from .workers import REDIS_URL_ENV

__all__ = ["load", "main"]


logger = logging.getLogger("trio_mcp.scale")


def load(spec: str) -> Any:
    """The object named by ``"package.module:attribute"`` (the attribute may be dotted)."""
    module_name, colon, attribute = spec.partition(":")
    if not module_name or not colon or not attribute:
        raise ValueError(f"expected 'module:attribute', got {spec!r}")
    found: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found


async def _serve(args: argparse.Namespace) -> None:
    from ..server import Server
    from ..transports.streamable_http import Drain, HttpTransportOptions, serve_mounts

    server = load(args.server)
    if not isinstance(server, Server):
        raise TypeError(f"{args.server} is a {type(server).__name__}, not a trio_mcp.Server")
    if args.log_level:  # after the import: a module that configures logging itself keeps its configuration
        logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    options = load(args.options) if args.options else HttpTransportOptions()
    if not isinstance(options, HttpTransportOptions):
        raise TypeError(f"{args.options} is a {type(options).__name__}, not an HttpTransportOptions")
    redis = os.environ.get(REDIS_URL_ENV)
    if args.options and redis is None and args.workers > 1 and options.sessions and options.session_directory is None:
        logger.warning(
            "legacy-era sessions live in the worker that created them: a client connection that "
            "reaches another worker gets 404 (give the options a session_directory, or the workers a Redis, "
            "serve them with one worker, or sessions=False)"
        )
    drain = Drain()
    options = attrs.evolve(options, drain=drain)
    sock = socket.socket(fileno=args.listen_fd)
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    supervisor = trio.lowlevel.FdStream(args.supervisor_fd)
    heartbeats = trio.lowlevel.FdStream(args.heartbeat_fd)
    stop = trio.Event()

    async def beat() -> None:
        """Until the worker has drained: an event loop that runs writes here (a gone supervisor reads nothing)."""
        try:
            while True:
                await heartbeats.send_all(b".")
                await trio.sleep(args.heartbeat_interval)
        except trio.BrokenResourceError:
            pass  # the supervisor died: stop_when_orphaned() handles it

    async def stop_on_signal() -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                stop.set()

    async def stop_when_orphaned() -> None:
        while await supervisor.receive_some():
            pass
        stop.set()

    async def serve(task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with AsyncExitStack() as stack:
            shared = options
            if redis is not None:
                from ._shared import shared_through_redis

                shared = await stack.enter_async_context(shared_through_redis(server, options, redis))
            await stack.enter_async_context(server.running())
            mounts = {"": server.http_mount(shared)}
            tls = server_tls_context(args.certfile, args.keyfile) if args.certfile else None
            await serve_mounts(mounts, args.host, listeners=[listener], ssl_context=tls, task_status=task_status)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(beat)
        await nursery.start(serve)
        nursery.start_soon(stop_on_signal)
        nursery.start_soon(stop_when_orphaned)
        await stop.wait()
        await drain(args.drain)  # stop accepting; in-flight requests get the drain time
        nursery.cancel_scope.cancel()  # then whatever is left ends now


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m trio_mcp.scale._worker")
    parser.add_argument("server")
    parser.add_argument("--listen-fd", type=int, required=True)
    parser.add_argument("--supervisor-fd", type=int, required=True)
    parser.add_argument("--heartbeat-fd", type=int, required=True)
    parser.add_argument("--heartbeat-interval", type=float, required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--drain", type=float, required=True)
    parser.add_argument("--options", default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--certfile", default=None)
    parser.add_argument("--keyfile", default=None)
    parser.add_argument("--log-level", default=None)
    trio.run(_serve, parser.parse_args(argv))


if __name__ == "__main__":
    main()
