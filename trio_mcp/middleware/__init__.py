"""Middleware shipped with trio_mcp: rate and concurrency limits, a response cache, a size limit, access
logging and error shaping (docs/middleware.md).

Each is an object to add with ``server.middleware(...)``; they compose in the order added (the first is the
outermost) and run inside the request's cancel scope, like any middleware. A suggested order::

    server.middleware(AccessLog())                   # sees everything, times everything
    server.middleware(ErrorShaping({...}))           # before anything that may raise
    server.middleware(RateLimit(10, burst=20))       # refuse early, before queueing
    server.middleware(ConcurrencyLimit(4, queue=16))
    server.middleware(ResponseCache(server))
    server.middleware(SizeLimit(1_000_000))
"""

from .access_log import AccessLog
from .cache import CACHEABLE, ResponseCache
from .concurrency import ConcurrencyLimit
from .errors import ErrorShaping, Shape
from .rate_limit import Buckets, MemoryBuckets, RateLimit, RedisBuckets
from .size import SizeLimit

__all__ = [
    "AccessLog",
    "Buckets",
    "CACHEABLE",
    "ConcurrencyLimit",
    "ErrorShaping",
    "MemoryBuckets",
    "RateLimit",
    "RedisBuckets",
    "ResponseCache",
    "Shape",
    "SizeLimit",
]
