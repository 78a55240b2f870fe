"""The server side of TLS from a certificate and key on disk, shared by the command line and worker processes."""

from __future__ import annotations

import ssl

__all__ = ["server_tls_context"]


def server_tls_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    """A TLS server context for ``certfile`` (PEM chain) and ``keyfile``; files that do not load are a
    ``ValueError`` naming them (at start-up, not at the first handshake)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"certfile/keyfile: cannot load {certfile!r} and {keyfile!r}: {exc}") from None
    return context
