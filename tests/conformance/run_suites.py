"""Run the official MCP conformance suite against trio_mcp: server mode against
tests/conformance/everything_server.py, client mode against tests/conformance/client.py.

    .venv/bin/python tests/conformance/run_suites.py [--output-dir DIR] [--run NAME ...]

Server mode: starts the fixture over Streamable HTTP on a free 127.0.0.1 port, runs every suite of ``RUNS``
against it one after another, and stops the fixture (by its pid). Client mode (``CLIENT_RUNS``): the suite
starts one mock server per scenario (port 0; bound to 127.0.0.1 by ``LOOPBACK_PRELOAD``) and runs client.py
against each, all scenarios of a suite in parallel; a failing ``sse-retry`` (timing-sensitive, known to flake under that load) is run once more
on its own and the second result counts. One line per run:

    conformance server 0.1.16 all: 46 passed, 0 failed in 32 scenarios
    conformance client 0.1.16 all: 11 passed, 48 failed (48 expected) in 26 scenarios

with the failing ``scenario:check`` ids indented under it. The verdict comes from the checks.json files the
suite writes, not from its exit code alone: a scenario that wrote no checks, or a check that FAILs or WARNs
without a baseline entry, is an unexpected failure, and a baseline entry that matches no failing check (or a
scenario that did not run) is stale. Exit status 0 only if no run has either; 1 otherwise, 2 if the suite or
the fixture could not be started. Results are kept (and their directory printed) when something failed.

Needs the interop set-up (``make interop-setup``: Node 22 and both suite versions, paths in
.interop/paths.json). Only 127.0.0.1 is used; every wait is bounded (``DEADLINE`` seconds in all).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "conformance"
FIXTURE = HERE / "everything_server.py"
PATHS = ROOT / ".interop" / "paths.json"

#: Everything (fixture start-up, all runs, shutdown) must fit in this many seconds.
DEADLINE = 330.0
#: At most this long for one server-mode suite run (a normal run takes 2-4 s).
RUN_TIMEOUT = 60.0
#: At most this long for one client-mode suite run (normal: 15-30 s for 26 or 48 client processes at once).
CLIENT_RUN_TIMEOUT = 120.0
#: Per client process, in client mode (the suite kills a client that overruns it, and the scenario fails).
CLIENT_TIMEOUT_MS = 60000
#: The client-mode scenario that is run again, alone, when it fails in the parallel run (docs/conformance.md).
FLAKY_CLIENT_SCENARIOS = ("sse-retry",)
#: Per-scenario timeout given to 0.2.0-alpha (its default is 30 s; 0.1.16 has no such option).
SCENARIO_TIMEOUT_MS = 15000
STARTUP_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0

FAILING = ("FAILURE", "WARNING")
_SHORT_VERSION = {"conformance_0_1": "0.1", "conformance_0_2": "0.2"}
_RANK = {"FAILURE": 3, "WARNING": 2, "SUCCESS": 1}


@dataclass(frozen=True)
class Run:
    """One invocation of ``conformance server`` (or ``conformance client``)."""

    name: str  #: what the summary line calls it, after the suite version
    package: str  #: the key of .interop/paths.json that gives the suite's entry point
    args: tuple[str, ...]
    baseline: str  #: file name under tests/conformance/
    check_entries: bool  #: whether the suite understands ``scenario:check-id`` baseline entries
    mode: str = "server"  #: "server" (the suite is the client) or "client" (the suite runs client.py)

    @property
    def key(self) -> str:
        """What ``--run`` calls it."""
        return self.name if self.mode == "server" else f"client-{_SHORT_VERSION[self.package]}"


#: The skills extension (SEP-2640) scenarios; any check of theirs that the suite SKIPs fails the run, as a
#: skipped check means the fixture or client.py stopped exercising the extension.
SKILLS_SERVER_SCENARIOS = ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory")
SKILLS_CLIENT_SCENARIOS = (
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
)
MUST_NOT_SKIP = (*SKILLS_SERVER_SCENARIOS, *SKILLS_CLIENT_SCENARIOS)

#: Each applicable scenario runs once per suite version and wire revision (docs/conformance.md explains why):
#: - 0.1.16 ``--suite all``: the 30 active scenarios of 2025-11-25 plus the two pending ones;
#: - 0.2.0-alpha.12 ``--suite all --spec-version 2025-11-25``: the same 32 plus server-session-lifecycle,
#:   with 0.2's stricter checks (wire-schema validation, SEP-2106 keywords);
#: - 0.2.0-alpha.12 ``--requirements 2026-07-28``: the 37 required scenarios, the three pending ones that
#:   ``--spec-version 2026-07-28 --suite all`` adds, and the ten tasks-extension scenarios: a superset of that
#:   run, so it replaces it rather than repeating it.
RUNS: tuple[Run, ...] = (
    Run("all", "conformance_0_1", ("--suite", "all"), "expected-failures-0.1.yml", False),
    Run(
        "2025-11-25",
        "conformance_0_2",
        ("--suite", "all", "--spec-version", "2025-11-25", "--timeout", str(SCENARIO_TIMEOUT_MS)),
        "expected-failures-0.2-2025-11-25.yml",
        True,
    ),
    Run(
        "2026-07-28",
        "conformance_0_2",
        ("--requirements", "2026-07-28", "--timeout", str(SCENARIO_TIMEOUT_MS)),
        "expected-failures-0.2-2026-07-28.yml",
        True,
    ),
    # Extension scenarios outside every requirement set: the suite runs them one --scenario at a time.
    *(
        Run(
            scenario,
            "conformance_0_2",
            ("--scenario", scenario, "--timeout", str(SCENARIO_TIMEOUT_MS)),
            "expected-failures-0.2-2026-07-28.yml",
            True,
        )
        for scenario in SKILLS_SERVER_SCENARIOS
    ),
)


#: Client mode: every scenario of each version's ``--suite all`` (0.1.16: 26, 0.2.0-alpha.12: 48), run in
#: parallel by the suite, each client with ``CLIENT_TIMEOUT_MS``. 0.2 runs each scenario at the revision it
#: was introduced in (draft-only ones at 2026-07-28, the rest at 2025-11-25) and tells the client which.
CLIENT_RUNS: tuple[Run, ...] = (
    Run(
        "all",
        "conformance_0_1",
        ("--suite", "all", "--timeout", str(CLIENT_TIMEOUT_MS)),
        "expected-failures-client-0.1.yml",
        False,
        "client",
    ),
    Run(
        "all",
        "conformance_0_2",
        ("--suite", "all", "--timeout", str(CLIENT_TIMEOUT_MS)),
        "expected-failures-client-0.2.yml",
        True,
        "client",
    ),
)
CLIENT = HERE / "client.py"
#: Node preload for client mode. The suite's mock servers call ``listen(0)`` without a host, which binds every
#: interface; this makes any ``listen(port[, ...])`` without a host bind 127.0.0.1 (their URLs say
#: ``localhost``, which resolves to it). A host makes Node resolve it with ``dns.lookup`` before binding, which
#: is asynchronous even for an IP literal, and several mocks read ``server.address()`` right after ``listen()``:
#: so ``dns.lookup("127.0.0.1")`` answers at once here, and the bind stays synchronous as it was.
LOOPBACK_PRELOAD = (
    "data:text/javascript,import net from 'node:net';import dns from 'node:dns';"
    "const lookup=dns.lookup;"
    "dns.lookup=function(h,...r){if(h==='127.0.0.1'){const cb=r[r.length-1];const o=r.length>1?r[0]:{};"
    "if(o&&typeof o==='object'&&o.all){cb(null,[{address:h,family:4}])}else{cb(null,h,4)}return {}}"
    "return lookup.call(this,h,...r)};"
    "const listen=net.Server.prototype.listen;"
    "net.Server.prototype.listen=function(...a){"
    "if((typeof a[0]==='number'||typeof a[0]==='string')&&typeof a[1]!=='string'){a.splice(1,0,'127.0.0.1')}"
    "return listen.apply(this,a)};"
)


class SetupError(Exception):
    """The suite or the fixture could not be started; nothing was measured."""


# -- baselines ------------------------------------------------------------------------------------------


def read_baseline(path: Path, *, check_entries: bool, mode: str = "server") -> list[str]:
    """The ``server:`` (or, with ``mode="client"``, the ``client:``) entries of an expected-failures file.

    Accepts the subset of YAML these files use: ``server: []``, or ``server:`` followed by ``- entry`` lines
    (likewise ``client:``).
    Every entry needs a ``# reason`` comment, on the line before it or after it on the same line.
    """
    entries: list[str] = []
    section: str | None = None
    comment = False
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        where = f"{path.name}:{number}"
        if not line:
            comment = False
            continue
        if line.startswith("#"):
            comment = True
            continue
        top = re.fullmatch(r"(server|client):\s*(\[\s*\])?\s*(#.*)?", raw)
        if top:
            section = top.group(1)
            comment = False
            continue
        item = re.fullmatch(r"\s+-\s+([^\s#]+)\s*(#.*)?", raw)
        if not item or section is None:
            raise SetupError(f"{where}: expected 'server:' or an indented '- <scenario>' entry, got {raw!r}")
        if not (comment or item.group(2)):
            raise SetupError(f"{where}: {item.group(1)!r} has no '# reason' comment")
        comment = False
        if section != mode:
            continue
        entry = item.group(1)
        if ":" in entry and not check_entries:
            raise SetupError(f"{where}: this suite version takes whole scenario names only, not {entry!r}")
        entries.append(entry)
    return entries


# -- results --------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one run measured, and how it compares with its baseline."""

    scenarios: list[str]
    passed: int = 0
    failed: int = 0  #: FAILURE and WARNING checks
    warnings: int = 0
    skipped: int = 0
    expected: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  #: e.g. a flaky scenario that was run a second time

    @property
    def ok(self) -> bool:
        return not self.unexpected and not self.stale


