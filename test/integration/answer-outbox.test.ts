/**
 * The answer outbox on real Postgres: finishing with an answer pending, the sweeper's failures,
 * the answer poster's claim, lease, backoff and give-up, and what it writes in the thread (one
 * comment per task, found again by id or marker, never a second).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { postPendingAnswers, type PostAnswersDeps } from "../../src/runner/loop/post-answers.js";
import type { GitHubThread, IssueComment } from "../../src/runner/ports.js";
import { Runner } from "../../src/runner/loop/runner.js";
import { findTaskMarker } from "../../src/runner/render/thread-comments.js";
import {
  answerPosted,
  claimAnswers,
  countPendingAnswers,
  giveUpAnswer,
  retryAnswer,
} from "../../src/sql/answer-outbox.js";
import { claimTasks } from "../../src/sql/tasks/claim.js";
import { finishTask } from "../../src/sql/tasks/finish.js";
import { sweepExpired } from "../../src/sql/tasks/sweep.js";
import { postgresTurnStore } from "../../src/sql/turn-store.js";
import { createTestDatabase } from "../helpers/db.js";
import { readTask, seedTask } from "../helpers/seed.js";
import { GatedAgent, fakeWorkspace, registerTestRuntime } from "../helpers/runner-fakes.js";

const db = await createTestDatabase();
const pool = db.pool;
await registerTestRuntime(pool, { concurrency: 4 });
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-outbox-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

beforeEach(async () => {
  await pool.query("DELETE FROM tasks");
});

let n = 0;
const key = () => ({ repo: `octo/r${++n}`, issue_number: 1, agent: "tether" });

/** A finished task with its answer pending, due `dueInMs` from now (negative: overdue). */
async function pending(over: Record<string, unknown> = {}, dueInMs = -1000) {
  return seedTask(pool, {
    ...key(),
    status: "succeeded",
    outcome: "success",
    answer_pending: true,
    answer_body: "the answer",
    answer_next_at: new Date(Date.now() + dueInMs),
    ...over,
  });
}

const httpError = (status: number, message = `HTTP ${status}`) =>
  Object.assign(new Error(message), { status });

/** One issue's thread, whose writes fail while `down` is set (`downStatus`, 503 by default). */
function thread(comments: IssueComment[] = []) {
  let next = 100;
  const t = {
    comments,
    down: false,
    downStatus: 503,
    creates: 0,
    updates: 0,
    tokenValue: "ghs_installationtoken0000000000000001",
    cloneUrl: "https://github.com/octo/widgets.git",
    token: async () => t.tokenValue,
    getIssue: async () => {
      throw new Error("not used");
    },
    listComments: async () => {
      if (t.down) throw httpError(t.downStatus);
      return t.comments;
    },
    createComment: async (_n: number, body: string) => {
      if (t.down) throw httpError(t.downStatus);
      t.creates++;
      const id = next++;
      t.comments.push({ id, author: "tether[bot]", url: `c${id}`, body, createdAt: "" });
      return id;
    },
    updateComment: async (id: number, body: string) => {
      if (t.down) throw httpError(t.downStatus);
      const c = t.comments.find((x) => x.id === id);
      if (!c) throw httpError(404, "Not Found");
      t.updates++;
      c.body = body;
    },
    loadConfig: async () => ({ ok: false as const, message: "not used" }),
  };
  return t satisfies GitHubThread;
}

function poster(gh: GitHubThread, over: Partial<PostAnswersDeps> = {}) {
  const lines: Array<Record<string, unknown>> = [];
  const deps: PostAnswersDeps = {
    pool,
    log: createLogger("info", { write: (l: string) => void lines.push(JSON.parse(l)) }),
    github: async () => gh,
    answerRetry: { baseMs: 30_000 },
    ...over,
  };
  return { run: () => postPendingAnswers(deps), lines };
}

/** Seconds from the database's now() to the task's answer_next_at. */
async function dueInSeconds(id: unknown): Promise<number> {
  const { rows } = await pool.query(
    `SELECT extract(epoch FROM answer_next_at - now())::float AS s FROM tasks WHERE id = $1`,
    [id],
  );
  return rows[0].s as number;
}

