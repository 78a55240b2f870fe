"""The command line's promises about words and output: options anywhere among a tool's arguments, arguments
checked before anything is sent, ports that exist, and a closed stdout that ends the command quietly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from cli_helpers import CLI, CLI_SERVER, cli_env, run_cli, server_command, start
from waiting import wait_until


@pytest.mark.parametrize(
    ("words", "text"),
    [
        (["call", "echo", "--json", '{"text": "hi"}'], "hi"),
        (["call", "echo", "--json", "text=hi"], "hi"),
        (["call", "add", "--json", "a=1", "b=2", "--timeout", "20", "scale=ten"], '{"result":30.0}'),
        (["prompt", "review", "--json", "language=trio"], "Review this trio code, brief."),
        (["prompt", "review", "--json", '{"language": "trio"}', "-v", "style=long"], "Review this trio code, long."),
    ],
)
async def test_options_may_come_between_a_name_and_its_arguments(words: list[str], text: str) -> None:
    out = await run_cli(*words, *server_command())
    assert out.status == 0, out.stderr
    result = json.loads(out.stdout)
    content = result["content"][0] if "content" in result else result["messages"][0]["content"]
    assert content["text"] == text


async def test_an_unknown_option_among_arguments_is_still_a_usage_error() -> None:
    out = await run_cli("call", "echo", "text=hi", "--loud", *server_command())
    assert out.status == 2 and "unrecognized arguments: --loud" in out.stderr


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
async def test_a_port_that_does_not_exist_is_refused(port: str) -> None:
    for command in (["run", "server.py", "-t", "http"], ["proxy", "-t", "http", *server_command()]):
        out = await run_cli(command[0], f"--port={port}", *command[1:])
        assert out.status == 2, out.stderr
        assert f"{port!r} is not a port number (0 to 65535" in out.stderr


async def _with_closed_stdout(*words: str) -> subprocess.CompletedProcess[bytes]:
    """Run the command with stdout a pipe nobody reads any more (the reader exited, as ``head`` does)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        with trio.fail_after(30):
            return await trio.run_process(
                [*CLI, *words], stdout=writer, capture_stderr=True, check=False, env=cli_env()
            )
    finally:
        os.close(writer)


@pytest.mark.parametrize(
    "words",
    [
        ["list", "tools", *server_command()],
        ["list", "tools", "--json", *server_command()],
        ["call", "echo", "text=hi", *server_command()],
        ["info", "--json", *server_command()],
        ["read", "memo://greeting", *server_command()],
        ["prompt", "review", "language=trio", *server_command()],
    ],
)
async def test_a_closed_stdout_ends_the_command_quietly(words: list[str]) -> None:
    done = await _with_closed_stdout(*words)
    assert done.stderr == b""
    assert done.returncode == 141  # 128 + SIGPIPE, what a shell reports for `cat big | head`


@pytest.mark.parametrize(
    ("words", "complaint"),
    [
        (["call", "add", '{"a": "one", "b": 2}'], 'a: "one" is a string; expected integer'),
        (["call", "add", '{"a": 1, "b": 2, "negate": "yes"}'], 'negate: "yes" is a string; expected boolean'),
        (["call", "add", '{"a": 1.5, "b": 2}'], "a: 1.5 is a number; expected integer"),
        (["call", "add", "a=1"], "missing required argument: b=..."),
        (["call", "add"], "missing required arguments: a=... b=..."),
        (["call", "add", "{}"], "missing required arguments: a=... b=..."),
    ],
)
async def test_arguments_are_checked_before_the_call(words: list[str], complaint: str) -> None:
    out = await run_cli(*words, *server_command())
    assert out.status == 2, out.stderr
    assert complaint in out.stderr and "Traceback" not in out.stderr


async def test_timeout_caps_a_call_that_keeps_reporting_progress() -> None:
    started = trio.current_time()
    out = await run_cli("call", "steps", "count=2000", "--timeout", "1.5", *server_command())  # 20 s of progress
    assert out.status == 3, out.stderr
    assert "tools/call got no response within 1.5 s (--timeout)" in out.stderr
    assert "progress 1/2000" in out.stderr
    assert trio.current_time() - started < 10


async def test_ctrl_c_stops_a_stdio_server_that_ignores_its_closed_input_at_once(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    stubborn = (
        f"import runpy, time, trio; trio.run(runpy.run_path({str(CLI_SERVER)!r})['server'].serve_stdio); time.sleep(60)"
    )
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            running = await start(
                nursery, "call", "wait_for_cancel", f"marker={marker}", "--", sys.executable, "-c", stubborn
            )
            await wait_until(marker.exists, within=30, interval=0.05)
            running.process.send_signal(signal.SIGINT)
            pressed = trio.current_time()
            status = await running.process.wait()
    assert status == 130, running.stderr.decode()
    assert trio.current_time() - pressed < 1.5  # not the 2 s a server gets to exit after an ordinary close
    assert "cancel requested by the client" in marker.read_text()


async def test_a_url_without_the_mcp_path_gets_a_did_you_mean() -> None:
    outcomes = {}
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, "run", str(CLI_SERVER), "-t", "http", "--port", "0")
            root = (await running.wait_for_stderr(r"on (http://127\.0\.0\.1:\d+)/mcp ")).group(1)
            for path in ("", "/", "/api"):
                outcomes[path] = await run_cli("info", "--url", root + path)
            running.process.send_signal(signal.SIGINT)
    for path, out in outcomes.items():
        assert out.status == 3
        assert f"(did you mean {root}{path.rstrip('/')}/mcp?)" in out.stderr


async def test_a_stdio_server_that_prints_what_is_not_mcp_is_named_promptly() -> None:
    started = trio.current_time()
    chatty = "import sys, time; print('Starting the weather server...', flush=True); time.sleep(60)"
    out = await run_cli("info", "--connect-timeout", "30", "--", sys.executable, "-c", chatty)
    assert out.status == 3
    assert "the server writes what is not MCP to stdout: a line like 'Starting the weather server...'" in out.stderr
    assert "could not connect within" not in out.stderr
    assert trio.current_time() - started < 15  # the grace for a banner and the shutdown, not the 30 s


async def test_a_banner_line_before_mcp_is_still_tolerated() -> None:
    banner = f"import runpy; print('weather server v2', flush=True); runpy.run_path({str(CLI_SERVER)!r}, run_name='__main__')"
    out = await run_cli("info", "--", sys.executable, "-c", banner)
    assert out.status == 0, out.stderr
    assert "cli-test-server 1.2.3" in out.stdout
