"""``trio-mcp dev``: a server from a project folder, restarted on every edit, under the official MCP Inspector, whose
own CLI mode (``--cli URL --method tools/list``) is the client that checks what the server offers after each edit.

The Inspector comes from ``tests/inspector/setup.sh`` (``make inspector-setup``: the release that
``trio_mcp/cli/inspector-npm/`` locks, with the Node of ``tests/interop/setup.sh``); the tests point ``trio-mcp dev`` at
it with ``TRIO_MCP_INSPECTOR_DIR`` and ``TRIO_MCP_NODE``, so nothing is downloaded here. Without it the tests that
need it are skipped, saying so (a failure under ``TRIO_MCP_STRICT_SKIPS=1``, as in CI).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import trio
from cli_helpers import Running, cli_env, run_cli, start
from paths import ROOT, TESTS
from waiting import wait_until

INSTALLED = TESTS / "inspector" / "installed"
PACKAGE = INSTALLED / "node_modules" / "@modelcontextprotocol" / "inspector"
PATHS_FILE = ROOT / ".interop" / "paths.json"

FIRST = '''from trio_mcp import Server

server = Server("devtest")


@server.tool()
def hello(name: str) -> str:
    """Say hello."""
    return f"hello {name}"
'''
SECOND = (
    FIRST
    + '''

@server.tool()
def bye(name: str) -> str:
    """Say goodbye."""
    return f"bye {name}"
'''
)


def _inspector() -> tuple[str, Path] | None:
    """The Node and the Inspector's launcher the set-up installed, or None."""
    try:
        node = json.loads(PATHS_FILE.read_text())["node"]
        launcher = json.loads((PACKAGE / "package.json").read_text())["bin"]["mcp-inspector"]
    except (OSError, ValueError, KeyError):
        return None
    return node, PACKAGE / launcher


INSPECTOR = _inspector()
needs_inspector = pytest.mark.skipif(
    INSPECTOR is None,
    reason="the MCP Inspector is not installed: run `make inspector-setup` (tests/inspector/setup.sh)",
)


def _project(tmp_path: Path) -> Path:
    source = tmp_path / "app.py"
    source.write_text(FIRST)
    return source


def _dev_env(tmp_path: Path) -> dict[str, str]:
    assert INSPECTOR is not None
    return {
        "TRIO_MCP_NODE": INSPECTOR[0],
        "TRIO_MCP_INSPECTOR_DIR": str(INSTALLED),
        "HOME": str(tmp_path / "home"),  # the Inspector keeps its catalog and settings under the home folder
        "MCP_INSPECTOR_SECRET_STORE": "memory",
    }


async def _inspector_cli(tmp_path: Path, url: str, *method: str) -> object:
    """What the Inspector's CLI mode prints (JSON) for one method against ``url``."""
    assert INSPECTOR is not None
    node, launcher = INSPECTOR
    with trio.fail_after(30):
        done = await trio.run_process(
            [node, str(launcher), "--cli", url, "--transport", "http", "--method", *method],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env={**os.environ, **_dev_env(tmp_path)},
        )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


async def _tool_names(tmp_path: Path, url: str) -> list[str]:
    listed = await _inspector_cli(tmp_path, url, "tools/list")
    assert isinstance(listed, dict)
    return sorted(tool["name"] for tool in listed["tools"])


def _children(pid: int) -> set[int]:
    """The processes ``pid`` started, and theirs (Linux: read from /proc)."""
    found: set[int] = set()
    parents = {pid}
    for _ in range(5):
        step = set()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[1]) in parents:
                step.add(int(stat.parent.name))
        parents = step - found
        found |= step
    return found


