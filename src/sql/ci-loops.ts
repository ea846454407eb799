/**
 * The `ci_loops` and `ci_commits` tables: CI failures on a conversation's own pull request and
 * the automatic turns they made (docs/how-a-turn-runs.md "Triggers beyond a mention"). Written by intake only. Every
 * decision for a key runs under a transaction-scoped advisory lock on that key, so the three
 * events GitHub sends for one failure (check_run, check_suite, workflow_run), processed at the
 * same time, still make one decision.
 */
import type { Pool } from "../db/pool.js";
import type { TaskKey } from "../core/task.js";
import { inTransaction, type Queryable } from "./db.js";

export type CiLoopState = "open" | "green" | "stopped" | "limit";

/** What a failing head commit of a conversation comes to. */
export type CiClaim =
  /** Take it: queue an automatic turn (the loop's `attempt`th). */
  | { kind: "take"; loopId: number; attempt: number }
  /** This commit was already taken (another delivery of the same failure). */
  | { kind: "seen"; result: string }
  /** A turn queued or running for the key absorbs it. */
  | { kind: "absorbed"; taskId: number }
  /** `attempts` turns did not make CI pass: say so once, and take nothing more. */
  | { kind: "stop"; loopId: number; attempts: number }
  /** The loop's last turn was refused by a spend limit: the loop ends there. */
  | { kind: "limit"; loopId: number }
  /** An earlier loop stopped (or hit a limit) and nobody asked the agent since. */
  | { kind: "held"; state: CiLoopState };

/** The conversation whose branch `branch` is, with its pull request; null when none. */
export async function conversationOfBranch(
  db: Queryable,
  repo: { id: number; name: string },
  branch: string,
): Promise<(TaskKey & { pullNumber: number | null }) | null> {
  const { rows } = await db.query<{ issue_number: number; agent: string; pull_number: number }>(
    `SELECT issue_number, agent, pull_number FROM conversation_branches
      WHERE repo_id = $1 AND branch = $2 LIMIT 1`,
    [repo.id, branch],
  );
  const r = rows[0];
  return r
    ? {
        repoId: repo.id,
        repo: repo.name,
        issueNumber: r.issue_number,
        agent: r.agent,
        pullNumber: r.pull_number,
      }
    : null;
}

async function lockKey(db: Queryable, key: TaskKey): Promise<void> {
  const lock = `ci:${key.repoId}#${key.issueNumber}/${key.agent}`;
  await db.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [lock]);
}

/**
 * Decide, once per (key, head commit), what a failure of the checks on `headSha` does. A commit
 * taken earlier whose turn was never queued (the process stopped between) is taken again, so a
 * retried delivery finishes the job; queueing is idempotent (its request's source is the commit).
 */
