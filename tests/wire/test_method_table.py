"""The method table against every revision's schema, method by method (``tests/schema_facts.py`` holds what
the schemas say): who sends each method where, the capability its receiver declares, which requests may run as
tasks or be answered with an ``InputRequiredResult``, and the ``Mcp-Name`` param the header codec mirrors."""

from __future__ import annotations

import pytest
import schema_facts as facts

from trio_mcp import types
from trio_mcp._core.mcp_headers import NAMED_METHODS
from trio_mcp._wire.methods import (
    INPUT_REQUIRED_METHODS,
    METHODS,
    TASKS_EXTENSION_METHODS,
    declared,
    methods_for,
    send_refusal,
    spec_for,
    task_requests,
)
from trio_mcp.types import ResourcesCapability, ServerCapabilities

EVERY = sorted(facts.every_method() | {"nope/nope"})


def test_the_table_names_every_method_of_every_revision() -> None:
    assert set(METHODS) | set(TASKS_EXTENSION_METHODS) == facts.every_method() | {"notifications/tasks"}
    for revision in facts.REVISIONS:
        defined = (
            facts.CLIENT_REQUESTS[revision]
            | facts.SERVER_REQUESTS[revision]
            | facts.CLIENT_NOTIFICATIONS[revision]
            | facts.SERVER_NOTIFICATIONS[revision]
        )
        assert set(methods_for(revision)) == defined, revision


@pytest.mark.parametrize("revision", facts.REVISIONS)
@pytest.mark.parametrize("method", EVERY)
def test_who_sends_each_method(revision: str, method: str) -> None:
    extension = revision == "2026-07-28" and method in facts.TASKS_EXTENSION_REQUESTS
    by_client = method in facts.CLIENT_REQUESTS[revision] | facts.CLIENT_NOTIFICATIONS[revision] or extension
    by_server = method in facts.SERVER_REQUESTS[revision] | facts.SERVER_NOTIFICATIONS[revision]
    spec = spec_for(method, revision)
    assert (spec is not None) == (by_client or by_server)
    if spec is not None:
        assert spec.sent_by("client", revision) == by_client
        assert spec.sent_by("server", revision) == by_server
        is_request = method in facts.CLIENT_REQUESTS[revision] | facts.SERVER_REQUESTS[revision] or extension
        assert (spec.result_type is not None) == is_request
    known = METHODS.get(method)
    if known is not None and known.result_type is not None and not known.sent_by("client", revision):
        embedded = method in facts.EMBEDDED_REQUESTS[revision]
        assert known.asked_in(revision) == (method in facts.SERVER_REQUESTS[revision] or embedded)


@pytest.mark.parametrize("revision", facts.REVISIONS)
@pytest.mark.parametrize("method", sorted(facts.REQUIRED_CAPABILITY))
def test_the_capability_each_request_needs(revision: str, method: str) -> None:
    spec = METHODS[method]
    assert spec.capability == facts.REQUIRED_CAPABILITY[method]
    receiver = facts.CLIENT_CAPABILITIES if spec.by_server else facts.SERVER_CAPABILITIES
    # A sender can check a capability only where its revision defines it (2024-11-05 has completion/complete
    # but no completions capability).
    expected = spec.capability if spec.capability[0] in receiver[revision] else None
    if spec.revisions and revision in spec.revisions:
        assert spec.capability_in(revision) == expected


@pytest.mark.parametrize("revision", facts.REVISIONS)
def test_which_results_carry_caching_hints(revision: str) -> None:
    hinted = {method for method, spec in METHODS.items() if revision in spec.cache_hint_revisions}
    assert hinted == facts.CACHE_HINTED[revision]


@pytest.mark.parametrize("revision", facts.REVISIONS)
def test_which_requests_may_be_answered_with_input_required(revision: str) -> None:
    asking = {method for method, spec in METHODS.items() if revision in spec.input_required_revisions}
    assert asking == facts.INPUT_REQUIRED[revision]


def test_the_input_required_methods_are_the_tables() -> None:
    every_revision = frozenset().union(*facts.INPUT_REQUIRED.values())
    assert INPUT_REQUIRED_METHODS == types.INPUT_REQUIRED_METHODS == every_revision


