"""Authorization on a laptop: ``DevTokens`` issues and checks tokens with no authorization server, and the
refusals say why (a 401 names the header to send; an unreachable issuer is a 503 logged once, with its cause)."""

from __future__ import annotations

import base64
import json
import logging
import socket
import sys
from pathlib import Path

import pytest
import trio
from cli_helpers import cli_env, run_cli

import trio_mcp
from trio_mcp.auth import DEV_SECRET_ENV, DevTokens, InvalidToken, JwtVerifier, ResourceServerAuth
from trio_mcp.transports._client.h11client import HttpClient


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SERVER = """\
import sys
import trio
import trio_mcp
from trio_mcp.auth import DevTokens, ResourceServerAuth

RESOURCE = sys.argv[1]
server = trio_mcp.Server("notes")


@server.tool(scopes=["notes:read"])
def whoami(ctx: trio_mcp.Context) -> str:
    return f"hello, {ctx.principal.subject}"


@server.tool(scopes=["notes:write"])
def add_note(text: str) -> str:
    return "saved"


dev = DevTokens(resource=RESOURCE)
auth = ResourceServerAuth(dev, authorization_servers=[dev.issuer], resource=RESOURCE)


async def main() -> None:
    async with trio.open_nursery() as nursery:
        port = int(RESOURCE.split(":")[2].split("/")[0])
        await nursery.start(lambda task_status: server.serve_http(port=port, auth=auth, task_status=task_status))
        print("serving", flush=True)


trio.run(main)
"""


async def test_a_dev_token_opens_a_protected_server_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "a secret shared by the server and whoever mints its tokens"
    monkeypatch.setenv(DEV_SECRET_ENV, secret)
    url = f"http://127.0.0.1:{_free_port()}/mcp"
    (tmp_path / "notes.py").write_text(SERVER)
    reader = DevTokens(resource=url)  # another process with the same secret mints tokens the server accepts
    env = {**cli_env(), DEV_SECRET_ENV: secret}
    token = f"Authorization: Bearer {reader.issue(scopes=['notes:read'])}"
    process = await trio.lowlevel.open_process([sys.executable, str(tmp_path / "notes.py"), url], stdout=-1, env=env)
    try:
        with trio.fail_after(60):
            assert process.stdout is not None
            assert b"serving" in await process.stdout.receive_some(100)
            bare = await run_cli("call", "whoami", "--url", url)
            good = await run_cli("call", "whoami", "--url", url, "-H", token)
            narrow = await run_cli("call", "add_note", "text=x", "--url", url, "-H", token)
    finally:
        process.kill()
        await process.wait()
    assert good.status == 0, good.stderr
    assert good.stdout.strip() == "hello, developer"
    assert bare.status == 3 and "401" in bare.stderr
    assert "requires authorization: pass a token with -H 'Authorization: Bearer TOKEN'" in bare.stderr
    assert narrow.status == 2 and "has no tool 'add_note'" in narrow.stderr  # hidden without notes:write


async def test_a_401_names_the_header_and_a_bad_dev_token_says_why() -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    dev = DevTokens(resource=url, secret="sixteen chars or more")
    other = DevTokens(resource=url, secret="another secret, as long")
    auth = ResourceServerAuth(dev, authorization_servers=[dev.issuer], resource=url)
    answers = {}
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            await nursery.start(
                lambda task_status: trio_mcp.Server("s").serve_http(port=port, auth=auth, task_status=task_status)
            )
            for name, token in (("none", None), ("forged", other.issue()), ("good", dev.issue())):
                headers = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]
                if token:
                    headers.append(("authorization", f"Bearer {token}"))
                body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
                response = await http.request("POST", url, headers=headers, body=body)
                async with response:
                    answers[name] = (response.status, await response.read())
            nursery.cancel_scope.cancel()
    assert answers["none"][0] == 401
    assert "send 'Authorization: Bearer <token>'" in json.loads(answers["none"][1])["error_description"]
    assert answers["forged"][0] == 401
    assert "signature does not verify" in json.loads(answers["forged"][1])["error_description"]
    assert answers["good"][0] != 401


async def test_dev_tokens_refuse_what_they_should() -> None:
    with pytest.raises(ValueError, match="on this machine only"):
        DevTokens(resource="https://mcp.example.com/mcp")
    with pytest.raises(ValueError, match="at least 16 characters"):
        DevTokens(resource="http://127.0.0.1:8000/mcp", secret="short")
    now = [1000.0]
    dev = DevTokens(resource="http://127.0.0.1:8000/mcp", secret="x" * 20, clock=lambda: now[0])
    token = dev.issue("ada", scopes=["a", "b"], lifetime=60)
    principal = await dev.verify(token)
    assert (principal.subject, principal.scopes) == ("ada", frozenset({"a", "b"}))
    now[0] += 61
    with pytest.raises(InvalidToken, match="expired"):
        await dev.verify(token)
    elsewhere = DevTokens(resource="http://127.0.0.1:9000/mcp", secret="x" * 20, clock=lambda: now[0])
    with pytest.raises(InvalidToken, match="another resource"):
        await dev.verify(elsewhere.issue())
    with pytest.raises(InvalidToken, match="not a development token"):
        await dev.verify("eyJhbGciOi.e30.c2ln")


async def test_an_unreachable_issuer_is_logged_once_with_its_cause(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="trio_mcp.auth")
    dead = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    header = base64.urlsafe_b64encode(b'{"alg":"RS256","kid":"k","typ":"at+jwt"}').rstrip(b"=").decode()
    token = f"{header}.e30.c2ln"
    auth = ResourceServerAuth(
        JwtVerifier(issuer=dead, audience="http://127.0.0.1/mcp", refetch_interval=0), authorization_servers=[dead]
    )
    statuses = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            port = await nursery.start(
                lambda task_status: trio_mcp.Server("s").serve_http(port=0, auth=auth, task_status=task_status)
            )
            for _ in range(3):
                response = await http.request(
                    "POST", f"http://127.0.0.1:{port}/mcp", headers=[("authorization", f"Bearer {token}")], body=b"{}"
                )
                async with response:
                    statuses.append((response.status, json.loads(await response.read())["error_description"]))
            nursery.cancel_scope.cancel()
    assert [status for status, _ in statuses] == [503, 503, 503]
    assert "its authorization server cannot be reached" in statuses[0][1]
    logged = [record.getMessage() for record in caplog.records if "cannot check access tokens" in record.getMessage()]
    assert len(logged) == 1, logged
    assert f"GET {dead}/.well-known/oauth-authorization-server failed" in logged[0]
    assert token not in caplog.text
