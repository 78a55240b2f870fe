"""The ``trio-mcp`` command line, run as a real subprocess against trio_mcp servers (stdio and HTTP)."""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
from configparser import ConfigParser
from pathlib import Path

import pytest
import schema_facts as facts
import trio
from cli_helpers import CLI_SERVER, REPO, cli_env, run_cli, server_command, start
from transport_helpers import initialize_request
from waiting import wait_until

import trio_mcp.cli


def test_import_trio_mcp_does_not_import_the_command_line() -> None:
    code = "import sys, trio_mcp; print(sorted(m for m in sys.modules if m == 'trio_mcp.cli' or m.startswith('trio_mcp.cli.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=30)
    assert done.stdout.strip() == "[]"


def test_console_script_entry_point_resolves_to_main() -> None:
    config = ConfigParser()
    config.read(REPO / "setup.cfg")
    lines = config["options.entry_points"]["console_scripts"].strip().splitlines()
    scripts = {name.strip(): target.strip() for name, _, target in (line.partition("=") for line in lines)}
    module, _, attribute = scripts["trio-mcp"].partition(":")
    assert getattr(importlib.import_module(module), attribute) is trio_mcp.cli.main


async def test_help_and_version() -> None:
    out = await run_cli("--help")
    assert out.status == 0
    for command in ("run", "list", "call", "read", "prompt", "info", "doctor"):
        assert command in out.stdout
    out = await run_cli("--version")
    assert out.status == 0 and out.stdout.startswith("trio-mcp ")


async def test_info_over_stdio() -> None:
    out = await run_cli("info", *server_command())
    assert out.status == 0, out.stderr
    assert "cli-test-server 1.2.3" in out.stdout
    assert "Tools for testing the command line." in out.stdout
    out = await run_cli("info", "--json", "--protocol-version", "2025-06-18", *server_command())
    info = json.loads(out.stdout)
    assert info["era"] == "legacy" and info["protocolVersion"] == "2025-06-18"
    assert info["serverInfo"]["name"] == "cli-test-server" and "tools" in info["capabilities"]


async def test_list_every_kind() -> None:
    out = await run_cli("list", "tools", *server_command())
    assert out.status == 0
    assert "add  — Add two numbers" in out.stdout
    assert "a: integer (required)" in out.stdout and 'scale: "one" | "ten" = "one"' in out.stdout
    tools = json.loads((await run_cli("list", "tools", "--json", *server_command())).stdout)
    assert {tool["name"] for tool in tools} >= {"echo", "add", "steps", "fail"}
    assert "memo://greeting" in (await run_cli("list", "resources", *server_command())).stdout
    assert "(no templates)" in (await run_cli("list", "templates", *server_command())).stdout
    assert "review" in (await run_cli("list", "prompts", *server_command())).stdout


async def test_call_converts_arguments_by_the_input_schema() -> None:
    out = await run_cli("call", "add", "a=2", "b=3", "scale=ten", "negate=yes", "--json", *server_command())
    assert out.status == 0, out.stderr
    assert json.loads(out.stdout)["structuredContent"] == {"result": -50.0}
    out = await run_cli("call", "tags", 'names=["x","y"]', 'weights={"x": 3}', "--json", *server_command())
    assert json.loads(out.stdout)["structuredContent"] == {"x": 3, "y": 1}
    out = await run_cli("call", "echo", "text=42", "--json", *server_command())  # a string stays a string
    assert json.loads(out.stdout)["content"][0]["text"] == "42"
    out = await run_cli("call", "echo", '{"text": "from JSON"}', *server_command())
    assert out.stdout.strip() == "from JSON"


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_call_shows_the_servers_log_messages_on_stderr(version: str) -> None:
    out = await run_cli(
        "call", "announce", "text=mind the gap", "--log-level", "info", "--protocol-version", version, *server_command()
    )
    assert out.status == 0, out.stderr
    assert out.stdout.strip() == "mind the gap"
    assert "[warning] announcer: mind the gap" in out.stderr
    out = await run_cli("call", "announce", "text=quiet", "--log-level", "error", *server_command())
    assert "quiet" not in out.stderr


async def test_call_shows_progress_on_stderr() -> None:
    out = await run_cli("call", "steps", "count=3", *server_command())
    assert out.status == 0
    assert out.stdout.strip() == "3 steps"
    assert "progress 1/3 step 1" in out.stderr and "progress 3/3 step 3" in out.stderr


@pytest.mark.parametrize(
    ("words", "status", "message"),
    [
        (["call", "fail", "reason=boom"], 1, "boom"),
        (["read", "memo://missing"], 1, "the server answered with an error"),
        (["call", "nope"], 2, "has no tool 'nope'; it has: echo, add"),
        (["call", "add", "a=1.5", "b=1"], 2, "a=1.5: expected an integer"),
        (["call", "add", "a=1", "b=x"], 2, "b=x: expected a number"),
        (["call", "add", "a=1", "b=1", "negate=maybe"], 2, "expected a boolean"),
        (["call", "echo", "textonly"], 2, "expected key=value"),
    ],
)
async def test_exit_statuses(words: list[str], status: int, message: str) -> None:
    out = await run_cli(*words, *server_command())
    assert out.status == status, out.stderr
    assert message in out.stderr
    assert "Traceback" not in out.stderr


