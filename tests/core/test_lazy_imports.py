"""What a program pays for at import: a server imports no client and no network transport until it uses them,
and every name ``trio_mcp`` exports still resolves."""

from __future__ import annotations

import subprocess
import sys

from paths import ROOT

import trio_mcp


def imported_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, check=True
    )
    return set(done.stdout.split())


def test_a_stdio_server_imports_no_client_and_no_network_transport() -> None:
    loaded = imported_after("from trio_mcp import Context, Server")
    assert "trio_mcp.server" in loaded
    unwanted = {"trio_mcp.client", "trio_mcp.transports.streamable_http", "trio_mcp.transports.websocket", "h11"}
    assert loaded & unwanted == set()


def test_every_exported_name_resolves() -> None:
    for name in trio_mcp.__all__:
        assert getattr(trio_mcp, name) is not None, name
    assert trio_mcp.Client.__module__.startswith("trio_mcp.client")


def test_a_server_with_plain_tools_imports_no_date_number_or_id_module() -> None:
    # datetime, decimal, uuid, fractions and difflib are loaded only by a schema (or an error message) that
    # needs them: a tool of str and int parameters pays for none.
    statement = (
        "from trio_mcp import Server\n"
        "server = Server('plain')\n"
        "@server.tool()\n"
        "async def repeat(text: str, count: int = 1) -> str:\n"
        "    return text * count\n"
    )
    loaded = imported_after(statement)
    assert "trio_mcp._schema._compile" in loaded
    # Some versions of the dependencies load one of them themselves (cattrs 23.2 imports uuid): not ours to save.
    theirs = imported_after("import attrs, cattrs, h11, trio")
    assert loaded & {"datetime", "decimal", "uuid", "fractions", "difflib"} - theirs == set()


def test_a_tool_of_dates_numbers_and_ids_loads_them_and_round_trips() -> None:
    code = (
        "import dataclasses, datetime, decimal, uuid, trio\n"
        "from trio_mcp import Server\n"
        "from trio_mcp.testing import open_in_memory\n"
        "server = Server('typed')\n"
        "@dataclasses.dataclass\n"
        "class Shifted:\n"
        "    day: datetime.date\n"
        "    amount: decimal.Decimal\n"
        "    key: uuid.UUID\n"
        "@server.tool()\n"
        "async def shift(day: datetime.date, amount: decimal.Decimal, key: uuid.UUID) -> Shifted:\n"
        "    return Shifted(day + datetime.timedelta(days=1), amount * 2, key)\n"
        "async def main():\n"
        "    async with open_in_memory(server) as client:\n"
        "        result = await client.call_tool('shift', {'day': '2026-11-26', 'amount': '1.10',"
        " 'key': '12345678-1234-5678-1234-567812345678'})\n"
        "        print(result.structured_content)\n"
        "trio.run(main)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "{'day': '2026-11-27', 'amount': '2.20', 'key': '12345678-1234-5678-1234-567812345678'}"
    )
