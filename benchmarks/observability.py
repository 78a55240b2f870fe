"""The cost of middleware and OpenTelemetry: server CPU per ``tools/call`` with neither, with one pass-through
middleware, with the six of ``trio_mcp.middleware`` stacked (none binding: the cost of passing through them),
and with ``trio_mcp.otel`` on the SDK (spans batched to an exporter that drops them, metrics read
by a periodic reader), over stdio, HTTP sessions and stateless HTTP.

    python benchmarks/observability.py [--runs 5] [--quick]

The variants run in turn, run after run; the figures are medians over the runs (``loadgen.py`` measures:
the server's CPU time from /proc over each measured window, divided by the calls answered).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from typing import Any

from loadgen import Counts, peers, run_peer

VARIANTS = ("none", "middleware", "shipped", "otel")
#: (metric group, loadgen result key): one call in flight (a request's whole cost, wake-ups included) and 64
#: (the marginal cost of a call under load).
PHASES = (
    ("stdio", "stdio_c1"),
    ("stdio", "stdio_c64"),
    ("http", "http_c1"),
    ("http", "http_c64"),
    ("stateless", "stateless_c1"),
    ("stateless", "stateless_c64"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny counts, one run (a smoke test)")
    args = parser.parse_args(argv)
    counts = Counts.quick() if args.quick else Counts()
    runs = 1 if args.quick else args.runs
    base = peers()["trio_mcp"]
    samples: dict[str, dict[str, list[float]]] = {v: {key: [] for _, key in PHASES} for v in VARIANTS}
    for run in range(runs):
        for variant in VARIANTS:
            peer = replace(
                base,
                stdio_argv=[*base.stdio_argv, "--observe", variant],
                http_argv=[*base.http_argv, "--observe", variant],
            )
            result = run_peer(peer, counts, sorted({group for group, _ in PHASES}))
            for _, key in PHASES:
                value = (result.get(key) or {}).get("server_cpu_us_per_call")
                if value is not None:
                    samples[variant][key].append(value)
            print(f"run {run + 1}/{runs} {variant}: done", file=sys.stderr)
    medians: dict[str, dict[str, Any]] = {
        variant: {key: statistics.median(values) if values else None for key, values in by_key.items()}
        for variant, by_key in samples.items()
    }
    print(json.dumps({"runs": runs, "server_cpu_us_per_call": medians}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
