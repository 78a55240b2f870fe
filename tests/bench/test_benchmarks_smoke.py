"""Smoke tests of benchmarks/, so the benchmark code cannot rot: tiny, bounded loads, no timing assertions.

- trio_mcp's echo server (benchmarks/echo_server.py) through the load generator over stdio and HTTP (sessions
  and stateless): every request is answered with the echo, and every cancellation shows in the sleep tool's
  marker file;
- the command lines of the load generator, the hot-path micro-benchmark, the layer profile, the stdio counts, the
  observability benchmark and the capacity benchmark;
- ``compare.py --quick`` against the official SDKs (marked interop), ending with the targets table (its shape, not
  its verdicts): skipped, with the reason, only when their set-up (``bash benchmarks/setup.sh``) has not been run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from paths import ROOT

BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

import loadgen  # noqa: E402
import targets  # noqa: E402

pytestmark = pytest.mark.bench

PHASES = ("stdio_c1", "stdio_c64", "http_c1", "http_c16", "http_c64", "stateless_c1", "stateless_c16", "stateless_c64")
COUNTS = loadgen.Counts(requests=40, seconds=60.0, warmup=4, sessions=6, cancels=1)


def check_load(name: str, phase: dict[str, Any]) -> None:
    total = COUNTS.requests + COUNTS.warmup
    assert phase["sent"] == total, (name, phase)
    assert phase["answered"] == total, (name, phase)
    assert phase["errors"] == 0, (name, phase)
    assert phase["measured_calls"] == COUNTS.requests, (name, phase)
    assert phase["calls_per_s"] > 0 and phase["p50_ms"] is not None and phase["p99_ms"] >= phase["p50_ms"]
    assert phase["server_cpu_us_per_call"] is not None and phase["loadgen_cpu_share"] is not None


def test_trio_mcp_echo_server_through_the_load_generator() -> None:
    peer = loadgen.peers()["trio_mcp"]
    assert peer.missing is None
    result = loadgen.run_peer(peer, COUNTS)
    for name in PHASES:
        check_load(name, result[name])
    assert result["cold_start_stdio_ms"] > 0 and result["cold_start_http_ms"] > 0
    assert result["sessions_opened"] == COUNTS.sessions
    assert result["rss_idle_kib"] > 0 and result["rss_sessions_kib"] > 0
    # notifications/cancelled reaches the handler, over stdio and over an HTTP session
    for name in ("cancel_stdio", "cancel_http_notification"):
        assert result[name]["cancelled"] is True, (name, result[name])
        assert result[name]["latency_ms"] is not None
        assert result[name]["responded"] is False  # no response for a cancelled request
    # closing a stateless request's connection is its cancellation
    assert result["cancel_http_close_stateless"]["cancelled"] is True
    # a dropped legacy-era stream may or may not cancel: either way the handler ended, and the marker says how
    close = result["cancel_http_close_session"]
    assert close["samples"] == 1 and close["cancelled_count"] in (0, 1)


def test_sleep_marker_records_start_and_cancel(tmp_path: Path) -> None:
    server = loadgen.Server(loadgen.peers()["trio_mcp"].stdio_argv, stdio=True, log=tmp_path / "stderr.log")
    try:
        client = loadgen.StdioClient(server)
        client.handshake()
        sample = loadgen.stdio_cancel(client, 5, tmp_path, seconds=30.0)
    finally:
        server.stop()
    assert sample["cancelled"] is True
    lines = (tmp_path / "stdio-cancel-5").read_text().split()
    assert lines[0::2] == ["start", "cancelled"]
    assert float(lines[3]) >= float(lines[1])


def run_script(name: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``benchmarks/<name>`` with ``args`` from the benchmarks folder; its output as text."""
    return subprocess.run(
        [sys.executable, str(BENCH / name), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=BENCH,
    )


def test_loadgen_command_line() -> None:
    done = run_script("loadgen.py", "--peer", "trio_mcp", "--only", "stdio", "--requests", "30", timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["peer"] == "trio_mcp"
    assert report["results"]["stdio_c64"]["errors"] == 0
    assert report["results"]["stdio_c64"]["answered"] == report["results"]["stdio_c64"]["sent"]


def test_hotpath_micro_benchmark() -> None:
    done = run_script("hotpath.py", "--quick", "--profile", "--top", "5", timeout=120)
    assert done.returncode == 0, done.stderr
    for stage in ("parse", "classify", "convert", "serialise", "end to end, 64 in flight", "profile, sorted by"):
        assert stage in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("kind", "layer"),
    [("stateless,http", "h11 (parsing and serialising HTTP)"), ("stdio", "JSON and wire conversion (JSON-RPC framing")],
)
def test_profiling_splits_both_servers_by_layer(kind: str, layer: str) -> None:
    """benchmarks/profiling.py runs the bare echo and trio_mcp's under cProfile and charges each layer, profiled and
    in real CPU; over HTTP also without h11."""
    done = run_script("profiling.py", "--kind", kind, "--clients", "2", "--seconds", "0.5", timeout=300)
    assert done.returncode == 0, done.stderr
    tables = done.stdout.split("\n\n")
    assert len(tables) == len(kind.split(",")), done.stdout
    for table in tables:
        rows = [line.rsplit(maxsplit=4) for line in table.splitlines()[3:] if ":" not in line]
        figures = {row[0]: [float(figure) for figure in row[1:]] for row in rows}
        bare, ours, bare_real, ours_real = next(row for name, row in figures.items() if name.startswith(layer))
        assert min(bare, ours, bare_real, ours_real) > 0, table  # both servers pay for it
        engine = figures["engine (session, runner, lifecycle, dispatch, deadlines)"]
        assert engine[0] == engine[2] == 0.0 < min(engine[1], engine[3]), table  # only trio_mcp has one
        assert figures["total"][3] > engine[3], table
        assert "bare / trio_mcp, real CPU per call" in table
        if kind != "stdio":
            assert figures["total without h11"][1] < figures["total"][1], table
            assert "with h11's share subtracted from both" in table and "h11 alone, unprofiled" in table


def test_counts_of_a_stdio_call() -> None:
    """benchmarks/counts.py counts the bytecodes and calls one stdio echo call runs, in both servers."""
    done = run_script("counts.py", "--calls", "64", "--per-read", "2", "--per-read", "64", "--top", "3", timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:] if not line.startswith(" ")]
    assert [(row[0], row[1]) for row in rows] == [
        ("bare_trio", "2"),
        ("trio_mcp", "2"),
        ("bare_trio", "64"),
        ("trio_mcp", "64"),
    ]
    for bare, ours in (rows[0:2], rows[2:4]):
        assert 0 < float(bare[2]) < float(ours[2]) and 0 < float(bare[3]) < float(ours[3]), done.stdout
    assert len([line for line in done.stdout.splitlines() if line.startswith("    ")]) == 6  # the top 3, twice


