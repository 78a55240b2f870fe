"""Where a server's CPU goes, by layer: trio_mcp's echo server against the bare trio echo, per echo call.

    .venv/bin/python benchmarks/profiling.py                              # stateless HTTP, 16 clients
    .venv/bin/python benchmarks/profiling.py --kind http,stateless        # sessions (2025-11-25), then stateless
    .venv/bin/python benchmarks/profiling.py --kind stdio --clients 64    # stdio, 64 calls in flight

For each kind and each server, one load phase of ``loadgen.py`` measures the server's real CPU per call
(/proc, unprofiled), and a second runs the server under cProfile timed by the process's CPU clock. Every function's
own time is charged to a layer by its file: h11; trio; the JSON codec and wire conversion; trio_mcp's h11 server, its
HTTP transport, its stdio and other transports, its engine (session, runner, lifecycle, dispatch) and its MCP server
(tools, argument binding, results); the handler; the socket and pipe syscalls. A builtin or standard library
function goes to the layer of whoever called it. The table gives profiled µs per call and the real CPU per call
split in the profiled shares. Profiling inflates Python-heavy code more than C, so the real split is an estimate
that overstates the Python layers a little; over HTTP the line under the table measures h11 alone, unprofiled, as a
check. The totals less h11's share, and their ratio, say how far trio_mcp is from the bare echo with h11 left out.

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

H11 = "h11 (parsing and serialising HTTP)"
#: trio_mcp's files by layer, first match wins (a path fragment of each; the h11 server under either of its names).
_TRIO_MCP_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("JSON and wire conversion (JSON-RPC framing, attrs/cattrs)", ("/_core/jsonrpc", "/_wire/convert")),
    (
        "trio_mcp h11 server (connections, requests, responses)",
        ("/_h11server/", "/_http_server", "/_http_types", "/_quick_lock"),
    ),
    (
        "trio_mcp HTTP transport (routing, checks, sessions, stateless)",
        (
            "/transports/http/",
            "/streamable_http",
            "/_core/inbound",
            "/_core/hosts",
            "/_core/mcp_headers",
            "/_core/sse",
            "/_core/session_",
        ),
    ),
    ("trio_mcp stdio and other transports (framing, pipes)", ("/transports/", "/_core/framing")),
    (
        "engine (session, runner, lifecycle, dispatch, deadlines)",
        (
            "/_session.py",
            "/_runner.py",
            "/_in_task.py",
            "/_task_set.py",
            "/_deadline.py",
            "/_failures.py",
            "/_middleware.py",
            "/_core/",
            "/server/_connection",
            "/server/_modern",
            "/server/_context",
            "/server/_registry",
        ),
    ),
    ("MCP server (tools, argument binding, results)", ("/trio_mcp/",)),
)
_SYSCALLS = ("send", "recv", "write", "read")


def run(fn: Callable[..., Awaitable[Any]], *args: Any, profile: str | None = None) -> None:
    """``trio.run(fn, *args)``; with ``profile``, under cProfile, the stats written to that path at the end."""
    if profile is None:
        trio.run(fn, *args)
        return
    import cProfile
    import time

    # The process's CPU time, not the clock: on a shared machine the clock also counts what other processes ran
    # while this one waited for a CPU, and charges it to whatever function was running.
    profiler = cProfile.Profile(time.process_time)
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
        return H11
    if "/trio/" in path or "/outcome/" in path or path.endswith("contextlib.py"):
        return "trio"
    if "generated methods trio." in path or "generated methods outcome." in path:
        return "trio"
    if "/json/" in path or "/cattrs/" in path or "/attr/" in path or "generated methods trio_mcp." in path:
        return "JSON and wire conversion (JSON-RPC framing, attrs/cattrs)"
    if "/trio_mcp/" in path:
        return next(layer for layer, parts in _TRIO_MCP_LAYERS if any(part in path for part in parts))
    if "echo_server" in path:
        return "the handler (the echo tool's own code)"
    if "bare_trio_echo" in path:
        return "the bare echo's own code"
    return None


def _is_syscall(path: str, name: str) -> bool:
    """A builtin that reads or writes a socket or pipe, or polls them (``epoll``)."""
    if path != "~":
        return False
    return "epoll" in name or (any(word in name for word in _SYSCALLS) and ("socket" in name or "posix" in name))


def layer_split(stats: pstats.Stats, per_call: str) -> dict[str, float]:
    """Profiled µs per echo call, by layer, of one profile; the whole under "total"."""
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
    split["total"] = stats.total_tt  # type: ignore[attr-defined]
    return {layer: own / calls * 1e6 for layer, own in split.most_common()}


def load_phase(peer: Any, kind: str, clients: int, seconds: float, where: Path) -> dict[str, Any]:
    """Drive one load phase of ``kind`` against a fresh server of ``peer``; loadgen's summary of it."""
    import loadgen

    if kind == "stdio":
        server = loadgen.Server(peer.stdio_argv, stdio=True, log=where / f"{peer.name}.log")
        try:
            client = loadgen.StdioClient(server)
            client.handshake()
            return loadgen.run_stdio_load(
                client, in_flight=clients, requests=40_000, seconds=seconds, warmup=300, first_id=1
            )
        finally:
            server.stop()
    server, port, _conn, _cold = loadgen.start_http(peer, where / f"{peer.name}.log", kind="load")
    try:
        return loadgen.run_http_load(
            server, port, clients=clients, modern=kind == "stateless", requests=40_000, seconds=seconds, warmup=300
        )
    finally:
        server.stop()


