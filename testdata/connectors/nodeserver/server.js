// nodeserver: a test MCP server (stdio, newline-delimited JSON-RPC) whose
// tool needs its package.json dependency, so it only works after npm ci.
const readline = require("readline");
const tinydep = require("tinydep");

const tools = [
  {
    name: "search",
    description: "Answers every query with tinydep's answer.",
    inputSchema: { type: "object", properties: { q: { type: "string" } } },
  },
];

function handle(msg) {
  const params = msg.params || {};
  switch (msg.method) {
    case "initialize":
      return {
        protocolVersion: params.protocolVersion || "2024-11-05",
        capabilities: { tools: {} },
        serverInfo: { name: "nodeserver", version: "1.0.0" },
      };
    case "ping":
      return {};
    case "tools/list":
      return { tools };
    case "tools/call":
      if (params.name === "search") {
        const q = (params.arguments || {}).q || "";
        return { content: [{ type: "text", text: q + ": " + tinydep.answer }] };
      }
      throw new Error("no tool " + params.name);
    default:
      throw new Error("method not found: " + msg.method);
  }
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.id === undefined) return; // a notification
  let out;
  try {
    out = { jsonrpc: "2.0", id: msg.id, result: handle(msg) };
  } catch (e) {
    out = { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: String(e.message) } };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
rl.on("close", () => process.exit(0));