def test_counts_of_the_cancellations() -> None:
    """counts.py counts each cancellation loadgen.py times, to the handler's Cancelled, with scheduler passes (the
    cancel is read in one and reaches the handler in a later one)."""
    kinds = ["cancel-stdio", "cancel-http", "cancel-stateless"]
    done = run_script("counts.py", "--kind", ",".join(kinds), "--calls", "3", "--top", "2", timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("trio_mcp")]
    assert [row[1] for row in rows] == kinds, done.stdout
    for _, _, bytecodes, calls, passes in rows:
        assert float(bytecodes) > float(calls) > 0 and float(passes) >= 2, done.stdout
    assert len([line for line in done.stdout.splitlines() if line.startswith("    ")]) == 6  # the top 2, thrice


def test_observability_overhead_benchmark() -> None:
    """benchmarks/observability.py runs the echo server bare, with a middleware, with the shipped stack and with
    OpenTelemetry."""
    done = run_script("observability.py", "--quick")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)["server_cpu_us_per_call"]
    for variant in ("none", "middleware", "shipped", "otel"):
        assert all(figures[variant][phase] is not None for phase in ("stdio_c1", "http_c1", "stateless_c1")), figures


def test_deadlines_benchmark() -> None:
    """benchmarks/deadlines.py cancels every hop of a client -> proxy -> proxy -> server chain by its deadline."""
    done = run_script("deadlines.py", "--quick")
    assert done.returncode == 0, done.stderr
    ends = json.loads(done.stdout)["handler_end_minus_deadline_ms"]
    assert set(ends) == {"proxy 1", "proxy 2", "server", "client"}
    assert all(abs(end["worst"]) < 1000 for end in ends.values()), ends  # not the ten seconds the tool takes


