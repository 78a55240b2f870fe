"""Sans-I/O parts of trio_mcp: framing, JSON-RPC classification and the handshake state machine.

Nothing in this package imports trio or does I/O; it takes bytes or decoded JSON and returns events.
"""
