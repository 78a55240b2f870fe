"""Garbage on a real stdio server's stdin, written in random chunks at random moments (seeded): every broken line
is answered or dropped, and a ping sent afterwards is still answered. The framer's and classifier's properties
(tests/fuzz/) hold end to end, over real pipes."""

from __future__ import annotations

import json
import random

import pytest
import trio
from fault_peers import ANSWER_WITHIN, open_raw_stdio

pytestmark = pytest.mark.usefixtures("stdio_server_io")  # on trio's pipes, then on the portable path

FRAGMENTS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b"\\",
    b"\r",
    b"\n",
    b"\r\n",
    b"\x00",
    b"\xff\xfe",
    b"\xe2\x82",
    b"null",
    b"1e999",
    b'{"jsonrpc":"2.0"',
    b'"id":',
    b'"method":"tools/call"',
    b'"params":{"name":"nap","arguments":{"seconds":0}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}',
    b"[]",
    b"[{}]",
    b" " * 10,
]


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_garbage_in_random_chunks_never_stops_a_stdio_server(seed: int) -> None:
    rng = random.Random(seed)
    garbage = b"".join(rng.choice(FRAGMENTS) for _ in range(400)) + b"\n"
    with trio.fail_after(ANSWER_WITHIN * 2):
        peer = await open_raw_stdio()
        try:
            async with trio.open_nursery() as nursery:
                answered = trio.Event()

                async def read_answers() -> None:
                    while True:
                        line = await peer.receive()
                        for answer in line if isinstance(line, list) else [line]:
                            if isinstance(answer, dict) and answer.get("id") == "probe":
                                assert answer["result"] == {}
                                answered.set()
                                return

                nursery.start_soon(read_answers)
                at = 0
                while at < len(garbage):
                    size = rng.randint(1, 64)
                    await peer.stdin.send_all(garbage[at : at + size])
                    at += size
                    if rng.random() < 0.1:
                        await trio.sleep(rng.uniform(0, 0.01))
                await peer.stdin.send_all(
                    json.dumps({"jsonrpc": "2.0", "id": "probe", "method": "ping"}).encode() + b"\n"
                )
                await answered.wait()
            assert peer.process.returncode is None
        finally:
            peer.process.kill()
            await peer.process.wait()
