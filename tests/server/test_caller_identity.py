"""Who a caller is (``caller_key``): the same key for every token of a caller and in every process, whatever the
hash seed; principals that have no canonical form are refused in one line that says what to return."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
import trio

import trio_mcp
from trio_mcp._identity import caller_key
from trio_mcp.auth import Principal
from trio_mcp.transports._client.h11client import HttpClient

KEY_OF_A_PRINCIPAL = """
import sys
from trio_mcp._identity import caller_key
from trio_mcp.auth import Principal
scopes = {f"scope:{n}" for n in range(40)}
principal = Principal("alice", "app", "https://as.example", scopes=scopes, audience=("https://rs.example/mcp",))
print(caller_key(principal), caller_key({"sub": "alice", "groups": ["b", "a"], "tenant": "t"}))
"""


def test_the_key_of_a_caller_is_the_same_in_processes_with_different_hash_seeds() -> None:
    keys = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", KEY_OF_A_PRINCIPAL], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        keys.add(done.stdout)
    assert len(keys) == 1
    here = Principal("alice", "app", "https://as.example")
    assert keys.pop().split()[0] == caller_key(here)


def test_only_issuer_subject_and_client_name_a_caller() -> None:
    first = Principal("alice", "app", "https://as", scopes={"read"}, expires_at=10.0, audience=("a",))
    renewed = Principal("alice", "app", "https://as", scopes={"read", "admin"}, expires_at=99.0, key_thumbprint="k")
    assert caller_key(first) == caller_key(renewed)
    others = [Principal("bob", "app", "https://as"), Principal("alice", "x", "https://as"), Principal("alice", "app")]
    assert len({caller_key(p) for p in [first, *others]}) == 4
    # Data is keyed canonically (key order does not matter), and never collides with a Principal's key.
    assert caller_key({"b": 1, "a": [1, "x"]}) == caller_key({"a": [1, "x"], "b": 1})
    assert caller_key("alice") != caller_key(["alice"]) != caller_key(None)
    for unkeyable in ({"alice"}, object(), {1: "a"}, float("nan"), [b"bytes"]):
        with pytest.raises(TypeError, match="authenticate must return a trio_mcp.auth.Principal, a string"):
            caller_key(unkeyable)


async def test_an_authenticate_callable_returning_an_unkeyable_principal_is_refused_visibly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The request fails (500) and the log says, in one line, what ``authenticate`` must return instead."""

    async def authenticate(token: str) -> object:
        return {"user"}  # a set: its order differs between processes

    caplog.set_level(logging.ERROR)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            port = await nursery.start(
                lambda task_status: trio_mcp.Server("s").serve_http(
                    port=0, options=trio_mcp.HttpTransportOptions(authenticate=authenticate), task_status=task_status
                )
            )
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}
            response = await http.request(
                "POST",
                f"http://127.0.0.1:{port}/mcp",
                headers=[
                    ("content-type", "application/json"),
                    ("accept", "application/json, text/event-stream"),
                    ("authorization", "Bearer t"),
                ],
                body=json.dumps(body).encode(),
            )
            async with response:
                await response.read()
            assert response.status == 500
            nursery.cancel_scope.cancel()
    assert any("authenticate must return a trio_mcp.auth.Principal" in str(r.exc_info) for r in caplog.records)
