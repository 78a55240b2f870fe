"""Run the ``trio-mcp`` command line as a real subprocess (``python -m trio_mcp``, this checkout first on the path)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import trio

REPO = Path(__file__).resolve().parent.parent
CLI_SERVER = REPO / "tests" / "servers" / "cli_server.py"
CLI = [sys.executable, "-m", "trio_mcp"]


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


@attrs.frozen
class Outcome:
    status: int
    stdout: str
    stderr: str


async def run_cli(
    *words: str, timeout: float = 30, stdin: bytes = b"", cwd: Path | None = None, env: dict[str, str] | None = None
) -> Outcome:
    """Run ``trio-mcp words...`` to completion (``env`` added to the environment) and return what it printed."""
    with trio.fail_after(timeout):
        done = await trio.run_process(
            [*CLI, *words],
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env={**cli_env(), **(env or {})},
            cwd=cwd,
        )
    return Outcome(done.returncode, done.stdout.decode(), done.stderr.decode())


async def serve_doctor_patient(nursery: trio.Nursery, options: Any = None) -> int:
    """A small trio_mcp server (one ``echo`` tool) on HTTP at 127.0.0.1 for ``doctor`` to examine; its port."""
    from trio_mcp import Server

    server = Server("doctor-patient")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return int(
        await nursery.start(
            lambda task_status: server.serve_http("127.0.0.1", 0, options=options, task_status=task_status)
        )
    )


async def run_doctor(url: str, *words: str, probe_timeout: float = 5, timeout: float = 30) -> tuple[int, Any]:
    """``trio-mcp doctor URL --json``: its exit status and its findings (never a traceback)."""
    out = await run_cli("doctor", url, "--json", "--timeout", str(probe_timeout), *words, timeout=timeout)
    assert "Traceback" not in out.stderr, out.stderr
    return out.status, json.loads(out.stdout)


def server_command() -> list[str]:
    return ["--", sys.executable, str(CLI_SERVER)]


class Running:
    """A ``trio-mcp`` process left running, with its stderr collected as it arrives."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.stderr = b""
        self.stdout = b""
        self._changed = trio.Event()

    async def pump(self, stream: Any, attribute: str) -> None:
        async with stream:
            while chunk := await stream.receive_some(65536):
                setattr(self, attribute, getattr(self, attribute) + chunk)
                self._changed.set()
                self._changed = trio.Event()

    async def wait_for_stderr(self, pattern: str) -> re.Match[str]:
        while True:
            found = re.search(pattern, self.stderr.decode())
            if found:
                return found
            if self.process.returncode is not None:
                raise AssertionError(f"exited {self.process.returncode} before {pattern!r}: {self.stderr.decode()}")
            with trio.move_on_after(0.2):
                await self._changed.wait()


async def start(
    nursery: trio.Nursery,
    *words: str,
    stdin: int = subprocess.DEVNULL,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Running:
    """Start ``trio-mcp words...`` (in ``cwd``, with ``env`` added to the environment), its output collected."""
    process = await trio.lowlevel.open_process(
        [*CLI, *words],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**cli_env(), **(env or {})},
        cwd=cwd,
    )
    running = Running(process)
    nursery.start_soon(running.pump, process.stdout, "stdout")
    nursery.start_soon(running.pump, process.stderr, "stderr")
    nursery.start_soon(_reap, process)
    return running


async def _reap(process: trio.Process) -> None:
    """Wait for the process; a test that fails (its nursery cancelled) kills it rather than leaving it running."""
    try:
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
