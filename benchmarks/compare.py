"""Run every benchmark metric against trio_mcp and the official SDKs and compare them.

    .venv/bin/python benchmarks/compare.py            # 5 runs (about 7 minutes on 2 cores)
    .venv/bin/python benchmarks/compare.py --quick    # 1 run with tiny counts (a smoke test)

Peers alternate run by run (run r starts with a different peer), every metric is the median of its runs,
and each is given as a ratio trio_mcp / peer. Prints a table and whether each speed target is met
(benchmarks/targets.py; "nothing else regresses" against the report this run replaces, or --baseline), writes
benchmarks/results/latest.json (all runs and medians) and, unless --quick, rewrites the generated part of
benchmarks/RESULTS.md with both tables (text outside the generated markers is kept). Needs `bash benchmarks/setup.sh` first for the official SDKs; a peer whose
setup is missing is skipped with a note.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import loadgen  # noqa: E402
import targets  # noqa: E402

BENCH = Path(__file__).resolve().parent
BASE = "trio_mcp"
BEGIN = "<!-- BEGIN GENERATED: benchmarks/compare.py rewrites this part -->"
END = "<!-- END GENERATED -->"

#: (label, metric path, unit, which way is better: "higher" / "lower" / None for yes-no)
ROWS: list[tuple[str, str, str, str | None]] = [
    ("stdio, 1 in flight", "stdio_c1.calls_per_s", "calls/s", "higher"),
    ("stdio, 1 in flight: p50", "stdio_c1.p50_ms", "ms", "lower"),
    ("stdio, 1 in flight: p99", "stdio_c1.p99_ms", "ms", "lower"),
    ("stdio, 64 in flight", "stdio_c64.calls_per_s", "calls/s", "higher"),
    ("stdio, 64 in flight: p50", "stdio_c64.p50_ms", "ms", "lower"),
    ("stdio, 64 in flight: p99", "stdio_c64.p99_ms", "ms", "lower"),
    ("stdio: server CPU per call (64 in flight)", "stdio_c64.server_cpu_us_per_call", "µs", "lower"),
    ("HTTP sessions, 1 client", "http_c1.calls_per_s", "calls/s", "higher"),
    ("HTTP sessions, 1 client: p50", "http_c1.p50_ms", "ms", "lower"),
    ("HTTP sessions, 1 client: p99", "http_c1.p99_ms", "ms", "lower"),
    ("HTTP sessions, 16 clients", "http_c16.calls_per_s", "calls/s", "higher"),
    ("HTTP sessions, 16 clients: p50", "http_c16.p50_ms", "ms", "lower"),
    ("HTTP sessions, 16 clients: p99", "http_c16.p99_ms", "ms", "lower"),
    ("HTTP sessions, 64 clients", "http_c64.calls_per_s", "calls/s", "higher"),
    ("HTTP sessions, 64 clients: p50", "http_c64.p50_ms", "ms", "lower"),
    ("HTTP sessions, 64 clients: p99", "http_c64.p99_ms", "ms", "lower"),
    ("HTTP sessions: server CPU per call (16 clients)", "http_c16.server_cpu_us_per_call", "µs", "lower"),
    ("HTTP stateless 2026-07-28, 1 client", "stateless_c1.calls_per_s", "calls/s", "higher"),
    ("HTTP stateless, 1 client: p50", "stateless_c1.p50_ms", "ms", "lower"),
    ("HTTP stateless, 1 client: p99", "stateless_c1.p99_ms", "ms", "lower"),
    ("HTTP stateless, 16 clients", "stateless_c16.calls_per_s", "calls/s", "higher"),
    ("HTTP stateless, 16 clients: p50", "stateless_c16.p50_ms", "ms", "lower"),
    ("HTTP stateless, 16 clients: p99", "stateless_c16.p99_ms", "ms", "lower"),
    ("HTTP stateless, 64 clients", "stateless_c64.calls_per_s", "calls/s", "higher"),
    ("HTTP stateless, 64 clients: p50", "stateless_c64.p50_ms", "ms", "lower"),
    ("HTTP stateless, 64 clients: p99", "stateless_c64.p99_ms", "ms", "lower"),
    ("HTTP stateless: server CPU per call (16 clients)", "stateless_c16.server_cpu_us_per_call", "µs", "lower"),
    ("cold start, stdio (spawn to initialize answer)", "cold_start_stdio_ms", "ms", "lower"),
    ("cold start, HTTP (spawn to initialize answer)", "cold_start_http_ms", "ms", "lower"),
    ("RSS idle (HTTP, one session)", "rss_idle_mib", "MiB", "lower"),
    ("RSS with {sessions:,} open sessions", "rss_sessions_mib", "MiB", "lower"),
    ("memory per session", "rss_per_session_kib", "KiB", "lower"),
    ("cancel, stdio: notifications/cancelled to handler cancelled", "cancel_stdio.latency_ms", "ms", "lower"),
    (
        "cancel, HTTP session: notifications/cancelled to handler cancelled",
        "cancel_http_notification.latency_ms",
        "ms",
        "lower",
    ),
    ("HTTP session: closing the connection cancels the handler", "cancel_http_close_session.cancelled", "", None),
    ("HTTP stateless: closing the connection cancels the handler", "cancel_http_close_stateless.cancelled", "", None),
    ("HTTP stateless: close to handler cancelled", "cancel_http_close_stateless.latency_ms", "ms", "lower"),
    ("load generator's own CPU share, busiest phase", "loadgen_cpu_share_max", "core", None),
]

THROUGHPUT_PHASES = (
    "stdio_c1",
    "stdio_c64",
    "http_c1",
    "http_c16",
    "http_c64",
    "stateless_c1",
    "stateless_c16",
    "stateless_c64",
)


def flatten(run: dict[str, Any]) -> dict[str, Any]:
    """One run's results as {"phase.metric": value}, plus derived metrics."""
    flat: dict[str, Any] = {}
    for key, value in run.items():
        if isinstance(value, dict):
            for inner, item in value.items():
                flat[f"{key}.{inner}"] = item
        else:
            flat[key] = value
    for key in ("rss_idle", "rss_sessions"):
        if f"{key}_kib" in flat:
            flat[f"{key}_mib"] = flat[f"{key}_kib"] / 1024
    shares = [
        flat[f"{phase}.loadgen_cpu_share"]
        for phase in THROUGHPUT_PHASES
        if flat.get(f"{phase}.loadgen_cpu_share") is not None
    ]
    if shares:
        flat["loadgen_cpu_share_max"] = max(shares)
    return flat


