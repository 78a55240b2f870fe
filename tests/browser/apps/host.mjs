// The page of a real MCP Apps host, bundled by tests/browser/setup.sh into dist/host.js: the TypeScript SDK v2
// client talks to the MCP server over Streamable HTTP, and the official ext-apps AppBridge connects the app's
// sandboxed frame to it. test_browser_apps.py loads it in headless Chromium.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const APPS = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };
const HOST = { name: "browser-host", version: "1.0.0" };

// Connect (declaring MCP Apps unless `plain`), find the tool with an app, render the app in a sandboxed frame
// bridged to the server, and return what the app's DOM shows once it called the tool itself.
export async function host(url, plain) {
  const client = new Client(HOST, { capabilities: plain ? {} : { extensions: APPS } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const tools = (await client.listTools()).tools;
  const tool = tools.find((item) => item._meta?.ui?.resourceUri);
  if (!tool) return `no app; tools=${tools.map((item) => item.name).join(",")}`;
  const read = await client.readResource({ uri: tool._meta.ui.resourceUri });
  const content = read.contents[0];
  const frame = document.createElement("iframe");
  frame.sandbox = "allow-scripts allow-same-origin"; // same origin only so that the test can read the frame's DOM
  frame.srcdoc = content.text;
  document.body.append(frame);
  const bridge = new AppBridge(client, HOST, { serverTools: {} });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  for (let i = 0; i < 200; i++) {
    const shown = frame.contentDocument?.getElementById("out")?.textContent;
    if (shown) return `${tool.name} ${content.mimeType} app shows: ${shown}`;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return "the app showed nothing within 10 s";
}
