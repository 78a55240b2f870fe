"""The documentation cannot rot silently: every Python block in README.md and docs/*.md compiles, and every
``trio-mcp`` command line shown in docs/cli.md parses."""

from __future__ import annotations

import ast
import re
import shlex

import pytest
from paths import ROOT

from trio_mcp.cli._parser import build_parser

REPO = ROOT
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _blocks(language: str) -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for index, match in enumerate(_BLOCK.finditer(page.read_text())):
            if match.group(1) == language:
                found.append((f"{page.name}#{index}", match.group(2)))
    return found


@pytest.mark.parametrize(("where", "code"), _blocks("python"), ids=[w for w, _ in _blocks("python")])
def test_python_blocks_compile(where: str, code: str) -> None:
    compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)  # snippets may await at the top


def _command_lines() -> list[str]:
    lines = []
    for _, block in _blocks("console"):
        for line in block.splitlines():
            command = line[2:].split("  #")[0].strip()
            if line.startswith("$ trio-mcp ") and " / " not in command:  # not the README's summary line
                lines.append(command)
    return lines


@pytest.mark.parametrize("line", _command_lines())
def test_command_lines_shown_in_the_docs_parse(line: str) -> None:
    words = shlex.split(line.replace("$TOKEN", "token"))[1:]
    if "--" in words:
        words = words[: words.index("--")]
    build_parser().parse_args(words)


def test_the_busy_code_the_docs_give_is_the_one_the_server_sends() -> None:
    """A paragraph about a concurrency limit that names an error code names ``SERVER_BUSY`` (the code the
    session and the task manager refuse with; -32000 is a closed connection's)."""
    from trio_mcp.errors import SERVER_BUSY

    stated = [
        (page.name, code)
        for page in PAGES
        for paragraph in re.split(r"\n\s*\n", page.read_text())
        if re.search(r"max_in_flight|max_tasks", paragraph)
        for code in re.findall(r"-320\d\d", paragraph)
    ]
    assert stated, "no page states the code of a refused request any more"
    assert [(page, int(code)) for page, code in stated] == [(page, SERVER_BUSY) for page, _ in stated]
