"""The Redis clients that run on trio, compared: import time and GET round trips per second on 127.0.0.1.

    python benchmarks/redis_clients.py [--calls 5000]

Measures the import time each adds to a trio_mcp server, and trio_mcp's own client (``trio_mcp.scale.RedisClient``: RESP over trio sockets, hiredis parsing) and,
when they are installed (they are not dependencies: ``pip install coredis valkey-glide`` to compare), coredis
and valkey-glide, each running on trio through anyio. Each client runs in a fresh interpreter (so its import
time is its own) against one redis-server this script starts in a temporary directory; one connection, one
command in flight. The figures in trio_mcp/scale/redis.py's docstring come from this script.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import sys, time
import trio, trio_mcp  # what every server imports anyway: not counted
began = time.perf_counter()
kind = sys.argv[1]
if kind == "trio_mcp":
    from trio_mcp.scale import RedisClient
elif kind == "coredis":
    import coredis
else:
    import glide
imported = time.perf_counter() - began
port, calls = int(sys.argv[2]), int(sys.argv[3])

async def main():
    if kind == "trio_mcp":
        async with RedisClient(f"redis://127.0.0.1:{port}/0") as client:
            await client.execute("SET", "k", "v")
            began = time.perf_counter()
            for _ in range(calls):
                await client.execute("GET", "k")
            return time.perf_counter() - began
    if kind == "coredis":
        async with coredis.Redis(host="127.0.0.1", port=port) as client:
            await client.set("k", "v")
            began = time.perf_counter()
            for _ in range(calls):
                await client.get("k")
            return time.perf_counter() - began
    client = await glide.GlideClient.create(glide.GlideClientConfiguration([glide.NodeAddress("127.0.0.1", port)]))
    try:
        await client.set("k", "v")
        began = time.perf_counter()
        for _ in range(calls):
            await client.get("k")
        return time.perf_counter() - began
    finally:
        await client.close()

elapsed = trio.run(main)
print(f"{imported * 1000:.0f} {calls / elapsed:.0f}")
"""

MODULES = {"trio_mcp": "trio_mcp", "coredis": "coredis", "valkey-glide": "glide"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args(argv)
    binary = shutil.which("redis-server")
    if binary is None:
        print("redis-server is not installed (bash tests/scale/setup.sh installs it)", file=sys.stderr)
        return 1
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    with tempfile.TemporaryDirectory() as scratch:
        server = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                scratch,
                "--save",
                "",
                "--appendonly",
                "no",
                "--logfile",
                f"{scratch}/redis.log",
            ]
        )
        try:
            deadline = time.monotonic() + 15
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
            print(f"{'client':>13} {'import ms':>9} {'GET/s':>7}")
            for name, module in MODULES.items():
                found = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)",
                    ]
                )
                if found.returncode:
                    print(f"{name:>13} {'not installed':>17}")
                    continue
                done = subprocess.run(
                    [sys.executable, "-c", CHILD, module, str(port), str(args.calls)],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                if done.returncode:
                    print(f"{name:>13} failed: {done.stderr.strip().splitlines()[-1:]}")
                    continue
                imported, rate = done.stdout.split()
                print(f"{name:>13} {imported:>9} {rate:>7}")
        finally:
            server.terminate()
            server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
