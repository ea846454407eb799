/**
 * The operator's MCP servers (#39) end to end: the built app with TETHER_MCP_SERVERS set, a
 * repository whose .github/tether.yml gives its Claude agent two of them (a stdio server holding
 * a secret in its `env`, which runs in a sandbox of its own, and one that fails to start), a
 * `@tether` comment, and the fake Messages API scripting the tool call
 * `mcp__secretive__whoami`. The real Claude CLI runs in bwrap; GitHub is the stand-in.
 *
 * What must hold: the server's answer reaches the model and the posted answer; the call is
 * counted per server on the task and in /api/stats; the server that did not start is named in
 * the answer's footer; the secret is in no comment of the thread.
 */
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { answerOf, newIssue } from "../helpers/e2e-thread.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import { replies, type FakeRequest } from "../helpers/fake-anthropic.js";

const SERVER = fileURLToPath(new URL("../helpers/mcp-stdio-server.mjs", import.meta.url));
const SECRET = `mcp-secret-${randomBytes(12).toString("hex")}`;
const BROKEN_SECRET = `mcp-broken-${randomBytes(12).toString("hex")}`;
const DASHBOARD_TOKEN = "e2e-dashboard-token-0123456789abcdef";
const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
    mcpServers: [secretive, broken]
`;

const db = await createTestDatabase();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-e2e-mcp-"));
let stack: Stack;

beforeAll(async () => {
  const file = path.join(dir, "mcp-servers.json");
  fs.writeFileSync(
    file,
    JSON.stringify({
      mcpServers: {
        secretive: { command: "node", args: [SERVER], env: { MCP_TEST_SECRET: SECRET } },
        broken: {
          command: "node",
          args: [SERVER, "--fail"],
          env: { MCP_TEST_SECRET: BROKEN_SECRET },
        },
      },
    }),
  );
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    config: CONFIG,
    env: { TETHER_MCP_SERVERS: file, TETHER_DASHBOARD_TOKEN: DASHBOARD_TOKEN },
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The tool results a request carries, as text. */
function toolResultsOf(req: FakeRequest): string[] {
  const out: string[] = [];
  for (const m of req.body?.messages ?? []) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type !== "tool_result") continue;
      out.push(typeof b.content === "string" ? b.content : JSON.stringify(b.content));
    }
  }
  return out;
}

describe("the operator's MCP servers through the built app (#39)", { timeout: 240_000 }, () => {
  it("a stdio server holding a secret answers the agent's tool call: the answer reaches the model and the thread, the call is counted, the server that failed is named in the footer, and the secret is in no comment", async () => {
    const n = newIssue(stack, "Which secret?");
    const from = stack.api.messageRequests().length;
    const digest = createHash("sha256").update(SECRET).digest("hex").slice(0, 16);
    // The model calls the tool, then answers with what the tool said (as the request carried it).
    stack.api.script(replies.toolUse("mcp__secretive__whoami", {}));
    stack.api.setDefault((req) =>
      replies.text(`The server says: ${toolResultsOf(req).join(" | ")}`),
    );
    const task = await stack.finishedTask(
      await stack.comment(n, "@tether ask the secretive server who it is"),
      180_000,
    );
    expect(task, stack.app.output().slice(-4000)).toMatchObject({
      status: "succeeded",
      mcp_tool_calls: { secretive: 1, broken: 0 },
    });

    // The server's tool was in the first request and its answer reached the model.
    const reqs = stack.api.messageRequests().slice(from);
    const tools = (reqs[0]!.body?.tools ?? []).map((t) => t.name);
    expect(tools).toContain("mcp__secretive__whoami");
    const sent = JSON.stringify(reqs.map((r) => r.body));
    expect(sent).toContain(`MCP-STDIO-ANSWER digest=${digest}`);
    expect(sent).not.toContain(SECRET);

    // The answer, made of what the tool said, is posted; its footer names the server that did not start.
    const answer = answerOf(stack, n, task);
    expect(answer).toContain(`MCP-STDIO-ANSWER digest=${digest}`);
    expect(answer).toMatch(/MCP server not started[^\n]*`broken`/);
    expect(answer).not.toMatch(/not started[^\n]*`secretive`/);

    // No comment of the thread (the acknowledgement, progress, the answer) holds a secret.
    const thread = JSON.stringify(stack.gh.comments(REPO, n));
    expect(thread).not.toContain(SECRET);
    expect(thread).not.toContain(BROKEN_SECRET);
    expect(stack.app.output()).not.toContain(SECRET);

    // /api/stats counts the call per server.
    const res = await fetch(`${stack.app.url}/api/stats?range=24h`, {
      headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` },
    });
    expect(res.status).toBe(200);
    const stats = (await res.json()) as { mcpToolCalls?: Record<string, number> };
    expect(stats.mcpToolCalls).toEqual({ secretive: 1, broken: 0 });
  });
});
