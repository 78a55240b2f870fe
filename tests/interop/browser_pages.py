"""What the real-browser tests share: headless Chromium, and a web origin that serves a test's page and its
bundled script and hands back what the page reports."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from trio_mcp.transports._h11server import HttpRequest, HttpResponse, serve_http

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@asynccontextmanager
async def page_origin(
    nursery: trio.Nursery, page: bytes, script_path: str, script: Path
) -> AsyncIterator[tuple[str, trio.MemoryReceiveChannel[str]]]:
    """A web origin serving ``page`` at ``/`` and the file ``script`` at ``script_path``; yields its origin and
    what the page reports (a POST to ``/result``)."""
    reports_in, reports = trio.open_memory_channel[str](1)

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.path == "/":
            await response.send(200, [("content-type", "text/html")], page)
        elif request.path == script_path:
            await response.send(200, [("content-type", "text/javascript")], script.read_bytes())
        elif request.path == "/result" and request.method == "POST":
            await reports_in.send((await request.read_body()).decode())
            await response.send(204)
        else:
            await response.send(404)

    listeners = await nursery.start(serve_http, handler, "127.0.0.1", 0)
    yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}", reports


async def browse(url: str, profile: Path, reports: trio.MemoryReceiveChannel[str]) -> str:
    """Load ``url`` in headless Chromium and return what its page reports."""
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        url,
    ]
    process = await trio.lowlevel.open_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with trio.fail_after(60):
            return await reports.receive()
    finally:
        process.kill()
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            await process.wait()
