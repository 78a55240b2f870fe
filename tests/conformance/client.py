"""The conformance client: trio_mcp's HTTP client as the official suite's ``conformance client`` drives it.

    python tests/conformance/client.py <server-url>

The suite starts a mock server per scenario and runs this script with the mock's URL as the last argument and
``MCP_CONFORMANCE_SCENARIO`` naming the scenario; 0.2.0-alpha adds ``MCP_CONFORMANCE_PROTOCOL_VERSION`` (the
revision the mock speaks) and, for some scenarios, ``MCP_CONFORMANCE_CONTEXT`` (JSON test data). What each
scenario expects of a client is read from its source (repository ``modelcontextprotocol/conformance``,
``src/scenarios/client/``); the handlers below cite the file. Authorization scenarios (``auth/*``) go through
``trio_mcp.client._oauth.OAuthClientProvider`` (see ``with_oauth``); the ES256 ones (client-credentials-jwt,
DPoP) use the ``auth`` extra; the skills scenarios (``sep-2640-*``) use ``list_skills`` and ``read_skill_file``.
Anything else it does not know exits 2.

Exit status 0 when the scenario's script ran to the end and every answer looked right; otherwise non-zero with a
one-line reason on stderr (1: the scenario failed, 2: a scenario this client does not implement). The suite's
verdict comes from the checks its mock server records, not from this exit status.

Protocol revision: ``MCP_CONFORMANCE_PROTOCOL_VERSION`` when the suite sets it, else 2025-11-25 (0.1.16 sets
nothing, and every 0.1.16 client scenario is a 2025-11-25 one). The client is pinned to that revision rather
than probing ("auto"): the scenarios test one revision each, not era detection, and several mocks answer any
unknown method, ``server/discover`` included, with an empty result, which "auto" does not survive over HTTP
(docs/conformance.md). ``TRIO_MCP_CONFORMANCE_VERSION`` overrides the choice (``auto`` included) for
experiments; CI never sets it.

Public API only: ``trio_mcp.open_http_client`` and, for the two scenarios whose mocks depend on the standalone
GET stream being open before the next POST, ``trio_mcp.connect_client`` over a
``trio_mcp.transports.streamable_http_client.StreamableHttpSessionStream`` (see ``open_session_client``); for
auth/*, ``trio_mcp.client._oauth.OAuthClientProvider`` (not re-exported from ``trio_mcp`` yet).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

import trio_mcp
from trio_mcp.client._oauth import AuthorizationServer, OAuthClientProvider, exchange_id_token
from trio_mcp.transports.streamable_http_client import StreamableHttpSessionStream
from trio_mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    Root,
    TextContent,
)

#: Every scenario must finish well inside the suite's per-client timeout (run_suites.py gives 60 s).
SCENARIO_TIMEOUT = 40.0
DEFAULT_VERSION = "2025-11-25"
#: How long open_session_client() waits for the standalone GET stream.
STANDALONE_WAIT = 5.0


class ScenarioFailed(Exception):
    """The scenario did not go as its source says it should; the message is the one-line reason."""


class Unsupported(Exception):
    """A scenario this client deliberately does not implement (the message says why)."""


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def expect(condition: bool, reason: str) -> None:
    if not condition:
        raise ScenarioFailed(reason)


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if not raw:
        return {}
    loaded = json.loads(raw)
    return loaded if isinstance(loaded, dict) else {}


@asynccontextmanager
async def open_session_client(url: str, version: str, **options: Any) -> AsyncIterator[trio_mcp.Client]:
    """What ``open_http_client(url, protocol_version=version)`` does for a legacy revision (a
    ``StreamableHttpSessionStream`` under a ``Client``), except that it returns only once the standalone GET
    stream is established (or after ``STANDALONE_WAIT`` seconds).

    ``open_http_client`` opens that stream after ``notifications/initialized`` but does not wait for it, so the
    next POSTs can overtake it (observed: GET sent 5-380 ms after the following tools/call). Two mocks depend on
    the order: the TypeScript SDK server of elicitation-sep1034-client-defaults sends its elicitation/create on
    the GET stream and drops it when none is open yet (the call then hangs), and sse-retry takes whatever GET
    comes first for the reconnection it times.
    """
    async with trio.open_nursery() as nursery:
        stream = await StreamableHttpSessionStream.connect(nursery, url)
        client = await trio_mcp.connect_client(nursery, stream, protocol_version=version, **options)
        try:
            with trio.move_on_after(STANDALONE_WAIT):
                await stream.standalone_connected.wait()
            yield client
        finally:
            await client.aclose()


# -- callbacks a conformance host answers with ---------------------------------------------------------------------


async def accept_with_defaults(params: ElicitRequestParams) -> ElicitResult:
    """Accept every form, sending nothing but the schema's defaults (what SEP-1034 asks a client to fill in)."""
    if not isinstance(params, ElicitRequestFormParams):
        return ElicitResult(action="decline")
    return ElicitResult(action="accept", content=trio_mcp.fill_elicitation_defaults(params.requested_schema, {}))


