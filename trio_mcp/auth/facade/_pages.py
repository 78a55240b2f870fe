"""The HTML pages the facade shows a user: the consent page and the page of an authorization refused before
any redirect (an unknown client, a redirect URI it did not register)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final
from urllib.parse import urlsplit

__all__ = ["HTML_HEADERS", "consent_page", "error_page"]

#: A page may not be framed (clickjacking), cached, or run scripts. (No ``form-action``: browsers apply it to the
#: redirect to the provider that answers the consent form too.)
HTML_HEADERS: Final = (
    ("content-type", "text/html; charset=utf-8"),
    ("cache-control", "no-store"),
    ("x-frame-options", "DENY"),
    (
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    ),
    ("referrer-policy", "no-referrer"),
)

_STYLE = "body{font-family:sans-serif;max-width:36em;margin:3em auto;line-height:1.5}code{word-break:break-all}"


def _page(title: str, body: str) -> bytes:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    ).encode()


def consent_page(
    *,
    server_name: str,
    provider: str,
    client_name: str | None,
    client_id: str,
    redirect_uri: str,
    scopes: Sequence[str],
    transaction: str,
    csrf: str,
    action: str,
) -> bytes:
    """Ask the user whether ``client_id`` may act for them at ``server_name``: the client's name (which it
    chose itself, so the host of its redirect URI is shown beside it) and where the answer will be sent."""
    shown = escape(client_name) if client_name else "An application that did not give its name"
    host = urlsplit(redirect_uri).hostname or redirect_uri
    scope_list = "".join(f"<li><code>{escape(scope)}</code></li>" for scope in scopes) or "<li>(none)</li>"
    body = (
        f"<h1>Allow access to {escape(server_name)}?</h1>"
        f"<p><strong>{shown}</strong> (client <code>{escape(client_id)}</code>) asks to use {escape(server_name)} "
        f"on your behalf.</p>"
        f"<p>If you allow it, you will sign in with {escape(provider)} and then be sent to "
        f"<code>{escape(redirect_uri)}</code> (<strong>{escape(host)}</strong>). "
        "Allow only if you started this and recognise that address.</p>"
        f"<p>Scopes:</p><ul>{scope_list}</ul>"
        f'<form method="post" action="{escape(action)}">'
        f'<input type="hidden" name="transaction" value="{escape(transaction)}">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<button type="submit" name="decision" value="allow">Allow</button> '
        '<button type="submit" name="decision" value="deny">Deny</button>'
        "</form>"
    )
    return _page(f"Allow access to {server_name}?", body)


def error_page(message: str) -> bytes:
    """A refusal shown to the user instead of a redirect (the redirect target cannot be trusted)."""
    return _page("Authorization refused", f"<h1>Authorization refused</h1><p>{escape(message)}</p>")
