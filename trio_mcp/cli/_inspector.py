"""The official MCP Inspector for ``trio-mcp dev``: Node found and checked, the pinned release installed once per
user, and its web UI started on 127.0.0.1 with the address (and session token) it prints read back.

The release is the one ``inspector-npm/package.json`` names, installed with ``npm ci`` from that file and its lock, so
every user runs the same dependency tree the tests ran. It goes into a per-user cache folder, one per release, or
into ``TRIO_MCP_INSPECTOR_DIR``; ``TRIO_MCP_NODE`` names the Node to use when the one on ``PATH`` is not it.
"""

from __future__ import annotations

import collections
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import trio

from ..transports._process_tree import end_group, group_spawn_options
from ._exit import CONNECTION, CliError
from ._lifeline import Lifeline, keeper_command

__all__ = ["INSPECTOR_PACKAGE", "Inspector", "find_node", "free_port", "install_inspector", "pinned_version"]

INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector"
#: The oldest Node the pinned Inspector runs on (its ``engines`` field).
NODE_MINIMUM = (22, 19, 0)
#: Longest wait for ``npm ci`` of the Inspector (a first install fetches about 120 packages).
INSTALL_TIMEOUT = 600.0
#: Longest wait for the Inspector to print its address once started.
START_TIMEOUT = 60.0
#: How long the Inspector has to exit when asked, before it is killed.
STOP_GRACE_SECONDS = 5.0
_LOCKED = Path(__file__).with_name("inspector-npm")
_ADDRESS = re.compile(r"https?://\S+[?&]MCP_(?:INSPECTOR_API|PROXY_AUTH)_TOKEN=[0-9A-Za-z]+")
_NODE_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def pinned_version() -> str:
    """The Inspector release ``trio-mcp dev`` runs."""
    manifest = json.loads((_LOCKED / "package.json").read_text(encoding="utf-8"))
    return str(manifest["dependencies"][INSPECTOR_PACKAGE])


def _needed() -> str:
    return f"the MCP Inspector {pinned_version()} needs Node.js >= {'.'.join(map(str, NODE_MINIMUM))}"


async def find_node() -> str:
    """``TRIO_MCP_NODE``, else the ``node`` on ``PATH``, checked to be new enough; one line saying what to do if not."""
    node = os.environ.get("TRIO_MCP_NODE") or shutil.which("node")
    if not node:
        raise CliError(f"{_needed()}, and no node is on PATH: install it, or name it with TRIO_MCP_NODE=/path/to/node")
    try:
        with trio.fail_after(30):
            done = await trio.run_process([node, "--version"], capture_stdout=True, capture_stderr=True, check=False)
    except (OSError, trio.TooSlowError) as exc:
        raise CliError(f"{_needed()}; {node} does not run ({exc or 'no answer'})") from None
    found = _NODE_VERSION.match(done.stdout.decode(errors="replace").strip())
    if found is None or tuple(int(part) for part in found.groups()) < NODE_MINIMUM:
        what = found.group(0) if found else "not a Node.js it can tell the version of"
        raise CliError(f"{_needed()}; {node} is {what}: install a newer one, or name it with TRIO_MCP_NODE")
    return node