def test_capacity_benchmark() -> None:
    """benchmarks/capacity.py holds sessions and calls in flight, ends them all, round after round."""
    done = run_script("capacity.py", "--sessions", "40", "--in-flight", "40", "--rounds", "2")
    assert done.returncode == 0, done.stderr + done.stdout
    report = json.loads(done.stdout)
    for number, round_ in enumerate(report["rounds"], 1):
        assert round_["round"] == number and round_["sessions_opened"] == round_["sessions_deleted"] == 40
        assert round_["with_calls_in_flight"]["holding"] == round_["calls_answered"] == 40
        assert round_["ended"]["holding"] == 0 and round_["ended"]["tasks"] <= report["baseline"]["tasks"] + 2
    assert report["flat"] is True


@pytest.mark.interop
def test_compare_quick_against_the_official_sdks(tmp_path: Path) -> None:
    missing = [peer.missing for peer in loadgen.peers().values() if peer.missing]
    if missing:
        pytest.skip("; ".join(missing))
    out = tmp_path / "latest.json"
    done = run_script("compare.py", "--quick", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    for name in ("trio_mcp", "python_sdk", "ts_sdk"):
        entry = report["peers"][name]
        assert entry["errors"] == [] and len(entry["runs"]) == 1, (name, entry["errors"])
        run = entry["runs"][0]
        for phase_name in PHASES:
            phase = run.get(phase_name)
            if phase is None:
                assert name == "ts_sdk" and phase_name.startswith("stateless")  # SDK 1.x has no 2026-07-28
                continue
            assert phase["errors"] == 0 and phase["answered"] == phase["sent"], (name, phase_name, phase)
        assert run["cancel_stdio"]["cancelled"] and run["cancel_http_notification"]["cancelled"], name
    assert "trio_mcp / official Python SDK" in done.stdout
    # the run ends with every target, each met or not with its figures; nothing was missing to judge it on
    verdicts = done.stdout.split("\ntargets\n", 1)[1].splitlines()[2:8]
    assert [line.split("  ")[0] for line in verdicts] == [row.target for row in targets.verdicts(report)], verdicts
    assert all(line.endswith(("  met", "  not met")) for line in verdicts[:5]), verdicts
    # a quick run is no baseline for a full one; against itself, nothing regressed
    assert verdicts[5].endswith("  not measured"), verdicts
    results_md = tmp_path / "RESULTS.md"
    done = run_script("compare.py", "--render", str(out), "--baseline", str(out), "--results-md", str(results_md))
    assert done.returncode == 0, done.stderr
    generated = results_md.read_text().split("Targets (benchmarks/targets.py):", 1)[1]
    assert generated.strip().startswith("| target | figures | met |"), generated
    assert "| nothing else regresses (within 10% of the earlier run) | against " in generated
    rows = [line for line in generated.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 6 and all(row.endswith(("| met |", "| not met |")) for row in rows), generated


def test_the_regression_check_compares_a_figure_only_with_one_measured_the_same_way() -> None:
    """An earlier report whose HTTP phases were measured another way (no ``pair_slices``) still guards stdio, cold
    starts, memory and cancellation; its HTTP figures are left out, not compared as if alike."""
    counts = vars(loadgen.Counts())
    figures = {path: 100.0 for _, path, _ in targets.GUARDED}

    def report(counts: dict[str, Any], worse: float) -> dict[str, Any]:
        median = {
            path: value * (worse if path.startswith(("stdio_", "http_")) else 1.0) for path, value in figures.items()
        }
        return {"config": {"counts": counts}, "peers": {"trio_mcp": {"median": median}}, "generated": "then"}

    earlier = {name: value for name, value in counts.items() if name != "pair_slices"}
    verdict = targets.regressions(report(counts, 0.5), report(earlier, 1.0))
    assert verdict.met is False
    assert "stdio, 1 in flight" in verdict.figures and "HTTP sessions" not in verdict.figures, verdict.figures
    guarded_http = sum(path.startswith(("http_", "stateless_")) for _, path, _ in targets.GUARDED)
    assert f"({guarded_http} measured with other counts there: not compared)" in verdict.figures
    assert targets.regressions(report(counts, 0.5), report(counts, 1.0)).figures.count("HTTP sessions") == 3
