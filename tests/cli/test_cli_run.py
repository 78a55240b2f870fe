"""``trio-mcp run`` when things go wrong: a target that cannot be imported and a port that cannot be bound are one
line and a documented status (in one process and with workers), and a tool that crashes leaves its traceback on
the console."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest
import trio
from cli_helpers import run_cli, start

PATIENT = """\
from contextlib import asynccontextmanager
from pathlib import Path

from trio_mcp import Server


@asynccontextmanager
async def lifespan(server):
    Path(__file__).with_name("lifespan-entered").touch()
    yield {}


server = Server("patient", lifespan=lifespan)


@server.tool()
async def crash(reason: str) -> str:
    raise RuntimeError(reason)
"""

BROKEN = {
    "syntax": (
        'server = Server("x"\n',
        "cannot import broken.py: SyntaxError: '(' was never closed (broken.py, line 2)",
    ),
    "import": (
        "import no_such_module_here\n",
        "cannot import broken.py: ModuleNotFoundError: No module named 'no_such_module_here' (broken.py, line 2)",
    ),
    "raises": (
        "server = Server('x')\nsettings = {}['missing']\n",
        "cannot import broken.py: KeyError: 'missing' (broken.py, line 3)",
    ),
}


@pytest.mark.parametrize("workers", [[], ["-t", "http", "--workers", "2"]])
@pytest.mark.parametrize("kind", sorted(BROKEN))
async def test_a_target_that_cannot_be_imported_is_one_line(tmp_path: Path, kind: str, workers: list[str]) -> None:
    code, message = BROKEN[kind]
    (tmp_path / "broken.py").write_text("from trio_mcp import Server\n" + code)
    out = await run_cli("run", "broken.py", *workers, cwd=tmp_path)
    assert out.status == 2
    assert out.stderr == f"trio-mcp: {message}\n"


async def test_log_level_debug_adds_the_import_traceback(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def load():\n    return 1 / 0\n\nload()\n")
    out = await run_cli("run", "broken.py", "--log-level", "debug", cwd=tmp_path)
    assert out.status == 2
    assert "Traceback" in out.stderr and 'broken.py", line 2, in load' in out.stderr
    assert out.stderr.endswith(
        "trio-mcp: cannot import broken.py: ZeroDivisionError: division by zero (broken.py, line 2)\n"
    )


@pytest.mark.parametrize("how", [["-t", "http"], ["-t", "sse"], ["-t", "ws"], ["-t", "http", "--workers", "2"]])
async def test_a_busy_port_is_one_line_and_the_lifespan_is_not_entered(tmp_path: Path, how: list[str]) -> None:
    (tmp_path / "patient.py").write_text(PATIENT)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = await run_cli("run", "patient.py", *how, "--port", str(port), cwd=tmp_path)
    assert out.status == 3
    assert out.stderr.splitlines()[-1] == (  # after a warning about worker processes, say, but no traceback
        f"trio-mcp: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(is another server using the port? pick another with --port)"
    )
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "lifespan-entered").exists()


@pytest.mark.parametrize("how", [[], ["--workers", "2"]])
async def test_a_crashed_tools_traceback_is_on_the_console(tmp_path: Path, how: list[str]) -> None:
    (tmp_path / "patient.py").write_text(PATIENT)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, "run", str(tmp_path / "patient.py"), "-t", "http", "--port", "0", *how)
            url = (await running.wait_for_stderr(r"serving patient \S+ on (\S+) ")).group(1)
            out = await run_cli("call", "crash", "reason=the disk is on fire", "--url", url)
            assert out.status == 1 and "failed (error id " in out.stderr
            error_id = out.stderr.split("error id ")[1].split(")")[0]
            await running.wait_for_stderr(f"ERROR trio_mcp[.a-z_]*: Tool crash failed \\(error id {error_id}\\)")
            await running.wait_for_stderr("RuntimeError: the disk is on fire")
            assert "Traceback (most recent call last)" in running.stderr.decode()
            running.process.send_signal(signal.SIGINT)
            await running.process.wait()


async def test_log_level_shows_info_records_or_hides_errors(tmp_path: Path) -> None:
    (tmp_path / "patient.py").write_text(PATIENT)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(
                nursery, "run", str(tmp_path / "patient.py"), "-t", "http", "--port", "0", "--log-level", "critical"
            )
            url = (await running.wait_for_stderr(r"serving patient \S+ on (\S+) ")).group(1)
            out = await run_cli("call", "crash", "reason=quietly", "--url", url)
            assert out.status == 1
            running.process.send_signal(signal.SIGINT)
            await running.process.wait()
    assert "quietly" not in running.stderr.decode()
