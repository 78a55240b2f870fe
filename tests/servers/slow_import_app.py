"""``worker_app``'s server behind an import that takes 1.5 s (a large application, a cold disk): for a worker
whose first heartbeat comes later than ``--worker-timeout 1`` allows a running worker."""

from __future__ import annotations

import time

from worker_app import server

time.sleep(1.5)

__all__ = ["server"]