def worst_per_id(checks: list[dict[str, Any]]) -> dict[str, str]:
    """Each check id's worst status (a scenario may emit one id several times); INFO entries are traffic."""
    worst: dict[str, str] = {}
    for check in checks:
        status = check.get("status")
        if status == "INFO":
            continue
        ident = str(check.get("id"))
        if ident not in worst or _RANK.get(str(status), 0) >= _RANK.get(worst[ident], 0):
            worst[ident] = str(status)
    return worst


def evaluate(scenarios: list[str], checks: dict[str, list[dict[str, Any]] | None], baseline: list[str]) -> Outcome:
    """Compare a run's checks with its baseline (the suite's own rules, plus: an entry must match a failure).

    ``checks[scenario]`` is None when the scenario wrote no checks.json.
    """
    outcome = Outcome(scenarios)
    whole = {entry for entry in baseline if ":" not in entry}
    per_check: dict[str, set[str]] = {}
    for entry in baseline:
        if ":" in entry:
            scenario, ident = entry.split(":", 1)
            per_check.setdefault(scenario, set()).add(ident)
    matched: set[str] = set()
    for scenario in scenarios:
        found = checks.get(scenario)
        if not found:  # no checks.json, or an empty one: the "0 passed, 0 failed" trap
            what = f"{scenario}:(no checks recorded)"
            outcome.failed += 1
            if scenario in whole:
                outcome.expected.append(what)
                matched.add(scenario)
            else:
                outcome.unexpected.append(what)
            continue
        for check in found:
            status = check.get("status")
            outcome.passed += status == "SUCCESS"
            outcome.failed += status in FAILING
            outcome.warnings += status == "WARNING"
            outcome.skipped += status == "SKIPPED"
        failing = {ident: status for ident, status in worst_per_id(found).items() if status in FAILING}
        if scenario in MUST_NOT_SKIP:
            failing.update((str(check.get("id")), "SKIPPED") for check in found if check.get("status") == "SKIPPED")
        for ident, status in failing.items():
            what = f"{scenario}:{ident}" + (f" ({status})" if status in ("WARNING", "SKIPPED") else "")
            if scenario in whole:
                outcome.expected.append(what)
                matched.add(scenario)
            elif ident in per_check.get(scenario, ()):
                outcome.expected.append(what)
                matched.add(f"{scenario}:{ident}")
            else:
                outcome.unexpected.append(what)
    for entry in baseline:
        if entry not in matched:
            scenario = entry.split(":", 1)[0]
            why = "now passing" if scenario in scenarios else "scenario not run"
            outcome.stale.append(f"{entry} ({why}: remove it from the baseline)")
    return outcome