def _running(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running: an orphan that exited may stay a zombie until whoever adopted it reaps it."""
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _refused(url: str) -> bool:
    """Nothing listens at ``url`` any more."""
    where = urlsplit(url)
    try:
        socket.create_connection((where.hostname, where.port), timeout=2).close()
    except OSError:
        return True
    return False


async def _inspector_config(inspector: str, *, token: bool = True) -> tuple[int, object]:
    """The Inspector's ``/api/config`` (the server it is set to start or reach), asked with its token or without."""
    where = urlsplit(inspector)
    headers = {}
    if token:
        headers["x-mcp-remote-auth"] = "Bearer " + parse_qs(where.query)["MCP_INSPECTOR_API_TOKEN"][0]
    request = urllib.request.Request(f"http://{where.netloc}/api/config", headers=headers)

    def get() -> tuple[int, object]:
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, None

    return await trio.to_thread.run_sync(get)


async def _stop(running: Running, signum: int) -> int:
    running.process.send_signal(signum)
    with trio.fail_after(20):
        return await running.process.wait()


@needs_inspector
async def test_dev_serves_under_the_inspector_and_reloads_on_an_edit(tmp_path: Path) -> None:
    source = _project(tmp_path)
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, "dev", "app.py", "--no-open", cwd=tmp_path, env=_dev_env(tmp_path))
            found = await running.wait_for_stderr(r"MCP Inspector: (http://127\.0\.0\.1:\d+\S*) \(server (\S+)\)")
            inspector, url = found.group(1), found.group(2)
            assert (await _inspector_config(inspector, token=False))[0] == 401  # its token is on
            await running.wait_for_stderr(r"serving devtest 0\.0\.0 on " + url)
            assert await _tool_names(tmp_path, url) == ["hello"]
            called = await _inspector_cli(tmp_path, url, "tools/call", "--tool-name", "hello", "--tool-arg", "name=x")
            assert called == {"content": [{"type": "text", "text": "hello x"}]}

            source.write_text(SECOND)
            await running.wait_for_stderr(r"(?s)app\.py changed; restarting.*serving devtest 0\.0\.0 on ")
            assert await _tool_names(tmp_path, url) == ["bye", "hello"]

            started = _children(running.process.pid)
            assert started, "dev started no processes"
            status = await _stop(running, signal.SIGINT)
    assert status == 130, running.stderr.decode()
    assert "Traceback" not in running.stderr.decode()
    assert not started & _children(1) and all(not Path(f"/proc/{pid}").exists() for pid in started)
    assert _refused(url) and _refused(inspector)


async def test_a_broken_edit_is_one_line_a_fixed_one_recovers_and_watch_adds_files(tmp_path: Path) -> None:
    source = _project(tmp_path)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            (tmp_path / "data").mkdir()
            (tmp_path / "data" / "greeting.txt").write_text("hello")
            running = await start(nursery, "dev", "app.py", "--no-inspector", "--watch", "data", cwd=tmp_path)
            url = (await running.wait_for_stderr(r"serving devtest 0\.0\.0 on (\S+)")).group(1)

            source.write_text(FIRST + "\ndef broken(:\n")
            await running.wait_for_stderr(r"server exited with status 2; waiting for a change to restart it")
            errors = [line for line in running.stderr.decode().splitlines() if "cannot import" in line]
            assert errors == ["trio-mcp: cannot import app.py: SyntaxError: invalid syntax (app.py, line 11)"], errors

            source.write_text(SECOND)
            await running.wait_for_stderr(r"(?s)waiting for a change.*restarting.*serving devtest 0\.0\.0 on " + url)
            listed = await run_cli("list", "tools", "--url", url)
            assert listed.status == 0 and "bye" in listed.stdout, listed.stderr

            (tmp_path / "data" / "greeting.txt").write_text("hi")  # any file under --watch, not only .py ones
            await running.wait_for_stderr(r"(?s)data/greeting\.txt changed; restarting.*serving devtest")
            started = _children(running.process.pid)
            status = await _stop(running, signal.SIGTERM)
    assert status == 0, running.stderr.decode()
    assert "Traceback" not in running.stderr.decode()
    assert all(not Path(f"/proc/{pid}").exists() for pid in started) and _refused(url)


@pytest.mark.parametrize(
    ("words", "complaint"),
    [
        (["--transport", "stdio", "--no-inspector"], "--no-inspector needs --transport http"),
        (["--transport", "stdio", "--watch", "."], "--watch needs --transport http"),
        (["--no-inspector", "--port", "0"], "no such file: missing.py"),
    ],
)
async def test_dev_refuses_what_cannot_work(tmp_path: Path, words: list[str], complaint: str) -> None:
    _project(tmp_path)
    target = "missing.py" if "missing.py" in complaint else "app.py"
    out = await run_cli("dev", target, *words, cwd=tmp_path)
    assert out.status == 2 and complaint in out.stderr