async def test_usage_and_connection_failures() -> None:
    out = await run_cli("info")
    assert out.status == 2 and "which server?" in out.stderr
    out = await run_cli("list", "widgets", *server_command())
    assert out.status == 2 and "invalid choice" in out.stderr
    out = await run_cli("info", "--", sys.executable, "-c", "import sys; sys.stderr.write('no luck'); sys.exit(4)")
    assert out.status == 3 and "exited with status 4" in out.stderr and "no luck" in out.stderr
    out = await run_cli("info", "--url", "http://127.0.0.1:1/mcp")
    assert out.status == 3 and "Traceback" not in out.stderr
    out = await run_cli("info", "--connect-timeout", "0.5", "--", sys.executable, "-c", "import time; time.sleep(30)")
    assert out.status == 3 and "could not connect within 0.5 s" in out.stderr


async def test_read_and_prompt() -> None:
    out = await run_cli("read", "memo://greeting", *server_command())
    assert out.stdout.strip() == "hello from a resource"
    out = await run_cli("prompt", "review", "language=trio", "style=thorough", *server_command())
    assert out.status == 0
    assert "user: Review this trio code, thorough." in out.stdout
    out = await run_cli("prompt", "review", "language=trio", "--json", *server_command())
    assert json.loads(out.stdout)["messages"][0]["content"]["text"] == "Review this trio code, brief."


async def test_ctrl_c_cancels_a_running_call_on_the_server(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, "call", "wait_for_cancel", f"marker={marker}", *server_command())
            await wait_until(marker.exists, within=30, interval=0.05)
            running.process.send_signal(signal.SIGINT)
            status = await running.process.wait()
    assert status == 130, running.stderr.decode()
    assert "Traceback" not in running.stderr.decode()
    assert marker.read_text().splitlines() == ["started", "cancel requested by the client"], running.stderr.decode()


@pytest.mark.parametrize("transport", ["http", "sse", "ws"])
async def test_run_serves_a_file_over_the_network_and_ctrl_c_exits_130(transport: str) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, "run", f"{CLI_SERVER}:server", "--transport", transport, "--port", "0")
            found = await running.wait_for_stderr(r"serving cli-test-server 1\.2\.3 on (\S+) ")
            url = found.group(1)
            assert url.endswith({"http": "/mcp", "sse": "/sse", "ws": "/"}[transport])
            out = await run_cli("call", "echo", "text=over the network", "--url", url)
            assert out.status == 0, out.stderr
            assert out.stdout.strip() == "over the network"
            running.process.send_signal(signal.SIGINT)
            status = await running.process.wait()
    assert status == 130
    assert "Traceback" not in running.stderr.decode()


async def test_run_over_stdio_and_ctrl_c() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, "run", str(CLI_SERVER), stdin=subprocess.PIPE)
            assert running.process.stdin is not None
            await running.process.stdin.send_all(json.dumps(initialize_request(id=1)).encode() + b"\n")
            await wait_until(lambda: b'"id":1' in running.stdout.replace(b" ", b""), within=30, interval=0.05)
            assert b"cli-test-server" in running.stdout
            running.process.send_signal(signal.SIGINT)
            status = await running.process.wait()
    assert status == 130
    assert "Traceback" not in running.stderr.decode()


async def test_run_finds_a_server_in_a_module_and_refuses_what_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text("from trio_mcp import Server\nfirst = Server('a')\nsecond = Server('b')\n")
    (tmp_path / "none.py").write_text("x = 1\n")
    out = await run_cli("run", "two.py", cwd=tmp_path)
    assert out.status == 2 and "several servers (first, second)" in out.stderr
    out = await run_cli("run", "two.py:x", cwd=tmp_path)
    assert out.status == 2 and "'x' is nothing" in out.stderr
    out = await run_cli("run", "none.py", cwd=tmp_path)
    assert out.status == 2 and "defines no trio_mcp.Server" in out.stderr
    out = await run_cli("run", "no_such_module_here", cwd=tmp_path)
    assert out.status == 2 and "no module named 'no_such_module_here'" in out.stderr
    # a module on the path, picked by name; stdin closed at once, so it serves and returns
    out = await run_cli("run", "two:second", cwd=tmp_path)
    assert out.status == 0, out.stderr
    out = await run_cli("run", "two:second", "--reload", cwd=tmp_path)
    assert out.status == 2 and "--reload needs a network transport" in out.stderr