def split_with_real_cpu(
    peer: Any, kind: str, clients: int, seconds: float, where: Path
) -> tuple[dict[str, float], dict[str, float]]:
    """({layer: profiled µs per call}, {layer: real µs per call}) of one peer: a load phase under cProfile, and one
    without it whose measured server CPU per call is split by the profiled shares ("total" holds the totals)."""
    import pstats

    import loadgen

    real = load_phase(peer, kind, clients, seconds, where)["server_cpu_us_per_call"]
    load_phase(loadgen.with_profile(peer, str(where / peer.name)), kind, clients, seconds, where)
    stats = where / f"{peer.name}-{'stdio' if kind == 'stdio' else 'http-load'}.prof"
    profiled = layer_split(pstats.Stats(str(stats)), PER_CALL[peer.name])
    return profiled, {layer: real * figure / profiled["total"] for layer, figure in profiled.items()}


def h11_alone(rounds: int = 20_000) -> float:
    """CPU µs per exchange of h11 alone, unprofiled: the bare echo's use of it (a POST with a JSON body in, its
    events read, a 200 with a JSON body out), on one connection kept alive. A check on the profile's h11 row."""
    import time

    import h11

    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    conn = h11.Connection(h11.SERVER)
    started = time.process_time()
    for _ in range(rounds):
        conn.receive_data(request)
        while type(conn.next_event()) is not h11.EndOfMessage:
            pass
        conn.send(h11.Response(status_code=200, headers=headers))
        conn.send(h11.Data(data=body))
        conn.send(h11.EndOfMessage())
        conn.start_next_cycle()
    return (time.process_time() - started) / rounds * 1e6


def report(
    kind: str, clients: int, splits: dict[str, tuple[dict[str, float], dict[str, float]]], h11_cpu: float | None
) -> list[str]:
    """The layer table of one kind, with the totals less h11 and what they make of trio_mcp against the bare echo
    (``h11_cpu``: h11 alone, measured, to check the estimate of its row against)."""
    names = ("bare_trio", "trio_mcp")
    layers = [layer for layer in dict.fromkeys(k for name in names for k in splits[name][0]) if layer != "total"]
    width = max(len(layer) for layer in [*layers, "total without h11"]) + 2
    unit = "in flight" if kind == "stdio" else "clients"
    lines = [
        f"{kind}, {clients} {unit}: server µs per call by layer (profiled, and the real CPU split by profiled shares)",
        f"{'layer':<{width}}{'bare':>10}{'trio_mcp':>10}{'bare':>10}{'trio_mcp':>10}",
        f"{'':<{width}}{'profiled':>10}{'profiled':>10}{'real':>10}{'real':>10}",
    ]
    for layer in [*layers, "total"]:
        row = [splits[name][part].get(layer, 0.0) for part in (0, 1) for name in names]
        lines.append(f"{layer:<{width}}" + "".join(f"{figure:>10.1f}" for figure in row))
    bare, ours = splits["bare_trio"][1]["total"], splits["trio_mcp"][1]["total"]
    ratio = (
        f"bare / trio_mcp, real CPU per call (the calls/s ratio where the server is the bottleneck): {bare / ours:.2f}"
    )
    if h11_cpu is None:
        return [*lines, ratio]
    less = [splits[name][part]["total"] - splits[name][part].get(H11, 0.0) for part in (0, 1) for name in names]
    lines.append(f"{'total without h11':<{width}}" + "".join(f"{figure:>10.1f}" for figure in less))
    return [
        *lines,
        f"{ratio}; with h11's share subtracted from both: {less[2] / less[3]:.2f}",
        f"h11 alone, unprofiled, in-process (the bare echo's exchange): {h11_cpu:.1f} µs a call, against "
        f"{splits['bare_trio'][1].get(H11, 0.0):.1f} estimated above for the bare echo",
    ]


def main() -> None:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--kind",
        default="stateless",
        help="stateless, http (sessions) or stdio; several with commas (default stateless)",
    )
    parser.add_argument("--clients", type=int, default=16, help="HTTP clients, or stdio calls in flight")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    kinds = [kind.strip() for kind in args.kind.split(",") if kind.strip()]
    if not kinds or any(kind not in ("stateless", "http", "stdio") for kind in kinds):
        parser.error("--kind takes stateless, http or stdio, or several of them with commas")
    if args.clients < 1 or args.seconds <= 0:
        parser.error("--clients must be at least 1 and --seconds positive")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import loadgen

    known = loadgen.peers()
    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            splits = {
                name: split_with_real_cpu(known[name], kind, args.clients, args.seconds, Path(tmp))
                for name in ("bare_trio", "trio_mcp")
            }
            out += [*report(kind, args.clients, splits, None if kind == "stdio" else h11_alone()), ""]
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    main()
