"""The speed targets trio_mcp holds itself to, checked against one ``compare.py`` report.

``compare.py`` prints the table at the end of every run and writes it into RESULTS.md's generated part. Each target
compares figures of the same run (peers alternate run by run, so a loaded machine moves them together), except
"nothing else regresses", which compares this run with an earlier report of the same counts: by the ratio to the
bare trio echo where it has the figure (that cancels most of the machine's load), else by the figure itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BASE, BARE, TS = "trio_mcp", "bare_trio", "ts_sdk"

#: How much worse than the earlier run a figure may be before it counts as a regression (runs move by about 10 %).
TOLERANCE = 0.10

#: Figures that must not get worse: (label, metric path, "higher" or "lower" is better).
GUARDED: list[tuple[str, str, str]] = [
    *[(f"stdio, {n} in flight", f"stdio_c{n}.calls_per_s", "higher") for n in (1, 64)],
    *[(f"HTTP sessions, {n} clients", f"http_c{n}.calls_per_s", "higher") for n in (1, 16, 64)],
    *[(f"stateless, {n} clients", f"stateless_c{n}.calls_per_s", "higher") for n in (1, 16, 64)],
    ("stdio CPU per call", "stdio_c64.server_cpu_us_per_call", "lower"),
    ("sessions CPU per call", "http_c16.server_cpu_us_per_call", "lower"),
    ("stateless CPU per call", "stateless_c16.server_cpu_us_per_call", "lower"),
    ("cold start, stdio", "cold_start_stdio_ms", "lower"),
    ("cold start, HTTP", "cold_start_http_ms", "lower"),
    ("memory per session", "rss_per_session_kib", "lower"),
    ("cancel, stdio", "cancel_stdio.latency_ms", "lower"),
    ("cancel, HTTP session", "cancel_http_notification.latency_ms", "lower"),
    ("cancel, stateless close", "cancel_http_close_stateless.latency_ms", "lower"),
]


@dataclass(frozen=True)
class Verdict:
    """One target: what it asks, the figures it was judged on, and whether it was met (None: not measured)."""

    target: str
    figures: str
    met: bool | None

    @property
    def word(self) -> str:
        return {True: "met", False: "not met", None: "not measured"}[self.met]


def _num(value: Any) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _figure(report: dict[str, Any], peer: str, path: str) -> float | None:
    entry = report["peers"].get(peer) or {}
    value = (entry.get("median") or {}).get(path)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _at_most(target: str, report: dict[str, Any], mine: str, theirs: tuple[str, str], unit: str) -> Verdict:
    """trio_mcp's ``mine`` no higher than peer ``theirs[0]``'s ``theirs[1]``."""
    a, b = _figure(report, BASE, mine), _figure(report, *theirs)
    if a is None or b is None:
        return Verdict(target, "—", None)
    return Verdict(target, f"{_num(a)} against {_num(b)} {unit}", a <= b)


def _ratios(target: str, pairs: list[tuple[str, float | None, float | None]], at_least: float, *, of: str) -> Verdict:
    """Each ``mine / theirs`` at least ``at_least``: the ratios, labelled, and whether all were."""
    ratios = [(label, a / b) for label, a, b in pairs if a is not None and b]
    if len(ratios) < len(pairs):
        return Verdict(target, "—", None)
    shown = ", ".join(f"{label} {ratio:.2f}".strip() for label, ratio in ratios)
    return Verdict(target, f"{shown} (calls/s against {of})", all(r >= at_least for _, r in ratios))


_LOAD = frozenset({"requests", "seconds", "warmup"})
#: The counts (``loadgen.Counts``) each figure depends on, by how its path begins: a figure is compared with an
#: earlier report's when these were the same there (a count the earlier report lacks was not the same).
COUNTS_OF = {
    "stdio_": _LOAD,
    "http_": _LOAD | {"pair_slices"},
    "stateless_": _LOAD | {"pair_slices"},
    "cancel_": frozenset({"cancels", "cancel_after"}),
    "rss_": frozenset({"sessions"}),
    "cold_start_": frozenset(),
}


def _comparable(report: dict[str, Any], baseline: dict[str, Any] | None, path: str) -> bool:
    """Whether ``baseline`` measured the figure at ``path`` with the counts ``report`` did."""
    if baseline is None:
        return False
    now, then = report["config"]["counts"], baseline.get("config", {}).get("counts") or {}
    names = next(names for start, names in COUNTS_OF.items() if path.startswith(start))
    return all(now.get(name) == then.get(name) for name in names)


def _normalised(report: dict[str, Any], path: str) -> tuple[float | None, str]:
    """trio_mcp's figure over the bare echo's in the same run where it has one, else the figure itself."""
    mine, bare = _figure(report, BASE, path), _figure(report, BARE, path)
    if mine is not None and bare:
        return mine / bare, "× bare"
    return mine, ""


def regressions(report: dict[str, Any], baseline: dict[str, Any] | None) -> Verdict:
    """Every guarded figure against the same one of ``baseline``: worse by more than TOLERANCE is a regression."""
    target = f"nothing else regresses (within {TOLERANCE:.0%} of the earlier run)"
    guarded = [(label, path, better) for label, path, better in GUARDED if _comparable(report, baseline, path)]
    if not guarded:
        return Verdict(target, "no earlier report with the same counts", None)
    assert baseline is not None
    worse, compared = [], 0
    for label, path, better in guarded:
        (now, unit), (then, _) = _normalised(report, path), _normalised(baseline, path)
        if now is None or not then:
            continue
        compared += 1
        change = now / then - 1 if better == "lower" else 1 - now / then
        if change > TOLERANCE:
            worse.append(f"{label} {_num(then)} → {_num(now)}{unit}")
    if not compared:
        return Verdict(target, "no figure in both runs", None)
    shown = "; ".join(worse) if worse else f"{compared} figures within {TOLERANCE:.0%}"
    if len(guarded) < len(GUARDED):
        shown += f" ({len(GUARDED) - len(guarded)} measured with other counts there: not compared)"
    return Verdict(target, f"against {baseline.get('generated', '?')}: {shown}", not worse)


def verdicts(report: dict[str, Any], baseline: dict[str, Any] | None = None) -> list[Verdict]:
    """Each target of the report, in the order they are printed."""

    def fig(peer: str, path: str) -> float | None:
        return _figure(report, peer, path)

    cpu, ts_cpu = "server_cpu_us_per_call", (TS, "http_c16.server_cpu_us_per_call")
    return [
        _at_most(
            "HTTP sessions: server CPU per call at 16 clients ≤ the TypeScript SDK's",
            report,
            f"http_c16.{cpu}",
            ts_cpu,
            "µs",
        ),
        _at_most(
            "HTTP stateless: server CPU per call at 16 clients ≤ the TypeScript SDK's (sessions: it has no stateless)",
            report,
            f"stateless_c16.{cpu}",
            ts_cpu,
            "µs",
        ),
        _ratios(
            "HTTP sessions at least as fast as stateless at 1/16/64 clients",
            [
                (f"{n}:", fig(BASE, f"http_c{n}.calls_per_s"), fig(BASE, f"stateless_c{n}.calls_per_s"))
                for n in (1, 16, 64)
            ],
            1.0,
            of="stateless",
        ),
        _ratios(
            "HTTP sessions ≥ 0.6 of the bare h11 echo at 16 and 64 clients",
            [(f"{n}:", fig(BASE, f"http_c{n}.calls_per_s"), fig(BARE, f"http_c{n}.calls_per_s")) for n in (16, 64)],
            0.6,
            of="the bare echo",
        ),
        _ratios(
            "stdio, 64 in flight ≥ 0.75 of the bare trio echo",
            [("", fig(BASE, "stdio_c64.calls_per_s"), fig(BARE, "stdio_c64.calls_per_s"))],
            0.75,
            of="the bare echo",
        ),
        regressions(report, baseline),
    ]


def table(rows: list[Verdict], *, markdown: bool) -> str:
    """The targets as a table: target, figures, met or not."""
    header = ("target", "figures", "met")
    cells = [header, *[(row.target, row.figures, row.word) for row in rows]]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|---|---|---|"]
        return "\n".join(lines + ["| " + " | ".join(cell) + " |" for cell in cells[1:]])
    widths = [max(len(cell[i]) for cell in cells) for i in range(3)]
    out = ["  ".join(text.ljust(widths[i]) for i, text in enumerate(cell)).rstrip() for cell in cells]
    out.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(out)
