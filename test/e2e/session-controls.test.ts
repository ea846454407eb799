/**
 * Session controls from the thread (#30), end to end: the built app, real Postgres, the real
 * Claude CLI against a fake Messages API, GitHub stood in for. What the fake API is asked is the
 * proof: which model, and which earlier messages came with the request.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import { userTexts, type FakeRequest } from "../helpers/fake-anthropic.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
    models: [claude-opus-4-1]
  reviewer:
    model: claude-sonnet-4-5
  coder:
    cli: codex
`;

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ pool: db.pool, databaseUrl: db.url, config: CONFIG });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

function newIssue(): number {
  const issue = stack.gh.addIssue({
    repo: REPO,
    title: "Parser drops the last line",
    body: "Feeding a file without a trailing newline loses its last line.",
    user: "alice",
  });
  return issue.number as number;
}

const mark = () => stack.api.requests.length;

/** The agent's own requests since `from` (not the CLI's side requests), by the system prompt. */
function agentRequests(from: number, agent: string): FakeRequest[] {
  return stack.api
    .messageRequests()
    .filter((r) => r.n > from)
    .filter((r) => {
      const system = r.body?.system;
      const text =
        typeof system === "string" ? system : (system ?? []).map((b) => b.text).join("\n");
      return text.includes(`You are "${agent}", a coding agent run by Tether`);
    });
}

