"""The ``Host`` header, parsed strictly and in one place (RFC 9112 section 3.2, RFC 3986 section 3.2.2).

A value is a bracketed IPv6 literal or a registered name / IPv4 address, then an optional ``:port`` of
digits, and nothing else: ``[::1].evil.example``, ``[::1]evil.example`` and ``localhost:8000.evil.example``
are invalid, never local. The HTTP server answers an invalid ``Host`` with 400; the guard compares the parsed
host with its allow-list.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final

__all__ = ["parse_host"]

_REG_NAME: Final = re.compile(r"^[a-z0-9\-._~%!$&'()*+,;=]+$")
_PORT: Final = re.compile(r"^[0-9]{0,5}$")


def parse_host(value: str) -> str | None:
    """The host of a ``Host`` value (or of an origin's authority), lower case, IPv6 in brackets; None if invalid."""
    value = value.strip(" \t").lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        literal, rest = value[1:end], value[end + 1 :]
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            return None
        host = f"[{literal}]"
    else:
        host, colon, port = value.partition(":")
        rest = colon + port
        if not _REG_NAME.match(host):
            return None
    if rest and not (rest.startswith(":") and _PORT.match(rest[1:])):
        return None
    return host
