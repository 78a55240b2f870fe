"""The client side of the network transports. MCP over HTTP: ``h11client`` (an HTTP/1.1 client on h11, with a
keep-alive pool), ``common`` (what both Streamable HTTP streams share), ``session`` (the legacy era, and the public
names of ``trio_mcp.transports.streamable_http_client``), ``stateless`` (2026-07-28) and ``sse`` (HTTP+SSE,
2024-11-05); and ``websocket`` (MCP over WebSocket, outside the specification; its public names are in
``trio_mcp.transports.websocket``)."""
