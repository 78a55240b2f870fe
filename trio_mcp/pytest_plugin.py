"""pytest fixtures for testing MCP servers built with trio_mcp (loaded automatically: entry point ``pytest11``).

Define one fixture, ``mcp_server``, returning the ``Server`` under test; then ask for a client:

* ``mcp_client``: a ``Client`` wired to the server in memory, with the server's lifespan running. No processes or
  sockets, so it works in virtual time: also request pytest-trio's ``autojump_clock`` and timeouts, progress
  and cancellation tests that would wait minutes take milliseconds (see docs/testing.md).
* ``mcp_stdio_client``: the server in a subprocess over stdio (``trio-mcp run`` on the module that defines it,
  or whatever ``mcp_server_command`` returns).
* ``mcp_http_url`` / ``mcp_http_client``: the server on Streamable HTTP at a free port on 127.0.0.1.

``mcp_client_options`` (a dict, default empty) is passed to every client: override it to pin a
``protocol_version`` or register ``sampling=``/``elicitation=``/``roots=`` callbacks. The async fixtures need
pytest-trio (``trio_mode = true``, or ``@pytest.mark.trio`` on each test). Importing this module costs a
project that does not use it nothing: trio_mcp is imported when a fixture is first used.

A test using these fixtures that fails with one exception shows that exception (the assertion and its diff),
not the "Exceptions from Trio nursery" group that pytest-trio's nurseries wrap it in.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import AsyncIterator, Generator
from typing import TYPE_CHECKING, Any

import pytest

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

if TYPE_CHECKING:
    import trio

    from trio_mcp import Client, Server

__all__ = [
    "mcp_server",
    "mcp_client_options",
    "mcp_client",
    "mcp_server_command",
    "mcp_stdio_client",
    "mcp_http_url",
    "mcp_http_client",
]


def _only_leaf(exc: BaseException) -> BaseException | None:
    """The one exception inside nested groups of one, or None when there are several (they all matter then)."""
    while isinstance(exc, BaseExceptionGroup):
        if len(exc.exceptions) != 1:
            return None
        exc = exc.exceptions[0]
    return exc


def _unwrap_one_failure(item: pytest.Item) -> Generator[None, None, None]:
    """Unwrap a failure of one exception in a test that uses this plugin's fixtures; leave others' tests be."""
    __tracebackhide__ = True
    failure: BaseException | None = None
    try:
        return (yield)
    except BaseExceptionGroup as group:
        failure = _only_leaf(group) if set(__all__) & set(getattr(item, "fixturenames", ())) else None
        if failure is None:
            raise
    finally:
        if failure is not None:
            raise failure  # outside the except block: not "during handling of" the group


# New-style hook wrappers need pluggy 1.1 (every pytest 8 has it); under an older one, failures stay as they are
# rather than this plugin, loaded wherever trio_mcp is installed, breaking every pytest run.
if "wrapper" in inspect.signature(pytest.hookimpl).parameters:
    pytest_runtest_call = pytest.hookimpl(wrapper=True)(_unwrap_one_failure)


@pytest.fixture
def mcp_server() -> Server:
    """The server under test: override this fixture in your conftest.py or test module."""
    pytest.fail("define a fixture named `mcp_server` that returns the trio_mcp.Server to test", pytrace=False)


@pytest.fixture
def mcp_client_options() -> dict[str, Any]:
    """Keyword arguments for every client the fixtures open (``protocol_version``, ``sampling``...)."""
    return {}


@pytest.fixture
async def mcp_client(mcp_server: Server, mcp_client_options: dict[str, Any]) -> AsyncIterator[Client]:
    """A client talking to ``mcp_server`` in memory, inside the server's lifespan."""
    from trio_mcp.testing import open_in_memory

    async with mcp_server.running():
        async with open_in_memory(mcp_server, **mcp_client_options) as client:
            yield client


def _module_level_name(server: Server) -> tuple[str, str] | None:
    """``(file, name)`` of a module that defines ``server`` at its top level, so a subprocess can import it."""
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py"):
            continue
        for name, value in list(vars(module).items()):
            if value is server:
                return file, name
    return None


@pytest.fixture
def mcp_server_command(mcp_server: Server) -> list[str]:
    """The command ``mcp_stdio_client`` starts: ``trio-mcp run`` on the file that defines ``mcp_server``.

    Override it to test any other stdio server (or to add options).
    """
    found = _module_level_name(mcp_server)
    if found is None:
        pytest.fail(
            "mcp_stdio_client needs mcp_server to be a module-level global (so a subprocess can import it), "
            "or a fixture `mcp_server_command` returning the command to run",
            pytrace=False,
        )
    file, name = found
    return [sys.executable, "-m", "trio_mcp", "run", f"{file}:{name}"]


@pytest.fixture
async def mcp_stdio_client(mcp_server_command: list[str], mcp_client_options: dict[str, Any]) -> AsyncIterator[Client]:
    """A client talking over stdio to a server subprocess (``mcp_server_command``); its stderr is kept for errors."""
    from trio_mcp import open_stdio_client

    async with open_stdio_client(mcp_server_command, stderr="capture", **mcp_client_options) as client:
        yield client


@pytest.fixture
async def mcp_http_url(mcp_server: Server, nursery: trio.Nursery) -> str:
    """The URL of ``mcp_server`` served on Streamable HTTP (and HTTP+SSE) at a free port on 127.0.0.1."""
    port = await nursery.start(_serve_http, mcp_server)
    return f"http://127.0.0.1:{port}/mcp"


async def _serve_http(server: Server, task_status: trio.TaskStatus[int]) -> None:
    await server.serve_http("127.0.0.1", 0, task_status=task_status)


@pytest.fixture
async def mcp_http_client(mcp_http_url: str, mcp_client_options: dict[str, Any]) -> AsyncIterator[Client]:
    """A client talking to ``mcp_server`` over HTTP (the era found by probing, unless the options pin one)."""
    from trio_mcp import open_http_client

    async with open_http_client(mcp_http_url, **mcp_client_options) as client:
        yield client
