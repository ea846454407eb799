/**
 * Drill (#28, hole 2), the whole app: an agent that calls the model API itself, through the
 * sandbox's proxy (curl, with the key the proxy adds, a model of its choosing), spends money the
 * CLI never reports. The built app, real Postgres, the real Claude CLI in the real sandbox, the
 * fake Messages API, GitHub stood in for.
 *
 * What must hold: the turn's recorded cost holds what the agent spent that way, so the
 * conversation limit counts it and the next comment is refused; and the Files API the key also
 * opens is out of the agent's reach.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BRIDGE_URL } from "../../src/sandbox/init-script.js";
import { formatSpent } from "../../src/spend/spend-limits.js";
import { createTestDatabase } from "../helpers/db.js";
import { REPO, startStack, type Stack } from "../helpers/e2e-stack.js";
import { replies, type FakeRequest } from "../helpers/fake-anthropic.js";

/** The agent's own calls name the dearest model and report a million input tokens: $15. */
const SIDE_MODEL = "claude-opus-4-1";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
    allowedTools: [Bash]
    conversationLimitUsd: 5
    changes: "off"
`;

const SIDE_BODY = JSON.stringify({
  model: SIDE_MODEL,
  max_tokens: 64_000,
  stream: true,
  messages: [{ role: "user", content: "spend" }],
});
const AGENT_SCRIPT = [
  `curl -s -o /dev/null -w 'files %{http_code}\\n' ${BRIDGE_URL}/v1/files`,
  `curl -s -o /dev/null -w 'side %{http_code}\\n' -X POST -H 'content-type: application/json' ` +
    `-H 'anthropic-version: 2023-06-01' --data '${SIDE_BODY}' ${BRIDGE_URL}/v1/messages`,
].join("\n");

const db = await createTestDatabase();
let stack: Stack;

function sawToolResult(req: FakeRequest): boolean {
  const last = req.body?.messages?.at(-1);
  return Array.isArray(last?.content) && last.content.some((b) => b.type === "tool_result");
}

beforeAll(async () => {
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    config: CONFIG,
    anthropic: {
      usage: (req) => ({
        input_tokens: req.body?.model === SIDE_MODEL ? 1_000_000 : 500,
        output_tokens: 10,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      }),
      // Stateless: the agent's own call, the CLI's first call (run the script), its last.
      defaultReply: (req) => {
        if (req.body?.model === SIDE_MODEL) return replies.text("side channel answer");
        if (sawToolResult(req)) return replies.text("DONE");
        return JSON.stringify(req.body?.messages ?? []).includes("SPEND-IT")
          ? replies.toolUse("Bash", { command: AGENT_SCRIPT, description: "spend" })
          : replies.text("ok");
      },
    },
  });
}, 180_000);

afterAll(async () => {
  await stack?.close();
});

describe(
  "the agent's own model calls count toward the conversation limit (#28)",
  { timeout: 240_000 },
  () => {
    it("a turn that spent $15 through the proxy records it, and the next comment is refused at the $5 limit", async () => {
      const issue = stack.gh.addIssue({
        repo: REPO,
        title: "Look into it",
        body: "Please investigate.",
        user: "alice",
      }).number as number;
      const first = await stack.finishedTask(await stack.comment(issue, "@tether SPEND-IT"));
      expect(first).toMatchObject({ status: "succeeded" });
      // The CLI's own two calls cost about a cent; the agent's call $15.
      expect(Number(first.cost_usd)).toBeGreaterThanOrEqual(15);

      const reached = stack.api.requests.filter((r) => r.path !== "/v1/messages");
      expect(reached.map((r) => `${r.method} ${r.path}`)).toEqual([]);
      const toolOutput = JSON.stringify(stack.api.messageRequests().at(-1)?.body?.messages);
      expect(toolOutput).toContain("files 403");
      expect(toolOutput).toContain("side 200");

      const calls = stack.api.messageRequests().length;
      const second = await stack.finishedTask(await stack.comment(issue, "@tether one more"));
      expect(second).toMatchObject({ status: "cancelled", outcome: "limit_refused" });
      expect(stack.api.messageRequests().length).toBe(calls);
      const refusal = String(stack.taskComments(issue, second.id as number)[0]?.body);
      expect(refusal).toContain(`has spent **${formatSpent(Number(first.cost_usd))}**`);
    });
  },
);