def collect_checks(
    output_dir: Path, scenarios: list[str], mode: str = "server"
) -> dict[str, list[dict[str, Any]] | None]:
    """checks.json of each scenario: ``<dir>/server-<scenario>-<ISO timestamp>/checks.json`` in server mode,
    ``<dir>/<scenario>-<ISO timestamp>/checks.json`` in client mode (``auth/x`` under ``<dir>/auth/``)."""
    stamp = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
    by_scenario: dict[str, Path] = {}
    if mode == "server":
        for path in output_dir.glob("server-*/checks.json"):
            name = stamp.sub("", path.parent.name[len("server-") :])
            by_scenario[name] = path
    else:
        for path in output_dir.rglob("checks.json"):
            by_scenario[stamp.sub("", path.parent.relative_to(output_dir).as_posix())] = path
    result: dict[str, list[dict[str, Any]] | None] = {}
    for scenario in scenarios:
        found = by_scenario.get(scenario)
        if found is None:
            result[scenario] = None
            continue
        loaded = json.loads(found.read_text(encoding="utf-8"))
        result[scenario] = loaded if isinstance(loaded, list) else None
    return result


def announced_scenarios(stdout: str) -> list[str]:
    """The scenarios the suite says it ran, in order (a ``--scenario`` run announces its one differently)."""
    pattern = r"^(?:=== Running scenario: (\S+) ===|Running client scenario '(\S+)' against server: .*)$"
    return list(dict.fromkeys(a or b for a, b in re.findall(pattern, stdout, flags=re.MULTILINE)))


