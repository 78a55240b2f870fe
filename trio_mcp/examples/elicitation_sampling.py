"""A tool that asks the user (elicitation) and the host's model (sampling), in both protocol eras.

In the legacy era (2025-11-25) ``ctx.elicit()`` and ``ctx.sample()`` send requests to the client and wait for
the answers. On 2026-07-28 (modern) the tool's call ends with an ``InputRequiredResult`` instead; the client
answers and calls again, and the handler runs again from the start with the answers in hand. The handler is the
same code in both eras: keep what it does before its last question free of side effects.

Run it: ``python -m trio_mcp.examples.elicitation_sampling`` (it starts itself as the server, over stdio).
"""

from __future__ import annotations

import sys
from typing import TypedDict

import trio

import trio_mcp
from trio_mcp import Context, Server
from trio_mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    TextContent,
)

server = Server("trip-planner", version="1.0.0")


class TripDetails(TypedDict):
    nights: int
    style: str


@server.tool()
async def plan_trip(destination: str, ctx: Context) -> str:
    """Plan a trip: asks the user for details, then the model for an itinerary."""
    answer = await ctx.elicit(f"How long, and what kind of trip to {destination}?", TripDetails)
    if answer.action != "accept" or answer.content is None:
        return "no trip planned"
    nights, style = answer.content["nights"], answer.content["style"]
    reply = await ctx.sample(f"Suggest a {nights}-night {style} itinerary for {destination}.", max_tokens=200)
    suggestion = reply.content.text if isinstance(reply.content, TextContent) else "(no text)"
    return f"{nights} nights in {destination}: {suggestion} [model {reply.model}, {ctx.protocol_version}]"


async def ask_the_user(params: ElicitRequestParams) -> ElicitResult:
    print(f"  the server asks the user: {params.message!r}")
    return ElicitResult(action="accept", content={"nights": 3, "style": "slow"})


async def ask_the_model(params: CreateMessageRequestParams) -> CreateMessageResult:
    prompt = params.messages[0].content
    print(f"  the server asks the model: {prompt.text if isinstance(prompt, TextContent) else prompt!r}")
    return CreateMessageResult(
        role="assistant", content=TextContent(text="museums, then the river"), model="example-model"
    )


async def main() -> None:
    command = [sys.executable, "-m", "trio_mcp.examples.elicitation_sampling", "serve"]
    for version in ("2025-11-25", "2026-07-28"):
        print(f"protocol {version}:")
        async with trio_mcp.open_stdio_client(
            command, protocol_version=version, elicitation=ask_the_user, sampling=ask_the_model
        ) as client:
            result = await client.call_tool("plan_trip", {"destination": "Lisbon"})
            block = result.content[0]
            print(f"  result: {block.text if isinstance(block, TextContent) else block}")


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        trio.run(server.serve_stdio)
    else:
        trio.run(main)
