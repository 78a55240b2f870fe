"""The authorization facade with a real browser: headless Chromium, driven over its DevTools protocol, shows the
facade's consent page, signs in and consents at oidc-provider, and lands on the MCP client's redirect URI; the
client, trio_mcp's own, then calls the protected tool."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from facade_helpers import serve_with_facade, upstream
from trio_websocket import open_websocket_url

import trio_mcp
from trio_mcp.client._oauth import OAuthClientProvider
from trio_mcp.transports._client.h11client import HttpClient

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium: run tests/browser/setup.sh"),
]

#: What the user does on each page: fill the sign-in form, press Allow (the facade) or the submit button
#: (oidc-provider's consent), once per page; and report where the browser is.
STEP = """(() => {
  const where = location.href;
  if (where.startsWith(%(redirect)s)) return "done " + where;
  if (document.readyState !== "complete") return "wait";
  const form = document.forms[0];
  if (!form || form.dataset.sent) return "wait";
  for (const [name, value] of [["login", "erin"], ["password", "any password"]]) {
    if (form.elements[name]) form.elements[name].value = value;
  }
  form.dataset.sent = "1";
  (form.querySelector('button[value="allow"]') || form.querySelector("button")).click();
  return "submitted " + where;
})()"""


class Browser:
    """One headless Chromium and a connection to its page."""

    def __init__(self, profile: Path) -> None:
        self.profile = profile
        self.ids = itertools.count(1)
        #: The pages the user submitted a form on, in order.
        self.pages: list[str] = []

    async def authorize(self, http: HttpClient, url: str, redirect_uri: str) -> str:
        """``OAuthClientProvider(authorization_handler=...)``: the user in a browser, from ``url`` to
        ``redirect_uri``."""
        assert CHROMIUM is not None
        command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        command += ["--no-first-run", "--disable-extensions", f"--user-data-dir={self.profile}"]
        command += ["--remote-debugging-port=0", "about:blank"]
        process = await trio.lowlevel.open_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            with trio.fail_after(45):
                port = await self._devtools_port(process)
                response = await http.request("GET", f"http://127.0.0.1:{port}/json/list")
                async with response:
                    targets = json.loads(await response.read())
                page = next(target for target in targets if target["type"] == "page")
                async with open_websocket_url(page["webSocketDebuggerUrl"]) as socket:
                    await self._call(socket, "Page.navigate", url=url)
                    while True:
                        result = await self._call(
                            socket, "Runtime.evaluate", expression=STEP % {"redirect": json.dumps(redirect_uri)}
                        )
                        state = str(result["result"].get("value", "wait"))
                        if state.startswith("done "):
                            return state[5:]
                        if state.startswith("submitted "):
                            self.pages.append(state[10:])
                        await trio.sleep(0.05)  # the browser moves on its own; look again shortly
        finally:
            process.kill()
            with trio.CancelScope(shield=True), trio.move_on_after(10):
                await process.wait()

    @staticmethod
    async def _devtools_port(process: trio.Process) -> int:
        assert process.stderr is not None
        seen = b""
        while b"DevTools listening on ws://" not in seen or not seen.endswith(b"\n"):
            chunk = await process.stderr.receive_some(4096)
            if not chunk:
                raise AssertionError(f"chromium ended: {seen.decode(errors='replace')}")
            seen += chunk
        address = seen.split(b"DevTools listening on ws://", 1)[1].split(b"/", 1)[0]
        return int(address.rsplit(b":", 1)[1])

    async def _call(self, socket: Any, method: str, **params: Any) -> Any:
        ident = next(self.ids)
        await socket.send_message(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(await socket.get_message())
            if message.get("id") == ident:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return message["result"]


async def test_a_user_signs_in_with_a_browser(upstream_issuer: str, tmp_path: Path) -> None:
    async def landing(request: Any, response: Any) -> None:
        await response.send(200, [("content-type", "text/plain")], b"signed in\n")

    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            facade = await serve_with_facade(nursery, upstream(upstream_issuer), routes={"/landing": landing})
            browser = Browser(tmp_path / "profile")
            provider = OAuthClientProvider(
                redirect_uri=facade.issuer + "/landing", authorization_handler=browser.authorize
            )
            async with trio_mcp.open_http_client(facade.resource, auth=provider) as client:
                result = await client.call_tool("whoami", {})
            assert result.content[0].text.startswith("erin ")
            assert browser.pages[0].startswith(facade.issuer + "/authorize?")  # the facade's consent first
            assert any(page.startswith(upstream_issuer + "/interaction/") for page in browser.pages)
            nursery.cancel_scope.cancel()