async def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(text="conformance sampling reply"), model="conformance-model"
    )


async def roots() -> list[Root]:
    return [Root(uri="file:///tmp/conformance-root", name="conformance")]


# -- scenarios -------------------------------------------------------------------------------------------------------


async def initialize(url: str, version: str) -> None:
    """initialize.ts: an initialize with 2025-06-18 or 2025-11-25 and clientInfo; the mock declares no
    capabilities and answers GET with 400 (which must not be fatal). It answers any other request with {}."""
    async with trio_mcp.open_http_client(url, protocol_version=version) as client:
        expect(client.protocol_version == version, f"negotiated {client.protocol_version}, asked for {version}")
        expect(client.server_info.name == "test-server", f"unexpected serverInfo {client.server_info}")
        await client.ping()


async def tools_call(url: str, version: str) -> None:
    """tools_call.ts: list tools, call add_numbers {a, b} (number arguments)."""
    async with trio_mcp.open_http_client(url, protocol_version=version) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        expect("add_numbers" in names, f"add_numbers not listed (got {names})")
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        expect(not result.is_error, f"add_numbers failed: {texts(result)}")
        expect(texts(result) == ["The sum of 5 and 3 is 8"], f"unexpected add_numbers result {texts(result)}")


async def elicitation_defaults(url: str, version: str) -> None:
    """elicitation-defaults.ts: declare elicitation, call test_client_elicitation_defaults, and accept the
    elicitation with every omitted field filled from the schema's defaults. (The mock sends elicitation/create
    on the standalone GET stream: see open_session_client.)"""
    async with open_session_client(url, version, elicitation=accept_with_defaults) as client:
        await client.list_tools()
        result = await client.call_tool("test_client_elicitation_defaults", {})
        text = " ".join(texts(result))
        expect(text.startswith("Elicitation completed: "), f"the tool reported {text!r}")
        content = json.loads(text[len("Elicitation completed: ") :])
        wanted = {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}
        expect(content == wanted, f"the server received {content}, not the defaults {wanted}")


async def sse_retry(url: str, version: str) -> None:
    """sse-retry.ts: the tools/call SSE stream sends a priming event (id, retry: 500) and closes after 50 ms;
    the client must reconnect with GET after the retry delay, with Last-Event-ID, and read the result there.
    The mock's initialize answer says 2025-03-26, which the client must accept."""
    async with open_session_client(url, version) as client:  # the standalone GET first: see there
        await client.list_tools()
        result = await client.call_tool("test_reconnection", {})
        expect(texts(result) == ["Reconnection test completed successfully"], f"unexpected result {texts(result)}")


async def request_metadata(url: str, version: str) -> None:
    """request-metadata.ts (2026-07-28): every POST carries MCP-Protocol-Version equal to _meta's
    protocolVersion, and _meta has clientCapabilities and clientInfo. The first request is refused with
    -32022 listing the supported versions: the client must retry with one of them. Declaring roots, sampling
    and elicitation lets the mock check their shapes too. The mock then declares no capabilities, so the only
    further request a client may send is server/discover (what ping() is on 2026-07-28)."""
    async with trio_mcp.open_http_client(
        url, protocol_version=version, roots=roots, sampling=sample, elicitation=accept_with_defaults
    ) as client:
        expect(client.protocol_version == "2026-07-28", f"ended up on {client.protocol_version}")
        await client.ping()


