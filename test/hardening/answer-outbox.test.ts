/**
 * Drill: GitHub refuses the answer for longer than the request policy retries, then recovers.
 * The built app runs against the GitHub stand-in; the turn is the stand-in CLI's. The run's
 * edit of its comment into the answer gets 503 four times (the first try and all three
 * retries, about 14 s), so the turn ends with the answer pending; the runner's answer poster posts
 * it once GitHub answers again. Exactly one answer comment appears, and the task kept the
 * status its run earned throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { REPO, startStack, type Stack } from "../helpers/e2e-stack.js";
import type { RequestMatcher } from "../helpers/fake-github.js";
import { STANDIN_CLAUDE, waitFor } from "./helpers/drill.js";

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    // The first redelivery half a second after the run gave up (polled as often).
    env: { TETHER_CLAUDE_PATH: STANDIN_CLAUDE, TETHER_ANSWER_RETRY_MS: "500" },
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

describe("GitHub down when the answer is due", { timeout: 60_000 }, () => {
  it("the answer waits in the outbox and is posted exactly once when GitHub is back", async () => {
    const n = stack.gh.addIssue({
      repo: REPO,
      title: "Outage",
      body: "GitHub is down.",
      user: "alice",
    }).number as number;
    // The tracking comment is created (POST); the answer is its edit (PATCH), refused on every
    // try the request policy makes. Only the answer's edits (the body is the answer, not "⏳ …
    // working"): progress edits of the tracking comment come as often as the machine's speed
    // allows (quoting the agent's words), and must not use up the failures.
    const edits: RequestMatcher = (r) =>
      r.method === "PATCH" &&
      /\/repos\/octo\/widgets\/issues\/comments\/\d+$/.test(r.path) &&
      r.rawBody.startsWith('{"body":"stand-in answer');
    stack.gh.failNext(edits, { status: 503, times: 4 });
    const from = stack.gh.requests.length;
    const commentId = await stack.comment(n, "@tether answer through the outage");

    const task = await stack.finishedTask(commentId, 45_000);
    expect(task, stack.app.output().slice(-3000)).toMatchObject({
      status: "succeeded",
      outcome: "success",
    });
    const delivered = await waitFor(
      "the answer poster to post the pending answer",
      async () => {
        const { rows } = await db.pool.query(
          `SELECT * FROM tasks WHERE id = $1 AND NOT answer_pending AND answer_comment_id IS NOT NULL`,
          [task.id],
        );
        return rows[0] as Record<string, unknown> | undefined;
      },
      15_000,
    );
    expect(delivered).toMatchObject({ status: "succeeded", answer_error: null });
    expect(delivered.answer_attempts).toBeGreaterThanOrEqual(1);

    const posted = stack.taskComments(n, task.id as number);
    expect(posted).toHaveLength(1);
    expect(String(posted[0]!.body)).toMatch(/^stand-in answer/);
    expect(posted[0]!.id).toBe(delivered.answer_comment_id);
    expect(stack.gh.postedComments(REPO, n)).toHaveLength(1);
    const patched = stack.gh.requests.filter((r) => r.seq > from && edits(r));
    expect(patched.filter((r) => r.status === 503)).toHaveLength(4);
    expect(patched.filter((r) => r.status === 200)).toHaveLength(1);

    // The answer poster logs after it has written the row, and the app's stdout reaches this
    // process later still: wait for the line rather than read the log the moment the row moved.
    await waitFor(
      "the answer poster's log line",
      async () => stack.app.output().includes("pending answer posted") || undefined,
      15_000,
    );
    const log = stack.app.output();
    expect(log).toContain("the answer could not be posted; it is pending for the answer poster");
    expect(log).not.toContain("pending answer posted after its lease ran out");

    // The answer poster keeps running: nothing more is ever written for this task.
    await new Promise((r) => setTimeout(r, 1500));
    expect(stack.taskComments(n, task.id as number)).toHaveLength(1);
    const last = patched.find((r) => r.status === 200)!.seq;
    expect(stack.gh.requests.filter((r) => r.seq > from && edits(r))).toHaveLength(5);
    expect(stack.gh.requests.filter((r) => r.seq > last && r.method !== "GET")).toEqual([]);
  });
});
