"""``python -m trio_mcp.scale package.module:server --workers N``: serve a server with worker processes."""

from __future__ import annotations

import argparse
import logging
import sys

import trio

from .workers import WorkerSettings, supervise_workers


async def _main(settings: WorkerSettings) -> int:
    status: list[int] = []

    async def supervise(task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        status.append(await supervise_workers(settings, task_status=task_status))

    async with trio.open_nursery() as nursery:
        port = await nursery.start(supervise)
        print(f"serving {settings.scheme}://{settings.host}:{port} with {settings.workers} workers", flush=True)
    return status[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trio_mcp.scale", description=__doc__)
    parser.add_argument("server", help="the trio_mcp.Server to serve, as package.module:attribute")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--options", default=None, help="HttpTransportOptions as package.module:attribute")
    parser.add_argument(
        "--redis", default=None, metavar="URL", help="share sessions, their events and task records through this Redis"
    )
    parser.add_argument("--drain-timeout", type=float, default=10.0)
    parser.add_argument(
        "--worker-timeout",
        type=float,
        default=30.0,
        help="kill and replace a worker whose event loop is blocked this long",
    )
    parser.add_argument("--certfile", default=None, help="PEM certificate chain: serve HTTPS (with --keyfile)")
    parser.add_argument("--keyfile", default=None, help="the certificate's PEM private key")
    parser.add_argument("--max-restarts", type=int, default=5)
    parser.add_argument("--restart-window", type=float, default=60.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        settings = WorkerSettings(
            server=args.server,
            workers=args.workers,
            host=args.host,
            port=args.port,
            options=args.options,
            drain_timeout=args.drain_timeout,
            worker_timeout=args.worker_timeout,
            max_restarts=args.max_restarts,
            restart_window=args.restart_window,
            certfile=args.certfile,
            keyfile=args.keyfile,
            redis=args.redis,
        )
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    if settings.unshared is not None:
        logging.getLogger("trio_mcp.scale").warning(settings.unshared)
    return trio.run(_main, settings)


if __name__ == "__main__":
    sys.exit(main())
