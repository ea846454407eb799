/**
 * The turn_events table: the live view of a turn (#40), written by the runner as the CLI
 * streams (src/runner/render/live-recorder.ts), read by any web process (src/web/live-routes.ts).
 * Each insert NOTIFYs `tether_live` with the task id: a latency hint, the reader polls too.
 * And live_link_key: the one key the live view's links are signed with (src/core/live-link.ts).
 */
import { randomBytes } from "node:crypto";
import type { Pool } from "../db/pool.js";
import type { Queryable } from "./db.js";
import { CHANNELS } from "./notify.js";

export interface TurnEventRow {
  id: number;
  kind: string;
  body: unknown;
  at: Date;
}

/** Adds one event of a task's turn, and tells listeners. Returns its id. */
export async function appendTurnEvent(
  db: Queryable,
  taskId: number,
  kind: string,
  body: unknown,
): Promise<number> {
  const json = JSON.stringify(body);
  const res = await db.query<{ id: string }>(
    `WITH ins AS (
       INSERT INTO turn_events (task_id, kind, body, bytes) VALUES ($1, $2, $3::jsonb, $4)
       RETURNING id)
     SELECT id, pg_notify($5, $1::text) FROM ins`,
    [taskId, kind, json, Buffer.byteLength(json), CHANNELS.live],
  );
  return Number(res.rows[0]?.id);
}

/**
 * Deletes a task's oldest events (never its `init`) until at most `maxEvents` rows and
 * `maxBytes` bytes are left. Returns how many went, and how many of those were tool calls.
 */
export async function trimTurnEvents(
  db: Queryable,
  taskId: number,
  bound: { maxEvents: number; maxBytes: number },
): Promise<{ events: number; toolCalls: number }> {
  const res = await db.query<{ kind: string }>(
    `DELETE FROM turn_events WHERE id IN (
       SELECT id FROM (
         SELECT id,
                count(*) OVER (ORDER BY id DESC) AS n,
                sum(bytes) OVER (ORDER BY id DESC) AS b
           FROM turn_events WHERE task_id = $1 AND kind NOT IN ('init', 'dropped')) newest
        WHERE n > $2 OR b > $3)
     RETURNING kind`,
    [taskId, bound.maxEvents, bound.maxBytes],
  );
  return {
    events: res.rows.length,
    toolCalls: res.rows.filter((r) => r.kind === "tool_use").length,
  };
}

/** Replaces the task's note of how many events were dropped past the bound. */
export async function noteDroppedEvents(
  db: Queryable,
  taskId: number,
  dropped: { events: number; toolCalls: number },
): Promise<void> {
  await db.query(`DELETE FROM turn_events WHERE task_id = $1 AND kind = 'dropped'`, [taskId]);
  await appendTurnEvent(db, taskId, "dropped", dropped);
}

/** A task's events after `afterId`, oldest first, at most `limit`. */
export async function readTurnEvents(
  db: Queryable,
  taskId: number,
  afterId = 0,
  limit = 500,
): Promise<TurnEventRow[]> {
  const res = await db.query<{ id: string; kind: string; body: unknown; created_at: Date }>(
    `SELECT id, kind, body, created_at FROM turn_events
      WHERE task_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
    [taskId, afterId, limit],
  );
  return res.rows.map((r) => ({ id: Number(r.id), kind: r.kind, body: r.body, at: r.created_at }));
}

export interface LiveTask {
  id: number;
  repo: string;
  issueNumber: number;
  agent: string;
  status: string;
  finishedAt: Date | null;
}

/** What the live page says of its task; null when there is no such task. */
export async function readLiveTask(db: Queryable, taskId: number): Promise<LiveTask | null> {
  const res = await db.query<{
    id: string;
    repo: string;
    issue_number: number;
    agent: string;
    status: string;
    finished_at: Date | null;
  }>(`SELECT id, repo, issue_number, agent, status, finished_at FROM tasks WHERE id = $1`, [
    taskId,
  ]);
  const r = res.rows[0];
  if (!r) return null;
  return {
    id: Number(r.id),
    repo: r.repo,
    issueNumber: r.issue_number,
    agent: r.agent,
    status: r.status,
    finishedAt: r.finished_at,
  };
}

/**
 * The live links' signing key: made once by whichever process asks first (a random 32 bytes),
 * the same for every process after.
 */
export async function liveLinkKey(pool: Pool): Promise<Buffer> {
  const res = await pool.query<{ key: Buffer }>(
    `WITH ins AS (
       INSERT INTO live_link_key (id, key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING RETURNING key)
     SELECT key FROM ins UNION ALL SELECT key FROM live_link_key WHERE id = 1 LIMIT 1`,
    [randomBytes(32)],
  );
  const key = res.rows[0]?.key;
  if (!key) throw new Error("no live link key in Postgres (live_link_key)");
  return key;
}

/**
 * Deletes the events of tasks finished more than `olderThanMs` ago (a finished turn's page has
 * nothing more to show once its link has expired). Returns how many rows went.
 */
export async function pruneTurnEvents(
  db: Queryable,
  opts: { olderThanMs: number },
): Promise<number> {
  const res = await db.query(
    `DELETE FROM turn_events e USING tasks t
      WHERE e.task_id = t.id AND t.finished_at IS NOT NULL
        AND t.finished_at < now() - make_interval(secs => $1::double precision / 1000)`,
    [opts.olderThanMs],
  );
  return res.rowCount ?? 0;
}
