"""Small JSON-over-HTTP helpers for the OAuth parts (metadata, JWKS, token and introspection endpoints), on
trio_mcp's own h11 client. Bodies are capped and every wait is bounded."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Final

from ..transports._client.h11client import HttpClient, HttpError, HttpTimeouts

__all__ = ["BODY_LIMIT", "FORM", "TIMEOUTS", "HttpFailure", "fetch_json", "get_json", "post"]

logger = logging.getLogger("trio_mcp.auth")

TIMEOUTS: Final = HttpTimeouts(connect=10.0, read_idle=15.0, pool_acquire=15.0)
BODY_LIMIT: Final = 1 << 20
FORM: Final = "application/x-www-form-urlencoded"


class HttpFailure(Exception):
    """The request could not be made or its answer not read (the message says why, without secrets)."""


async def fetch_json(http: HttpClient, url: str, headers: Sequence[tuple[str, str]] = ()) -> tuple[int, Any]:
    """GET ``url``: (status, the JSON body or None); ``HttpFailure`` saying why when no answer came."""
    try:
        response = await http.request("GET", url, headers=[("accept", "application/json"), *headers], timeouts=TIMEOUTS)
        async with response:
            body = await response.read(BODY_LIMIT)
    except HttpError as exc:
        raise HttpFailure(f"GET {url} failed: {exc}") from exc
    try:
        return response.status, json.loads(body)
    except ValueError:
        return response.status, None


async def get_json(http: HttpClient, url: str) -> tuple[int, Any]:
    """``fetch_json``, with (0, None) when the request failed (for discovery, which tries the next URL)."""
    try:
        return await fetch_json(http, url)
    except HttpFailure as exc:
        logger.debug("%s", exc)
        return 0, None


async def post(
    http: HttpClient, url: str, body: bytes, content_type: str, headers: Sequence[tuple[str, str]] = ()
) -> tuple[int, Any, Any]:
    """POST ``body``: (status, the JSON body or None, the response headers); ``HttpFailure`` when no answer."""
    try:
        response = await http.request(
            "POST",
            url,
            headers=[("content-type", content_type), ("accept", "application/json"), *headers],
            body=body,
            timeouts=TIMEOUTS,
        )
        async with response:
            raw = await response.read(BODY_LIMIT)
    except HttpError as exc:
        raise HttpFailure(f"POST {url} failed: {exc}") from exc
    try:
        return response.status, json.loads(raw), response.headers
    except ValueError:
        return response.status, None, response.headers