describe("finishing with the answer pending", () => {
  it("keeps the status the run earned and the scrubbed body, due after the first wait", async () => {
    const t = await seedTask(pool, key());
    await claimTasks(pool, "r-1", "rt", 1);
    const ok = await finishTask(pool, t.id as number, "r-1", {
      status: "succeeded",
      outcome: "success",
      failureReason: null,
      sessionId: "s-1",
      usage: null,
      answer: { kind: "pending", body: "Here it is.", retryInMs: 30_000 },
    });
    expect(ok).toBe(true);
    expect(await readTask(pool, t.id)).toMatchObject({
      status: "succeeded",
      outcome: "success",
      answer_pending: true,
      answer_body: "Here it is.",
      answer_comment_id: null,
      answer_attempts: 0,
    });
    expect(await dueInSeconds(t.id)).toBeGreaterThan(28);
    expect(await dueInSeconds(t.id)).toBeLessThanOrEqual(30);
    expect(await countPendingAnswers(pool)).toBe(1);
  });

  it("a posted answer leaves nothing pending", async () => {
    const t = await seedTask(pool, key());
    await claimTasks(pool, "r-1", "rt", 1);
    await finishTask(pool, t.id as number, "r-1", {
      status: "failed",
      outcome: "stalled",
      failureReason: "no output",
      sessionId: null,
      usage: null,
      answer: { kind: "posted", commentId: 77 },
    });
    expect(await readTask(pool, t.id)).toMatchObject({
      answer_pending: false,
      answer_next_at: null,
      answer_comment_id: 77,
    });
  });

  it("the schema refuses a pending answer on a task that is still running", async () => {
    await expect(
      seedTask(pool, {
        ...key(),
        status: "running",
        answer_pending: true,
        answer_next_at: new Date(),
      }),
    ).rejects.toThrow(/tasks_answer_pending_finished/);
  });
});

describe("the sweeper", () => {
  it("puts a task it fails for exhausted attempts in the outbox, due now; a requeued one not", async () => {
    const old = new Date(Date.now() - 120_000);
    const spent = await seedTask(pool, {
      ...key(),
      status: "running",
      locked_by: "gone",
      heartbeat_at: old,
      attempts: 3,
      max_attempts: 3,
    });
    const retried = await seedTask(pool, {
      ...key(),
      status: "running",
      locked_by: "gone",
      heartbeat_at: old,
      attempts: 1,
    });
    expect(await sweepExpired(pool, 60_000)).toEqual({
      requeued: [retried.id],
      failed: [spent.id],
    });
    expect(await readTask(pool, spent.id)).toMatchObject({
      status: "failed",
      answer_pending: true,
      answer_body: null,
    });
    expect(await dueInSeconds(spent.id)).toBeLessThanOrEqual(0);
    expect(await readTask(pool, retried.id)).toMatchObject({
      status: "queued",
      answer_pending: false,
    });
  });
});