async def test_dev_names_the_node_it_needs(tmp_path: Path) -> None:
    _project(tmp_path)
    old_node = tmp_path / "node"
    old_node.write_text(f"#!{sys.executable}\nprint('v20.1.0')\n")
    old_node.chmod(0o755)
    out = await run_cli("dev", "app.py", "--no-open", cwd=tmp_path, env={"TRIO_MCP_NODE": str(old_node)})
    assert out.status == 2, out.stderr
    assert f"needs Node.js >= 22.19.0; {old_node} is v20.1.0" in out.stderr


@needs_inspector
async def test_dev_over_stdio_has_the_inspector_start_the_server(tmp_path: Path) -> None:
    _project(tmp_path)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            words = ["dev", "app.py", "--transport", "stdio", "--no-open"]
            running = await start(nursery, *words, cwd=tmp_path, env=_dev_env(tmp_path))
            found = await running.wait_for_stderr(r"MCP Inspector: (\S+) \(it starts the server on each Connect")
            status, config = await _inspector_config(found.group(1))
            assert status == 200 and isinstance(config, dict)
            assert config["defaultTransport"] == "stdio" and config["defaultCwd"] == str(tmp_path)
            assert [config["defaultCommand"], *config["defaultArgs"]] == [
                sys.executable,
                "-m",
                "trio_mcp",
                "run",
                "app.py",
            ]
            assert await _stop(running, signal.SIGINT) == 130
    assert _refused(found.group(1))


def _stand_in_node(tmp_path: Path, script: str) -> Path:
    """A Node of ``script`` (Python) with an npm beside it where ``trio-mcp dev`` looks: it runs npm as Node does."""
    node = tmp_path / "node" / "bin" / "node"
    npm = tmp_path / "node" / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    npm.parent.mkdir(parents=True)
    node.parent.mkdir(parents=True)
    npm.write_text("")
    node.write_text(f"#!{sys.executable}\n{script}")
    node.chmod(0o755)
    return node


async def test_a_failed_install_is_one_line_naming_its_log(tmp_path: Path) -> None:
    """npm fails (here a stand-in beside a stand-in Node): one line, the log kept, no server left behind."""
    _project(tmp_path)
    node = _stand_in_node(
        tmp_path,
        "import sys\nif sys.argv[1:] == ['--version']:\n    print('v22.19.0')\n"
        "else:\n    print('npm error code E404 for', sys.argv[2:])\n    sys.exit(1)\n",
    )
    folder = tmp_path / "inspector"
    env = {"TRIO_MCP_NODE": str(node), "TRIO_MCP_INSPECTOR_DIR": str(folder)}
    out = await run_cli("dev", "app.py", "--no-open", cwd=tmp_path, env=env)
    assert out.status == 3, out.stderr
    [log] = folder.parent.glob("inspector.installing-*/install.log")
    assert out.stderr.splitlines()[-1] == (
        f"trio-mcp: installing the MCP Inspector failed (npm exited 1); npm's output is in {log}"
    )
    assert "E404" in log.read_text()
    assert not folder.exists()  # a failed install never looks like one
    assert "serving" not in out.stderr  # nothing was started before the Inspector was there


