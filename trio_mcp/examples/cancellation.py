"""Strict cancellation: a long job cancelled from the client, and the cleanup it runs on the way out.

The server's ``import_rows`` tool works in batches and reports progress. When the client stops waiting (its
cancel scope ends), trio_mcp sends ``notifications/cancelled``; on the server that cancels the handler's scope,
``trio.Cancelled`` is raised at its next checkpoint, and its ``finally`` block rolls the partial import back
(shielded, so the cleanup itself cannot be interrupted) before the handler ends. No response is sent for it.

Run it: ``python -m trio_mcp.examples.cancellation`` (it starts itself as the server, over stdio).
"""

from __future__ import annotations

import sys

import trio

import trio_mcp
from trio_mcp import Context, Server
from trio_mcp.types import ProgressNotificationParams

server = Server("importer", version="1.0.0")
journal: list[str] = []  # what the server did, kept for the `journal` tool


@server.tool()
async def import_rows(batches: int, ctx: Context) -> str:
    """Import rows batch by batch (slowly); a cancelled import is rolled back."""
    imported = 0
    journal.append("import started")
    try:
        for batch in range(1, batches + 1):
            await trio.sleep(0.2)  # the real work; a cancel lands here
            imported += 100
            await ctx.report_progress(batch, total=batches, message=f"{imported} rows")
        journal.append(f"import committed: {imported} rows")
        return f"imported {imported} rows"
    finally:
        if imported and not journal[-1].startswith("import committed"):
            with trio.CancelScope(shield=True):  # cleanup must finish even though we are cancelled
                await trio.sleep(0.05)  # e.g. a ROLLBACK sent to the database
                journal.append(f"cancelled: rolled back {imported} rows")


@server.tool()
async def read_journal() -> list[str]:
    """What the importer has done so far."""
    return journal


async def client() -> None:
    command = [sys.executable, "-m", "trio_mcp.examples.cancellation", "serve"]
    async with trio_mcp.open_stdio_client(command) as mcp:
        updates = 0
        enough = trio.Event()

        def on_progress(update: ProgressNotificationParams) -> None:
            nonlocal updates
            updates += 1
            print(f"progress {update.progress:g}/{update.total:g}: {update.message}")
            if updates == 2:
                enough.set()

        async with trio.open_nursery() as nursery:

            async def long_call() -> None:
                await mcp.call_tool("import_rows", {"batches": 50}, on_progress=on_progress)

            nursery.start_soon(long_call)
            await enough.wait()
            print("the client gives up: cancelling the call")
            nursery.cancel_scope.cancel()  # sends notifications/cancelled for the call
        with trio.fail_after(5):
            while True:  # the server finishes its cleanup shortly after the cancel
                result = await mcp.call_tool("read_journal")
                entries = result.structured_content["result"] if result.structured_content else []
                if any(entry.startswith("cancelled") for entry in entries):
                    break
                await trio.sleep(0.05)
        print("server journal:", *entries, sep="\n  ")


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        trio.run(server.serve_stdio)
    else:
        trio.run(client)
