// The app's own script (the official ext-apps App), bundled by tests/browser/setup.sh into dist/app.js and
// inlined into the app's HTML by test_browser_apps.py: it calls the server's tool through the host and shows
// the result in its DOM.
import { App } from "@modelcontextprotocol/ext-apps";

const app = new App({ name: "clock-app", version: "1.0.0" });
await app.connect();
const result = await app.callServerTool({ name: "get_time", arguments: {} });
document.getElementById("out").textContent = result.content[0].text;