@pytest.mark.parametrize("revision", facts.REVISIONS)
def test_which_requests_may_run_as_tasks(revision: str) -> None:
    augmentable = {method: spec.task_capability for method, spec in METHODS.items() if spec.task_capability}
    assert augmentable == facts.TASK_CAPABILITY
    for method, path in augmentable.items():
        receiver = facts.CLIENT_CAPABILITIES if METHODS[method].by_server else facts.SERVER_CAPABILITIES
        expected = path if path[0] in receiver[revision] else None
        assert METHODS[method].task_capability_in(revision) == expected, method


@pytest.mark.parametrize("revision", facts.REVISIONS)
def test_the_task_requests_each_side_declares(revision: str) -> None:
    """``tasks.requests`` of a receiver: each request its peer sends on the revision that may run as a task."""
    sides = (
        ("server", facts.SERVER_CAPABILITIES, facts.CLIENT_REQUESTS),
        ("client", facts.CLIENT_CAPABILITIES, facts.SERVER_REQUESTS),
    )
    for receiver, capabilities, sent in sides:
        expected: dict[str, dict[str, dict[str, object]]] = {}
        if "tasks" in capabilities[revision]:
            for method, (_, _, kind, name) in facts.TASK_CAPABILITY.items():
                if method in sent[revision]:
                    expected.setdefault(kind, {})[name] = {}
        assert task_requests(revision, receiver) == expected, receiver
    only_sampling = task_requests("2025-11-25", "client", lambda spec: spec.method == "sampling/createMessage")
    assert only_sampling == {"sampling": {"createMessage": {}}}


def test_the_header_codec_names_what_the_transport_page_says() -> None:
    assert dict(NAMED_METHODS) == facts.MCP_NAME


@pytest.mark.parametrize("revision", facts.REVISIONS)
@pytest.mark.parametrize("method", EVERY)
def test_what_a_client_may_send(revision: str, method: str) -> None:
    """Given a server that declares everything, a client is refused exactly the methods its revision does not let
    it send as requests."""
    everything = {"tools": {}, "prompts": {}, "resources": {"subscribe": True}, "logging": {}, "completions": {}}
    everything["tasks"] = {"list": {}, "cancel": {}, "requests": {}}
    refusal = send_refusal(method, revision, "client", everything)
    extension = revision == "2026-07-28" and method in facts.TASKS_EXTENSION_REQUESTS
    allowed = method in facts.CLIENT_REQUESTS[revision] or extension or method == "nope/nope"
    assert (refusal is None) == allowed, refusal
    if refusal is not None:
        assert refusal.startswith(method)


@pytest.mark.parametrize("revision", facts.REVISIONS)
@pytest.mark.parametrize("method", sorted(facts.REQUIRED_CAPABILITY))
def test_a_missing_capability_is_refused_where_the_revision_defines_it(revision: str, method: str) -> None:
    spec = spec_for(method, revision) or METHODS[method]  # 2026-07-28: tasks/* of the extension need no capability
    for side, receiver in (("client", facts.SERVER_CAPABILITIES), ("server", facts.CLIENT_CAPABILITIES)):
        refusal = send_refusal(method, revision, side, {})
        if not spec.sent_by(side, revision):
            assert refusal is not None and "did not declare" not in refusal
        elif facts.REQUIRED_CAPABILITY[method][0] in receiver[revision]:
            assert refusal is not None and "did not declare the" in refusal
        else:
            assert refusal is None


def test_declared_reads_wire_dicts_and_capability_objects_alike() -> None:
    wire = {"resources": {"subscribe": False}, "tools": {}}
    typed = ServerCapabilities(resources=ResourcesCapability(subscribe=False), tools=None)
    for capabilities in (wire, typed):
        assert declared(capabilities, ("resources",))
        assert not declared(capabilities, ("resources", "subscribe"))
        assert not declared(capabilities, ("prompts",))
    assert declared(wire, ("tools",)) and not declared(typed, ("tools",))
