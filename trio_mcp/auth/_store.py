"""Where an OAuth client keeps its tokens (per resource) and its registrations (per authorization server).

Records are JSON objects, so any store can persist them. ``MemoryTokenStore`` lasts as long as the process;
``FileTokenStore`` keeps one JSON file, created with mode 0600 and replaced atomically on every write (a
crash leaves the old file or the new one, never half of one).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

import trio

__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore"]

Record = dict[str, Any]


class TokenStore(Protocol):
    """Tokens by resource (the MCP server's canonical URI) and client registrations by issuer."""

    async def get_token(self, resource: str) -> Record | None: ...

    async def set_token(self, resource: str, token: Record | None) -> None: ...

    async def get_client(self, issuer: str) -> Record | None: ...

    async def set_client(self, issuer: str, client: Record | None) -> None: ...


class MemoryTokenStore:
    """Tokens and registrations for the lifetime of the process (the default)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Record]] = {"tokens": {}, "clients": {}}

    async def get_token(self, resource: str) -> Record | None:
        return self._data["tokens"].get(resource)

    async def set_token(self, resource: str, token: Record | None) -> None:
        self._set("tokens", resource, token)

    async def get_client(self, issuer: str) -> Record | None:
        return self._data["clients"].get(issuer)

    async def set_client(self, issuer: str, client: Record | None) -> None:
        self._set("clients", issuer, client)

    def _set(self, table: str, key: str, value: Record | None) -> None:
        if value is None:
            self._data[table].pop(key, None)
        else:
            self._data[table][key] = dict(value)


class FileTokenStore(MemoryTokenStore):
    """A ``TokenStore`` in one JSON file readable by its owner only (mode 0600), written atomically.

    The file is read once, at the first access; this process is assumed to be its only writer.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = Path(path)
        self._loaded = False
        self._lock = trio.Lock()

    async def get_token(self, resource: str) -> Record | None:
        await self._load()
        return await super().get_token(resource)

    async def get_client(self, issuer: str) -> Record | None:
        await self._load()
        return await super().get_client(issuer)

    async def set_token(self, resource: str, token: Record | None) -> None:
        await self._load()
        await super().set_token(resource, token)
        await self._save()

    async def set_client(self, issuer: str, client: Record | None) -> None:
        await self._load()
        await super().set_client(issuer, client)
        await self._save()

    async def _load(self) -> None:
        async with self._lock:
            if self._loaded:
                return
            try:
                raw = await trio.Path(self.path).read_text(encoding="utf-8")
            except FileNotFoundError:
                raw = ""
            data = json.loads(raw) if raw.strip() else {}
            if not isinstance(data, dict):
                raise ValueError(f"{self.path} is not a token store (not a JSON object)")
            for table in ("tokens", "clients"):
                entries = data.get(table)
                if isinstance(entries, dict):
                    self._data[table] = {k: v for k, v in entries.items() if isinstance(v, dict)}
            self._loaded = True

    async def _save(self) -> None:
        text = json.dumps(self._data, indent=1, sort_keys=True)
        async with self._lock:
            await trio.to_thread.run_sync(_write_private, self.path, text)


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, the file readable and writable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # created 0600
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
