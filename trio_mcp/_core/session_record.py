"""A legacy-era session's state as one typed record, and the one place it is made into JSON and read back.

The state is what ``initialize`` settled and what the client set since; the connection hands it to its
transport (``StreamControl.remember``), a session directory keeps it with the caller it belongs to, and another
process serving the session rebuilds its connection from it. Records carry a ``version``: a record without one
is from before it existed (the same fields), so a process reads records written by older ones as they were
meant. A record from newer code is read for the fields this code knows: a newer version only adds fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import attrs

__all__ = ["RECORD_VERSION", "SessionRecord", "SessionState"]

#: The version of the records this code writes.
RECORD_VERSION: Final = 1


def _wire_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object, not {type(value).__name__}")
    return value


@attrs.frozen(kw_only=True)
class SessionState:
    """What a session negotiated and what its client set since; ``client_info`` and ``capabilities`` as the
    client sent them (JSON objects)."""

    protocol_version: str
    client_info: Mapping[str, Any] | None = None
    capabilities: Mapping[str, Any] = attrs.field(factory=dict)
    #: None: the server's default level (the client never set one).
    log_level: str | None = None
    subscriptions: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The state as JSON (with the protocol's own field names)."""
        return {
            "protocolVersion": self.protocol_version,
            "clientInfo": dict(self.client_info) if self.client_info is not None else None,
            "capabilities": dict(self.capabilities),
            "logLevel": self.log_level,
            "subscriptions": list(self.subscriptions),
        }

    @classmethod
    def from_json(cls, value: Any) -> SessionState:
        """The state ``to_json`` made; a field missing from an older record takes its default. ValueError when
        the value is no state at all."""
        value = _wire_object(value, "a session's state")
        version = value.get("protocolVersion")
        if not isinstance(version, str):
            raise ValueError("a session's state has no protocolVersion")
        info = value.get("clientInfo")
        level = value.get("logLevel")
        subscriptions = value.get("subscriptions") or ()
        if not isinstance(subscriptions, list | tuple) or not all(isinstance(uri, str) for uri in subscriptions):
            raise ValueError("a session's subscriptions must be a list of URIs")
        return cls(
            protocol_version=version,
            client_info=_wire_object(info, "a session's clientInfo") if info is not None else None,
            capabilities=_wire_object(value.get("capabilities") or {}, "a session's capabilities"),
            log_level=level if isinstance(level, str) else None,
            subscriptions=tuple(subscriptions),
        )


@attrs.frozen(kw_only=True)
class SessionRecord:
    """A session's state and who it belongs to (``caller_key``), as a session directory keeps it."""

    caller: str
    state: SessionState
    version: int = RECORD_VERSION

    def dumps(self) -> str:
        """The record as JSON text (``principal`` names the caller, as in records before ``version``)."""
        record = {"version": self.version, "principal": self.caller, "state": self.state.to_json()}
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def loads(cls, text: str | bytes) -> SessionRecord:
        """The record ``dumps`` made, by this code or an older or newer one; ValueError when it is unreadable."""
        try:
            value = _wire_object(json.loads(text), "a session record")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"a session record is not JSON: {exc}") from None
        version = value.get("version", 0)  # no version: written before records had one, with the same fields
        caller = value.get("principal")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ValueError(f"a session record's version must be a whole number, not {version!r}")
        if not isinstance(caller, str):
            raise ValueError("a session record names no caller")
        return cls(caller=caller, state=SessionState.from_json(value.get("state")), version=version)
