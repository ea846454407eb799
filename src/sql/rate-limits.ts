/**
 * GitHub's rate-limit headroom per installation, shared through Postgres (#34, "near the limit,
 * defer; do not fail"): every process writes what its responses reported, every runner's claim
 * reads it (src/sql/tasks/claim.ts skips the queued tasks of an installation below the reserve
 * until its window resets), and the runner tells each such task's thread once that it waits.
 */
import type { Pool } from "../db/pool.js";
import { inTransaction, type Queryable } from "./db.js";
import type { Task } from "../core/task.js";
import { toTask, type Row } from "./tasks/claim.js";
import { foldNewerQueued, mergeAsks } from "./tasks/fold.js";

/** One installation's headroom as a response reported it. */
export interface HeadroomRow {
  installationId: number;
  remaining: number;
  limit: number | null;
  /** When the window resets (x-ratelimit-reset), epoch seconds; null when not given. */
  resetAt: number | null;
}

/**
 * Store what responses reported. Within one window (the same reset) the lowest remaining wins,
 * whichever process wrote it last; a later window replaces an earlier one, and an answer from an
 * earlier window than the stored one (a slow process's late write) changes nothing.
 */
export async function saveHeadroom(db: Queryable, rows: readonly HeadroomRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO installation_rate_limits AS l (installation_id, remaining, "limit", reset_at)
     SELECT i, r, lim, CASE WHEN reset IS NULL THEN NULL ELSE to_timestamp(reset) END
       FROM unnest($1::bigint[], $2::int[], $3::int[], $4::double precision[]) AS u(i, r, lim, reset)
     ON CONFLICT (installation_id) DO UPDATE SET
       remaining = CASE WHEN excluded.reset_at IS NOT DISTINCT FROM l.reset_at
                        THEN LEAST(l.remaining, excluded.remaining) ELSE excluded.remaining END,
       "limit" = COALESCE(excluded."limit", l."limit"),
       reset_at = excluded.reset_at,
       observed_at = now()
     WHERE excluded.reset_at IS NULL OR l.reset_at IS NULL OR excluded.reset_at >= l.reset_at`,
    [
      rows.map((r) => r.installationId),
      rows.map((r) => Math.max(0, Math.trunc(r.remaining))),
      rows.map((r) => (r.limit === null ? null : Math.trunc(r.limit))),
      rows.map((r) => r.resetAt),
    ],
  );
}

/** An installation's stored headroom, with how many of its queued tasks wait for the reset. */
export interface StoredHeadroom {
  remaining: number;
  limit: number | null;
  /** Epoch seconds; null when GitHub gave none. */
  resetAt: number | null;
  /** Queued tasks of the installation waiting for the reset now. */
  deferred: number;
}

/** Every installation's stored headroom, keyed by installation id (what /api/stats shows). */
export async function readHeadroom(
  db: Queryable,
  reserve: number,
): Promise<Record<string, StoredHeadroom>> {
  const { rows } = await db.query(
    `SELECT l.installation_id::text AS installation, l.remaining, l."limit",
            extract(epoch FROM l.reset_at)::double precision AS reset_at,
            (SELECT count(*)::int FROM tasks t
              WHERE t.status = 'queued' AND t.installation_id = l.installation_id
                AND (t.deferred_until > now()
                     OR (l.remaining < $1 AND l.reset_at > now()))) AS deferred
       FROM installation_rate_limits l ORDER BY l.installation_id`,
    [reserve],
  );
  return Object.fromEntries(
    rows.map((r) => [
      r.installation as string,
      {
        remaining: r.remaining as number,
        limit: (r.limit as number | null) ?? null,
        resetAt: r.reset_at === null ? null : Math.round(r.reset_at as number),
        deferred: r.deferred as number,
      },
    ]),
  );
}

/** A queued task that waits for its installation's reset, about to be told so. */
export interface DeferredTask {
  task: Task;
  /** When the installation's window resets: the time the note names. */
  until: Date;
  remaining: number;
}

/**
 * Queued tasks of installations below the reserve whose thread has not yet been told of the
 * coming reset, oldest first: each is marked as told (deferred_until, which also keeps the claim
 * off it until then) in one statement, so no other runner tells it twice. The note is posted
 * after, outside any transaction (GitHub may be slow); `attachNote` then records its comment.
 */
export async function takeUntoldDeferred(
  db: Queryable,
  reserve: number,
  limit: number,
  /** A reset sooner than this is not worth a note (nor the request it costs): the task just waits. */
  minWaitMs = 30_000,
): Promise<DeferredTask[]> {
  const { rows } = await db.query(
    `WITH untold AS (
       SELECT t.id, l.reset_at, l.remaining
         FROM tasks t JOIN installation_rate_limits l ON l.installation_id = t.installation_id
        WHERE t.status = 'queued' AND l.remaining < $1
          AND l.reset_at > now() + make_interval(secs => $3::double precision / 1000)
          AND (t.deferred_until IS NULL OR t.deferred_until < l.reset_at)
        ORDER BY t.created_at, t.id
        LIMIT $2
        FOR UPDATE OF t SKIP LOCKED)
     UPDATE tasks t SET deferred_until = u.reset_at, updated_at = now()
       FROM untold u
      WHERE t.id = u.id
     RETURNING t.*, u.remaining AS deferred_remaining`,
    [reserve, limit, minWaitMs],
  );
  return rows
    .map((r) => ({
      task: toTask(r),
      until: r.deferred_until as Date,
      remaining: r.deferred_remaining as number,
    }))
    .sort((a, b) => a.task.createdAt.getTime() - b.task.createdAt.getTime());
}

/**
 * The note's comment becomes the task's tracking comment, which its turn edits once it runs.
 * False: the task left the queue while the note was posted (the window reset meanwhile and a
 * runner took it, with a comment of its own), or already had another comment.
 */
export async function attachNote(
  db: Queryable,
  taskId: number,
  commentId: number,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE tasks SET tracking_comment_id = $2, updated_at = now()
      WHERE id = $1 AND status = 'queued'
        AND (tracking_comment_id IS NULL OR tracking_comment_id = $2)`,
    [taskId, commentId],
  );
  return (res.rowCount ?? 0) > 0;
}

/**
 * A turn that ran into a rate limit it could not wait out goes back to the queue, not to
 * failure (#34): its attempt is given back, and the claim leaves it until `until`. A newer
 * queued task of its key (a comment that came meanwhile) is folded into it, as the sweeper
 * does. Scoped to the runner's lease; false when the lease had been lost.
 */
export async function requeueUntil(
  pool: Pool,
  taskId: number,
  runnerId: string,
  until: Date,
): Promise<boolean> {
  return inTransaction(pool, async (tx) => {
    const cur = await tx.query(
      `SELECT * FROM tasks WHERE id = $1 AND locked_by = $2 AND status = 'running' FOR UPDATE`,
      [taskId, runnerId],
    );
    const t = cur.rows[0] as Row | undefined;
    if (!t) return false;
    const merge = mergeAsks(await foldNewerQueued(tx, t), 3);
    await tx.query(
      `UPDATE tasks SET status = 'queued', locked_by = NULL, locked_at = NULL, heartbeat_at = NULL,
              attempts = GREATEST(attempts - 1, 0), deferred_until = $2,
              ${merge.set}, updated_at = now()
        WHERE id = $1`,
      [taskId, until, ...merge.params],
    );
    return true;
  });
}
