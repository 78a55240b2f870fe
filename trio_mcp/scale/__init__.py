"""Running past one process: worker processes on one machine, and (with ``trio-mcp[redis]``) Redis for the
state several processes or machines share. See docs/deployment.md."""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes
from .workers import WorkerSettings, run_workers, supervise_workers

if TYPE_CHECKING:
    from .event_store import RedisEventStore
    from .facade_store import RedisFacadeStore
    from .fanout import RedisFanout
    from .redis import RedisClient, RedisCommandError, RedisError, RedisUnavailable
    from .sessions import RedisSessionDirectory
    from .task_store import RedisTaskStore

_REDIS = {
    "RedisClient": ".redis",
    "RedisError": ".redis",
    "RedisUnavailable": ".redis",
    "RedisCommandError": ".redis",
    "RedisEventStore": ".event_store",
    "RedisFacadeStore": ".facade_store",
    "RedisFanout": ".fanout",
    "RedisSessionDirectory": ".sessions",
    "RedisTaskStore": ".task_store",
}


# The Redis pieces load on first use (they need the ``redis`` extra only when used).
__getattr__ = lazy_attributes(__name__, _REDIS)


__all__ = [
    "WorkerSettings",
    "run_workers",
    "supervise_workers",
    "RedisClient",
    "RedisError",
    "RedisUnavailable",
    "RedisCommandError",
    "RedisEventStore",
    "RedisFacadeStore",
    "RedisFanout",
    "RedisSessionDirectory",
    "RedisTaskStore",
]
