"""The fuzz profile: a bounded, reproducible example count, so the whole fuzz set stays cheap in ``make test``.

``TRIO_MCP_FUZZ_EXAMPLES`` raises the count for a deeper local run (e.g. 5000); CI keeps the default. Examples
are derandomized (the same inputs every run) so a failure in CI is a failure on every machine; the example
database is off so nothing is written into the worktree.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "trio_mcp_fuzz",
    max_examples=int(os.environ.get("TRIO_MCP_FUZZ_EXAMPLES", "100")),
    deadline=None,
    database=None,
    derandomize=os.environ.get("TRIO_MCP_FUZZ_RANDOM") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)
