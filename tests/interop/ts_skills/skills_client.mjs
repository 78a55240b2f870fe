// The TypeScript SDK v2 as a skills host (its ext/skills SkillsClient) against a server started over stdio:
//   node skills_client.mjs <command> [args...]
// Lists the skills, then reads every file of each one, verified; prints one JSON line per skill on stdout:
// {"uri", "frontmatter", "files": {uri: text}} or, for a file that fails verification, {"uri", "refused": reason}.
import { Client } from "@modelcontextprotocol/client";
import { SkillsClient, SkillVerificationError } from "@modelcontextprotocol/client/ext/skills";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "ts-skills-host", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
const skills = new SkillsClient(client);
if (!skills.supported) {
  console.error("the server did not declare the skills extension");
  process.exit(1);
}
const { skills: entries } = await skills.list();
for (const skill of entries) {
  const files = {};
  let refused;
  for (const resource of skill.resources === "dynamic" ? [] : skill.resources) {
    try {
      const file = await skills.read(skill, resource.uri);
      files[resource.uri] = file.text ?? Buffer.from(file.bytes).toString("base64");
    } catch (error) {
      if (!(error instanceof SkillVerificationError)) throw error;
      refused = `${error.reason}: ${error.uri}`;
      break;
    }
  }
  const directory = skills.directoryRead
    ? (await skills.readDirectory(skill.uri.slice(0, -"/SKILL.md".length))).resources.map((item) => item.uri)
    : null;
  console.log(JSON.stringify({ uri: skill.uri, frontmatter: skill.frontmatter, files, refused, directory }));
}
await client.close();