def summarised_scenarios(stdout: str) -> tuple[list[str], list[str]]:
    """The scenarios a client ``--suite`` run ran, and those it skipped, from its summary: ``✓ name: 1 passed,
    0 failed`` or ``✗ ...``, and (0.2) ``- name: skipped`` for one not applicable at a requested revision."""
    ran = re.findall(r"^[✓✗] (\S+): \d+ passed", stdout, flags=re.MULTILINE)
    return ran, re.findall(r"^- (\S+): skipped$", stdout, flags=re.MULTILINE)


# -- processes ------------------------------------------------------------------------------------------


def start_fixture(log: Path, transport: str = "http") -> tuple[subprocess.Popen[bytes], str]:
    """Start the fixture on a free port; returns the process and the URL to give the suite."""
    command = [
        sys.executable,
        str(FIXTURE),
        "--transport",
        transport,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
    ]
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
    assert process.stdout is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while b"\n" not in buffer:
            left = deadline - time.monotonic()
            if left <= 0 or process.poll() is not None:
                stop_fixture(process)
                raise SetupError(
                    f"the fixture did not report its port within {STARTUP_TIMEOUT:.0f} s "
                    f"(exit status {process.returncode}); its stderr is in {log}"
                )
            if selector.select(timeout=min(left, 0.5)):
                chunk = os.read(process.stdout.fileno(), 4096)
                if not chunk:
                    continue
                buffer += chunk
    match = re.search(rb"serving http://127\.0\.0\.1:(\d+)/mcp", buffer)
    if not match:
        stop_fixture(process)
        raise SetupError(f"unexpected first line from the fixture: {buffer!r}")
    # `localhost`, not 127.0.0.1: dns-rebinding-protection sends the URL's host:port as a legitimate Host.
    return process, f"http://localhost:{int(match.group(1))}/mcp"


