"""The authorization facade's state in Redis, shared by workers: a token issued by one is honoured, and its
revocation seen, by another; a refresh token raced for by two workers is redeemed once; records expire."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
import trio
from facade_helpers import REDIRECT, GitHubShaped, UserAgent, serve_with_facade
from scale_peers import RedisServer

import trio_mcp
from trio_mcp.auth import InvalidToken, VerifierUnavailable
from trio_mcp.auth.facade import AuthorizationFacade, github
from trio_mcp.client._oauth import OAuthClientProvider
from trio_mcp.scale import RedisClient, RedisFacadeStore
from trio_mcp.transports._client.h11client import HttpClient

PREFIX = "trio-mcp:oauth:"


async def test_workers_share_tokens_revocations_and_single_use(redis_server: RedisServer) -> None:
    with trio.fail_after(30):
        async with (
            RedisClient(redis_server.url) as first_redis,
            RedisClient(redis_server.url) as second_redis,
            trio.open_nursery() as nursery,
            HttpClient() as http,
        ):
            upstream = GitHubShaped()
            await upstream.start(nursery)
            preset = github(client_id="gh-app", client_secret="gh-secret", base_url=upstream.url)
            serving = await serve_with_facade(nursery, preset, store=RedisFacadeStore(first_redis))
            other_worker = AuthorizationFacade(
                preset, resource=serving.resource, scopes=serving.scopes, store=RedisFacadeStore(second_redis)
            )
            provider = OAuthClientProvider(redirect_uri=REDIRECT, authorization_handler=UserAgent(http).authorize)
            async with trio_mcp.open_http_client(serving.resource, auth=provider) as client:
                await client.call_tool("whoami", {})
            tokens = await provider.token_store.get_token(serving.resource)
            registration = await provider.token_store.get_client(serving.issuer)
            assert tokens is not None and registration is not None
            principal = await other_worker.verify(tokens["access_token"])
            assert principal.subject == "583231" and principal.issuer == serving.issuer

            # Two workers race for one refresh token: one wins, the other finds it spent.
            (key,) = await first_redis.execute("KEYS", PREFIX + "refresh:*")
            taken: list[object] = []

            async def take(store: RedisFacadeStore) -> None:
                taken.append(await store.take(key.decode().removeprefix(PREFIX)))

            async with trio.open_nursery() as racers:
                for redis in (first_redis, second_redis):
                    racers.start_soon(take, RedisFacadeStore(redis))
            assert sorted(record is None for record in taken) == [False, True]

            # Revoked at the serving worker, refused at the other.
            credentials = {
                name: registration[name] for name in ("client_id", "client_secret") if registration.get(name)
            }
            form = urlencode({"token": tokens["access_token"], **credentials})
            response = await http.request(
                "POST",
                serving.issuer + "/revoke",
                headers=[("content-type", "application/x-www-form-urlencoded")],
                body=form.encode(),
            )
            async with response:
                assert response.status == 200
            with pytest.raises(InvalidToken):
                await other_worker.verify(tokens["access_token"])
            await other_worker.aclose()
            nursery.cancel_scope.cancel()


async def test_records_expire_in_redis(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url) as redis:
        store = RedisFacadeStore(redis, prefix="expiry:")
        with trio.fail_after(10):
            await store.put("code:x", {"client_id": "a"}, 60)
            assert 0 < await redis.execute("PTTL", "expiry:code:x") <= 60_000
            assert await store.get("code:x") == {"client_id": "a"}
            await store.delete("code:x")
            assert await store.get("code:x") is None


async def test_while_redis_is_down_the_facade_and_the_endpoint_answer_503(redis_server: RedisServer) -> None:
    with trio.fail_after(30):
        async with (
            RedisClient(redis_server.url, retries=0, connect_timeout=1) as redis,
            trio.open_nursery() as nursery,
            HttpClient() as http,
        ):
            preset = github(client_id="gh-app", client_secret="gh-secret", base_url="http://127.0.0.1:9")
            facade = await serve_with_facade(nursery, preset, store=RedisFacadeStore(redis))
            redis_server.stop()
            response = await http.request(
                "POST", facade.issuer + "/register", headers=[("content-type", "application/json")],
                body=json.dumps({"redirect_uris": [REDIRECT]}).encode(),
            )  # fmt: skip
            async with response:
                assert (response.status, json.loads(await response.read())["error"]) == (503, "temporarily_unavailable")
            with pytest.raises(VerifierUnavailable):
                await facade.verify("some-token")
            response = await http.request(
                "POST", facade.resource, headers=[("authorization", "Bearer some-token"),
                ("content-type", "application/json"), ("accept", "application/json, text/event-stream")], body=b"{}",
            )  # fmt: skip
            async with response:
                assert response.status == 503
            nursery.cancel_scope.cancel()
