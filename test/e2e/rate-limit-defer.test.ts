/**
 * Near the limit, defer; do not fail (#34), end to end: the built app as a process with the
 * default reserve (TETHER_RATE_LIMIT_RESERVE 100), real Postgres, the real Claude CLI against
 * the fake Messages API, GitHub's stand-in reporting an installation's headroom on every answer.
 *
 * The installation's window resets when the test says: the stand-in reports it an hour away
 * while the test watches the turns wait (nothing can race that), then reports the new window and
 * the stored reset time is moved to the past, as the clock reaching it would. Every wait is for
 * an event (a comment, a task's status), never a fixed sleep.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
`;
/** A repository of another installation, whose turns must not wait with the first's. */
const OTHER = "acme/gadgets";
const OTHER_INSTALLATION = 5151;

const DASH = "e2e-dashboard-token-0123456789abcdef0123456789";

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    config: CONFIG,
    env: { TETHER_DASHBOARD_TOKEN: DASH },
  });
  await stack.gh.addRepo({ owner: "acme", name: "gadgets", installationId: OTHER_INSTALLATION });
  await stack.gh.setConfig(OTHER, CONFIG);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

/** `check()`'s value once it has one (polled; the deadline only bounds a broken run). */
async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline)
      throw new Error(`never happened: ${what}\n--- app ---\n${stack.app.output().slice(-5000)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

async function taskOf(commentId: number): Promise<Record<string, unknown> | undefined> {
  const { rows } = await db.pool.query(
    `SELECT t.* FROM tasks t JOIN task_comments c ON c.task_id = t.id WHERE c.comment_id = $1`,
    [commentId],
  );
  return rows[0] as Record<string, unknown> | undefined;
}

describe("near an installation's rate limit", { timeout: 240_000 }, () => {
  it("its turns wait with a note, run after the reset, none fail; another installation's run meanwhile", async () => {
    const gh = stack.gh;
    const resetAt = Math.floor(Date.now() / 1000) + 3600;
    // 20 requests left of 5,000: below the default reserve of 100.
    gh.setRateLimit(gh.installationId, { remaining: 20, resetAt });

    const issues = [1, 2].map(
      (i) =>
        gh.addIssue({ repo: REPO, title: `Deferred ${i}`, body: "Explain split.", user: "alice" })
          .number as number,
    );
    const comments: number[] = [];
    for (const n of issues) comments.push(await stack.comment(n, "@tether what does split do?"));

    // Each task's thread is told, once, that it waits, and until when.
    const clock = new Date(resetAt * 1000).toISOString().slice(11, 16);
    const tasks = await Promise.all(comments.map((c) => until("the task", async () => taskOf(c))));
    for (const [i, t] of tasks.entries()) {
      const note = await until("the deferral note", () =>
        stack
          .taskComments(issues[i]!, t.id as number)
          .find((c) => /waiting for/.test(String(c.body))),
      );
      expect(String(note.body)).toContain(
        `waiting for GitHub's rate limit to reset at ${clock} UTC`,
      );
      expect(String(note.body)).toContain("20 GitHub API requests left");
    }

    // Another installation's comment runs to its answer while the first's wait.
    const otherIssue = gh.addIssue({ repo: OTHER, title: "Other", body: "Hi", user: "alice" })
      .number as number;
    gh.setPermission("alice", "write", OTHER);
    const otherComment = gh.addComment({
      repo: OTHER,
      issueNumber: otherIssue,
      body: "@tether what is here?",
      user: "alice",
    }).id as number;
    await stack.deliver(
      gh.webhooks.issueComment({ repo: OTHER, issueNumber: otherIssue, commentId: otherComment }),
    );
    const other = await stack.finishedTask(otherComment, 120_000);
    expect(other.status).toBe("succeeded");
    for (const c of comments) {
      const t = await taskOf(c);
      expect(t).toMatchObject({ status: "queued", attempts: 0 });
      expect((t!.deferred_until as Date).getTime()).toBe(resetAt * 1000);
    }
    const { rows: stored } = await db.pool.query(
      `SELECT remaining FROM installation_rate_limits WHERE installation_id = $1`,
      [gh.installationId],
    );
    expect(stored[0]?.remaining).toBe(20);
    // The dashboard's figures say how many wait.
    const figures = (await (
      await fetch(`${stack.app.url}/api/stats`, {
        headers: { authorization: `Bearer ${DASH}` },
      })
    ).json()) as { githubHeadroom: Record<string, { deferred: number; remaining: number }> };
    expect(figures.githubHeadroom[String(gh.installationId)]).toMatchObject({
      remaining: 20,
      deferred: 2,
    });
    const metrics = await (await fetch(`${stack.app.url}/metrics`)).text();
    expect(metrics).toMatch(/^tether_tasks_deferred 2$/m);

    // The window resets: GitHub reports the new one, and the clock passes the stored reset.
    gh.setRateLimit(gh.installationId, null);
    await db.pool.query(
      `UPDATE installation_rate_limits SET reset_at = now() - interval '1 second' WHERE installation_id = $1`,
      [gh.installationId],
    );
    await db.pool.query(`UPDATE tasks SET deferred_until = now() - interval '1 second'
                          WHERE status = 'queued' AND deferred_until IS NOT NULL`);

    for (const [i, c] of comments.entries()) {
      const t = await stack.finishedTask(c, 120_000);
      expect(t.status).toBe("succeeded");
      expect(t.attempts).toBe(1);
      // The note was the tracking comment: the answer replaced it, one comment for the task.
      const own = stack.taskComments(issues[i]!, t.id as number);
      expect(own).toHaveLength(1);
      expect(own[0]!.id).toBe(t.answer_comment_id);
      expect(String(own[0]!.body)).not.toContain("waiting for");
    }
    const { rows: failed } = await db.pool.query(
      `SELECT id FROM tasks WHERE status <> 'succeeded'`,
    );
    expect(failed).toEqual([]);
  });
});
