"""Protocol revisions as data: which exist, which era each belongs to, and what each one adds."""

from __future__ import annotations

from typing import Final

V2024_11_05: Final = "2024-11-05"
V2025_03_26: Final = "2025-03-26"
V2025_06_18: Final = "2025-06-18"
V2025_11_25: Final = "2025-11-25"
V2026_07_28: Final = "2026-07-28"

#: Revisions with the ``initialize`` handshake and sessions, oldest first.
LEGACY_VERSIONS: Final = (V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25)
#: Modern revisions: every request carries its version in ``_meta``.
MODERN_VERSIONS: Final = (V2026_07_28,)
KNOWN_VERSIONS: Final = LEGACY_VERSIONS + MODERN_VERSIONS

LATEST_LEGACY_VERSION: Final = V2025_11_25
LATEST_VERSION: Final = V2026_07_28
#: What a Streamable HTTP server assumes when ``MCP-Protocol-Version`` is missing.
DEFAULT_NEGOTIATED_VERSION: Final = V2025_03_26