export async function claimCiFailure(
  pool: Pool,
  c: {
    key: TaskKey;
    pullNumber: number;
    headSha: string;
    maxAttempts: number;
    deliveryId: string;
  },
): Promise<CiClaim> {
  const k = [c.key.repoId, c.key.issueNumber, c.key.agent];
  return inTransaction(pool, async (tx): Promise<CiClaim> => {
    await lockKey(tx, c.key);
    const seen = await tx.query<{
      result: string;
      task_id: string | null;
      loop_id: string;
      delivery_id: string | null;
    }>(
      `SELECT result, task_id, loop_id, delivery_id FROM ci_commits
        WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND head_sha = $4`,
      [...k, c.headSha],
    );
    const s = seen.rows[0];
    if (s) {
      // Another delivery of the same failure (the three events come together): it was taken.
      // The delivery that took it, retried after a crash before its turn was queued, goes on.
      if (s.result !== "queued" || s.task_id !== null || s.delivery_id !== c.deliveryId)
        return { kind: "seen", result: s.result };
      const { rows } = await tx.query<{ attempts: number; state: string }>(
        `SELECT attempts, state FROM ci_loops WHERE id = $1`,
        [s.loop_id],
      );
      if (rows[0]?.state !== "open") return { kind: "seen", result: s.result };
      return { kind: "take", loopId: Number(s.loop_id), attempt: rows[0].attempts };
    }

    let open = (
      await tx.query<{ id: string; attempts: number }>(
        `SELECT id, attempts FROM ci_loops
          WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND state = 'open' FOR UPDATE`,
        k,
      )
    ).rows[0];
    const record = (loopId: number | string, result: string, taskId: number | null) =>
      tx.query(
        `INSERT INTO ci_commits (repo_id, issue_number, agent, head_sha, loop_id, result, task_id,
                                 delivery_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [...k, c.headSha, loopId, result, taskId, c.deliveryId],
      );

    if (!open) {
      const last = (
        await tx.query<{ state: CiLoopState; ended_at: Date; green_at: Date | null }>(
          `SELECT state, ended_at, green_at FROM ci_loops
            WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 ORDER BY id DESC LIMIT 1`,
          k,
        )
      ).rows[0];
      if (last && (last.state === "stopped" || last.state === "limit") && !last.green_at) {
        // Held until someone asks the agent again (any turn not started by CI) or CI passes.
        const asked = await tx.query(
          `SELECT 1 FROM tasks
            WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND trigger <> 'ci'
              AND created_at > $4 LIMIT 1`,
          [...k, last.ended_at],
        );
        if (!asked.rowCount) return { kind: "held", state: last.state };
      }
      open = (
        await tx.query<{ id: string; attempts: number }>(
          `INSERT INTO ci_loops (repo_id, issue_number, agent, pull_number) VALUES ($1, $2, $3, $4)
           RETURNING id, attempts`,
          [...k, c.pullNumber],
        )
      ).rows[0]!;
    } else {
      const lastTurn = await tx.query<{ outcome: string | null }>(
        `SELECT t.outcome FROM ci_commits c JOIN tasks t ON t.id = c.task_id
          WHERE c.loop_id = $1 AND c.result = 'queued' ORDER BY c.created_at DESC LIMIT 1`,
        [open.id],
      );
      if (lastTurn.rows[0]?.outcome === "limit_refused") {
        await endLoop(tx, open.id, "limit");
        await record(open.id, "limit", null);
        return { kind: "limit", loopId: Number(open.id) };
      }
    }

    const covering = await tx.query<{ id: string }>(
      `SELECT id FROM tasks
        WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND status IN ('queued', 'running')
        ORDER BY id LIMIT 1`,
      k,
    );
    if (covering.rows[0]) {
      const taskId = Number(covering.rows[0].id);
      await record(open.id, "absorbed", taskId);
      return { kind: "absorbed", taskId };
    }
    if (open.attempts >= c.maxAttempts) {
      await endLoop(tx, open.id, "stopped");
      await record(open.id, "stopped", null);
      return { kind: "stop", loopId: Number(open.id), attempts: open.attempts };
    }
    await tx.query(`UPDATE ci_loops SET attempts = attempts + 1 WHERE id = $1`, [open.id]);
    await record(open.id, "queued", null);
    return { kind: "take", loopId: Number(open.id), attempt: open.attempts + 1 };
  });
}

async function endLoop(db: Queryable, id: number | string, state: CiLoopState): Promise<void> {
  await db.query(`UPDATE ci_loops SET state = $2, ended_at = now() WHERE id = $1`, [id, state]);
}

/** The turn queued for a taken commit (or, when a turn already waiting covered it, absorbed). */
export async function recordCiTurn(
  db: Queryable,
  c: { key: TaskKey; headSha: string; taskId: number; absorbed: boolean },
): Promise<void> {
  await db.query(
    `UPDATE ci_commits SET task_id = $5, result = CASE WHEN $6 THEN 'absorbed' ELSE result END
      WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND head_sha = $4`,
    [c.key.repoId, c.key.issueNumber, c.key.agent, c.headSha, c.taskId, c.absorbed],
  );
  if (c.absorbed)
    await db.query(
      `UPDATE ci_loops SET attempts = attempts - 1
        WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND state = 'open' AND attempts > 0`,
      [c.key.repoId, c.key.issueNumber, c.key.agent],
    );
}

/**
 * The checks on the conversation's head commit passed: its open loop ends green, and a loop that
 * had stopped is released (the next failure may start a loop again). Returns what it ended.
 */
export async function ciPassed(pool: Pool, key: TaskKey): Promise<"ended" | "released" | "none"> {
  const k = [key.repoId, key.issueNumber, key.agent];
  return inTransaction(pool, async (tx) => {
    await lockKey(tx, key);
    const ended = await tx.query(
      `UPDATE ci_loops SET state = 'green', ended_at = now(), green_at = now()
        WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND state = 'open'`,
      k,
    );
    if (ended.rowCount) return "ended";
    const released = await tx.query(
      `UPDATE ci_loops SET green_at = now()
        WHERE id = (SELECT id FROM ci_loops WHERE repo_id = $1 AND issue_number = $2 AND agent = $3
                     ORDER BY id DESC LIMIT 1)
          AND state IN ('stopped', 'limit') AND green_at IS NULL`,
      k,
    );
    return released.rowCount ? "released" : "none";
  });
}
