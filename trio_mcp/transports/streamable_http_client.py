"""The client side of Streamable HTTP under its public name; it lives in ``trio_mcp.transports._client``.

``StreamableHttpSessionStream`` speaks the legacy era (2025-03-26 .. 2025-11-25), ``StatelessHttpStream``
2026-07-28; ``trio_mcp.open_http_client`` chooses between them.
"""

from ._client.common import DEFAULT_TIMEOUTS, HTTP_ERROR, HeaderPathsFor, HttpAuth, LegacyTransportRequired
from ._client.session import StreamableHttpSessionStream
from ._client.stateless import StatelessHttpStream

__all__ = [
    "DEFAULT_TIMEOUTS",
    "HTTP_ERROR",
    "HeaderPathsFor",
    "HttpAuth",
    "LegacyTransportRequired",
    "StatelessHttpStream",
    "StreamableHttpSessionStream",
]
