"""Every Python block in README.md and docs/*.md is checked in CI, so the documentation cannot drift from the code.

By default a block is type-checked: one mypy run over all of them (each block a module of its own; a block that
awaits at the top level is checked as the body of an ``async def``). An HTML comment on the line before the block,
invisible on the page, changes that:

- ``<!-- docs-test: run -->``: also run it as a script, in a subprocess, bounded; when a ```` ```text ```` block
  follows it, that is its expected output, exactly.
- ``<!-- docs-test: fragment -->``: a fragment (placeholders, names defined in the prose): only compiled. Keep
  these few.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARKERS = ("run", "fragment")
_MARKER = re.compile(r"^<!--\s*docs-test:\s*(\S+)\s*-->\s*$")
_FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")


@attrs.frozen
class Block:
    page: Path
    line: int  #: the first line of code (1-based), for messages that point into the page
    code: str
    marker: str | None
    output: str | None  #: the ```text block right after it, if any

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def module(self) -> str:
        return "block_" + re.sub(r"\W", "_", f"{self.page.stem}_{self.line}")


def _blocks(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    fences: list[tuple[str, int, int, str | None]] = []  # language, first code line index, end index, marker
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        marked = _MARKER.match(previous)
        fences.append((opening.group(1), index + 1, end, marked.group(1) if marked else None))
        index = end + 1
    found = []
    for position, (language, start, end, marker) in enumerate(fences):
        if language != "python":
            continue
        output = None
        if position + 1 < len(fences):
            next_language, next_start, next_end, _ = fences[position + 1]
            between = lines[end + 1 : next_start - 1]
            if next_language == "text" and not any(line.strip() for line in between):
                output = "\n".join(lines[next_start:next_end]) + "\n"
        found.append(Block(page, start + 1, "\n".join(lines[start:end]) + "\n", marker, output))
    return found


BLOCKS = [block for page in PAGES for block in _blocks(page)]
CHECKED = [block for block in BLOCKS if block.marker != "fragment"]
RUN = [block for block in BLOCKS if block.marker == "run"]


def _awaits_at_top_level(block: Block) -> bool:
    code = compile(block.code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    return bool(code.co_flags & 0x80)  # CO_COROUTINE: the block awaits outside any function


def _as_module(block: Block) -> tuple[str, int]:
    """The block as a module mypy accepts, and how many lines were added above its first line."""
    if not _awaits_at_top_level(block):
        return block.code, 0
    return "async def _top_level() -> None:\n" + textwrap.indent(block.code, "    ") + "\n", 1


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_block_compiles_and_its_marker_is_known(block: Block) -> None:
    assert block.marker in (None, *MARKERS), f"{block.where}: unknown marker {block.marker!r}; use one of {MARKERS}"
    _awaits_at_top_level(block)


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """One mypy run over every checked block; its errors by block, as ``page:line: message``."""
    folder = tmp_path_factory.mktemp("blocks")
    shifts = {}
    for block in CHECKED:
        text, shifts[block.module] = _as_module(block)
        (folder / f"{block.module}.py").write_text(text)
    (folder / "mypy.ini").write_text(
        "[mypy]\n"
        f"mypy_path = {REPO}\n"  # this checkout's trio_mcp, whatever is installed
        f"cache_dir = {REPO / '.mypy_cache' / 'docs-blocks'}\n"
        "check_untyped_defs = True\n"
        "warn_unused_ignores = True\n"
        "strict_equality = True\n"
        "show_error_codes = True\n"
        "no_error_summary = True\n"
        # trio_mcp's own typing is `make typecheck`'s job (and may differ on the lowest dependency versions).
        "[mypy-trio_mcp.*]\nignore_errors = True\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", *(f"{b.module}.py" for b in CHECKED)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    by_module = {block.module: block for block in CHECKED}
    errors: dict[str, list[str]] = {block.where: [] for block in CHECKED}
    for line in done.stdout.splitlines():
        found = re.match(r"^(block_\w+)\.py:(\d+): (.*)$", line)
        assert found is not None or not line.strip(), f"unexpected mypy output: {line}\n{done.stderr}"
        if found is None:
            continue
        block = by_module[found.group(1)]
        page_line = block.line + int(found.group(2)) - 1 - shifts[block.module]
        errors[block.where].append(f"{block.page.relative_to(REPO)}:{page_line}: {found.group(3)}")
    found_any = any(errors.values())
    assert done.returncode == 0 or (done.returncode == 1 and found_any), f"mypy did not run:\n{done.stderr}"
    return errors


@pytest.mark.parametrize("block", CHECKED, ids=[b.where for b in CHECKED])
def test_block_type_checks(block: Block, mypy_errors: dict[str, list[str]]) -> None:
    problems = [line for line in mypy_errors[block.where] if ": note: " not in line]
    assert not problems, "\n".join(mypy_errors[block.where])


@pytest.mark.parametrize("block", RUN, ids=[b.where for b in RUN])
def test_block_runs(block: Block, tmp_path: Path) -> None:
    script = tmp_path / f"{block.module}.py"
    script.write_text(block.code)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, f"{block.where} exited with {done.returncode}:\n{done.stderr}"
    if block.output is not None:
        assert done.stdout == block.output, f"{block.where}: the output shown below the block is not what it prints"