def stop_fixture(process: subprocess.Popen[bytes]) -> int:
    """SIGINT (the fixture shuts down gracefully), then SIGKILL if it is still there; only this pid.

    Returns its exit status (negative: killed by that signal).
    """
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT)
    if process.stdout is not None:
        process.stdout.close()
    return process.returncode


def suite_version(entry: Path) -> str:
    """The package version of a suite entry point (``.../dist/index.js`` -> ``.../package.json``)."""
    return str(json.loads((entry.parent.parent / "package.json").read_text(encoding="utf-8"))["version"])


def run_suite(
    node: str, entry: Path, run: Run, url: str, output_dir: Path, timeout: float, fixture: subprocess.Popen[bytes]
) -> Outcome:
    """Run the suite once; stopped early (by its pid) if it overruns ``timeout`` or the fixture dies."""
    baseline_path = HERE / run.baseline
    baseline = read_baseline(baseline_path, check_entries=run.check_entries)
    command = [
        node,
        str(entry),
        "server",
        "--url",
        url,
        *run.args,
        "-o",
        str(output_dir),
        "--expected-failures",
        str(baseline_path),
    ]
    stdout_path, stderr_path = output_dir / "stdout.txt", output_dir / "stderr.txt"
    stopped: str | None = None
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        suite = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
        deadline = time.monotonic() + timeout
        while suite.poll() is None:
            if time.monotonic() > deadline:
                stopped = f"the suite did not finish within {timeout:.0f} s and was stopped"
            elif fixture.poll() is not None:
                stopped = f"the fixture exited with status {fixture.returncode}; the suite was stopped"
            if stopped:
                suite.kill()
                suite.wait(timeout=STOP_TIMEOUT)
                break
            time.sleep(0.1)
    text = stdout_path.read_text(encoding="utf-8", errors="replace")
    scenarios = announced_scenarios(text)
    outcome = evaluate(scenarios, collect_checks(output_dir, scenarios), baseline)
    if stopped:
        outcome.unexpected.insert(0, f"({stopped})")
    elif not scenarios:
        outcome.unexpected.append(f"(the suite ran no scenario; exit status {suite.returncode}; see {stderr_path})")
    elif suite.returncode != 0 and outcome.ok:
        # Our rules are at least as strict as the suite's, so this should not happen: say so rather than pass.
        outcome.unexpected.append(
            f"(the suite exited with {suite.returncode} although checks.json "
            f"shows nothing unexpected; see {stdout_path})"
        )
    return outcome


def client_command() -> str:
    """The ``--command`` for client mode. The suite splits it on spaces (no quoting), runs it through a shell
    and appends the mock server's URL."""
    parts = [sys.executable, str(CLIENT)]
    if any(re.search(r"[\s'\"$`\\;&|<>()*?]", part) for part in parts):
        raise SetupError(f"client mode needs paths without spaces or shell metacharacters: {parts}")
    return " ".join(parts)


def run_bounded(command: list[str], stdout_path: Path, stderr_path: Path, timeout: float) -> tuple[int, str | None]:
    """Run one suite invocation in a process group of its own; if it overruns ``timeout``, that group (the
    suite and the client processes it spawned, nothing else) is killed.

    Returns its exit status and, if it had to be stopped, why.
    """
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, start_new_session=True
        )
        try:
            return process.wait(timeout=timeout), None
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the group this Popen created: its pid is the group id
            except ProcessLookupError:
                pass
            process.wait(timeout=STOP_TIMEOUT)
            return process.returncode, f"the suite did not finish within {timeout:.0f} s and was stopped"


def failing_ids(checks: list[dict[str, Any]] | None) -> list[str]:
    """The check ids that FAIL or WARN (``(no checks recorded)`` when there are none at all)."""
    if not checks:
        return ["(no checks recorded)"]
    return [ident for ident, status in worst_per_id(checks).items() if status in FAILING]


