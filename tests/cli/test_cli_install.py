"""``trio-mcp install`` / ``uninstall`` against a temporary home laid out as each OS lays it out, each file checked
against the format its host documents; then the installed server started from that very file (``--config``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from cli_helpers import CLI_SERVER, REPO, Outcome, cli_env, run_cli

#: Runs command lines (a JSON list of word lists) as the OS named, trio imported for the real one before the name
#: changes; prints each one's exit status and output, as JSON.
AS_OS = """
import contextlib, io, json, sys, trio
words_list = json.loads(sys.argv[2])
sys.platform = sys.argv[1]
from trio_mcp.cli import main
outcomes = []
for words in words_list:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(words)
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code
    outcomes.append([status, out.getvalue(), err.getvalue()])
print(json.dumps(outcomes))
"""

#: Where each host keeps its servers, relative to the temporary home, per OS.
LAYOUT = {
    ("claude-desktop", "linux"): ".config/Claude/claude_desktop_config.json",
    ("claude-desktop", "darwin"): "Library/Application Support/Claude/claude_desktop_config.json",
    ("claude-desktop", "win32"): "AppData/Roaming/Claude/claude_desktop_config.json",
    ("claude-code", "linux"): ".claude.json",
    ("claude-code", "darwin"): ".claude.json",
    ("claude-code", "win32"): ".claude.json",
    ("cursor", "linux"): ".cursor/mcp.json",
    ("cursor", "darwin"): ".cursor/mcp.json",
    ("cursor", "win32"): ".cursor/mcp.json",
    ("vscode", "linux"): ".config/Code/User/mcp.json",
    ("vscode", "darwin"): "Library/Application Support/Code/User/mcp.json",
    ("vscode", "win32"): "AppData/Roaming/Code/User/mcp.json",
    ("gemini", "linux"): ".gemini/settings.json",
    ("gemini", "darwin"): ".gemini/settings.json",
    ("gemini", "win32"): ".gemini/settings.json",
}

#: Each host's documented server fields: (key the servers sit under, fields of a stdio server, of an HTTP one).
DOCUMENTED = {
    "claude-desktop": ("mcpServers", {"command", "args", "env"}, set()),
    "claude-code": ("mcpServers", {"type", "command", "args", "env"}, {"type", "url", "headers"}),
    "cursor": ("mcpServers", {"command", "args", "env", "envFile"}, {"url", "headers"}),
    "vscode": ("servers", {"type", "command", "args", "env", "envFile"}, {"type", "url", "headers"}),
    "gemini": ("mcpServers", {"command", "args", "env", "cwd", "timeout", "trust"}, {"httpUrl", "url", "headers"}),
}


def check_documented(host: str, entry: dict[str, Any]) -> None:
    """The entry uses only the fields its host documents, with the documented types and values."""
    _, stdio_fields, http_fields = DOCUMENTED[host]
    if "command" in entry:
        assert set(entry) <= stdio_fields, set(entry) - stdio_fields
        assert isinstance(entry["command"], str) and os.path.isabs(entry["command"])
        assert all(isinstance(arg, str) for arg in entry["args"])
        assert all(isinstance(value, str) for value in entry.get("env", {}).values())
        if "type" in stdio_fields:
            assert entry["type"] == "stdio"
    else:
        assert set(entry) <= http_fields, set(entry) - http_fields
        if "type" in http_fields:
            assert entry["type"] == "http"


def home_env(home: Path, platform: str) -> dict[str, str]:
    env = cli_env()
    env["HOME"] = str(home)
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("APPDATA", None)
    if platform == "win32":
        env["USERPROFILE"] = str(home)
        env["APPDATA"] = str(home / "AppData" / "Roaming")
    return env


async def run_as(platform: str, home: Path, *commands: list[str]) -> list[Outcome]:
    """Each command line's outcome, run in one process that takes itself for ``platform`` with ``home`` as HOME."""
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-c", AS_OS, platform, json.dumps(commands)],
            capture_stdout=True,
            capture_stderr=True,
            check=True,
            env=home_env(home, platform),
            cwd=home,
        )
    return [Outcome(*outcome) for outcome in json.loads(done.stdout)]


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
async def test_install_merges_into_each_hosts_file_and_uninstall_takes_it_out(platform: str, tmp_path: Path) -> None:
    befores = {}
    for host in DOCUMENTED:
        key = DOCUMENTED[host][0]
        path = tmp_path / LAYOUT[host, platform]
        path.parent.mkdir(parents=True, exist_ok=True)
        befores[host] = {"theme": "dark", key: {"other": {"command": "other-server", "args": []}}, "zz": [1, 2]}
        path.write_text(json.dumps(befores[host], indent=4))

    installs = [["install", host, str(CLI_SERVER), "--env", "TOKEN=abc"] for host in DOCUMENTED]
    for host, out in zip(DOCUMENTED, await run_as(platform, tmp_path, *installs)):
        assert out.status == 0, out.stderr
        path = tmp_path / LAYOUT[host, platform]
        assert out.stdout.startswith(f"installed 'cli-test-server' in {path};")
        text = path.read_text()
        assert text.startswith('{\n    "theme"')  # the file's own indentation, and its key order
        key = DOCUMENTED[host][0]
        document = json.loads(text)
        assert list(document) == ["theme", key, "zz"] and document["zz"] == [1, 2]
        assert document[key]["other"] == befores[host][key]["other"]
        entry = document[key]["cli-test-server"]
        check_documented(host, entry)
        assert entry["command"] == sys.executable
        assert entry["args"] == ["-m", "trio_mcp", "run", "cli_server:server"]
        assert entry["env"]["TOKEN"] == "abc"
        folder = str(CLI_SERVER.parent)
        if host == "gemini":
            assert entry["cwd"] == folder
        else:
            assert entry["env"]["PYTHONPATH"].split(os.pathsep)[0] == folder
        assert json.loads(path.with_name(path.name + ".bak").read_text()) == befores[host]

    uninstalls = [["uninstall", host, "cli-test-server"] for host in DOCUMENTED]
    for host, out in zip(DOCUMENTED, await run_as(platform, tmp_path, *uninstalls)):
        assert out.status == 0, out.stderr
        assert json.loads((tmp_path / LAYOUT[host, platform]).read_text()) == befores[host]


