"""An HTTP/1.1 server on h11 and trio, small enough to read in one sitting and strict about its limits.

It is the ground floor of the MCP HTTP transports, and knows nothing of MCP: it parses requests, calls one
handler per request, and writes what the handler sends, either a whole response at once or a stream of chunks
(Server-Sent Events). What it adds over the h11 example server:

- **One nursery per TCP connection** (hypercorn's trio worker): the request cycle, which reads each request
  and runs the handler in the connection's own task, and, from the first time a handler waits, a reader task
  that keeps reading the socket for the rest of the connection's life. A client that goes away while a
  handler waits is therefore noticed at once and reported as state (``HttpResponse.disconnected``), not at
  the next write; a handler that answers without waiting costs no second task and no task switch.
- **Explicit limits** (``HttpLimits``): header size and count (431), body size (413, checked against
  Content-Length before the handler runs, and counted while a chunked body streams), timeouts for the head
  (slowloris), the body, keep-alive idleness and every write (a client that stops reading is dropped), and a
  cap on concurrent connections (see ``HttpLimits.max_connections``).
- **Stopping**: cancelling ``serve_http`` means now: every connection and every handler is cancelled at once.
  A graceful stop is a separate act you ask for with a ``Drain``: it closes the listeners, closes idle
  keep-alive connections, ends long-lived streams, and waits (with a deadline you give) for the requests in
  flight; then you cancel.
- **Strict framing**: a request with both ``Content-Length`` and ``Transfer-Encoding`` (a smuggling vector,
  RFC 9112 section 6.1), several ``Host`` fields or an invalid one (section 3.2) gets 400 and the connection
  is closed, so nothing sent behind it is served.

What it does not do: routing, content negotiation, compression, HTTP/2, protocol switching (an ``Upgrade``
offer is declined by answering normally; ``CONNECT`` gets 501), pipelining (requests on one connection are handled one after
another; bytes the client sends early are kept, not lost), and trailers.
"""

from .._http_types import (
    ClientDisconnected,
    Headers,
    HeadersLike,
    HttpLimits,
    MalformedRequestBody,
    RequestBodyError,
    RequestBodyTimeout,
    RequestBodyTooLarge,
)
from .exchange import Handler, HttpRequest, HttpResponse
from .server import Drain, serve_http, serve_http_listeners

__all__ = [
    "ClientDisconnected",
    "Drain",
    "Handler",
    "Headers",
    "HeadersLike",
    "HttpLimits",
    "HttpRequest",
    "HttpResponse",
    "MalformedRequestBody",
    "RequestBodyError",
    "RequestBodyTimeout",
    "RequestBodyTooLarge",
    "serve_http",
    "serve_http_listeners",
]
