"""Runnable examples, shipped with the package so ``python -m trio_mcp.examples.<name>`` works from any install
and mypy checks them with the library (they cannot drift from the API). Each one runs to completion by itself,
and tests/docs/test_examples.py runs every one.

- ``bookshop``: a small server (``trio-mcp run trio_mcp.examples.bookshop``); ``demo`` drives it over stdio.
- ``embedded``: a trio app serving MCP over HTTP beside its own background task, in one nursery.
- ``cancellation``: a long job cancelled from the client, with its shielded cleanup.
- ``http_auth``: an HTTP server requiring a bearer token (``HttpTransportOptions(authenticate=...)``).
- ``many_servers``: one ``ClientGroup`` driving two servers, tools namespaced.
- ``elicitation_sampling``: a tool asking the user and the model, in the legacy era and on 2026-07-28.
- ``proxy``: the stdio bookshop served as a stateless HTTP endpoint through ``trio_mcp.proxy``.
- ``websocket_pair``: a WebSocket server and client.
- ``test_bookshop``: tests written with the pytest plugin (``pytest trio_mcp/examples/test_bookshop.py``).
"""