/** A reply Tether posted on the issue (not a task's answer), once it is there. */
async function reply(issue: number, contains: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = stack.gh
      .comments(REPO, issue)
      .map((c) => String(c.body))
      .find((b) => b.includes(contains));
    if (found) return found;
    if (Date.now() > deadline)
      throw new Error(
        `no reply containing ${JSON.stringify(contains)} in ${JSON.stringify(stack.gh.comments(REPO, issue).map((c) => c.body))}`,
      );
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** The delivery of a comment, once intake has handled it: its outcome. */
async function handled(commentId: number): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await db.pool.query(
      `SELECT outcome FROM webhook_deliveries WHERE dedupe_key = $1 AND status <> 'pending'`,
      [`comment:${commentId}:created`],
    );
    if (rows[0]) return rows[0].outcome as string;
    if (Date.now() > deadline) throw new Error(`comment ${commentId} was not handled`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

const answerOf = (issue: number, taskId: unknown) =>
  String(stack.taskComments(issue, taskId as number)[0]?.body ?? "");

describe("session controls from the thread", { timeout: 200_000 }, () => {
  it("/model runs one resumed turn on the named model; the next turn is back on the agent's", async () => {
    const n = newIssue();
    const m0 = mark();
    const first = await stack.finishedTask(
      await stack.comment(n, "@tether FIRST-ASK look at split()"),
    );
    expect(first).toMatchObject({ status: "succeeded", requested_model: null });
    expect(agentRequests(m0, "tether").map((r) => r.body?.model)).toContain("claude-sonnet-4-5");

    const m1 = mark();
    const second = await stack.finishedTask(
      await stack.comment(n, "@tether /model claude-opus-4-1 SECOND-ASK try again, harder"),
    );
    expect(second).toMatchObject({
      status: "succeeded",
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: first.session_id,
      requested_model: "claude-opus-4-1",
      model: "claude-opus-4-1",
    });
    const asked = agentRequests(m1, "tether");
    expect(asked.length).toBeGreaterThan(0);
    // The name the comment gave is the name the API was asked for (the CLI's legacy remap is off),
    // and the request carries the session's earlier messages: a resume, not a cold start.
    for (const r of asked) expect(r.body?.model).toBe("claude-opus-4-1");
    const texts = userTexts(asked[0]!);
    expect(texts.some((t) => t.includes("FIRST-ASK"))).toBe(true);
    expect(texts.some((t) => t.includes("SECOND-ASK"))).toBe(true);
    expect(answerOf(n, second.id)).toContain("`claude-opus-4-1` (/model, this turn only)");

    const m2 = mark();
    const third = await stack.finishedTask(await stack.comment(n, "@tether THIRD-ASK and now?"));
    expect(third).toMatchObject({
      resume_decision: "resume",
      session_id: first.session_id,
      requested_model: null,
      model: "claude-sonnet-4-5",
    });
    const back = agentRequests(m2, "tether");
    expect(back.length).toBeGreaterThan(0);
    for (const r of back) expect(r.body?.model).toBe("claude-sonnet-4-5");
    expect(answerOf(n, third.id)).toContain("`claude-sonnet-4-5`");
    expect(answerOf(n, third.id)).not.toContain("/model");
  });

  it("a model the agent may not use gets a reply listing the allowed ones, and no run", async () => {
    const n = newIssue();
    const m = mark();
    const c = await stack.comment(n, "@tether /model gpt-4o do it");
    const body = await reply(n, "is not one of this agent's models");
    expect(body).toContain("`gpt-4o`");
    expect(body).toContain("It may run on: `claude-sonnet-4-5`, `claude-opus-4-1`.");
    expect(await handled(c)).toContain("tether: /model refused");
    const { rows } = await db.pool.query(
      "SELECT count(*)::int AS n FROM tasks WHERE repo = $1 AND issue_number = $2",
      [REPO, n],
    );
    expect(rows[0].n).toBe(0);
    expect(stack.api.messageRequests().filter((r) => r.n > m)).toEqual([]);
  });

  it("/sessions lists the sessions; /resume <prefix> makes the next turn resume the chosen one", async () => {
    const n = newIssue();
    const a = await stack.finishedTask(await stack.comment(n, "@tether ALPHA-ASK first"));
    const b = await stack.finishedTask(await stack.comment(n, "@tether /fresh BETA-ASK oops"));
    expect(b).toMatchObject({ resume_reason: "forced_fresh" });
    const idA = String(a.session_id);
    const idB = String(b.session_id);
    expect(idB).not.toBe(idA);

    await stack.comment(n, "@tether /sessions");
    const list = await reply(n, "sessions on this issue**");
    expect(list).toContain(`| \`${idA.slice(0, 8)}\` | 1 |`);
    expect(list).toContain(`| \`${idB.slice(0, 8)}\` ⏭ | 1 |`);
    expect(list).toContain("| active | `claude-sonnet-4-5` | $");
    // Never a whole id.
    expect(list).not.toContain(idA);
    expect(list).not.toContain(idB);

    const none = await stack.comment(n, "@tether /resume ffffffff");
    expect(
      await reply(n, "no session of this agent on this issue starts with `ffffffff`"),
    ).toBeTruthy();
    expect(await handled(none)).toContain("/resume refused");

    const chose = await stack.comment(n, `@tether /resume ${idA.slice(0, 8)}`);
    expect(await reply(n, `the next turn resumes session \`${idA.slice(0, 8)}\``)).toBeTruthy();
    expect(await handled(chose)).toContain(`session ${idA} chosen`);

    const m = mark();
    const c = await stack.finishedTask(await stack.comment(n, "@tether GAMMA-ASK go on"));
    expect(c).toMatchObject({
      status: "succeeded",
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: idA,
    });
    const texts = userTexts(agentRequests(m, "tether")[0]!);
    expect(texts.some((t) => t.includes("ALPHA-ASK"))).toBe(true);
    expect(texts.some((t) => t.includes("BETA-ASK"))).toBe(false);

    // The choice is settled: the next turn resumes the session the last turn ran in.
    const d = await stack.finishedTask(await stack.comment(n, "@tether DELTA-ASK more"));
    expect(d).toMatchObject({ resume_decision: "resume", session_id: idA });
  });

  it("/from makes the reviewer's first request carry the coder's earlier messages; the coder's session stays as it was", async () => {
    const n = newIssue();
    const coder = await stack.finishedTask(
      await stack.comment(n, "@tether SOURCE-ASK look at split()"),
    );
    const source = String(coder.session_id);
    const before = await db.pool.query(
      `SELECT s.state, s.last_used_at, s.agent, t.raw_bytes, t.sha256
         FROM sessions s JOIN session_transcripts t USING (session_id) WHERE s.session_id = $1`,
      [source],
    );
    expect(before.rows).toHaveLength(1);

    const m = mark();
    const review = await stack.finishedTask(
      await stack.comment(n, "@reviewer /from tether REVIEW-ASK review what it did"),
    );
    expect(review).toMatchObject({
      agent: "reviewer",
      status: "succeeded",
      resume_decision: "resume",
      resume_reason: "forked",
      fork_session_id: source,
    });
    const forked = String(review.session_id);
    expect(forked).not.toBe(source);
    // Only the reviewer ran since `m`. (Its requests are not told apart by the system prompt:
    // seen with the pinned CLI, a forked session keeps the system prompt it was made with.)
    const asked = stack.api.messageRequests().filter((r) => r.n > m);
    expect(asked.length).toBeGreaterThan(0);
    const texts = userTexts(asked[0]!);
    expect(texts.some((t) => t.includes("SOURCE-ASK"))).toBe(true);
    expect(texts.some((t) => t.includes("REVIEW-ASK"))).toBe(true);
    expect(answerOf(n, review.id)).toContain("forked session (/from)");
    // The coder's session: same row, same stored transcript, not touched by the fork.
    const after = await db.pool.query(
      `SELECT s.state, s.last_used_at, s.agent, t.raw_bytes, t.sha256
         FROM sessions s JOIN session_transcripts t USING (session_id) WHERE s.session_id = $1`,
      [source],
    );
    expect(after.rows).toEqual(before.rows);
    const owner = await db.pool.query(`SELECT agent FROM sessions WHERE session_id = $1`, [forked]);
    expect(owner.rows[0]?.agent).toBe("reviewer");

    // Each goes on in its own session: the coder's never saw the review.
    const m2 = mark();
    const coder2 = await stack.finishedTask(await stack.comment(n, "@tether AFTER-ASK go on"));
    expect(coder2).toMatchObject({ resume_reason: "resumed", session_id: source });
    const coderTexts = userTexts(agentRequests(m2, "tether")[0]!);
    expect(coderTexts.some((t) => t.includes("SOURCE-ASK"))).toBe(true);
    expect(coderTexts.some((t) => t.includes("REVIEW-ASK"))).toBe(false);
    const review2 = await stack.finishedTask(await stack.comment(n, "@reviewer and the tests?"));
    expect(review2).toMatchObject({ resume_reason: "resumed", session_id: forked });
  });

  it("/from is refused with a reply, and no run, across CLIs or without a session to fork", async () => {
    const n = newIssue();
    const m = mark();
    const across = await stack.comment(n, "@reviewer /from coder look");
    expect(
      await reply(n, "an agent can fork only a session of its own CLI, and only on claude"),
    ).toContain("`@coder` on codex");
    expect(await handled(across)).toContain("/from refused");
    const none = await stack.comment(n, "@reviewer /from @tether look");
    expect(await reply(n, "`@tether` has no session on this issue to fork")).toBeTruthy();
    expect(await handled(none)).toContain("/from refused");
    const { rows } = await db.pool.query(
      "SELECT count(*)::int AS n FROM tasks WHERE repo = $1 AND issue_number = $2",
      [REPO, n],
    );
    expect(rows[0].n).toBe(0);
    expect(stack.api.messageRequests().filter((r) => r.n > m)).toEqual([]);
  });
});