def run_client_suite(node: str, entry: Path, run: Run, output_dir: Path, timeout: float) -> Outcome:
    """Run a client-mode suite (its scenarios in parallel), then each failing ``FLAKY_CLIENT_SCENARIOS`` once
    more on its own, whose result then stands (it is never skipped: a second failure fails the run)."""
    started = time.monotonic()
    baseline_path = HERE / run.baseline
    baseline = read_baseline(baseline_path, check_entries=run.check_entries, mode="client")
    command = client_command()
    results = output_dir / "suite"
    results.mkdir()
    returncode, stopped = run_bounded(
        [
            node,
            "--import",
            LOOPBACK_PRELOAD,
            str(entry),
            "client",
            "--command",
            command,
            *run.args,
            "-o",
            str(results),
            "--expected-failures",
            str(baseline_path),
        ],
        output_dir / "stdout.txt",
        output_dir / "stderr.txt",
        timeout,
    )
    text = (output_dir / "stdout.txt").read_text(encoding="utf-8", errors="replace")
    scenarios, skipped = summarised_scenarios(text)
    checks = collect_checks(results, scenarios, mode="client")
    notes = [f"{name}: skipped by the suite (not applicable)" for name in skipped]
    for scenario in FLAKY_CLIENT_SCENARIOS:
        first = failing_ids(checks.get(scenario)) if scenario in scenarios else []
        if not first or stopped:
            continue
        left = timeout - (time.monotonic() - started)
        rerun = output_dir / f"rerun-{scenario.replace('/', '_')}"
        rerun.mkdir()
        _, again_stopped = run_bounded(
            [
                node,
                "--import",
                LOOPBACK_PRELOAD,
                str(entry),
                "client",
                "--command",
                command,
                "--scenario",
                scenario,
                "--timeout",
                str(CLIENT_TIMEOUT_MS),
                "-o",
                str(rerun),
            ],
            rerun / "stdout.txt",
            rerun / "stderr.txt",
            max(5.0, min(left, CLIENT_TIMEOUT_MS / 1000 + 10)),
        )
        checks[scenario] = collect_checks(rerun, [scenario], mode="client").get(scenario)
        second = failing_ids(checks[scenario])
        notes.append(
            f"{scenario}: failed in the parallel run ({', '.join(first)}); run again alone: "
            + (f"failed again ({', '.join(second)})" if second else "passed")
            + (f" [{again_stopped}]" if again_stopped else "")
        )
    outcome = evaluate(scenarios, checks, baseline)
    outcome.notes = notes
    if stopped:
        outcome.unexpected.insert(0, f"({stopped})")
    elif not scenarios:
        outcome.unexpected.append(
            f"(the suite ran no scenario; exit status {returncode}; see {output_dir / 'stderr.txt'})"
        )
    elif returncode != 0 and outcome.ok and not any("run again alone" in note for note in notes):
        outcome.unexpected.append(
            f"(the suite exited with {returncode} although checks.json "
            f"shows nothing unexpected; see {output_dir / 'stdout.txt'})"
        )
    return outcome