async def test_the_installed_server_starts_from_each_hosts_file(tmp_path: Path) -> None:
    installs = [["install", host, str(CLI_SERVER), "--name", "calc"] for host in DOCUMENTED]
    assert [out.status for out in await run_as("linux", tmp_path, *installs)] == [0] * len(DOCUMENTED)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for host in DOCUMENTED:
        config = tmp_path / LAYOUT[host, "linux"]
        words = ["call", "add", "a=2", "b=3", "--json", "--config", str(config)]
        called = await run_cli(*words, *(["--server", "calc"] if host != "gemini" else []), cwd=elsewhere)
        assert called.status == 0, (host, called.stderr)
        assert json.loads(called.stdout)["structuredContent"] == {"result": 5.0}


async def test_install_of_an_http_server(tmp_path: Path) -> None:
    url = "http://127.0.0.1:8000/mcp"
    installs = [["install", host, "--transport", "http", "--url", url, "--name", "remote"] for host in DOCUMENTED]
    for host, out in zip(DOCUMENTED, await run_as("darwin", tmp_path, *installs)):
        assert out.status == 0, out.stderr
        key = DOCUMENTED[host][0]
        entry = json.loads((tmp_path / LAYOUT[host, "darwin"]).read_text())[key]["remote"]
        check_documented(host, entry)
        if host == "claude-desktop":  # it starts commands only: a stdio proxy to the URL
            assert entry["args"] == ["-m", "trio_mcp", "proxy", "--url", url]
        else:
            assert url in entry.values()


async def test_dry_run_prints_the_file_and_writes_nothing(tmp_path: Path) -> None:
    [out] = await run_as("linux", tmp_path, ["install", "cursor", str(CLI_SERVER), "--dry-run"])
    assert out.status == 0, out.stderr
    assert json.loads(out.stdout)["mcpServers"]["cli-test-server"]["command"] == sys.executable
    assert "left unchanged" in out.stderr
    assert not (tmp_path / ".cursor").exists()


MISTAKES = [
    (["install", "cursor"], "which server? give TARGET"),
    (["install", "cursor", str(CLI_SERVER), "--env", "TOKEN"], "--env 'TOKEN': expected KEY=VALUE"),
    (["install", "cursor", "--transport", "http", "--name", "x"], "--transport http needs --url"),
    (["install", "cursor", "--transport", "http", "--url", "http://h/mcp"], "needs --name"),
    (["install", "cursor", str(REPO / "nothing.py")], "no such file"),
    (["install", "emacs", str(CLI_SERVER)], "invalid choice"),
    (["uninstall", "cursor", "ghost"], "Cursor has no server 'ghost'"),
]


async def test_install_mistakes_are_one_line_each(tmp_path: Path) -> None:
    outcomes = await run_as("linux", tmp_path, *(words for words, _ in MISTAKES))
    for (_, complaint), out in zip(MISTAKES, outcomes):
        assert out.status == 2
        assert complaint in out.stderr and "Traceback" not in out.stderr


async def test_a_file_that_is_not_plain_json_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / ".config/Code/User/mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text('{\n  // my servers\n  "servers": {}\n}\n')
    [out] = await run_as("linux", tmp_path, ["install", "vscode", str(CLI_SERVER)])
    assert out.status == 2 and "is not plain JSON (line 2" in out.stderr
    assert path.read_text() == '{\n  // my servers\n  "servers": {}\n}\n'
    assert not path.with_name("mcp.json.bak").exists()


async def test_config_names_a_server_the_file_does_not_have(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"a": {"command": "x"}, "b": {"url": "http://127.0.0.1:9/mcp"}}}))
    out = await run_cli("info", "--config", str(config))
    assert out.status == 2 and "names 2 servers; pick one with --server (a, b)" in out.stderr
    out = await run_cli("info", "--config", str(config), "--server", "c")
    assert out.status == 2 and "has no server 'c'; it has: a, b" in out.stderr
    out = await run_cli("info", "--config", str(config), "--url", "http://127.0.0.1:9/mcp")
    assert out.status == 2 and "one of --config, --url" in out.stderr
