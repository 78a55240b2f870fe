"""``--options roaming_options:options`` for benchmarks/workers.py ``--sessions``: the legacy era with sessions
and events shared through the Redis at ``$TRIO_MCP_BENCH_REDIS`` (``RedisSessionDirectory``, ``RedisEventStore``)."""

from __future__ import annotations

import os

from trio_mcp.scale import RedisClient, RedisEventStore, RedisSessionDirectory
from trio_mcp.transports.streamable_http import HttpTransportOptions

_redis = RedisClient(os.environ["TRIO_MCP_BENCH_REDIS"])
options = HttpTransportOptions(event_store=RedisEventStore(_redis), session_directory=RedisSessionDirectory(_redis))