def summary(version: str, run: Run, outcome: Outcome) -> list[str]:
    extras = []
    if outcome.expected:
        extras.append(f"{len(outcome.expected)} expected")
    if outcome.warnings:
        extras.append(f"{outcome.warnings} warnings")
    if outcome.skipped:
        extras.append(f"{outcome.skipped} skipped")
    line = (
        f"conformance {run.mode} {version} {run.name}: {outcome.passed} passed, {outcome.failed} failed"
        + (f" ({', '.join(extras)})" if extras else "")
        + f" in {len(outcome.scenarios)} scenarios"
    )
    lines = [line]
    lines += [f"    UNEXPECTED {item}" for item in outcome.unexpected]
    lines += [f"    STALE      {item}" for item in outcome.stale]
    if run.mode == "client":  # dozens of auth checks: one line per scenario
        grouped: dict[str, list[str]] = {}
        for item in outcome.expected:
            scenario, _, ident = item.partition(":")
            grouped.setdefault(scenario, []).append(ident)
        lines += [f"    expected   {scenario}: {', '.join(idents)}" for scenario, idents in grouped.items()]
    else:
        lines += [f"    expected   {item}" for item in outcome.expected]
    lines += [f"    note       {item}" for item in outcome.notes]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--output-dir",
        type=Path,
        help="keep all results here (default: a temporary directory, removed unless something failed)",
    )
    parser.add_argument(
        "--run",
        action="append",
        choices=[run.key for run in RUNS + CLIENT_RUNS],
        help="only this run (repeatable; default: all). Server mode: all (0.1.16), 2025-11-25 "
        "and 2026-07-28 (0.2.0-alpha); client mode: client-0.1, client-0.2",
    )
    parser.add_argument(
        "--asgi",
        action="store_true",
        help="server mode against the fixture mounted as an ASGI "
        "app under Hypercorn's trio worker (trio_mcp.asgi) instead of trio_mcp's own server",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()

    if not PATHS.exists():
        print(f"run_suites: {PATHS.relative_to(ROOT)} is missing: run `make interop-setup` first", file=sys.stderr)
        return 2
    paths = json.loads(PATHS.read_text(encoding="utf-8"))
    runs = [run for run in RUNS if not args.run or run.key in args.run]
    client_runs = [run for run in CLIENT_RUNS if not args.run or run.key in args.run]

    keep = args.output_dir is not None
    results = args.output_dir.resolve() if keep else Path(tempfile.mkdtemp(prefix="trio-mcp-conformance-"))
    results.mkdir(parents=True, exist_ok=True)
    failed = False

    def prepare(index: int, run: Run) -> tuple[Path, str, Path, float] | None:
        """The suite's entry point, version, a fresh output directory, and the time left (None: none left)."""
        entry = Path(paths[run.package])
        version = suite_version(entry)
        output_dir = results / f"{index}-{run.mode}-{version}-{run.name}"
        shutil.rmtree(output_dir, ignore_errors=True)  # a reused --output-dir: no stale checks.json
        output_dir.mkdir()
        left = DEADLINE - (time.monotonic() - started)
        if left < 5:
            print(f"conformance {run.mode} {version} {run.name}: not run, the {DEADLINE:.0f} s budget is spent")
            return None
        return entry, version, output_dir, left

    try:
        if runs:
            process, url = start_fixture(results / "fixture-stderr.txt", "asgi" if args.asgi else "http")
            try:
                for index, run in enumerate(runs, 1):
                    prepared = prepare(index, run)
                    if prepared is None:
                        failed = True
                        continue
                    entry, version, output_dir, left = prepared
                    outcome = run_suite(paths["node"], entry, run, url, output_dir, min(RUN_TIMEOUT, left), process)
                    print("\n".join(summary(version, run, outcome)), flush=True)
                    failed |= not outcome.ok
                    if process.poll() is not None:
                        break  # the summary says so; later runs would only time out
            finally:
                status = stop_fixture(process)
            if status != 0:
                print(
                    f"run_suites: the fixture exited with status {status} when stopped "
                    f"(its stderr is in {results / 'fixture-stderr.txt'})",
                    flush=True,
                )
                failed = True
        for index, run in enumerate(client_runs, len(runs) + 1):
            prepared = prepare(index, run)
            if prepared is None:
                failed = True
                continue
            entry, version, output_dir, left = prepared
            outcome = run_client_suite(paths["node"], entry, run, output_dir, min(CLIENT_RUN_TIMEOUT, left))
            print("\n".join(summary(version, run, outcome)), flush=True)
            failed |= not outcome.ok
    except SetupError as exc:
        print(f"run_suites: {exc}", file=sys.stderr)
        return 2
    elapsed = time.monotonic() - started
    if failed:
        print(f"conformance: FAILED after {elapsed:.1f} s; results kept in {results}")
        return 1
    print(f"conformance: every failure is in a baseline, no stale entry ({elapsed:.1f} s)")
    if not keep:
        shutil.rmtree(results, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
