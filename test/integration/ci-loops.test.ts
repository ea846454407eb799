/**
 * The CI loop's guards in Postgres (src/sql/ci-loops.ts): one automatic turn per head commit
 * however many deliveries race for it, a turn waiting or running absorbs a failure, at most
 * maxAttempts turns in a row then one stop, held until someone asks or CI passes, a turn
 * refused by a spend limit ends the loop.
 */
import { describe, expect, it } from "vitest";
import type { TaskKey } from "../../src/core/task.js";
import { ciPassed, claimCiFailure, recordCiTurn } from "../../src/sql/ci-loops.js";
import { enqueueComment } from "../../src/sql/tasks/enqueue.js";
import { createTestDatabase } from "../helpers/db.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
let issue = 100;
const sha = (n: number) => n.toString(16).padStart(40, "a");

function newKey(): TaskKey {
  return { repoId: repoIdOf("o/r"), repo: "o/r", issueNumber: ++issue, agent: "tether" };
}

async function claim(key: TaskKey, n: number, deliveryId = `d-${n}`, maxAttempts = 2) {
  return claimCiFailure(db.pool, { key, pullNumber: 9, headSha: sha(n), maxAttempts, deliveryId });
}

/** Queue a task for the key as intake would (a CI request or a person's comment). */
async function queue(key: TaskKey, source: string, trigger: "ci" | "comment"): Promise<number> {
  const r = await enqueueComment(db.pool, {
    key,
    installationId: 1,
    isPullRequest: false,
    forceFresh: false,
    deliveryId: source,
    comment: {
      source,
      commentId: null,
      author: "alice",
      url: "https://github.com/o/r/pull/9",
      body: "x",
      createdAt: new Date(),
      trigger,
    },
  });
  return r.taskId;
}

async function finish(taskId: number, outcome = "success"): Promise<void> {
  await db.pool.query(
    `UPDATE tasks SET status = 'succeeded', outcome = $2, finished_at = now() WHERE id = $1`,
    [taskId, outcome],
  );
}

/** Take the failure of commit n as intake does: claim, queue, record, and let the turn finish. */
async function turn(key: TaskKey, n: number, outcome = "success"): Promise<number> {
  const c = await claim(key, n);
  expect(c.kind).toBe("take");
  const taskId = await queue(key, `ci:${sha(n)}`, "ci");
  await recordCiTurn(db.pool, { key, headSha: sha(n), taskId, absorbed: false });
  await finish(taskId, outcome);
  return taskId;
}

describe("the CI loop in Postgres", () => {
  it("the deliveries of one failure racing each other make one claim; the rest find it taken", async () => {
    const key = newKey();
    const claims = await Promise.all(
      ["check_run", "check_suite", "workflow_run", "check_run-2"].map((d) => claim(key, 1, d)),
    );
    expect(claims.filter((c) => c.kind === "take")).toEqual([
      { kind: "take", loopId: expect.any(Number), attempt: 1 },
    ]);
    expect(claims.filter((c) => c.kind === "seen")).toHaveLength(3);
  });

  it("the delivery that claimed, retried before its turn was queued, goes on (same attempt); once queued, it is seen", async () => {
    const key = newKey();
    const first = await claim(key, 1, "d");
    const retried = await claim(key, 1, "d");
    expect(retried).toEqual(first);
    const taskId = await queue(key, `ci:${sha(1)}`, "ci");
    await recordCiTurn(db.pool, { key, headSha: sha(1), taskId, absorbed: false });
    expect(await claim(key, 1, "d")).toEqual({ kind: "seen", result: "queued" });
  });

  it("a turn already waiting or running absorbs the failure", async () => {
    const key = newKey();
    const waiting = await queue(key, "comment:1", "comment");
    expect(await claim(key, 1)).toEqual({ kind: "absorbed", taskId: waiting });
    await db.pool.query(
      `UPDATE tasks SET status = 'running', locked_by = 'r', locked_at = now(), started_at = now()
        WHERE id = $1`,
      [waiting],
    );
    expect(await claim(key, 2)).toEqual({ kind: "absorbed", taskId: waiting });
    await finish(waiting);
    expect(await claim(key, 3)).toMatchObject({ kind: "take", attempt: 1 });
  });

  it("maxAttempts turns in a row, then one stop; held until someone asks the agent; then a new loop", async () => {
    const key = newKey();
    await turn(key, 1);
    await turn(key, 2);
    expect(await claim(key, 3)).toMatchObject({ kind: "stop", attempts: 2 });
    expect(await claim(key, 3)).toEqual({ kind: "seen", result: "stopped" });
    expect(await claim(key, 4)).toEqual({ kind: "held", state: "stopped" });
    // A person asks the agent again: the next failure starts a new loop.
    await finish(await queue(key, "comment:9", "comment"));
    expect(await claim(key, 5)).toMatchObject({ kind: "take", attempt: 1 });
    const { rows } = await db.pool.query(
      `SELECT state, attempts FROM ci_loops WHERE issue_number = $1 ORDER BY id`,
      [key.issueNumber],
    );
    expect(rows).toEqual([
      { state: "stopped", attempts: 2 },
      { state: "open", attempts: 1 },
    ]);
  });

  it("a green run ends the loop and starts the count again; after a stop it releases the hold", async () => {
    const key = newKey();
    await turn(key, 1);
    expect(await ciPassed(db.pool, key)).toBe("ended");
    expect(await ciPassed(db.pool, key)).toBe("none");
    await turn(key, 2);
    await turn(key, 3);
    expect(await claim(key, 4)).toMatchObject({ kind: "stop" });
    expect(await claim(key, 5)).toMatchObject({ kind: "held" });
    expect(await ciPassed(db.pool, key)).toBe("released");
    expect(await claim(key, 6)).toMatchObject({ kind: "take", attempt: 1 });
    const { rows } = await db.pool.query(
      `SELECT state FROM ci_loops WHERE issue_number = $1 ORDER BY id`,
      [key.issueNumber],
    );
    expect(rows.map((r) => r.state)).toEqual(["green", "stopped", "open"]);
  });

  it("a turn a spend limit refused ends the loop (limit), held like a stop", async () => {
    const key = newKey();
    await turn(key, 1, "limit_refused");
    expect(await claim(key, 2)).toMatchObject({ kind: "limit" });
    expect(await claim(key, 3)).toEqual({ kind: "held", state: "limit" });
  });

  it("keys are apart: another agent's loop on the same commit is its own", async () => {
    const key = newKey();
    const other = { ...key, agent: "reviewer" };
    expect(await claim(key, 1)).toMatchObject({ kind: "take" });
    expect(await claim(other, 1)).toMatchObject({ kind: "take" });
  });
});
