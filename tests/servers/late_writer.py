"""A minimal stdio MCP server, plain blocking I/O, that writes one more line 50 ms after its stdin closes.

It exits 0 if that write succeeds and 32 (with the error on stderr) if the client had already closed its end of
the stdout pipe, the way a Node server dies with EPIPE.
"""

import json
import sys
import time

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {},
            "serverInfo": {"name": "late-writer", "version": "1"},
        }
    elif message["method"] == "ping":
        result = {}
    else:
        reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
        print(json.dumps(reply), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)

time.sleep(0.05)
try:
    print(
        json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "bye"}}),
        flush=True,
    )
except BrokenPipeError as exc:
    sys.stderr.write(f"late write failed: {exc!r}\n")
    sys.stderr.flush()
    sys.exit(32)
sys.exit(0)