async def request_state(url: str, version: str) -> None:
    """mrtr-client.ts (SEP-2322): InputRequiredResult rounds. test_mrtr_echo_state sends a requestState that
    must come back byte for byte, under a new JSON-RPC id; test_mrtr_no_state sends none, so none may be sent
    back; test_mrtr_unrelated, called while echo_state's round is open, must carry neither inputResponses nor
    requestState; test_mrtr_no_result_type has no resultType and is therefore complete."""
    connected: list[trio_mcp.Client] = []
    unrelated: list[Any] = []

    async def elicitation(params: ElicitRequestParams) -> ElicitResult:
        if params.message == "Please confirm to continue" and connected and not unrelated:
            # Another request while this tool's input round is open: it must not inherit the round's state.
            unrelated.append(await connected[0].call_tool("test_mrtr_unrelated", {}))
        return ElicitResult(action="accept", content={"confirmed": True})

    async with trio_mcp.open_http_client(url, protocol_version=version, elicitation=elicitation) as client:
        connected.append(client)
        names = {tool.name for tool in (await client.list_tools()).tools}
        expect({"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated"} <= names, f"tools: {names}")
        for name, text in [
            ("test_mrtr_echo_state", "echo-state-ok"),
            ("test_mrtr_no_state", "no-state-ok"),
            ("test_mrtr_no_result_type", "no-result-type-test-ok"),
        ]:
            result = await client.call_tool(name, {})
            expect(texts(result) == [text], f"{name} returned {texts(result)}, expected [{text!r}]")
        expect(len(unrelated) == 1 and texts(unrelated[0]) == ["unrelated-ok"], f"test_mrtr_unrelated: {unrelated}")


async def standard_headers(url: str, version: str) -> None:
    """http-standard-headers.ts (SEP-2243): Mcp-Method on every POST, Mcp-Name (params.name or params.uri,
    verbatim) on tools/call, resources/read and prompts/get. Exercise every method the mock serves."""
    async with trio_mcp.open_http_client(url, protocol_version=version) as client:
        for tool in (await client.list_tools()).tools:
            result = await client.call_tool(tool.name, {})
            expect(not result.is_error, f"{tool.name} failed: {texts(result)}")
        resources = (await client.list_resources()).resources
        expect(len(resources) == 2, f"expected two resources, got {resources}")
        for resource in resources:
            await client.read_resource(resource.uri)
        for prompt in (await client.list_prompts()).prompts:
            await client.get_prompt(prompt.name)


async def custom_headers(url: str, version: str) -> None:
    """http-custom-headers.ts (SEP-2243): arguments of x-mcp-header parameters are mirrored into
    Mcp-Param-<Name> headers (Base64-wrapped where unsafe; omitted when null). The calls to make come in the
    context's toolCalls; the tools must be listed first so the client knows the annotations."""
    calls = context().get("toolCalls")
    if not isinstance(calls, list) or not calls:
        raise ScenarioFailed("MCP_CONFORMANCE_CONTEXT has no toolCalls")
    async with trio_mcp.open_http_client(url, protocol_version=version) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        for call in calls:
            expect(call["name"] in names, f"{call['name']} is not listed (got {sorted(names)})")
            result = await client.call_tool(call["name"], call.get("arguments") or {})
            expect(not result.is_error, f"{call['name']} failed: {texts(result)}")


