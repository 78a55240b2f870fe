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
import signal
import socket
from typing import Any

import attrs
import trio

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
    from ..transports.streamable_http import HttpTransportOptions, serve_mounts

    server = load(args.server)
    if not isinstance(server, Server):
        raise TypeError(f"{args.server} is a {type(server).__name__}, not a trio_mcp.Server")
    options = load(args.options) if args.options else HttpTransportOptions()
    if not isinstance(options, HttpTransportOptions):
        raise TypeError(f"{args.options} is a {type(options).__name__}, not an HttpTransportOptions")
    if args.workers > 1 and options.sessions:
        logger.warning("handshake-era sessions live in the worker that created them: a client connection that "
                       "reaches another worker gets 404 (serve them with one worker, or sessions=False)")
    options = attrs.evolve(options, limits=attrs.evolve(options.limits, graceful_shutdown_timeout=args.drain))
    sock = socket.socket(fileno=args.listen_fd)
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    supervisor = trio.lowlevel.FdStream(args.supervisor_fd)
    heartbeats = trio.lowlevel.FdStream(args.heartbeat_fd)

    async def beat() -> None:
        """Until the worker has drained: an event loop that runs writes here (a gone supervisor reads nothing)."""
        try:
            while True:
                await heartbeats.send_all(b".")
                await trio.sleep(args.heartbeat_interval)
        except trio.BrokenResourceError:
            pass  # the supervisor died: drain_when_orphaned() handles it

    async with trio.open_nursery() as beating:  # outside the serving nursery, so it beats while draining
        beating.start_soon(beat)
        async with trio.open_nursery() as nursery:

            async def drain_on_signal() -> None:
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        nursery.cancel_scope.cancel()  # the HTTP server turns this into its graceful stop

            async def drain_when_orphaned() -> None:
                while await supervisor.receive_some():
                    pass
                nursery.cancel_scope.cancel()

            async def serve() -> None:
                async with server.running():
                    mounts = {"": (server.serve_connection, server.tool_header_paths, options)}
                    await serve_mounts(mounts, args.host, listeners=[listener])

            nursery.start_soon(drain_on_signal)
            nursery.start_soon(drain_when_orphaned)
            nursery.start_soon(serve)
        beating.cancel_scope.cancel()

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
    trio.run(_serve, parser.parse_args(argv))


if __name__ == "__main__":
    main()
