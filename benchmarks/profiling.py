"""Where a server's time goes, by layer: trio_mcp's echo server against the bare trio echo, both under cProfile.

    .venv/bin/python benchmarks/profiling.py                         # stateless HTTP, 16 clients
    .venv/bin/python benchmarks/profiling.py --kind http --clients 64  # sessions (2025-11-25)
    .venv/bin/python benchmarks/profiling.py --kind stdio --clients 64 # stdio, 64 calls in flight

Each server runs under cProfile while ``loadgen.py``'s load phase drives it; the time of every function is then
charged to a layer (h11, trio, the JSON codec, trio_mcp's transports, its session and MCP layers, the socket and
pipe syscalls; a builtin or standard library function to the layer of whoever called it) and printed in
profiled µs per echo call. Profiling inflates Python-heavy code more than C, so read shares and differences
between the two servers, not absolute figures (``loadgen.py`` measures those, unprofiled).

The echo servers import ``run`` and ``end_on_signal`` from here to run under ``--profile PATH``; this module
imports nothing of trio_mcp at the top, so the bare echo stays free of it.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    import pstats

# Only what the echo servers need is imported at the top: the bare echo's cold start is a reference figure.

#: The function each server runs once per echo call: the per-call divisor.
PER_CALL = {"trio_mcp": "_call_tool", "bare_trio": "answer"}

#: trio_mcp modules of its transports, its HTTP server included (the rest is the session engine and the MCP layers).
_TRANSPORTS = ("/transports/", "/_core/inbound", "/_core/hosts", "/_core/mcp_headers", "/_in_task")
_SYSCALLS = ("send", "recv", "write", "read")


def run(fn: Callable[..., Awaitable[Any]], *args: Any, profile: str | None = None) -> None:
    """``trio.run(fn, *args)``; with ``profile``, under cProfile, the stats written to that path at the end."""
    if profile is None:
        trio.run(fn, *args)
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        trio.run(fn, *args)
    finally:
        profiler.disable()
        profiler.dump_stats(profile)


async def end_on_signal(scope: trio.CancelScope) -> None:
    """Cancel ``scope`` at SIGTERM or SIGINT: a profiled HTTP server then ends cleanly and its stats are written."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


def _layer(path: str) -> str | None:
    """The layer a function's file belongs to; None for builtins and the rest of the standard library."""
    if "/h11/" in path:
        return "h11"
    if "/trio/" in path or "/outcome/" in path or "generated methods trio." in path or path.endswith("contextlib.py"):
        return "trio"
    if "/json/" in path or "/_core/jsonrpc" in path:
        return "JSON codec (with JSON-RPC framing)"
    if "trio_mcp" in path:
        return "trio_mcp transports" if any(part in path for part in _TRANSPORTS) else "trio_mcp session and MCP layers"
    if "bare_trio_echo" in path:
        return "the bare echo's own code"
    return None


def _is_syscall(path: str, name: str) -> bool:
    """A builtin that reads or writes a socket or pipe, or polls them (``epoll``)."""
    if path != "~":
        return False
    return "epoll" in name or (any(word in name for word in _SYSCALLS) and ("socket" in name or "posix" in name))


def layer_split(stats: pstats.Stats, per_call: str) -> tuple[float, dict[str, float]]:
    """(profiled µs per call, {layer: profiled µs per call}) of one profile."""
    import collections

    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    calls = max(entry[1] for key, entry in table.items() if key[2] == per_call)
    split: collections.Counter[str] = collections.Counter()
    for (path, _line, name), (_cc, _nc, own, _cum, callers) in table.items():
        layer = "socket, pipe and poll syscalls" if _is_syscall(path, name) else _layer(path)
        if layer is not None:
            split[layer] += own
            continue
        by_caller = sum(entry[2] for entry in callers.values()) or 1.0
        for caller, entry in callers.items():
            split[_layer(caller[0]) or "standard library (called by itself)"] += own * entry[2] / by_caller
    total: float = stats.total_tt  # type: ignore[attr-defined]
    return total / calls * 1e6, {layer: own / calls * 1e6 for layer, own in split.most_common()}


def profile_peer(peer_name: str, kind: str, clients: int, seconds: float, where: Path) -> Path:
    """Run one peer's server under cProfile through a load phase; the path of its stats."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import loadgen

    peer = loadgen.with_profile(loadgen.peers()[peer_name], str(where / peer_name))
    if kind == "stdio":
        server = loadgen.Server(peer.stdio_argv, stdio=True, log=where / f"{peer_name}.log")
        try:
            client = loadgen.StdioClient(server)
            client.handshake()
            loadgen.run_stdio_load(client, in_flight=clients, requests=40_000, seconds=seconds, warmup=300, first_id=1)
        finally:
            server.stop()
        return where / f"{peer_name}-stdio.prof"
    server, port, _conn, _cold = loadgen.start_http(peer, where / f"{peer_name}.log", kind="load")
    try:
        loadgen.run_http_load(
            server, port, clients=clients, modern=kind == "stateless", requests=40_000, seconds=seconds, warmup=300
        )
    finally:
        server.stop()
    return where / f"{peer_name}-http-load.prof"


def main() -> None:
    import argparse
    import pstats
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", choices=("stateless", "http", "stdio"), default="stateless")
    parser.add_argument("--clients", type=int, default=16, help="HTTP clients, or stdio calls in flight")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if args.clients < 1 or args.seconds <= 0:
        parser.error("--clients must be at least 1 and --seconds positive")
    with tempfile.TemporaryDirectory() as tmp:
        splits = {}
        for name in ("bare_trio", "trio_mcp"):
            path = profile_peer(name, args.kind, args.clients, args.seconds, Path(tmp))
            splits[name] = layer_split(pstats.Stats(str(path)), PER_CALL[name])
    layers = list(dict.fromkeys(layer for _, split in splits.values() for layer in split))
    print(f"{args.kind}, {args.clients} {'in flight' if args.kind == 'stdio' else 'clients'}: profiled µs per call")
    print(f"{'layer':<40} {'bare trio':>10} {'trio_mcp':>10}")
    for layer in layers:
        print(
            f"{layer:<40} {splits['bare_trio'][1].get(layer, 0.0):>10.1f} {splits['trio_mcp'][1].get(layer, 0.0):>10.1f}"
        )
    print(f"{'total':<40} {splits['bare_trio'][0]:>10.1f} {splits['trio_mcp'][0]:>10.1f}")


if __name__ == "__main__":
    main()
