"""A host's JSON configuration file, read and rewritten without losing what is not ours.

Every key we do not touch stays, in its order; the indentation found in the file is kept. The new text goes to a
temporary file beside the old one, which is copied to ``<name>.bak`` first and then replaced in one rename, so a
host reading the file meanwhile sees the old text or the new, never half of one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ._exit import CliError

__all__ = ["ConfigFile", "servers_in"]


def servers_in(document: dict[str, Any]) -> dict[str, Any]:
    """The servers a configuration names: under ``mcpServers`` (most hosts) or ``servers`` (VS Code)."""
    for key in ("mcpServers", "servers"):
        servers = document.get(key)
        if isinstance(servers, dict):
            return servers
    return {}


class ConfigFile:
    """One configuration file: its parsed document, and how to write it back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.text: str | None = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self.text = None
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
        self.document = self._parse()

    def _parse(self) -> dict[str, Any]:
        if self.text is None or not self.text.strip():
            return {}
        try:
            document = json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise CliError(
                f"{self.path} is not plain JSON (line {exc.lineno}: {exc.msg}); it was left unchanged: "
                "fix it, or remove comments and trailing commas, and run the command again"
            ) from None
        if not isinstance(document, dict):
            raise CliError(f"{self.path} holds a JSON {type(document).__name__}, not an object; it was left unchanged")
        return document

    def render(self) -> str:
        """The document as it will be written: the file's own indentation (two spaces for a new file)."""
        return json.dumps(self.document, indent=self._indent(), ensure_ascii=False) + "\n"

    def _indent(self) -> str | int:
        for line in (self.text or "").splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                return line[: len(line) - len(stripped)]
        return 2

    def write(self) -> Path | None:
        """Write the document atomically; returns the backup of the previous file, if there was one."""
        text = self.render()
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            backup = None
            if self.path.exists():
                backup = self.path.with_name(self.path.name + ".bak")
                shutil.copy2(self.path, backup)
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{self.path.name}.", suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
                    file.write(text)
                    file.flush()
                    os.fsync(file.fileno())
                if backup is not None:
                    shutil.copymode(backup, temporary)
                os.replace(temporary, self.path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError as exc:
            raise CliError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self.text = text
        return backup
