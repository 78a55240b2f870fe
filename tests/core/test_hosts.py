"""``Host`` parsing, on its own: what counts as which host, and what is invalid (RFC 9112 section 3.2)."""

from __future__ import annotations

import pytest

from trio_mcp._core.hosts import parse_host

CASES = [
    ("localhost", "localhost"),
    ("LOCALHOST:8000", "localhost"),
    ("localhost:", "localhost"),
    ("127.0.0.1:65535", "127.0.0.1"),
    ("[::1]", "[::1]"),
    ("[::1]:8000", "[::1]"),
    ("[0:0:0:0:0:0:0:1]", "[0:0:0:0:0:0:0:1]"),
    ("example.com", "example.com"),
    (" example.com\t", "example.com"),
    ("xn--bcher-kva.example", "xn--bcher-kva.example"),
    # invalid: never a host, never local
    ("[::1].evil.example", None),
    ("[::1]evil.example", None),
    ("[::1]:80.evil.example", None),
    ("localhost:8000.evil.example", None),
    ("localhost:80:80", None),
    ("localhost:123456", None),
    ("localhost:-1", None),
    ("[::1", None),
    ("[evil.example]", None),
    ("[]", None),
    ("", None),
    (":8000", None),
    ("local host", None),
    ("evil.example/path", None),
    ("user@localhost", None),
    ("localhost#", None),
]


@pytest.mark.parametrize(("value", "host"), CASES)
def test_parse_host(value: str, host: str | None) -> None:
    assert parse_host(value) == host
