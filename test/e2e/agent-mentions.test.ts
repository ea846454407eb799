/**
 * The config a user writes first, end to end (the built app, real Postgres, the real Claude CLI
 * against a fake Messages API, GitHub stood in for): the repository's own agent `claude` answers
 * to the default mention `@tether`, and a second agent `review` to `@tether-review`. The
 * built-in agent does not exist there, and neither mention reaches the other's agent.
 */
import { describe, expect, it } from "vitest";
import { parserIssue, replyOn } from "../helpers/e2e-thread.js";
import { fileStack, REPO } from "../helpers/e2e-stack.js";
import type { FakeRequest } from "../helpers/fake-anthropic.js";

const CONFIG = `
agents:
  claude:
    mention: "@tether"
    model: claude-sonnet-4-5
  review:
    mention: "@tether-review"
    model: claude-sonnet-4-5
    permissionMode: plan
`;

const { db, stack } = await fileStack({ config: CONFIG });

const newIssue = () => parserIssue(stack);

/** Every task a comment made, once all of them are finished. */
async function tasksOf(commentId: number, count: number): Promise<Array<Record<string, unknown>>> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const { rows } = await db.pool.query(
      `SELECT t.* FROM tasks t JOIN task_comments c ON c.task_id = t.id
        WHERE c.comment_id = $1 ORDER BY t.agent`,
      [commentId],
    );
    const done = rows.filter((t) =>
      ["succeeded", "failed", "cancelled"].includes(t.status as string),
    );
    if (rows.length >= count && done.length === rows.length) return rows;
    if (Date.now() > deadline)
      throw new Error(
        `tasks of comment ${commentId}: ${JSON.stringify(rows)}\n${stack.app.output().slice(-4000)}`,
      );
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** The system prompt Tether gave the CLI names the agent: which agent a request ran as. */
const agentOf = (req: FakeRequest): string | undefined => {
  const system = req.body?.system;
  const text = typeof system === "string" ? system : (system ?? []).map((b) => b.text).join("\n");
  return /You are "([a-z0-9-]+)", a coding agent run by Tether/.exec(text)?.[1];
};

const reply = (issue: number, contains: string) => replyOn(stack, issue, contains);

describe("an own agent on @tether beside @tether-review", { timeout: 150_000 }, () => {
  it("@tether-review reaches review only, and @tether reaches claude only, each in its own session", async () => {
    const n = newIssue();
    const before = stack.api.messageRequests().length;
    const [r] = await tasksOf(await stack.comment(n, "@tether-review look at split()"), 1);
    expect(r).toMatchObject({ agent: "review", status: "succeeded", outcome: "success" });
    const [c] = await tasksOf(await stack.comment(n, "@tether fix split()"), 1);
    expect(c).toMatchObject({ agent: "claude", status: "succeeded", outcome: "success" });
    expect(c!.session_id).not.toBe(r!.session_id);

    const { rows } = await db.pool.query(
      "SELECT agent, count(*)::int AS n FROM tasks WHERE repo = $1 AND issue_number = $2 GROUP BY agent ORDER BY agent",
      [REPO, n],
    );
    expect(rows).toEqual([
      { agent: "claude", n: 1 },
      { agent: "review", n: 1 },
    ]);
    const ran = stack.api
      .messageRequests()
      .slice(before)
      .map(agentOf)
      .filter((a) => a !== undefined);
    expect([...new Set(ran)]).toEqual(["review", "claude"]);
  });

  it("one comment addressing both mentions makes one turn for each; a longer name reaches neither", async () => {
    const n = newIssue();
    const both = await tasksOf(await stack.comment(n, "@tether @tether-review compare notes"), 2);
    expect(both.map((t) => t.agent)).toEqual(["claude", "review"]);
    expect(both.every((t) => t.status === "succeeded")).toBe(true);

    const tasksBefore = (await db.pool.query("SELECT count(*)::int AS n FROM tasks")).rows[0].n;
    const ignored = await stack.comment(n, "ask @tether-reviewer or @tether-re, not us");
    // Handled and skipped: the delivery's outcome says no agent was addressed.
    const deadline = Date.now() + 30_000;
    let outcome: string | undefined;
    while (!outcome && Date.now() < deadline) {
      const { rows } = await db.pool.query(
        `SELECT outcome FROM webhook_deliveries WHERE dedupe_key = $1 AND status <> 'pending'`,
        [`comment:${ignored}:created`],
      );
      outcome = rows[0]?.outcome as string | undefined;
      if (!outcome) await new Promise((r) => setTimeout(r, 150));
    }
    expect(outcome).toBe("addresses no agent");
    expect((await db.pool.query("SELECT count(*)::int AS n FROM tasks")).rows[0].n).toBe(
      tasksBefore,
    );
  });

  it("/help lists the repository's agents with their mentions, and no built-in agent", async () => {
    const n = newIssue();
    await stack.comment(n, "@tether /help");
    const help = await reply(n, "**Agents on this repository**");
    expect(help).toContain(
      "| `@tether` | `claude` | `claude-sonnet-4-5` | edit files in its checkout",
    );
    expect(help).toContain(
      "| `@tether-review` | `review` | `claude-sonnet-4-5` | read and plan only (no edits)",
    );
    expect(help).not.toContain("`tether`");
  });
});
