"""A JSON-RPC batch (2025-03-26) with a poisoned member, over a real stdio subprocess and raw pipes: the other
members are still answered, together in one array, and the session goes on serving."""

from __future__ import annotations

import itertools
from typing import Any

import trio
from fault_peers import ANSWER_WITHIN
from fault_peers import open_raw_stdio as open_raw
from waiting import wait_until


def call(id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


async def test_a_failing_and_a_cancelled_member_leave_the_rest_of_the_batch_answered() -> None:
    with trio.fail_after(ANSWER_WITHIN * 2):
        peer = await open_raw()
        try:
            await peer.send(
                [
                    call(1, "nap", {"seconds": 0.2}),
                    call(2, "explode", {"kind": "Exception"}),
                    call(3, "no_such_tool", {}),
                    call(4, "nap", {"seconds": 30}),
                    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}},
                ]
            )
            answers = await peer.receive()
            assert isinstance(answers, list)
            by_id = {answer["id"]: answer for answer in answers}
            assert sorted(by_id) == [1, 2, 3]  # the member the peer cancelled is never answered
            assert by_id[1]["result"]["content"][0]["text"] == "rested"
            assert by_id[2]["result"]["isError"] is True
            assert by_id[3]["error"]["code"] == -32602
            await peer.send(call(5, "naps", {}))
            after = await peer.receive()
            assert after["id"] == 5 and after["result"]["content"][0]["text"] == '{"result":0}'
        finally:
            peer.process.kill()
            await peer.process.wait()


async def test_a_batch_whose_every_member_is_cancelled_gets_no_answer_and_blocks_nothing() -> None:
    with trio.fail_after(ANSWER_WITHIN * 2):
        peer = await open_raw()
        try:
            await peer.send([call(1, "nap", {"seconds": 30}), call(2, "nap", {"seconds": 30})])
            for id in (1, 2):
                await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
            # Cancelled handlers unwind on the scheduler's next pass, while the sync ``naps`` may already run in
            # its thread: ask again until they have, each answer proving the session still serves.
            ids = itertools.count(3)

            async def no_naps() -> bool:
                id = next(ids)
                await peer.send(call(id, "naps", {}))
                answer = await peer.receive()
                assert answer["id"] == id
                return bool(answer["result"]["content"][0]["text"] == '{"result":0}')

            await wait_until(no_naps, within=ANSWER_WITHIN)
        finally:
            peer.process.kill()
            await peer.process.wait()


async def test_a_member_whose_answer_json_cannot_carry_fails_alone() -> None:
    with trio.fail_after(ANSWER_WITHIN * 2):
        peer = await open_raw()
        try:
            await peer.send([call(1, "unencodable_meta", {}), call(2, "nap", {"seconds": 0.1})])
            answers = await peer.receive()
            by_id = {answer["id"]: answer for answer in answers}
            assert sorted(by_id) == [1, 2]
            assert by_id[1]["error"]["code"] == -32603
            assert "error id" in by_id[1]["error"]["message"]
            assert by_id[2]["result"]["content"][0]["text"] == "rested"
            await peer.send(call(3, "naps", {}))
            assert (await peer.receive())["id"] == 3
        finally:
            peer.process.kill()
            await peer.process.wait()
