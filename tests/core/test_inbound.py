"""The inbound check of the Streamable HTTP endpoint, on its own: every refusal in its table is reachable and
answered with the status and code the table gives; the routing of each era is exact; and no input, however
malformed, makes the check raise."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp._core.inbound import (
    REFUSALS,
    InboundRules,
    Refusal,
    Rejection,
    Route,
    answer_status,
    check,
)
from trio_mcp._core.jsonrpc import Request

from transport_helpers import initialize_request  # isort: skip

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


class Headers:
    """The smallest header view: a list of pairs, names compared ignoring case."""

    def __init__(self, **fields: str | list[str]) -> None:
        self._pairs = [
            (name.replace("_", "-").lower(), value)
            for name, values in fields.items()
            for value in (values if isinstance(values, list) else [values])
        ]

    def get(self, name: str, /) -> str | None:
        values = self.get_all(name)
        return ", ".join(values) if values else None

    def get_all(self, name: str) -> list[str]:
        return [value for key, value in self._pairs if key == name.lower()]


def body(message: Any) -> bytes:
    return json.dumps(message).encode()


def call(name: str = "echo", **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }


JSON = {"content_type": "application/json", "accept": "application/json, text/event-stream"}
STATELESS = {**JSON, "mcp_protocol_version": MODERN}
INIT = initialize_request(id=1)
PATHS = {"regional": {"region": ("region",)}}


def header_paths(name: str) -> dict[str, tuple[str, ...]] | None:
    return PATHS.get(name)


BOTH = InboundRules(header_paths=header_paths)
MODERN_ONLY = InboundRules(sessions=False, header_paths=header_paths)
LEGACY_ONLY = InboundRules(stateless=False)

# (method, headers, body, rules) -> the refusal expected, with a piece of its message.
REFUSED: list[tuple[str, str, dict[str, Any], bytes, InboundRules, Refusal, str]] = [
    ("PUT is not served", "PUT", JSON, b"", BOTH, Refusal.METHOD_NOT_ALLOWED, "use GET, POST, DELETE"),
    ("GET on a modern-only server", "GET", {}, b"", MODERN_ONLY, Refusal.METHOD_NOT_ALLOWED, "use POST"),
    ("GET without a session", "GET", {}, b"", BOTH, Refusal.METHOD_NOT_ALLOWED, "Mcp-Session-Id"),
    ("DELETE without a session", "DELETE", {}, b"", BOTH, Refusal.METHOD_NOT_ALLOWED, "Mcp-Session-Id"),
    (
        "GET that refuses SSE",
        "GET",
        {"mcp_session_id": "s", "accept": "application/json"},
        b"",
        BOTH,
        Refusal.NOT_ACCEPTABLE,
        "text/event-stream",
    ),
    (
        "text body",
        "POST",
        {"content_type": "text/plain"},
        body(INIT),
        BOTH,
        Refusal.UNSUPPORTED_MEDIA_TYPE,
        "Content-Type",
    ),
    ("no content type", "POST", {}, body(INIT), BOTH, Refusal.UNSUPPORTED_MEDIA_TYPE, "Content-Type"),
    ("accepts only html", "POST", {**JSON, "accept": "text/html"}, body(INIT), BOTH, Refusal.NOT_ACCEPTABLE, "Accept"),
    ("not JSON", "POST", JSON, b"{nope", BOTH, Refusal.PARSE_ERROR, "Parse error"),
    ("a JSON string", "POST", JSON, b'"hello"', BOTH, Refusal.PARSE_ERROR, ""),
    ("stateless batch", "POST", STATELESS, body([call()]), BOTH, Refusal.BATCH_NOT_ALLOWED, "batches"),
    (
        "stateless response",
        "POST",
        STATELESS,
        body({"jsonrpc": "2.0", "id": 1, "result": {}}),
        BOTH,
        Refusal.NOT_A_REQUEST,
        "expected a request",
    ),
    (
        "no version header",
        "POST",
        {**JSON, "mcp_method": "tools/call", "mcp_name": "echo"},
        body(call()),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "MCP-Protocol-Version header is required",
    ),
    (
        "version header differs from _meta",
        "POST",
        {**JSON, "mcp_protocol_version": "2025-11-25", "mcp_method": "tools/call", "mcp_name": "echo"},
        body(call()),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "does not match _meta",
    ),
    (
        "no Mcp-Method",
        "POST",
        {**STATELESS, "mcp_name": "echo"},
        body(call()),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "Mcp-Method header is required",
    ),
    (
        "Mcp-Method differs",
        "POST",
        {**STATELESS, "mcp_method": "tools/list", "mcp_name": "echo"},
        body(call()),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "does not match body method",
    ),
    (
        "Mcp-Method twice",
        "POST",
        {**STATELESS, "mcp_method": ["tools/call", "tools/call"], "mcp_name": "echo"},
        body(call()),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "more than once",
    ),
    (
        "no Mcp-Name",
        "POST",
        {**STATELESS, "mcp_method": "tools/call"},
        body(call()),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "Mcp-Name header is required",
    ),
    (
        "Mcp-Name differs",
        "POST",
        {**STATELESS, "mcp_method": "tools/call", "mcp_name": "other"},
        body(call()),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "does not match body name",
    ),
    (
        "Mcp-Param missing",
        "POST",
        {**STATELESS, "mcp_method": "tools/call", "mcp_name": "regional"},
        body(call("regional", region="eu")),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "Mcp-Param-region is missing",
    ),
    (
        "Mcp-Param differs",
        "POST",
        {**STATELESS, "mcp_method": "tools/call", "mcp_name": "regional", "mcp_param_region": "us"},
        body(call("regional", region="eu")),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "does not match the argument",
    ),
    (
        "Mcp-Param for an absent argument",
        "POST",
        {**STATELESS, "mcp_method": "tools/call", "mcp_name": "regional", "mcp_param_region": "us"},
        body(call("regional")),
        BOTH,
        Refusal.HEADER_MISMATCH,
        "argument is absent",
    ),
    (
        "session request to a modern-only server",
        "POST",
        JSON,
        body(INIT),
        MODERN_ONLY,
        Refusal.MODERN_ONLY,
        "only the modern revision",
    ),
    (
        "unknown legacy-era version header",
        "POST",
        {**JSON, "mcp_protocol_version": "1999-01-01", "mcp_session_id": "s"},
        body({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        BOTH,
        Refusal.UNSUPPORTED_VERSION_HEADER,
        "1999-01-01",
    ),
    (
        "session request without a session",
        "POST",
        JSON,
        body({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        BOTH,
        Refusal.SESSION_REQUIRED,
        "Mcp-Session-Id header is required",
    ),
    (
        "stateless request to a session-only server",
        "POST",
        STATELESS,
        body(call()),
        LEGACY_ONLY,
        Refusal.UNSUPPORTED_VERSION_HEADER,
        MODERN,
    ),
]


@pytest.mark.parametrize(
    ("method", "headers", "payload", "rules", "refusal", "detail"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
def test_each_refusal(
    method: str, headers: dict[str, Any], payload: bytes, rules: InboundRules, refusal: Refusal, detail: str
) -> None:
    outcome = check(method, Headers(**headers), payload, rules)
    assert isinstance(outcome, Rejection), outcome
    assert outcome.refusal is refusal and detail in outcome.detail
    assert (outcome.status, outcome.code) == REFUSALS[refusal]


def test_the_table_covers_every_refusal_with_a_client_error_status() -> None:
    assert set(REFUSALS) == set(Refusal)
    for status, code in REFUSALS.values():
        assert 400 <= status < 600 and -32800 < code < -32000 + 1


def test_refusals_raised_by_the_check_are_all_reachable() -> None:
    """Every refusal the check itself decides appears in the table of cases above (the rest are decided by
    the session endpoint, with the same table)."""
    decided_elsewhere = {
        Refusal.SESSION_NOT_FOUND,
        Refusal.TOO_MANY_SESSIONS,
        Refusal.UNKNOWN_LAST_EVENT_ID,
        Refusal.STREAM_ALREADY_OPEN,
        Refusal.DIRECTORY_UNAVAILABLE,
    }
    assert {case[5] for case in REFUSED} == set(Refusal) - decided_elsewhere


def test_refusals_carry_the_request_id_when_there_is_one() -> None:
    mismatch = check("POST", Headers(**STATELESS), body(call()), BOTH)
    assert isinstance(mismatch, Rejection) and mismatch.request_id == 1
    no_session = check("POST", Headers(**JSON), body({"jsonrpc": "2.0", "id": "a", "method": "x"}), BOTH)
    assert isinstance(no_session, Rejection) and no_session.request_id == "a"
    only = check("POST", Headers(**JSON), body(INIT), MODERN_ONLY)
    assert isinstance(only, Rejection) and only.data == {"supported": [MODERN], "requested": "2025-11-25"}


def test_405_names_what_is_allowed() -> None:
    for rules, allow in ((BOTH, "GET, POST, DELETE"), (MODERN_ONLY, "POST")):
        outcome = check("PATCH", Headers(), b"", rules)
        assert isinstance(outcome, Rejection) and ("allow", allow) in outcome.headers


# -- routes ----------------------------------------------------------------------------------------------


def test_stateless_route() -> None:
    headers = Headers(**STATELESS, mcp_method="tools/call", mcp_name="regional", mcp_param_region="=?base64?ZXU=?=")
    route = check("POST", headers, body(call("regional", region="eu")), BOTH)
    assert isinstance(route, Route)
    assert (route.era, route.rpc_method, route.request_ids, route.session_id) == (
        "modern",
        "tools/call",
        frozenset({1}),
        None,
    )


@pytest.mark.parametrize("meta_only", [True, False])
def test_either_the_meta_or_the_header_makes_a_request_stateless(meta_only: bool) -> None:
    message = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": META} if meta_only else {}}
    route = check("POST", Headers(**STATELESS, mcp_method="tools/list"), body(message), BOTH)
    assert isinstance(route, Route) and route.era == "modern" and route.request_ids == {5}
    request = route.request  # classified once, then served as it is
    assert isinstance(request, Request) and (request.id, request.method, request.params) == (
        5,
        "tools/list",
        message["params"],
    )


def test_stateless_notification_is_accepted_with_nothing_to_answer() -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": META}}
    route = check("POST", Headers(**STATELESS), body(note), BOTH)
    assert isinstance(route, Route) and route.era == "modern" and not route.request_ids


def test_session_routes() -> None:
    opening = check("POST", Headers(**JSON), body(INIT), BOTH)
    assert isinstance(opening, Route) and opening.opens_session and opening.request_ids == {1}
    batch = [
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/x"},
        {"jsonrpc": "2.0", "id": 3, "result": {}},
    ]
    routed = check("POST", Headers(**JSON, mcp_session_id="abc", mcp_protocol_version="2025-03-26"), body(batch), BOTH)
    assert isinstance(routed, Route)
    assert (routed.era, routed.session_id, routed.request_ids, routed.rpc_method, routed.opens_session) == (
        "legacy",
        "abc",
        frozenset({2}),
        None,
        False,
    )
    get = check("GET", Headers(mcp_session_id="abc", last_event_id="1_4"), b"", BOTH)
    assert isinstance(get, Route) and (get.method, get.session_id, get.last_event_id) == ("GET", "abc", "1_4")
    delete = check("DELETE", Headers(mcp_session_id="abc"), b"", BOTH)
    assert isinstance(delete, Route) and delete.method == "DELETE"


def test_content_type_parameters_and_accept_wildcards_are_understood() -> None:
    for content_type, accept in itertools.product(
        ["application/json", "Application/JSON; charset=utf-8"],
        ["application/json", "text/event-stream", "*/*", "application/*", None],
    ):
        fields = {"content_type": content_type, **({"accept": accept} if accept else {})}
        assert isinstance(check("POST", Headers(**fields), body(INIT), BOTH), Route), fields


# -- the whole space -------------------------------------------------------------------------------------

CONTENT_TYPES = [None, "application/json", "text/plain"]
VERSIONS = [None, MODERN, "2025-11-25", "1999-01-01"]
SESSION_IDS = [None, "abc"]
BODIES = [
    b"",
    b"[]",
    b"{",
    body(INIT),
    body(call()),
    body([call()]),
    body({"jsonrpc": "2.0", "method": "n"}),
    body({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
]
RULES = [BOTH, MODERN_ONLY, LEGACY_ONLY, InboundRules(stateless=False, sessions=False)]


@pytest.mark.parametrize("rules", RULES, ids=["both", "stateless", "sessions", "neither"])
def test_every_combination_gets_a_route_or_a_tabled_refusal(rules: InboundRules) -> None:
    """Every method × content type × version × session × body: a Route whose era the rules allow, or a
    Rejection answered from the table."""
    for method, content_type, version, session_id, payload in itertools.product(
        ["POST", "GET", "DELETE", "PUT"], CONTENT_TYPES, VERSIONS, SESSION_IDS, BODIES
    ):
        fields: dict[str, str] = {"accept": "application/json, text/event-stream"}
        for name, value in (
            ("content_type", content_type),
            ("mcp_protocol_version", version),
            ("mcp_session_id", session_id),
        ):
            if value is not None:
                fields[name] = value
        outcome = check(method, Headers(**fields), payload, rules)
        if isinstance(outcome, Route):
            assert outcome.method == method
            assert (outcome.era == "modern" and rules.stateless) or (outcome.era == "legacy" and rules.sessions)
            if outcome.era == "legacy" and not outcome.opens_session:
                assert outcome.session_id == session_id is not None
        else:
            assert (outcome.status, outcome.code) == REFUSALS[outcome.refusal]


@settings(max_examples=300, deadline=None)
@given(
    method=st.sampled_from(["POST", "GET", "DELETE", "OPTIONS"]),
    pairs=st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "content-type",
                    "accept",
                    "mcp-protocol-version",
                    "mcp-method",
                    "mcp-name",
                    "mcp-session-id",
                    "mcp-param-region",
                ]
            ),
            st.text(max_size=20),
        ),
        max_size=8,
    ),
    payload=st.one_of(
        st.binary(max_size=64),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(["jsonrpc", "id", "method", "params", "_meta", "name", "arguments", "result"]),
                    inner,
                    max_size=4,
                )
            ),
            max_leaves=12,
        ).map(lambda value: json.dumps(value).encode()),
    ),
)
def test_no_input_makes_the_check_raise(method: str, pairs: list[tuple[str, str]], payload: bytes) -> None:
    headers = Headers()
    headers._pairs = pairs
    for rules in (BOTH, MODERN_ONLY):
        outcome = check(method, headers, payload, rules)
        assert isinstance(outcome, (Route, Rejection))


def test_answer_status() -> None:
    assert answer_status({"jsonrpc": "2.0", "id": 1, "result": {}}) == 200
    assert answer_status({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "x"}}) == 404
    for code in (-32700, -32600, -32602, -32020, -32021, -32022):
        assert answer_status({"id": 1, "error": {"code": code, "message": "x"}}) == 400
    assert answer_status({"id": 1, "error": {"code": -32603, "message": "x"}}) == 200
    assert answer_status({"id": 1, "error": {"code": "weird"}}) == 200