def median(values: list[Any]) -> Any:
    values = [v for v in values if v is not None]
    if not values:
        return None
    if all(isinstance(v, bool) for v in values):
        return sum(values) * 2 > len(values) if len(set(values)) > 1 else values[0]
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if unit == "core":
        return f"{value:.2f}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu": "?",
        "cores": os.cpu_count(),
        "kernel": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    paths = loadgen._interop_paths()
    if paths.get("node"):
        try:
            info["node"] = subprocess.run(
                [paths["node"], "--version"], check=False, capture_output=True, text=True, timeout=30
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    if paths.get("mcp_python"):
        try:
            info["python_sdk_python"] = subprocess.run(
                [paths["mcp_python"], "-c", "import platform; print(platform.python_version())"],
                check=False,
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        import trio

        info["trio"] = trio.__version__
    except ImportError:
        pass
    return info


def compare(peer_names: list[str], runs: int, counts: loadgen.Counts, groups: list[str]) -> dict[str, Any]:
    known = loadgen.peers()
    chosen = [known[name] for name in peer_names]
    runnable = [peer for peer in chosen if not peer.missing]
    started = time.monotonic()
    load_before = os.getloadavg()
    per_peer: dict[str, dict[str, Any]] = {
        peer.name: {"label": peer.label, "version": peer.version, "runs": [], "errors": [], "skipped": peer.missing}
        for peer in chosen
    }
    for run in range(runs):
        order = runnable[run % len(runnable) :] + runnable[: run % len(runnable)] if runnable else []
        for peer in order:
            print(f"[{time.monotonic() - started:6.1f}s] run {run + 1}/{runs}: {peer.name}", file=sys.stderr)
            try:
                result = loadgen.run_peer(peer, counts, groups)
            except Exception as exc:  # one failed run is noted; the rest still count
                print(f"  {peer.name} failed: {exc}", file=sys.stderr)
                per_peer[peer.name]["errors"].append(f"run {run + 1}: {exc}")
                continue
            per_peer[peer.name]["runs"].append(result)
    for entry in per_peer.values():
        flats = [flatten(run) for run in entry["runs"]]
        keys = sorted({key for flat in flats for key in flat})
        entry["median"] = {key: median([flat.get(key) for flat in flats]) for key in keys}
    base = per_peer.get(BASE, {}).get("median", {})
    ratios: dict[str, dict[str, float | None]] = {}
    for name, entry in per_peer.items():
        if name == BASE:
            continue
        ratios[name] = {}
        for _, path, _, better in ROWS:
            mine, theirs = base.get(path), entry.get("median", {}).get(path)
            if better and isinstance(mine, (int, float)) and isinstance(theirs, (int, float)) and theirs:
                ratios[name][path] = mine / theirs
            else:
                ratios[name][path] = None
    return {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "elapsed_s": round(time.monotonic() - started, 1),
        "machine": machine(),
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "config": {
            "runs": runs,
            "groups": groups,
            "counts": vars(counts),
            "echo_text": loadgen.ECHO_TEXT,
            "session_version": loadgen.SESSION_VERSION,
            "stateless_version": loadgen.MODERN_VERSION,
        },
        "peers": per_peer,
        "ratios": ratios,
    }


def table(report: dict[str, Any], *, markdown: bool) -> str:
    peers = report["peers"]
    names = [name for name in peers if not peers[name].get("skipped")]
    others = [name for name in names if name != BASE]
    header = ["metric", *[peers[n]["label"] for n in names], *[f"{BASE} / {peers[n]['label']}" for n in others]]
    rows = []
    for label, path, unit, better in ROWS:
        values = [peers[n]["median"].get(path) for n in names]
        if all(v is None for v in values):
            continue
        label = label.format(sessions=report["config"]["counts"]["sessions"])
        suffix = f" ({unit}{', ' + better + ' is better' if better else ''})" if unit or better else ""
        ratios = [report["ratios"][n].get(path) for n in others]
        rows.append(
            [label + suffix, *[fmt(v, unit) for v in values], *[("—" if r is None else f"{r:.2f}×") for r in ratios]]
        )
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    out = [
        "  ".join(cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
        for row in [header, *rows]
    ]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def notes(report: dict[str, Any]) -> list[str]:
    lines = []
    for entry in report["peers"].values():
        if entry.get("skipped"):
            lines.append(f"- {entry['label']}: skipped ({entry['skipped']}).")
        for error in entry.get("errors", []):
            lines.append(f"- {entry['label']} failed in {error}")
        runs = entry.get("runs", [])
        bad = sum(phase.get("errors", 0) for run in runs for phase in run.values() if isinstance(phase, dict))
        if bad:
            lines.append(f"- {entry['label']}: {bad} echo calls came back wrong.")
    return lines


def print_tables(report: dict[str, Any], baseline: dict[str, Any] | None) -> None:
    """The figures, then each target met or not."""
    print(table(report, markdown=False))
    print("\ntargets")
    print(targets.table(targets.verdicts(report, baseline), markdown=False))


def write_results_md(report: dict[str, Any], path: Path, baseline: dict[str, Any] | None) -> None:
    m = report["machine"]
    peers = report["peers"]
    versions = ", ".join(f"{e['label']} {e['version']}".strip() for e in peers.values())
    counts = report["config"]["counts"]
    generated = [
        BEGIN,
        f"Generated {report['generated']} by `benchmarks/compare.py` "
        f"({report['config']['runs']} runs, medians; {report['elapsed_s']:.0f} s in all).",
        "",
        f"- **Machine**: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory_gib', '?')} GiB, {m.get('kernel')}",
        f"- **Runtimes**: Python {m.get('python')} (trio_mcp, trio {m.get('trio', '?')}), "
        f"Python {m.get('python_sdk_python', '?')} (official SDK), Node {m.get('node', '?')} (TypeScript SDK)",
        f"- **Peers**: {versions}",
        f"- **Load average** (1/5/15 minutes) before the run: {', '.join(map(str, report['load_average']['before']))}; "
        f"after it: {', '.join(map(str, report['load_average']['after']))} (the run itself adds about 2: a server "
        f"and the load generator). On {m.get('cores')} cores, more than that means the peers shared the CPUs with "
        f"other work: absolute figures are then noisy, the ratios less so (peers alternate run by run).",
        f"- **Load**: each throughput phase measures up to {counts['requests']:,} echo calls or "
        f"{counts['seconds']} s after {counts['warmup']} warm-up calls; {counts['sessions']:,} sessions for memory; "
        f"{counts['cancels']} cancellation samples per transport per run.",
        "",
        "Ratios are trio_mcp / peer: above 1 is better for calls/s, below 1 is better for ms, µs, MiB and KiB.",
        "",
        table(report, markdown=True),
        "",
        "Targets (benchmarks/targets.py):",
        "",
        targets.table(targets.verdicts(report, baseline), markdown=True),
        "",
        *notes(report),
        END,
    ]
    text = path.read_text() if path.exists() else ""
    if BEGIN in text and END in text:
        before = text[: text.index(BEGIN)]
        after = text[text.index(END) + len(END) :]
    else:
        before = "# Benchmark results\n\nThe latest figures of `benchmarks/compare.py`; see benchmarks/README.md.\n\n"
        after = "\n"
    path.write_text(before + "\n".join(generated) + after)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs per peer (default 5)")
    parser.add_argument("--quick", action="store_true", help="one run with tiny counts; RESULTS.md is left alone")
    parser.add_argument("--peers", default="trio_mcp,python_sdk,ts_sdk,bare_trio")
    parser.add_argument("--only", default=",".join(loadgen.ALL_GROUPS), help="metric groups to run")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "latest.json")
    parser.add_argument("--results-md", type=Path, default=BENCH / "RESULTS.md")
    parser.add_argument("--no-results-md", action="store_true", help="do not rewrite RESULTS.md")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="JSON",
        help="an earlier report to check for regressions against (default: the --out file this run replaces)",
    )
    parser.add_argument(
        "--render",
        type=Path,
        metavar="JSON",
        help="run nothing: print the table of a saved report and rewrite RESULTS.md from it",
    )
    args = parser.parse_args(argv)
    earlier = args.baseline or (None if args.render else args.out)
    baseline = json.loads(earlier.read_text()) if earlier is not None and earlier.exists() else None
    if args.render:
        report = json.loads(args.render.read_text())
        print_tables(report, baseline)
        if not args.no_results_md:
            write_results_md(report, args.results_md, baseline)
            print(f"written: {args.results_md}")
        return 0
    names = [n.strip() for n in args.peers.split(",") if n.strip()]
    known = loadgen.peers()
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown peers {unknown}; known: {', '.join(known)}")
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    counts = loadgen.Counts.quick() if args.quick else loadgen.Counts()
    runs = 1 if args.quick else args.runs
    report = compare(names, runs, counts, groups)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print_tables(report, baseline)
    for line in notes(report):
        print(line)
    print(f"\nwritten: {args.out}")
    if not args.quick and not args.no_results_md:
        write_results_md(report, args.results_md, baseline)
        print(f"written: {args.results_md}")
    failed = any(entry["errors"] for entry in report["peers"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
