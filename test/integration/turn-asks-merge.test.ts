/**
 * What a later comment asks beyond a turn (/fresh, /model, /from, /plan or /go) merges the same
 * way into the task that answers it, wherever two tasks of a key become one
 * (src/sql/tasks/fold.ts): enqueue coalescing into the queued task, the sweeper folding the
 * queued task into an expired one, a rate-limited requeue doing the same. A fresh session once
 * asked stays asked; a named model, fork or plan replaces the task's; none named keeps it.
 * Real Postgres.
 */
import { describe, expect, it } from "vitest";
import type { PlanRequest } from "../../src/core/task.js";
import { requeueUntil } from "../../src/sql/rate-limits.js";
import { enqueueComment } from "../../src/sql/tasks/enqueue.js";
import { sweepExpired } from "../../src/sql/tasks/sweep.js";
import { createTestDatabase } from "../helpers/db.js";
import { readTask, repoIdOf, seedTask } from "../helpers/seed.js";

const db = await createTestDatabase();
const pool = db.pool;
let n = 0;

const asks = (row: Record<string, unknown>) => ({
  force_fresh: row.force_fresh,
  requested_model: row.requested_model,
  fork_session_id: row.fork_session_id,
  plan_request: row.plan_request,
});

describe("enqueue: a comment coalesced into the key's queued task", () => {
  it("keeps /fresh once asked; a named model, fork or plan replaces the task's, none named keeps it", async () => {
    const repo = `octo/e${++n}`;
    let id = 0;
    const enqueue = (ask: {
      forceFresh: boolean;
      requestedModel?: string;
      forkSessionId?: string;
      planRequest?: PlanRequest;
    }) =>
      enqueueComment(pool, {
        key: { repoId: repoIdOf(repo), repo, issueNumber: 1, agent: "tether" },
        installationId: 1,
        isPullRequest: false,
        comment: {
          source: `comment:${++id}`,
          commentId: id,
          author: "alice",
          url: `https://github.com/${repo}/issues/1#issuecomment-${id}`,
          body: "@tether go",
          createdAt: new Date(),
        },
        deliveryId: `d-${repo}-${id}`,
        ...ask,
      });
    const first = await enqueue({
      forceFresh: true,
      requestedModel: "claude-opus-4-1",
      forkSessionId: "fork-1",
      planRequest: "plan",
    });
    expect(first.kind).toBe("created");
    expect(await enqueue({ forceFresh: false })).toEqual({
      kind: "coalesced",
      taskId: first.taskId,
    });
    expect(asks(await readTask(pool, first.taskId))).toEqual({
      force_fresh: true,
      requested_model: "claude-opus-4-1",
      fork_session_id: "fork-1",
      plan_request: "plan",
    });
    await enqueue({ forceFresh: false, requestedModel: "claude-haiku-4-5", planRequest: "go" });
    expect(asks(await readTask(pool, first.taskId))).toEqual({
      force_fresh: true,
      requested_model: "claude-haiku-4-5",
      fork_session_id: "fork-1",
      plan_request: "go",
    });
  });
});

/** Puts a running task back in the queue the way `via` does. */
type Requeue = (task: Record<string, unknown>) => Promise<void>;

const requeues: Array<[string, Requeue]> = [
  [
    "the sweeper, its runner gone",
    async () => {
      await sweepExpired(pool, 60_000);
    },
  ],
  [
    "a rate-limited requeue",
    async (t) => {
      expect(await requeueUntil(pool, t.id as number, "runner-1", new Date())).toBe(true);
    },
  ],
];

describe.each(requeues)("a running task put back in the queue by %s", (_, requeue) => {
  const running = (repo: string) =>
    seedTask(pool, {
      repo,
      status: "running",
      locked_by: "runner-1",
      heartbeat_at: new Date(Date.now() - 120_000),
      attempts: 1,
      requested_model: "claude-opus-4-1",
      fork_session_id: "fork-1",
    });

  it("takes in the key's queued task's asks: /fresh added, a named fork or plan replaces, none named keeps", async () => {
    const repo = `octo/f${++n}`;
    const t = await running(repo);
    const newer = await seedTask(pool, {
      repo,
      force_fresh: true,
      fork_session_id: "fork-2",
      plan_request: "go",
    });
    await requeue(t);
    await expect(readTask(pool, newer.id)).rejects.toThrow(/no task/);
    expect(await readTask(pool, t.id)).toMatchObject({
      status: "queued",
      force_fresh: true,
      requested_model: "claude-opus-4-1",
      fork_session_id: "fork-2",
      plan_request: "go",
    });
  });

  it("keeps its own asks when no comment came meanwhile", async () => {
    const t = await running(`octo/f${++n}`);
    await requeue(t);
    expect(await readTask(pool, t.id)).toMatchObject({
      status: "queued",
      force_fresh: false,
      requested_model: "claude-opus-4-1",
      fork_session_id: "fork-1",
      plan_request: null,
    });
  });
});