def node_environment(node: str) -> dict[str, str]:
    """Our environment with ``node``'s folder first on ``PATH``: npm's scripts run under the node found first."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(filter(None, [str(Path(node).parent), env.get("PATH")]))
    return env


def install_folder() -> Path:
    """``TRIO_MCP_INSPECTOR_DIR``, else this release's folder in the user's cache (XDG, macOS or Windows layout)."""
    named = os.environ.get("TRIO_MCP_INSPECTOR_DIR")
    if named:
        return Path(named).expanduser()
    if sys.platform == "win32":
        cache = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "trio-mcp" / "Cache"
    elif sys.platform == "darwin":
        cache = Path.home() / "Library" / "Caches" / "trio-mcp"
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trio-mcp"
    return cache / "inspector" / pinned_version()


def _package(folder: Path) -> Path:
    return folder / "node_modules" / INSPECTOR_PACKAGE


def _entry_point(folder: Path) -> Path | None:
    """The Inspector's launcher in ``folder`` when the pinned release is installed there completely."""
    try:
        manifest = json.loads((_package(folder) / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    # npm writes node_modules/.package-lock.json last: without it, an install was cut short.
    if manifest.get("version") != pinned_version() or not (folder / "node_modules" / ".package-lock.json").is_file():
        return None
    return _package(folder) / str(manifest["bin"]["mcp-inspector"])


def _npm(node: str) -> list[str]:
    """npm run by ``node`` itself when it ships beside it, else the ``npm`` on ``PATH``."""
    here = Path(node).resolve().parent
    for cli in (
        here.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js",
        here / "node_modules" / "npm" / "bin" / "npm-cli.js",
    ):
        if cli.is_file():
            return [node, str(cli)]
    npm = shutil.which("npm")
    if npm is None:
        raise CliError(f"installing the MCP Inspector needs npm, and none is beside {node} or on PATH")
    return [npm]


async def install_inspector(node: str, say: Callable[[str], None]) -> Path:
    """The Inspector's launcher, installed first (quietly; one line and the log's path if that fails) if need be.

    npm installs into a folder of its own beside the final one, renamed into place once complete: two first runs at
    once each install, the first to finish is kept, and an install cut short never looks like one."""
    folder = install_folder()
    entry = _entry_point(folder)
    if entry is not None:
        return entry
    say(f"installing the MCP Inspector {pinned_version()} into {folder} (once)")
    staging = folder.with_name(f"{folder.name}.installing-{secrets.token_hex(4)}")
    try:
        staging.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(_LOCKED / name, staging / name)
    except OSError as exc:
        raise CliError(
            f"cannot install the MCP Inspector into {folder.parent} ({exc.strerror or exc}): "
            "name a writable folder with TRIO_MCP_INSPECTOR_DIR"
        ) from None
    log = staging / "install.log"
    command = [*_npm(node), "ci", "--prefix", str(staging), "--no-audit", "--no-fund", "--loglevel=error"]
    with log.open("wb") as output:
        try:
            with trio.move_on_after(INSTALL_TIMEOUT) as timer:
                done = await trio.run_process(
                    command, stdout=output, stderr=subprocess.STDOUT, check=False, env=node_environment(node)
                )
        except OSError as exc:
            raise CliError(f"cannot run npm to install the MCP Inspector: {exc}", CONNECTION) from None
    if timer.cancelled_caught or done.returncode != 0:
        why = f"took over {INSTALL_TIMEOUT:.0f} s" if timer.cancelled_caught else f"npm exited {done.returncode}"
        raise CliError(f"installing the MCP Inspector failed ({why}); npm's output is in {log}", CONNECTION)
    if _entry_point(staging) is None:
        raise CliError(f"npm installed no MCP Inspector {pinned_version()} into {staging}; see {log}", CONNECTION)
    _move_into_place(staging, folder)
    entry = _entry_point(folder)
    assert entry is not None  # complete, checked in staging, and folders are renamed whole
    return entry


def _move_into_place(staging: Path, folder: Path) -> None:
    """Rename a complete install to ``folder``, unless another install got there first (then it is dropped); a
    folder there that is not a complete install (cut short before this way of installing) is replaced."""
    if _entry_point(folder) is None and folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
    try:
        staging.rename(folder)
    except OSError:  # another install was renamed into place meanwhile
        if _entry_point(folder) is None:
            raise CliError(f"cannot move the MCP Inspector installed in {staging} to {folder}", CONNECTION) from None
        shutil.rmtree(staging, ignore_errors=True)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the caller binds it soon after)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def inspector_environment(node: str, *, open_browser: bool) -> dict[str, str]:
    """The Inspector's settings: bound to 127.0.0.1 with its token on, on free ports unless the user set them."""
    env = node_environment(node)
    env["HOST"] = "127.0.0.1"
    for unsafe in ("DANGEROUSLY_OMIT_AUTH", "DANGEROUSLY_BIND_ALL_INTERFACES"):
        env.pop(unsafe, None)
    env.setdefault("CLIENT_PORT", str(free_port()))  # the Inspector refuses 0 here
    if "SERVER_PORT" not in env:
        env.setdefault("MCP_SANDBOX_PORT", "0")
    env.setdefault("MCP_APP_ORIGIN_PORT", "0")
    if not open_browser:
        env["MCP_AUTO_OPEN_ENABLED"] = "false"
    return env


class Inspector:
    """The Inspector's web UI as a child process; ``address`` is its URL with the session token, once printed.

    Node cannot be told to watch a lifeline, so the Inspector runs under a keeper that holds one (``_lifeline``):
    ``stop()`` ends the keeper's group, the Inspector in it; if this process dies first, the keeper ends it.
    """

    def __init__(self, process: trio.Process, lifeline: Lifeline) -> None:
        self.process = process
        self._lifeline = lifeline
        self.address: str | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=20)
        self._ready = trio.Event()

    @classmethod
    async def start(cls, node: str, entry: Path, server: Sequence[str], *, open_browser: bool) -> Inspector:
        """Start the Inspector's web UI for ``server`` (its command-line words: a URL and transport, or a command)."""
        lifeline = Lifeline()
        try:
            process = await trio.lowlevel.open_process(
                keeper_command([node, str(entry), "--web", *server]),
                stdin=lifeline.child_stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=inspector_environment(node, open_browser=open_browser),
                **group_spawn_options(),
            )
        except BaseException:
            lifeline.close()
            raise
        return cls(process, lifeline)

    def last_line(self) -> str:
        return next((line for line in reversed(self._tail) if line), "no output")

    async def read_output(self) -> None:
        """Read what the Inspector prints (kept out of sight, but for the last lines) until it exits."""
        assert self.process.stdout is not None
        pending = b""
        async with self.process.stdout:
            while chunk := await self.process.stdout.receive_some(65536):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    self._seen(line.decode(errors="replace").strip())
                pending = pending[-65536:]
        self._seen(pending.decode(errors="replace").strip())
        self._ready.set()

    def _seen(self, line: str) -> None:
        self._tail.append(line)
        found = _ADDRESS.search(line)
        if found and self.address is None:
            self.address = found.group(0)
            self._ready.set()

    async def wait_address(self) -> str:
        """The Inspector's URL; one line naming its last words if it exits or stays silent first."""
        with trio.move_on_after(START_TIMEOUT):
            await self._ready.wait()
        if self.address is None:
            await self.stop()
            raise CliError(f"the MCP Inspector did not start: {self.last_line()}", CONNECTION)
        return self.address

    async def stop(self) -> None:
        try:
            await end_group(self.process, grace=STOP_GRACE_SECONDS)
        finally:
            self._lifeline.close()
