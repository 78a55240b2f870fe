"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _named(nav: Any) -> set[str]:
    """Every page file the ``nav`` setting names, at any depth."""
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, dict):
        return set().union(*(_named(value) for value in nav.values()))
    if isinstance(nav, list):
        return set().union(*(_named(item) for item in nav))
    return set()


def on_config(config: Any) -> Any:
    """A page added to docs/ without a nav entry still gets one, under "More", so no page is left unreachable."""
    docs = Path(config["docs_dir"])
    missing = sorted(
        str(page.relative_to(docs))
        for page in docs.rglob("*.md")
        if str(page.relative_to(docs)) not in _named(config["nav"])
    )
    if missing:
        config["nav"].append({"More": missing})
    return config