describe("claiming pending answers", () => {
  it("claims only due ones, counts the attempt and leases them", async () => {
    const due = await pending();
    await pending({}, 60_000); // not due yet
    await seedTask(pool, { ...key(), status: "succeeded", answer_comment_id: 5 }); // delivered
    const [claimed, ...rest] = await claimAnswers(pool, 10, 120_000);
    expect(rest).toEqual([]);
    expect(claimed).toMatchObject({ body: "the answer", attempt: 1 });
    expect(claimed!.task.id).toBe(due.id);
    // Leased: nobody else gets it until the lease runs out.
    expect(await dueInSeconds(due.id)).toBeGreaterThan(110);
    expect(await claimAnswers(pool, 10, 120_000)).toEqual([]);
    // A answer poster that died mid-delivery: once its lease is over the answer is claimed again.
    await pool.query(
      `UPDATE tasks SET answer_next_at = now() - interval '1 second' WHERE id = $1`,
      [due.id],
    );
    const [again] = await claimAnswers(pool, 10, 120_000);
    expect(again).toMatchObject({ attempt: 2 });
    // The first delivery's late result is refused; the current one's taken.
    expect(await answerPosted(pool, due.id as number, 1, 900)).toBe(false);
    expect(await retryAnswer(pool, due.id as number, 1, 1000, "late")).toBe(false);
    expect(await giveUpAnswer(pool, due.id as number, 1, "late")).toBe(false);
    expect(await answerPosted(pool, due.id as number, 2, 901)).toBe(true);
    expect(await readTask(pool, due.id)).toMatchObject({
      answer_pending: false,
      answer_comment_id: 901,
      tracking_comment_id: 901,
      answer_body: null,
      answer_next_at: null,
      answer_attempts: 2,
    });
    expect(await countPendingAnswers(pool)).toBe(1);
  });

  it("hands each due answer to exactly one of many concurrent answer posters", async () => {
    for (let i = 0; i < 40; i++) await pending();
    const claims = await Promise.all(
      Array.from({ length: 6 }, () => claimAnswers(pool, 10, 60_000)),
    );
    const ids = claims.flat().map((a) => a.task.id);
    expect(ids).toHaveLength(40);
    expect(new Set(ids).size).toBe(40);
  });

  it("a failed delivery waits as long as it is told and keeps the error; giving up keeps the body", async () => {
    const t = await pending();
    const [a] = await claimAnswers(pool, 1, 60_000);
    expect(await retryAnswer(pool, t.id as number, a!.attempt, 240_000, "HTTP 503", 321)).toBe(
      true,
    );
    expect(await dueInSeconds(t.id)).toBeGreaterThan(235);
    expect(await readTask(pool, t.id)).toMatchObject({
      answer_pending: true,
      answer_error: "HTTP 503",
      tracking_comment_id: 321,
    });
    await pool.query(`UPDATE tasks SET answer_next_at = now() WHERE id = $1`, [t.id]);
    const [b] = await claimAnswers(pool, 1, 60_000);
    expect(await giveUpAnswer(pool, t.id as number, b!.attempt, "gave up: HTTP 404")).toBe(true);
    expect(await readTask(pool, t.id)).toMatchObject({
      answer_pending: false,
      answer_next_at: null,
      answer_error: "gave up: HTTP 404",
      answer_body: "the answer",
      answer_comment_id: null,
    });
    expect(await claimAnswers(pool, 1, 60_000)).toEqual([]);
  });
});

