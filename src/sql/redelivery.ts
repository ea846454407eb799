/**
 * The redelivery sweeper's state (`webhook_redelivery_mark`, one row) and its lock. The
 * sweeper itself is src/intake/redelivery-sweeper.ts.
 */
import type { Pool } from "../db/pool.js";
import type { Queryable } from "./db.js";

const LOCK = `hashtext('tether:redeliver-webhooks')`;

/** When the last sweep that walked GitHub's delivery log began; undefined before the first. */
export async function readRedeliveryMark(db: Queryable): Promise<Date | undefined> {
  const { rows } = await db.query<{ swept_from: Date }>(
    "SELECT swept_from FROM webhook_redelivery_mark",
  );
  return rows[0]?.swept_from;
}

/**
 * Record that a sweep which began at `sweptFrom` walked the log. The mark only moves forward:
 * a slow sweep that finishes after a later one cannot pull it back.
 */
export async function saveRedeliveryMark(db: Queryable, sweptFrom: Date): Promise<void> {
  await db.query(
    `INSERT INTO webhook_redelivery_mark (id, swept_from) VALUES (true, $1)
     ON CONFLICT (id) DO UPDATE
        SET swept_from = greatest(webhook_redelivery_mark.swept_from, excluded.swept_from),
            updated_at = now()`,
    [sweptFrom],
  );
}

/**
 * Run `fn` while holding the redelivery lock, so one replica sweeps at a time: a session
 * advisory lock on a connection of its own, held for the whole sweep (GitHub's answers
 * included). When another replica holds it, `fn` does not run and the result is
 * `{ held: false }`. A connection that is cut mid-sweep loses the lock with it; another replica
 * may then sweep too, which at worst redelivers a delivery twice (the inbox drops the second).
 */
export async function withRedeliveryLock<T>(
  pool: Pool,
  fn: (db: Queryable) => Promise<T>,
): Promise<{ held: false } | { held: true; value: T }> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const lock = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${LOCK}) AS ok`);
    if (!lock.rows[0]?.ok) return { held: false };
    try {
      return { held: true, value: await fn(client) };
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${LOCK})`).catch((e: Error) => (broken = e));
    }
  } finally {
    // A connection that could not unlock may still hold the lock: destroy it, never pool it.
    client.release(broken);
  }
}
