// The benchmark's echo server, written with the official TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// package.json next to this file; installed by benchmarks/setup.sh).
//
//   node benchmarks/ts/echo_server.mjs --transport stdio
//   node benchmarks/ts/echo_server.mjs --transport http [--host 127.0.0.1] [--port 8000]
//
// Tools (the same as benchmarks/echo_server.py):
//   echo(text: string) -> string              the text unchanged
//   sleep(seconds: number, marker: string)    appends "start <unix time>" to the file `marker`, sleeps, then
//                                             "cancelled <t>" (when its request is aborted) or "done <t>"
//
// HTTP follows the SDK's documented pattern (one McpServer + StreamableHTTPServerTransport per session, kept in a
// map by Mcp-Session-Id) on plain node:http rather than Express, so the peer pays for no framework. SDK 1.32 speaks
// revisions up to 2025-11-25: it has no 2026-07-28 stateless mode.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

function mark(path, word) {
  // Sub-millisecond unix time (Date.now() has whole milliseconds only).
  const now = (performance.timeOrigin + performance.now()) / 1000;
  appendFileSync(path, `${word} ${now.toFixed(6)}\n`);
}

function makeServer() {
  const server = new McpServer({ name: "bench-echo-ts", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Return the text unchanged.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool(
    "sleep",
    {
      description: "Sleep for `seconds`, recording start, cancellation or completion in the file `marker`.",
      inputSchema: { seconds: z.number(), marker: z.string() },
    },
    async ({ seconds, marker }, extra) => {
      mark(marker, "start");
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, seconds * 1000);
        extra.signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            mark(marker, "cancelled");
            reject(new Error("cancelled"));
          },
          { once: true },
        );
      });
      mark(marker, "done");
      return { content: [{ type: "text", text: `slept ${seconds}` }] };
    },
  );
  return server;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function sendError(res, status, message) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message } }));
}

async function serveHttp(host, port) {
  const transports = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      if (!req.url.startsWith("/mcp")) {
        res.writeHead(404).end();
        return;
      }
      const sessionId = req.headers["mcp-session-id"];
      let transport = sessionId ? transports.get(sessionId) : undefined;
      if (req.method === "POST") {
        let body;
        try {
          body = JSON.parse(await readBody(req));
        } catch {
          sendError(res, 400, "Parse error");
          return;
        }
        if (transport === undefined) {
          if (sessionId !== undefined) {
            sendError(res, 404, "Session not found");
            return;
          }
          if (!isInitializeRequest(body)) {
            sendError(res, 400, "Bad Request: No valid session ID provided");
            return;
          }
          const created = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (id) => transports.set(id, created),
          });
          created.onclose = () => {
            if (created.sessionId) transports.delete(created.sessionId);
          };
          await makeServer().connect(created);
          transport = created;
        }
        await transport.handleRequest(req, res, body);
      } else if (transport !== undefined) {
        await transport.handleRequest(req, res);
      } else {
        sendError(res, sessionId ? 404 : 400, "Bad Request: No valid session ID provided");
      }
    } catch (error) {
      if (!res.headersSent) sendError(res, 500, String(error));
    }
  });
  await new Promise((resolve) => httpServer.listen(port, host, resolve));
  process.stdout.write(`listening ${httpServer.address().port}\n`);
}

const { values } = parseArgs({
  options: {
    transport: { type: "string", default: "stdio" },
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "8000" },
  },
});
if (values.transport === "stdio") {
  await makeServer().connect(new StdioServerTransport());
} else if (values.transport === "http") {
  await serveHttp(values.host, Number(values.port));
} else {
  console.error(`unknown transport ${values.transport}`);
  process.exit(2);
}
