// A tiny MCP server over stdio (newline-delimited JSON-RPC), for tests of the operator's MCP
// servers (test/integration/mcp-servers.test.ts). Its one tool, `whoami`, answers with a digest
// of the secret its environment holds (MCP_TEST_SECRET), so a test sees the server had it,
// without the answer carrying the secret itself. With `--fail` it exits at once.
import { createHash } from "node:crypto";
import readline from "node:readline";

if (process.argv.includes("--fail")) process.exit(3);
const secret = process.env.MCP_TEST_SECRET ?? "";
const digest = createHash("sha256").update(secret).digest("hex").slice(0, 16);
const send = (msg) => process.stdout.write(`${JSON.stringify(msg)}\n`);
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.id === undefined) return; // a notification
  const reply = (result) => send({ jsonrpc: "2.0", id: msg.id, result });
  switch (msg.method) {
    case "initialize":
      return reply({
        protocolVersion: msg.params?.protocolVersion ?? "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "test-stdio", version: "1.0.0" },
      });
    case "tools/list":
      return reply({
        tools: [
          {
            name: "whoami",
            description: "Says which secret this server holds (as a digest).",
            inputSchema: { type: "object", properties: {} },
          },
        ],
      });
    case "tools/call":
      return reply({ content: [{ type: "text", text: `MCP-STDIO-ANSWER digest=${digest}` }] });
    default:
      return send({
        jsonrpc: "2.0",
        id: msg.id,
        error: { code: -32601, message: "no such method" },
      });
  }
});
