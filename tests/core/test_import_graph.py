"""The package's shape: no import circles (no module imports one that imports it back, directly or around a loop,
counting imports made only for type checking and imports inside functions), no module importing another's private
names, and no file longer than one reader can hold."""

from __future__ import annotations

import ast
from pathlib import Path

from paths import ROOT

PACKAGE = ROOT / "trio_mcp"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(path: Path) -> str:
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def source_of(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module a ``from ... import`` reads, in ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Every trio_mcp module ``path`` imports, wherever the import statement is."""
    name = module_name(path)
    package = package_of(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            prefix = source_of(node, package)
            targets = [f"{prefix}.{alias.name}" for alias in node.names] + [prefix]
        else:
            continue
        for target in targets:
            # "from . import x" may name a module or a name in a package: keep the longest module it names.
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    paths = list(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imports_of(path, modules) for path in paths}


def cycles_within(prefix: str) -> list[list[str]]:
    """Strongly connected groups of more than one module among those under ``prefix`` (Tarjan)."""
    edges = {m: {t for t in ts if t.startswith(prefix)} for m, ts in graph().items() if m.startswith(prefix)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def test_no_import_circle_in_the_package() -> None:
    assert cycles_within("trio_mcp.") == []


def test_the_engine_and_the_wire_layer_import_nothing_above_them() -> None:
    modules = graph()
    for name in ("trio_mcp._session", "trio_mcp._failures", "trio_mcp._wire.features"):
        above = {
            m for m in modules[name] if m.startswith(("trio_mcp.server", "trio_mcp.client", "trio_mcp.transports."))
        }
        assert above <= {"trio_mcp.transports._base"}, (name, above)


def test_no_module_imports_the_private_names_of_another() -> None:
    """What one module uses of another is named without an underscore (a private module may hold public names), so
    the interface between two modules is the names they show, never what one keeps to itself."""
    paths = list(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    private = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = source_of(node, package_of(path))
            for alias in node.names:
                is_private = alias.name.startswith("_") and not alias.name.startswith("__")
                if is_private and source.startswith("trio_mcp") and f"{source}.{alias.name}" not in modules:
                    private.append(f"{module_name(path)} imports {alias.name} from {source}")
    assert private == []


def test_no_library_file_is_over_900_lines() -> None:
    """A file over 900 lines does more than one job: split it by job (as ``transports/_h11server/`` is)."""
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 900
    }
    assert long == {}


if __name__ == "__main__":  # PYTHONPATH=tests python tests/core/test_import_graph.py: every circle, if any
    for group in cycles_within("trio_mcp."):
        print(" <-> ".join(group))
