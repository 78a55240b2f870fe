"""Runnable examples: ``python -m trio_mcp.examples.demo`` starts the bookshop server and talks to it."""