async def test_reload_restarts_the_server_when_a_file_changes(tmp_path: Path) -> None:
    source = tmp_path / "app.py"
    source.write_text("from trio_mcp import Server\nserver = Server('first')\n")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, "run", str(source), "-t", "http", "--port", "0", "--reload")
            await running.wait_for_stderr(r"serving first 0\.0\.0 on")
            source.write_text("from trio_mcp import Server\nserver = Server('second')\n")
            await running.wait_for_stderr(r"serving second 0\.0\.0 on")
            running.process.send_signal(signal.SIGINT)
            status = await running.process.wait()
    assert status == 130
    assert "Traceback" not in running.stderr.decode()


async def test_run_with_workers_serves_http_and_sigterm_drains_them() -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(
                nursery,
                "run",
                str(CLI_SERVER),
                "--transport",
                "http",
                "--port",
                "0",
                "--workers",
                "2",
                "--drain-timeout",
                "5",
            )
            found = await running.wait_for_stderr(r"serving cli-test-server 1\.2\.3 on (\S+) from 2 workers")
            for _ in range(3):
                out = await run_cli("call", "echo", "text=from a worker", "--url", found.group(1))
                assert out.status == 0, out.stderr
                assert out.stdout.strip() == "from a worker"
            running.process.send_signal(signal.SIGTERM)
            status = await running.process.wait()
    assert status == 0, running.stderr.decode()
    assert "Traceback" not in running.stderr.decode()


@pytest.mark.parametrize(
    ("words", "complaint"),
    [
        (["--workers", "2"], "--workers needs --transport http"),
        (["--workers", "2", "--transport", "http", "--reload"], "--workers needs --transport http and no --reload"),
        (["--workers", "0", "--transport", "http"], "--workers must be at least 1"),
        (["--drain-timeout", "0", "--transport", "http"], "--drain-timeout must be positive"),
    ],
)
async def test_run_refuses_workers_it_cannot_run(words: list[str], complaint: str) -> None:
    out = await run_cli("run", str(CLI_SERVER), *words)
    assert out.status == 2
    assert complaint in out.stderr


async def test_run_serves_https_with_a_certificate(self_signed_cert: tuple[str, str]) -> None:
    import ssl

    import trio_mcp
    from trio_mcp.client import HttpClient

    cert, key = self_signed_cert
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            running = await start(
                nursery, "run", str(CLI_SERVER), "-t", "http", "--port", "0", "--certfile", cert, "--keyfile", key
            )
            found = await running.wait_for_stderr(r"serving cli-test-server 1\.2\.3 on (https://\S+) ")
            async with (
                HttpClient(ssl_context=ssl.create_default_context(cafile=cert)) as http,
                trio_mcp.open_http_client(found.group(1), http=http) as client,
            ):
                result = await client.call_tool("echo", {"text": "over TLS"})
            assert result.content[0].text == "over TLS"  # type: ignore[union-attr]
            running.process.send_signal(signal.SIGINT)
            assert await running.process.wait() == 130


async def test_run_refuses_tls_it_cannot_serve(self_signed_cert: tuple[str, str]) -> None:
    cert, key = self_signed_cert
    for words, complaint in [
        (["-t", "http", "--certfile", cert], "--certfile and --keyfile go together"),
        (["-t", "ws", "--certfile", cert, "--keyfile", key], "--certfile needs --transport http or sse"),
        (["-t", "http", "--certfile", key, "--keyfile", key], "cannot load"),
    ]:
        out = await run_cli("run", str(CLI_SERVER), *words)
        assert out.status == 2, out.stderr
        assert complaint in out.stderr


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25", "2026-07-28"])
async def test_info_lists_the_methods_the_revision_and_the_server_offer(version: str) -> None:
    out = await run_cli("info", "--json", "--protocol-version", version, *server_command())
    assert out.status == 0, out.stderr
    # The server offers tools, resources, prompts and logging; no completions (2024-11-05 has no capability
    # for them, so there the client cannot know and may ask) and no tasks.
    lacking = {"completions", "tasks"} & facts.SERVER_CAPABILITIES[version]
    expected = {
        method
        for method in facts.CLIENT_REQUESTS[version]
        if facts.REQUIRED_CAPABILITY.get(method, ("",))[0] not in lacking
    }
    assert set(json.loads(out.stdout)["methods"]) == expected
    text = await run_cli("info", "--protocol-version", version, *server_command())
    assert f"methods:      {', '.join(json.loads(out.stdout)['methods'])}" in text.stdout


async def test_asking_for_what_the_server_does_not_offer_says_so_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "tools_only.py"
    script.write_text(
        "import trio\nfrom trio_mcp import Server\nserver = Server('tools-only')\n\n"
        "@server.tool()\ndef hello() -> str:\n    return 'hi'\n\ntrio.run(server.serve_stdio)\n"
    )
    out = await run_cli("list", "prompts", "--", sys.executable, str(script))
    assert out.status == 2, out.stderr
    assert out.stderr.strip().endswith(
        "prompts/list: the server did not declare the 'prompts' capability (`trio-mcp info` lists the methods "
        "this server offers)"
    )
