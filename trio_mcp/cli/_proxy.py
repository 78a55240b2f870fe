"""``trio-mcp proxy``: serve any MCP server (``--url`` or ``-- command``) as a trio_mcp server on any transport."""

from __future__ import annotations

import argparse
import sys

import trio

from ._connect import open_target_client
from ._exit import OK
from ._signals import until_interrupted

__all__ = ["proxy_command"]


async def _proxy(args: argparse.Namespace) -> int:
    from ..proxy import Proxy

    relay = Proxy(name=args.name)
    async with trio.open_nursery() as nursery:
        async with open_target_client(args, **relay.client_options()) as upstream:
            server = await relay.attach(upstream, nursery)
            if args.transport == "stdio":
                await server.serve_stdio()
                return OK
            if args.transport == "ws":
                port = await nursery.start(server.serve_websocket, args.host, args.port)
                where = f"ws://{args.host}:{port}/"
            else:
                port = await nursery.start(server.serve_http, args.host, args.port)
                where = f"http://{args.host}:{port}/{'sse' if args.transport == 'sse' else 'mcp'}"
            print(
                f"trio-mcp: proxying {upstream.server_info.name} ({upstream.protocol_version}) on {where} "
                "(Ctrl-C to stop)",
                file=sys.stderr,
                flush=True,
            )
            await trio.sleep_forever()


async def proxy_command(args: argparse.Namespace) -> int:
    """Entry point of ``proxy`` inside ``trio.run``."""
    return await until_interrupted(lambda: _proxy(args))
