"""A verifier's connections to the authorization server live as long as the server that uses it: once
``serve_http``, ``serve_websocket`` or the ASGI app (its lifespan) stops, none stays open. The authorization
server here is a small one on 127.0.0.1 that counts the connections open to it."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import h11
import pytest
import trio

import trio_mcp
from trio_mcp.asgi import McpAsgiApp
from trio_mcp.auth import IntrospectionVerifier, JwtVerifier, ResourceServerAuth
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.streamable_http import HttpTransportOptions

jwt = pytest.importorskip("jwt", reason="the auth extra (PyJWT[crypto]) is not installed")

RESOURCE = "http://127.0.0.1/mcp"  # the audience tokens are issued for (given, so that any port will do)


class CountingIssuer:
    """An authorization server that publishes its metadata, its JWKS and an introspection endpoint, and counts
    the TCP connections open to it."""

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.url = ""
        self.open = 0
        self.served = 0
        self.changed = trio.Event()

    def token(self) -> str:
        claims = {"iss": self.url, "aud": RESOURCE, "sub": "alice", "scope": "read", "exp": int(time.time()) + 300}
        return str(jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "k1"}))

    def _answer(self, target: str) -> Any:
        if target == "/.well-known/oauth-authorization-server":
            return {"issuer": self.url, "jwks_uri": f"{self.url}/jwks"}
        if target == "/jwks":
            public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
            return {"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}
        if target == "/introspect":
            return {"active": True, "aud": RESOURCE, "sub": "alice", "scope": "read", "exp": int(time.time()) + 300}
        return None

    async def handle(self, stream: trio.SocketStream) -> None:
        self.open += 1
        try:
            connection = h11.Connection(h11.SERVER)
            target = ""
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    connection.receive_data(data)
                elif isinstance(event, h11.Request):
                    target = event.target.decode()
                elif isinstance(event, h11.EndOfMessage):
                    answer = self._answer(target)
                    body = json.dumps(answer).encode()
                    status = 200 if answer is not None else 404
                    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
                    await stream.send_all(connection.send(h11.Response(status_code=status, headers=headers)))
                    await stream.send_all(connection.send(h11.Data(data=body)) + connection.send(h11.EndOfMessage()))
                    self.served += 1
                    connection.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                    return
        except (trio.BrokenResourceError, h11.RemoteProtocolError):
            return
        finally:
            self.open -= 1
            self.changed.set()
            self.changed = trio.Event()
            await trio.aclose_forcefully(stream)

    async def all_closed(self) -> None:
        while self.open:
            await self.changed.wait()


@asynccontextmanager
async def counting_issuer() -> AsyncIterator[CountingIssuer]:
    issuer = CountingIssuer()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, issuer.handle, 0, host="127.0.0.1"))
        issuer.url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        yield issuer
        nursery.cancel_scope.cancel()


def verifiers(issuer: CountingIssuer) -> dict[str, Any]:
    return {
        "jwt": JwtVerifier(issuer=issuer.url, audience=RESOURCE),
        "introspection": IntrospectionVerifier(
            f"{issuer.url}/introspect", client_id="rs", client_secret="secret", audience=RESOURCE
        ),
    }


async def assert_all_closed(issuer: CountingIssuer) -> None:
    """Called once the server has stopped: every connection its verifier opened to the issuer is closed."""
    with trio.move_on_after(2):
        await issuer.all_closed()
    assert issuer.open == 0, "a connection to the authorization server outlived the server"


async def post_with_token(url: str, token: str) -> int:
    async with HttpClient() as http:
        response = await http.request(
            "POST",
            url,
            headers=[("authorization", f"Bearer {token}"), ("content-type", "application/json")],
            body=b"{}",
        )
        async with response:
            await response.read()
        return response.status


@pytest.mark.parametrize("kind", ["jwt", "introspection"])
async def test_serve_http_closes_the_verifier(kind: str) -> None:
    with trio.fail_after(20):
        async with counting_issuer() as issuer:
            auth = ResourceServerAuth(verifiers(issuer)[kind], authorization_servers=[issuer.url], resource=RESOURCE)
            async with trio.open_nursery() as nursery:
                port = await nursery.start(functools.partial(trio_mcp.Server("s").serve_http, port=0, auth=auth))
                # Admitted (the body itself is then refused by the transport): the token was checked.
                assert await post_with_token(f"http://127.0.0.1:{port}/mcp", issuer.token()) == 400
                assert issuer.open  # the verifier keeps its connection for the next check
                nursery.cancel_scope.cancel()
            await assert_all_closed(issuer)


async def test_serve_websocket_closes_the_verifier() -> None:
    with trio.fail_after(20):
        async with counting_issuer() as issuer:
            auth = ResourceServerAuth(verifiers(issuer)["jwt"], authorization_servers=[issuer.url], resource=RESOURCE)
            async with trio.open_nursery() as nursery:
                port = await nursery.start(functools.partial(trio_mcp.Server("s").serve_websocket, port=0, auth=auth))
                headers = {"authorization": f"Bearer {issuer.token()}"}
                async with trio_mcp.open_websocket_client(f"ws://127.0.0.1:{port}/mcp", headers=headers) as client:
                    await client.ping()
                assert issuer.open
                nursery.cancel_scope.cancel()
            await assert_all_closed(issuer)


async def test_the_asgi_lifespan_closes_the_verifier() -> None:
    from asgi_helpers import hypercorn  # skips without Hypercorn

    with trio.fail_after(20):
        async with counting_issuer() as issuer:
            auth = ResourceServerAuth(verifiers(issuer)["jwt"], authorization_servers=[issuer.url], resource=RESOURCE)
            async with hypercorn(McpAsgiApp(trio_mcp.Server("s"), options=HttpTransportOptions(auth=auth))) as base:
                assert await post_with_token(f"{base}/mcp", issuer.token()) == 400
                assert issuer.open
            await assert_all_closed(issuer)  # Hypercorn has shut down, the lifespan's shutdown included