def placeholder(schema: Any) -> Any:
    """A value of the type a property schema names."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    values: dict[Any, Any] = {
        "string": "us-west1",
        "integer": 1,
        "number": 1,
        "boolean": True,
        "null": None,
        "object": {},
        "array": [],
    }
    return values.get(kind, "x")


async def invalid_tool_headers(url: str, version: str) -> None:
    """http-invalid-tool-headers.ts (SEP-2243): every tool but valid_tool has an invalid x-mcp-header
    annotation (ten in 0.2.0-alpha.11's source, eleven in alpha.12) and must be dropped; valid_tool must stay
    usable. Call every tool the client kept."""
    async with trio_mcp.open_http_client(url, protocol_version=version) as client:
        tools = (await client.list_tools()).tools
        expect([tool.name for tool in tools] == ["valid_tool"], f"kept {[tool.name for tool in tools]}")
        for tool in tools:
            properties = tool.input_schema.get("properties", {})
            arguments = {name: placeholder(properties.get(name)) for name in tool.input_schema.get("required", [])}
            result = await client.call_tool(tool.name, arguments)
            expect(not result.is_error, f"{tool.name} failed: {texts(result)}")


async def ref_no_deref(url: str, version: str) -> None:
    """json-schema-ref-deref.ts (SEP-2106): a tool schema with a $ref to a network URL (a canary on the mock);
    list the tools and never fetch it. The schema must come through unchanged, the $ref unresolved."""
    async with trio_mcp.open_http_client(url, protocol_version=version) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        expect("lookup_user" in tools, f"lookup_user not listed (got {sorted(tools)})")
        properties = tools["lookup_user"].input_schema["properties"]
        expect(properties["id"] == {"$ref": "#/$defs/userId"}, f"local $ref altered: {properties['id']}")
        expect(set(properties["profile"]) == {"$ref"}, f"network $ref altered: {properties['profile']}")


async def schema_preservation(url: str, version: str) -> None:
    """json-schema-2020-12-preservation.ts (SEP-1613, SEP-2106): list the tools, then send the inputSchema of
    json_schema_2020_12_tool, exactly as received, back through json_schema_echo {schema}."""
    async with trio_mcp.open_http_client(url, protocol_version=version) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        expect({"json_schema_2020_12_tool", "json_schema_echo"} <= tools.keys(), f"tools: {sorted(tools)}")
        schema = tools["json_schema_2020_12_tool"].input_schema
        expect(schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema", f"schema: {schema}")
        result = await client.call_tool("json_schema_echo", {"schema": schema})
        expect(texts(result) == ["echoed"], f"json_schema_echo returned {texts(result)}")


async def skills_no_prefetch(url: str, version: str) -> None:
    """sep-2640-client-no-prefetch.ts: list the skills as a host building its registry does, and read no file
    (nothing is loaded, so nothing may be fetched)."""
    async with trio_mcp.open_http_client(url, protocol_version=version) as client:
        skills = await client.list_skills()
        expect([skill.name for skill in skills] == ["pdf-processing"], f"listed {skills}")


async def skills_verify(url: str, version: str) -> None:
    """sep-2640-client-verify-{digest,size,frontmatter}.ts: load the listed skill (read its SKILL.md, verified),
    and read its supporting file only if SKILL.md passed. The mock serves a SKILL.md that fails one check, so
    the load must be refused with SkillVerificationError and references/FORMS.md never read."""
    async with trio_mcp.open_http_client(url, protocol_version=version) as client:
        (skill,) = await client.list_skills()
        try:
            await client.read_skill_file(skill)
        except trio_mcp.SkillVerificationError as exc:
            print(f"refused as it should be: {exc}", file=sys.stderr)
            return
        await client.read_skill_file(skill, "references/FORMS.md")
        raise ScenarioFailed("the tampered SKILL.md was accepted")


#: The Client ID Metadata Document URL the basic-cimd mock expects (it is never fetched by the mock's flow).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
#: SEP-990: exchange the context's ID token at the IdP for an ID-JAG, then the jwt-bearer grant at the AS.
TOKEN_EXCHANGE_SCENARIOS = {"auth/cross-app-access-complete-flow", "auth/enterprise-managed-authorization"}


async def with_oauth(url: str, version: str) -> None:
    """auth/*: the OAuth client (trio_mcp.client._oauth). On the first 401 it discovers PRM and the
    authorization server, registers (DCR, CIMD or the context's pre-registered credentials), authorizes with
    PKCE through the mock's immediate 302, gets a token and retries; a 403 insufficient_scope steps up.
    Scenarios that expect a refusal (resource-mismatch, iss-*, metadata-issuer-mismatch, scope-retry-limit)
    end with a failed request, which is fine for them (allowClientError)."""
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    data = context()
    client_credentials = {"auth/client-credentials-basic", "auth/client-credentials-jwt"}
    grant: Any = "client_credentials" if scenario in client_credentials else "authorization_code"
    assertion: Any = None
    if scenario == "auth/wif-jwt-bearer":  # SEP-1933: the workload JWT in the context is the assertion
        grant = "jwt_bearer"

        async def assertion(http: Any, server: AuthorizationServer, resource: str | None) -> str:
            return str(data["valid_jwt"])
    elif scenario in TOKEN_EXCHANGE_SCENARIOS:
        grant = "jwt_bearer"

        async def assertion(http: Any, server: AuthorizationServer, resource: str | None) -> str:
            return await exchange_id_token(
                http,
                data["idp_token_endpoint"],
                id_token=data["idp_id_token"],
                audience=server.issuer or server.token_endpoint,
                resource=resource,
                client_id=data["idp_client_id"],
            )

    provider = OAuthClientProvider(
        client_name="trio_mcp conformance client",
        client_id=data.get("client_id"),
        client_secret=data.get("client_secret"),
        client_issuer=data.get("issuer"),
        private_key_pem=data.get("private_key_pem"),  # client-credentials-jwt: private_key_jwt (SEP-1046)
        signing_algorithm=data.get("signing_algorithm", "ES256"),
        client_metadata_url=CIMD_URL,
        grant=grant,
        assertion_provider=assertion,
    )
    try:
        async with trio_mcp.open_http_client(
            url, protocol_version=version, auth=provider, request_timeout=10
        ) as client:
            tools = (await client.list_tools()).tools
            for tool in tools:
                await client.call_tool(tool.name, {})
    except Exception as exc:  # noqa: BLE001 - report the authorization failure behind it, if there is one
        if provider.last_error is not None:
            raise ScenarioFailed(f"authorization failed: {provider.last_error}") from exc
        raise


SCENARIOS: dict[str, Callable[[str, str], Awaitable[None]]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": ref_no_deref,
    "json-schema-2020-12-preservation": schema_preservation,
    "sep-2640-client-no-prefetch": skills_no_prefetch,
    "sep-2640-client-verify-digest": skills_verify,
    "sep-2640-client-verify-size": skills_verify,
    "sep-2640-client-verify-frontmatter": skills_verify,
}


async def run(scenario: str, url: str, version: str) -> None:
    handler = SCENARIOS.get(scenario)
    if handler is None and scenario.startswith("auth/"):
        handler = with_oauth
    if handler is None:
        raise Unsupported(f"scenario {scenario!r} is not implemented by this client")
    with trio.fail_after(SCENARIO_TIMEOUT):
        await handler(url, version)


def leaf(error: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups (Python 3.10 has them from a backport)."""
    while getattr(error, "exceptions", None):
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return error


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s %(levelname)s: %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(argv) != 2 or not scenario:
        print("usage: MCP_CONFORMANCE_SCENARIO=<name> client.py <server-url>", file=sys.stderr)
        return 2
    version = (
        os.environ.get("TRIO_MCP_CONFORMANCE_VERSION")
        or os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
        or DEFAULT_VERSION
    )
    try:
        try:
            trio.run(run, scenario, argv[1], version)
        except Exception as error:
            if getattr(error, "exceptions", None) is None:  # not an exception group
                raise
            raise leaf(error) from error
    except Unsupported as exc:
        print(f"{scenario}: not run: {exc}", file=sys.stderr)
        return 2
    except ScenarioFailed as exc:
        print(f"{scenario}: FAILED: {exc}", file=sys.stderr)
        return 1
    except trio.TooSlowError:
        print(f"{scenario}: FAILED: did not finish within {SCENARIO_TIMEOUT:.0f} s", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - any failure is reported as one line
        print(f"{scenario}: FAILED: {type(exc).__name__}: {exc}".replace("\n", " "), file=sys.stderr)
        return 1
    print(f"{scenario}: ok ({version})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