describe("the answer poster", () => {
  it("tells the thread of a swept failure in plain words, once", async () => {
    const t = await seedTask(pool, {
      ...key(),
      status: "running",
      locked_by: "gone",
      heartbeat_at: new Date(Date.now() - 120_000),
      attempts: 3,
      max_attempts: 3,
    });
    await sweepExpired(pool, 60_000);
    const gh = thread();
    const d = poster(gh);
    expect(await d.run()).toEqual({ posted: [t.id], retrying: [], gaveUp: [] });
    expect(gh.comments).toHaveLength(1);
    const body = gh.comments[0]!.body;
    expect(body).toMatch(
      /^⚠️ The run failed: the runner running it stopped responding 3 times\. Comment again to retry; if it keeps failing, an operator can look up task \d+ in the logs and on the dashboard\./,
    );
    expect(body).toContain("<sub>no session started</sub>");
    expect(findTaskMarker(body)).toBe(t.id);
    expect(await readTask(pool, t.id)).toMatchObject({
      status: "failed",
      answer_pending: false,
      answer_comment_id: gh.comments[0]!.id,
      answer_attempts: 1,
    });
    // Nothing more, however often it runs.
    expect(await d.run()).toEqual({ posted: [], retrying: [], gaveUp: [] });
    await sweepExpired(pool, 60_000);
    expect(await d.run()).toEqual({ posted: [], retrying: [], gaveUp: [] });
    expect(gh.creates).toBe(1);
    expect(gh.updates).toBe(0);
  });

  it("with TETHER_PUBLIC_URL, a swept failure's footer links to the conversation's page (#30)", async () => {
    const k = key();
    const t = await seedTask(pool, {
      ...k,
      status: "running",
      locked_by: "gone",
      heartbeat_at: new Date(Date.now() - 120_000),
      attempts: 3,
      max_attempts: 3,
    });
    await sweepExpired(pool, 60_000);
    const gh = thread();
    const d = poster(gh, { publicUrl: "https://tether.example.com" });
    expect(await d.run()).toEqual({ posted: [t.id], retrying: [], gaveUp: [] });
    expect(gh.comments[0]!.body).toContain(
      `[conversation log (operators only)](https://tether.example.com/dashboard/conversations/${k.repo}/1/tether)`,
    );
  });

  it("a swept task that had a session and a tracking comment: that comment becomes the failure", async () => {
    const gh = thread([
      { id: 55, author: "tether[bot]", url: "c55", body: "⏳ working", createdAt: "" },
    ]);
    const t = await seedTask(pool, {
      ...key(),
      status: "running",
      locked_by: "gone",
      heartbeat_at: new Date(Date.now() - 120_000),
      attempts: 3,
      max_attempts: 3,
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: "0123456789abcdef",
      tracking_comment_id: 55,
    });
    await sweepExpired(pool, 60_000);
    expect((await poster(gh).run()).posted).toEqual([t.id]);
    expect(gh.creates).toBe(0);
    expect(gh.comments).toHaveLength(1);
    expect(gh.comments[0]!.body).toContain("stopped responding 3 times");
    expect(gh.comments[0]!.body).toContain("🔗 resumed session · `01234567`");
    expect((await readTask(pool, t.id)).answer_comment_id).toBe(55);
  });

  it("finds a comment GitHub created although the request failed (by its marker), and edits it", async () => {
    const t = await pending();
    const gh = thread([
      { id: 7, author: "alice", url: "c7", body: "@tether hi", createdAt: "" },
      {
        id: 8,
        author: "tether[bot]",
        url: "c8",
        body: `⏳ working\n<!-- tether:task:${t.id as number} -->`,
        createdAt: "",
      },
    ]);
    expect((await poster(gh).run()).posted).toEqual([t.id]);
    expect(gh.creates).toBe(0);
    expect(gh.comments.map((c) => c.body)).toEqual(["@tether hi", "the answer"]);
    expect(await readTask(pool, t.id)).toMatchObject({
      answer_comment_id: 8,
      tracking_comment_id: 8,
    });
  });

  it("replaces a tracking comment someone deleted with a new one", async () => {
    const t = await pending({ tracking_comment_id: 4040 });
    const gh = thread();
    expect((await poster(gh).run()).posted).toEqual([t.id]);
    expect(gh.creates).toBe(1);
    expect(await readTask(pool, t.id)).toMatchObject({
      answer_pending: false,
      answer_comment_id: gh.comments[0]!.id,
    });
  });

  it("while GitHub is down: backs off, doubling, stops the round at the first failure; then posts once", async () => {
    const first = await pending({}, -2000);
    const second = await pending({}, -1000);
    const gh = thread();
    gh.down = true;
    const d = poster(gh);
    expect(await d.run()).toEqual({ posted: [], retrying: [first.id], gaveUp: [] });
    // The second was not even tried: GitHub is down for it too.
    expect(await readTask(pool, second.id)).toMatchObject({ answer_attempts: 0 });
    expect(await readTask(pool, first.id)).toMatchObject({
      answer_pending: true,
      answer_attempts: 1,
      answer_error: "Error: HTTP 503 (HTTP 503)",
    });
    expect(await dueInSeconds(first.id)).toBeGreaterThan(55); // 30 s doubled
    expect(await dueInSeconds(first.id)).toBeLessThanOrEqual(60);
    expect(await d.run()).toEqual({ posted: [], retrying: [second.id], gaveUp: [] });

    await pool.query(`UPDATE tasks SET answer_next_at = now() WHERE answer_pending`);
    expect(await d.run()).toEqual({ posted: [], retrying: [first.id], gaveUp: [] });
    expect(await dueInSeconds(first.id)).toBeGreaterThan(115); // and again
    expect(
      d.lines.filter((l) => l.msg === "GitHub refused a pending answer; will try again"),
    ).toHaveLength(3);

    gh.down = false;
    await pool.query(`UPDATE tasks SET answer_next_at = now() WHERE answer_pending`);
    expect(await d.run()).toEqual({ posted: [first.id, second.id], retrying: [], gaveUp: [] });
    expect(gh.comments.map((c) => c.body)).toEqual(["the answer", "the answer"]);
    expect(await readTask(pool, first.id)).toMatchObject({
      answer_attempts: 3,
      answer_error: null,
    });
    expect(await d.run()).toEqual({ posted: [], retrying: [], gaveUp: [] });
    expect(gh.creates).toBe(2);
  });

  it("gives up with an error log after the last attempt, and at once when the thread is gone", async () => {
    const tired = await pending({ answer_attempts: 2 });
    const gh = thread();
    gh.down = true;
    const d = poster(gh, { answerRetry: { baseMs: 30_000, maxAttempts: 3 } });
    expect(await d.run()).toEqual({ posted: [], retrying: [], gaveUp: [tired.id] });
    expect(await readTask(pool, tired.id)).toMatchObject({
      answer_pending: false,
      answer_attempts: 3,
      answer_body: "the answer",
    });
    expect(String((await readTask(pool, tired.id)).answer_error)).toMatch(/^gave up: .*503/);
    const gone = await pending();
    gh.downStatus = 404;
    expect(await d.run()).toEqual({ posted: [], retrying: [], gaveUp: [gone.id] });
    expect((await readTask(pool, gone.id)).answer_attempts).toBe(1);
    const errors = d.lines.filter((l) => l.level === "error");
    expect(errors.map((l) => l.msg)).toEqual([
      "gave up on a pending answer after 3 tries; the answer stays in tasks.answer_body",
      "gave up on a pending answer: GitHub says the thread is gone or refuses it; the answer stays in tasks.answer_body",
    ]);
    expect(gh.creates).toBe(0);
    expect(await countPendingAnswers(pool)).toBe(0);
  });

  it("no GitHub access for the installation is a failed delivery too, retried later", async () => {
    const t = await pending();
    const d = poster(thread(), {
      github: async () => {
        throw new Error("installation 1 is suspended");
      },
    });
    expect(await d.run()).toEqual({ posted: [], retrying: [t.id], gaveUp: [] });
    expect((await readTask(pool, t.id)).answer_error).toContain("installation 1 is suspended");
  });

  it("scrubs secrets and the installation token from a failure it renders", async () => {
    const gh = thread();
    const t = await pending({
      status: "failed",
      outcome: "failed",
      answer_body: null,
      failure_reason: `GitHub access failed: bad key sk-operator-secret-1 with ${gh.tokenValue}`,
    });
    const d = poster(gh, { secrets: () => ["sk-operator-secret-1"] });
    expect((await d.run()).posted).toEqual([t.id]);
    const body = gh.comments[0]!.body;
    expect(body).toContain("The run failed: GitHub access failed: bad key");
    expect(body).not.toContain("sk-operator-secret-1");
    expect(body).not.toContain(gh.tokenValue);
  });
});