async def test_two_first_runs_at_once_leave_one_complete_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two first runs install at the same moment (a stand-in npm that takes a while to write a release): both get
    the same launcher, from one complete folder, with nothing half-written or left over beside it."""
    from trio_mcp.cli._inspector import install_inspector, pinned_version

    node = _stand_in_node(
        tmp_path,
        "import json, pathlib, sys, time\n"
        "prefix = pathlib.Path(sys.argv[sys.argv.index('--prefix') + 1])\n"
        "package = prefix / 'node_modules' / '@modelcontextprotocol' / 'inspector'\n"
        "package.mkdir(parents=True)\n"
        f"manifest = {{'version': {pinned_version()!r}, 'bin': {{'mcp-inspector': 'cli.js'}}}}\n"
        "(package / 'package.json').write_text(json.dumps(manifest))\n"
        "time.sleep(0.5)\n"  # the other install starts meanwhile
        "(prefix / 'node_modules' / '.package-lock.json').write_text('{}')\n",
    )
    folder = tmp_path / "cache" / "inspector"
    monkeypatch.setenv("TRIO_MCP_INSPECTOR_DIR", str(folder))
    launchers: list[Path] = []

    async def install() -> None:
        launchers.append(await install_inspector(str(node), lambda line: None))

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(install)
            nursery.start_soon(install)
    assert launchers == [folder / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli.js"] * 2
    assert sorted(path.name for path in folder.parent.iterdir()) == ["inspector"]


@contextlib.contextmanager
def _ended_after(pids: set[int]) -> Iterator[None]:
    """Whatever of ``pids`` the block leaves running is killed after it, so that a failure leaves no orphan."""
    try:
        yield
    finally:
        for pid in _running(pids):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


SERVING = r"serving devtest 0\.0\.0 on (\S+)"
INSPECTING = r"MCP Inspector: (\S+)"
KILLED = [
    pytest.param(["dev", "app.py", "--no-open"], [SERVING, INSPECTING], marks=needs_inspector, id="dev"),
    pytest.param(
        ["dev", "app.py", "--transport", "stdio", "--no-open"], [INSPECTING], marks=needs_inspector, id="stdio"
    ),
    pytest.param(["dev", "app.py", "--no-inspector"], [SERVING], id="dev-no-inspector"),
    pytest.param(["run", "app.py", "--transport", "http", "--port", "0", "--reload"], [SERVING], id="run-reload"),
]


@pytest.mark.parametrize(("words", "listening"), KILLED)
async def test_killed_outright_it_leaves_no_process_and_no_port_behind(
    tmp_path: Path, words: list[str], listening: list[str]
) -> None:
    """SIGKILL (or a hard crash) gives ``dev`` or ``run --reload`` no chance to end what it started: the server
    and the Inspector, with what they started, end by themselves once it is gone, and their ports are free."""
    _project(tmp_path)
    env = _dev_env(tmp_path) if INSPECTING in listening else None
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, *words, cwd=tmp_path, env=env)
            addresses = [(await running.wait_for_stderr(pattern)).group(1) for pattern in listening]
            started = _children(running.process.pid)
            assert len(started) >= len(listening), started  # the server, the Inspector, or both
            running.process.kill()
            assert await running.process.wait() == -signal.SIGKILL
            with _ended_after(started):
                await wait_until(lambda: not _running(started), within=20, interval=0.05)
            assert all(_refused(address) for address in addresses)
            nursery.cancel_scope.cancel()


async def _lifeline_server(nursery: trio.Nursery, tmp_path: Path, tools: str) -> tuple[Running, str]:
    """``trio-mcp run --lifeline`` of the test server with ``tools`` added, its stdin a pipe this test holds; its URL."""
    (tmp_path / "app.py").write_text(FIRST + "\n\nimport sys\nimport time\n" + tools)
    words = ["run", "app.py", "--transport", "http", "--port", "0", "--lifeline"]
    running = await start(nursery, *words, stdin=subprocess.PIPE, cwd=tmp_path)
    return running, (await running.wait_for_stderr(r"serving devtest 0\.0\.0 on (\S+)")).group(1)


async def _cut(running: Running) -> None:
    """Close the test's end of the lifeline, as the death of the process holding it does."""
    assert running.process.stdin is not None
    await running.process.stdin.aclose()


async def test_a_lifeline_server_stops_when_its_stdin_closes_and_only_then(tmp_path: Path) -> None:
    """The hidden ``run --lifeline`` that ``dev`` starts its server with: the server serves while the pipe on its
    stdin is open (its code sees an empty stdin, as without the option), and stops when the pipe's other end closes,
    as when the process holding it dies."""
    tool = "\n\n@server.tool()\ndef stdin() -> str:\n    return repr(sys.stdin.read())\n"
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            running, url = await _lifeline_server(nursery, tmp_path, tool)
            called = await run_cli("call", "stdin", "--url", url)
            assert called.stdout.strip() == "''", called  # the tool read an empty stdin, not the pipe
            assert running.process.returncode is None
            await _cut(running)
            assert await running.process.wait() == 0
    assert _refused(url)
    assert "Traceback" not in running.stderr.decode()


