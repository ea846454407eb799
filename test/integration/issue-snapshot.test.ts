/**
 * The issue as the webhook carried it (#34, "what the webhook already carried"): a queued task
 * keeps the newest snapshot its comments brought, an edit of the issue refreshes it while the
 * task waits, and the runner's Task carries it. Real Postgres.
 */
import { describe, expect, it } from "vitest";
import { registerRuntime } from "../../src/sql/runtimes.js";
import { claimTasks } from "../../src/sql/tasks/claim.js";
import { refreshIssueSnapshot } from "../../src/sql/tasks/edit.js";
import type { IssueSnapshot } from "../../src/core/task.js";
import { enqueueComment } from "../../src/sql/tasks/enqueue.js";
import { createTestDatabase } from "../helpers/db.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
await registerRuntime(db.pool, {
  id: "rt-1",
  hostname: "h",
  homeDir: "/h",
  cliPath: "/c",
  cliVersion: "2.1.197",
  canResume: true,
  concurrency: 4,
});
let n = 0;

function snapshot(updatedAt: string, title = "Crash"): IssueSnapshot {
  return {
    title,
    body: `body at ${updatedAt}`,
    author: "alice",
    url: "https://github.com/octo/widgets/issues/1",
    updatedAt,
  };
}

async function enqueue(repo: string, id: number, issue?: IssueSnapshot) {
  return enqueueComment(db.pool, {
    key: { repoId: repoIdOf(repo), repo, issueNumber: 1, agent: "tether" },
    installationId: 1,
    isPullRequest: false,
    comment: {
      source: `comment:${id}`,
      commentId: id,
      author: "alice",
      url: `https://github.com/${repo}/issues/1#issuecomment-${id}`,
      body: "@tether go",
      createdAt: new Date(),
    },
    forceFresh: false,
    deliveryId: `d-${id}`,
    ...(issue ? { issue } : {}),
  });
}

async function snapshotOf(taskId: number): Promise<unknown> {
  const { rows } = await db.pool.query("SELECT issue_snapshot FROM tasks WHERE id = $1", [taskId]);
  return rows[0]?.issue_snapshot;
}

describe("the issue snapshot on a task", () => {
  it("keeps the newest of its coalesced comments' snapshots, whatever order they arrive in", async () => {
    const repo = `octo/s${++n}`;
    const a = await enqueue(repo, 1, snapshot("2026-11-27T10:00:05Z", "New title"));
    const b = await enqueue(repo, 2, snapshot("2026-11-27T10:00:01Z", "Old title"));
    expect(b).toEqual({ kind: "coalesced", taskId: a.taskId });
    expect(await snapshotOf(a.taskId)).toMatchObject({ title: "New title" });
    // A comment without one (another trigger) leaves it.
    await enqueue(repo, 3);
    expect(await snapshotOf(a.taskId)).toMatchObject({ title: "New title" });
  });

  it("is refreshed by an edit of the issue while the task waits, never by an older one", async () => {
    const repo = `octo/s${++n}`;
    const a = await enqueue(repo, 10, snapshot("2026-11-27T10:00:00Z"));
    const edited = snapshot("2026-11-27T10:05:00Z", "Edited");
    expect(
      await refreshIssueSnapshot(db.pool, { repoId: repoIdOf(repo), issueNumber: 1 }, edited),
    ).toEqual([a.taskId]);
    expect(
      await refreshIssueSnapshot(
        db.pool,
        { repoId: repoIdOf(repo), issueNumber: 1 },
        snapshot("2026-11-27T10:01:00Z"),
      ),
    ).toEqual([]);
    expect(await snapshotOf(a.taskId)).toEqual(edited);
  });

  it("reaches the runner with the claimed task; a task without one asks GitHub", async () => {
    const repo = `octo/s${++n}`;
    const withIt = await enqueue(repo, 20, snapshot("2026-11-27T11:00:00Z"));
    const other = `octo/s${++n}`;
    await enqueue(other, 21);
    const claimed = await claimTasks(db.pool, "runner-1", "rt-1", 10);
    const mine = claimed.find((t) => t.id === withIt.taskId);
    expect(mine?.issueSnapshot).toEqual(snapshot("2026-11-27T11:00:00Z"));
    expect(claimed.find((t) => t.repo === other)?.issueSnapshot).toBeNull();
  });
});
