// The TypeScript SDK v2 serving a folder of skill folders over stdio (its ext/skills catalog):
//   node skills_server.mjs <folder of skill folders>
import { McpServer } from "@modelcontextprotocol/server";
import { loadSkills } from "@modelcontextprotocol/server/ext/skills/node";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";

const mcp = new McpServer({ name: "ts-skills", version: "1.0.0" });
const skills = await loadSkills(process.argv[2]);
skills.attach(mcp);
await mcp.connect(new StdioServerTransport());
