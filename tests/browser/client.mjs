// The page's MCP client: the official TypeScript SDK, bundled by setup.sh into dist/client.js.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// Connect to the MCP endpoint at `url`, list the tools, call `add`; returns what a test can compare.
export async function run(url) {
  const client = new Client({ name: "browser-page", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((tool) => tool.name);
  const result = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
  const session = transport.sessionId ? "session" : "no session";
  await transport.terminateSession();
  await client.close();
  return `tools=${tools.join(",")} add=${result.content[0].text} ${session}`;
}
