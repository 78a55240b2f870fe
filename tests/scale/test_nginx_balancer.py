"""Session roaming behind a real nginx configured as docs/deployment.md shows (round robin, no stickiness, no
buffering): three server processes sharing a real redis-server serve one legacy-era session."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import trio
from scale_peers import RedisServer, nginx
from test_session_roaming import VERSION, balanced, served_by_whom

import trio_mcp
from trio_mcp.types import ElicitResult, ProgressNotificationParams

#: What docs/deployment.md adds to the location of nginx's configuration.
DOCUMENTED = "proxy_buffering off; proxy_read_timeout 1h;"


async def test_one_session_is_served_through_nginx_by_every_process(redis_server: RedisServer, tmp_path: Path) -> None:
    """Calls spread over all three processes; a call's progress events all arrive, in order; an elicitation is
    answered through nginx, whichever process that answer reaches."""

    async def answer(params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    progress: list[float] = []

    def on_progress(params: ProgressNotificationParams) -> None:
        progress.append(params.progress)

    with trio.fail_after(90):
        async with (
            balanced(redis_server, tmp_path, balancer=functools.partial(nginx, directives=DOCUMENTED)) as url,
            trio_mcp.open_http_client(url, protocol_version=VERSION, elicitation=answer) as client,
        ):
            served_by = await served_by_whom(client, 6, 10)
            assert len(served_by) == 60 and len(set(served_by)) == 3, set(served_by)

            result = await client.call_tool("count", {"steps": 30}, on_progress=on_progress)
            assert not result.is_error and progress == list(range(1, 31)), progress

            for _ in range(3):
                result = await client.call_tool("greet", {})
                assert result.content[0].text.startswith("Ada answered, asked by "), result
