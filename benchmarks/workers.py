"""Stateless (2026-07-28) HTTP throughput of trio_mcp's echo server with 1 and with 2 worker processes, or with
``--sessions``, legacy-era sessions (2025-11-25) shared through Redis (``benchmarks/roaming_options.py``).

    python benchmarks/workers.py [--workers 1,2] [--clients 16,64] [--requests 20000] [--seconds 3] [--runs 3]
                                 [--sessions]

Each run starts ``python -m trio_mcp.scale echo_server:server --workers N`` on a free port of 127.0.0.1, then
drives it with loadgen.py's HTTP client (``clients`` keep-alive connections, one echo call outstanding on
each, 300 warm-up calls, then up to ``requests`` calls or ``seconds``), and stops it with SIGTERM. Worker
counts alternate run by run; the table shows medians and the ratio to one worker. On a 2-core machine the
load generator shares the cores with the workers, so two workers cannot reach twice one worker's rate.
With ``--sessions`` a redis-server (from PATH; no persistence, so the disk does not pace it) runs on a free
port for the whole benchmark; each client opens its session first, then calls on it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import loadgen  # noqa: E402


@contextmanager
def redis_server(directory: str) -> Iterator[str]:
    """A redis-server without persistence on a free port; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("--sessions needs redis-server on PATH (tests/scale/setup.sh installs it)")
    port = loadgen.free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        loadgen.connect_when_ready(port, timeout=15).close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(10)


def measure(workers: int, clients: int, *, requests: int, seconds: float, log: Path, sessions: bool) -> dict[str, Any]:
    port = loadgen.free_port()
    argv = [
        sys.executable,
        "-m",
        "trio_mcp.scale",
        "echo_server:server",
        "--workers",
        str(workers),
        "--port",
        str(port),
        "--drain-timeout",
        "2",
        *(("--options", "roaming_options:options") if sessions else ()),
    ]
    server = loadgen.Server(argv, stdio=False, log=log)
    try:
        loadgen.connect_when_ready(port, timeout=60).close()
        return loadgen.run_http_load(
            server, port, clients=clients, modern=not sessions, requests=requests, seconds=seconds, warmup=300
        )
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--clients", default="16,64")
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sessions", action="store_true", help="sessions shared through Redis, not stateless")
    args = parser.parse_args(argv)
    worker_counts = [int(n) for n in args.workers.split(",")]
    client_counts = [int(n) for n in args.clients.split(",")]
    paths = [str(loadgen.ROOT), str(BENCH), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    rates: dict[tuple[int, int], list[float]] = {}
    p50s: dict[tuple[int, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        if args.sessions:
            os.environ["TRIO_MCP_BENCH_REDIS"] = stack.enter_context(redis_server(scratch))
        for run in range(args.runs):
            for clients in client_counts:
                for workers in worker_counts if run % 2 == 0 else reversed(worker_counts):
                    log = Path(scratch) / f"w{workers}-c{clients}-{run}.log"
                    result = measure(
                        workers, clients, requests=args.requests, seconds=args.seconds, log=log, sessions=args.sessions
                    )
                    if result["errors"]:
                        print(f"{result['errors']} errors with {workers} workers; see {log}", file=sys.stderr)
                        return 1
                    rates.setdefault((workers, clients), []).append(result["calls_per_s"])
                    p50s.setdefault((workers, clients), []).append(result["p50_ms"])
    mode = "sessions through Redis" if args.sessions else "stateless"
    print(f"{mode} tools/call echo, {os.cpu_count()} cores, median of {args.runs} runs")
    print(f"{'workers':>7} {'clients':>7} {'calls/s':>9} {'p50 ms':>7} {'vs 1 worker':>11}")
    for clients in client_counts:
        base = statistics.median(rates[(worker_counts[0], clients)])
        for workers in worker_counts:
            rate = statistics.median(rates[(workers, clients)])
            p50 = statistics.median(p50s[(workers, clients)])
            print(f"{workers:>7} {clients:>7} {rate:>9.0f} {p50:>7.2f} {rate / base:>10.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