async def test_a_lifeline_server_with_its_event_loop_blocked_exits_all_the_same(tmp_path: Path) -> None:
    """A handler that blocks the event loop cannot keep a server whose lifeline closed alive: it cannot stop in
    order, so it exits at once after the grace, and the port is free."""
    tool = (
        "\n\n@server.tool()\nasync def hog() -> str:\n"
        "    print('hogging', file=sys.stderr, flush=True)\n    time.sleep(600)\n    return 'done'\n"
    )
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            running, url = await _lifeline_server(nursery, tmp_path, tool)
            nursery.start_soon(functools.partial(run_cli, "call", "hog", "--url", url, timeout=25))
            await running.wait_for_stderr("hogging")
            await _cut(running)
            assert await running.process.wait() == 1
            nursery.cancel_scope.cancel()
    assert _refused(url)


async def test_a_lifeline_needs_a_network_transport(tmp_path: Path) -> None:
    _project(tmp_path)
    out = await run_cli("run", "app.py", "--lifeline", cwd=tmp_path)
    assert out.status == 2 and "--lifeline needs a network transport" in out.stderr, out.stderr


KEEPER = [sys.executable, "-m", "trio_mcp.cli._lifeline"]
#: The keeper as it runs on Windows: trio loaded for the real OS, then ``sys.platform`` says "win32".
KEEPER_AS_ON_WINDOWS = [
    sys.executable,
    "-c",
    "import runpy, sys, trio\nsys.platform = 'win32'\nrunpy.run_module('trio_mcp.cli._lifeline', run_name='__main__')",
]


async def _kept(keeper: list[str], script: str, env: dict[str, str] | None = None) -> tuple[trio.Process, set[int]]:
    """A Python ``script`` run under ``keeper``, the test holding its lifeline, once it printed that it started;
    the processes under the keeper."""
    process = await trio.lowlevel.open_process(
        [*keeper, sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**cli_env(), **(env or {})},
        start_new_session=True,
    )
    assert process.stdout is not None
    assert b"started" in await process.stdout.receive_some()
    return process, _children(process.pid)


async def test_a_command_kept_on_a_lifeline_ends_with_all_it_started_when_the_lifeline_closes() -> None:
    """What ``dev`` runs the Inspector (Node, which cannot be told) under: the command runs, with its exit status
    passed on; once the pipe on the keeper's stdin closes, the command and the processes it started are ended."""
    with trio.fail_after(30):
        exits = await trio.lowlevel.open_process(
            [*KEEPER, sys.executable, "-c", "raise SystemExit(7)"], stdin=subprocess.PIPE, env=cli_env()
        )
        assert await exits.wait() == 7
        assert exits.stdin is not None
        await exits.stdin.aclose()
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
    script += "print('started', flush=True); time.sleep(600)"
    with trio.fail_after(30):
        process, started = await _kept(KEEPER, script)
        assert len(started) == 2, started
        assert process.stdin is not None
        await process.stdin.aclose()
        with _ended_after(started):
            await process.wait()
            await wait_until(lambda: not _running(started), within=20, interval=0.05)


async def test_on_windows_a_kept_command_is_ended_with_taskkill(tmp_path: Path) -> None:
    """The keeper's Windows branch, run here: a ``taskkill`` of ours on PATH records how it was called and kills
    the process it names, as ``taskkill /T /F`` ends a tree; the keeper then exits as its command did."""
    calls = tmp_path / "calls"
    taskkill = tmp_path / "taskkill"
    taskkill.write_text(
        f"#!{sys.executable}\nimport os, signal, sys\n"
        f"open({str(calls)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "os.kill(int(sys.argv[2]), signal.SIGKILL)\n"
    )
    taskkill.chmod(0o755)
    path = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    with trio.fail_after(30):
        process, started = await _kept(
            KEEPER_AS_ON_WINDOWS, "import time; print('started', flush=True); time.sleep(600)", path
        )
        [command] = started
        assert process.stdin is not None
        await process.stdin.aclose()
        with _ended_after(started):
            assert await process.wait() == 128 + signal.SIGKILL
    assert calls.read_text() == f"/PID {command} /T /F\n"
