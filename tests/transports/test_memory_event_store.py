"""The default event store's bounds: which streams and events it keeps for ``Last-Event-ID`` resumption, and
that it never replays a stream with events missing."""

from __future__ import annotations

import pytest

from trio_mcp.transports.streamable_http import MemoryEventStore


async def test_replay_gives_the_data_after_an_id_in_order_and_only_of_that_stream() -> None:
    store = MemoryEventStore()
    first = await store.append("s", "1", "")
    a = await store.append("s", "1", '{"a":1}')
    await store.append("s", "2", '{"other":true}')
    b = await store.append("s", "1", '{"b":2}')
    assert await store.replay("s", first) == ("1", [(a, '{"a":1}'), (b, '{"b":2}')])
    assert await store.replay("s", b) == ("1", [])
    assert await store.replay("other-session", first) is None
    assert await store.replay("s", "1_x") is None


async def test_append_now_is_append_without_a_coroutine() -> None:
    store = MemoryEventStore()
    first = store.append_now("s", "1", "")
    a = await store.append("s", "1", '{"a":1}')
    b = store.append_now("s", "1", '{"b":2}')
    assert await store.replay("s", first) == ("1", [(a, '{"a":1}'), (b, '{"b":2}')])


async def test_the_stream_quiet_the_longest_is_forgotten_first() -> None:
    store = MemoryEventStore(max_streams_per_session=2)
    long_running = await store.append("s", "long", "")
    quick = await store.append("s", "quick", '{"done":1}')
    await store.append("s", "long", '{"progress":1}')  # the long stream is the most recent again
    await store.append("s", "third", "")  # one stream too many: "quick" has been quiet the longest
    assert await store.replay("s", quick) is None
    assert await store.replay("s", long_running) == ("long", [("long_3", '{"progress":1}')])


async def test_streams_written_one_after_another_are_forgotten_in_that_order() -> None:
    store = MemoryEventStore(max_streams_per_session=2)
    first = store.append_now("s", "1", "")
    store.append_now("s", "1", '{"a":1}')  # the same stream again: still the one written last
    second = store.append_now("s", "2", "")
    answer = store.append_now("s", "2", '{"b":2}')
    store.append_now("s", "3", "")  # one stream too many: "1" is the one quiet the longest
    assert await store.replay("s", first) is None
    assert await store.replay("s", second) == ("2", [(answer, '{"b":2}')])


async def test_a_stream_over_its_bound_is_not_replayed_from_before_what_it_dropped() -> None:
    store = MemoryEventStore(max_events_per_stream=3)
    ids = [await store.append("s", "r", f'{{"n":{n}}}') for n in range(5)]  # the first two are dropped
    assert await store.replay("s", ids[0]) is None  # the second event would be missing
    assert await store.replay("s", ids[1]) == ("r", [(ids[2], '{"n":2}'), (ids[3], '{"n":3}'), (ids[4], '{"n":4}')])
    assert await store.replay("s", ids[3]) == ("r", [(ids[4], '{"n":4}')])


async def test_forget_drops_a_session_and_only_it() -> None:
    store = MemoryEventStore(max_events_per_stream=1)
    gone = await store.append("gone", "r", "")
    await store.append("gone", "r", '{"n":1}')
    kept = await store.append("kept", "r", "")
    await store.forget("gone")
    assert await store.replay("gone", gone) is None
    assert await store.replay("kept", kept) == ("r", [])
    again = await store.append("gone", "r", "")  # a new session of the same id starts afresh
    assert await store.replay("gone", again) == ("r", [])


@pytest.mark.parametrize("option", ["max_events_per_stream", "max_streams_per_session"])
def test_bounds_below_one_are_refused_at_the_call(option: str) -> None:
    with pytest.raises(ValueError, match=option):
        MemoryEventStore(**{option: 0})