describe("the runner", () => {
  it("sweeps a task whose runner kept dying and tells its thread, without a poll in between", async () => {
    const gh = thread();
    const t = await seedTask(pool, {
      ...key(),
      status: "running",
      locked_by: "rt/elsewhere/1/dead",
      runtime_id: "rt",
      heartbeat_at: new Date(Date.now() - 120_000),
      attempts: 3,
      max_attempts: 3,
    });
    const r = new Runner({
      pool,
      store: postgresTurnStore,
      log: createLogger("silent"),
      runtimeId: "rt",
      concurrency: 1,
      runtime: { homeDir: root, cliPath: "/nowhere/claude", cliVersion: null, canResume: true },
      agent: new GatedAgent(),
      workspace: fakeWorkspace(root),
      github: async () => gh,
      pollMs: 600_000,
      leaseMs: 2000, // the sweep runs every second
      answerPollMs: 600_000, // only the sweep's own delivery can post
    });
    await r.start();
    try {
      const deadline = Date.now() + 10_000;
      while (gh.comments.length === 0 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await r.stop(2000);
    }
    expect(gh.comments).toHaveLength(1);
    expect(gh.comments[0]!.body).toContain("stopped responding 3 times");
    expect(await readTask(pool, t.id)).toMatchObject({
      status: "failed",
      answer_pending: false,
      answer_comment_id: gh.comments[0]!.id,
    });
  });
});
