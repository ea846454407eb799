import type { Pool } from "../db/pool.js";
import type { Queryable } from "./db.js";
import { CHANNELS } from "./notify.js";

/**
 * The intake inbox (`webhook_deliveries`). A delivery is pending until the intake processor has
 * done its work (done), decided there was nothing to do (skipped), or given up (failed).
 * While a processor works on a row the row stays pending with `locked_by` set and `run_after`
 * pushed out by the lease: a processor that dies mid-way leaves a row that becomes claimable
 * again when the lease runs out.
 */
export type DeliveryStatus = "pending" | "done" | "failed" | "skipped";

export interface NewDelivery {
  deliveryId: string;
  /** Webhook event name, e.g. `issue_comment`. */
  event: string;
  action: string;
  installationId: number;
  /** What the delivery is about, e.g. `comment:123:created`; a second delivery about it is dropped. */
  dedupeKey: string;
  /** The payload as GitHub sent it, serialised. */
  payloadJson: string;
}

export interface Delivery {
  deliveryId: string;
  event: string;
  action: string;
  installationId: number;
  dedupeKey: string | null;
  payload: unknown;
  status: DeliveryStatus;
  attempts: number;
  maxAttempts: number;
  outcome: string | null;
  error: string | null;
  receivedAt: Date;
  processedAt: Date | null;
}

interface DeliveryRow {
  delivery_id: string;
  event: string;
  action: string | null;
  installation_id: number | null;
  dedupe_key: string | null;
  payload: unknown;
  status: DeliveryStatus;
  attempts: number;
  max_attempts: number;
  outcome: string | null;
  error: string | null;
  received_at: Date;
  processed_at: Date | null;
}

function toDelivery(r: DeliveryRow): Delivery {
  return {
    deliveryId: r.delivery_id,
    event: r.event,
    action: r.action ?? "",
    installationId: r.installation_id ?? 0,
    dedupeKey: r.dedupe_key,
    payload: r.payload,
    status: r.status,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    outcome: r.outcome,
    error: r.error,
    receivedAt: r.received_at,
    processedAt: r.processed_at,
  };
}

export type InsertResult = "inserted" | "duplicate" | "requeued";

/**
 * Take a delivery into the inbox and NOTIFY tether_intake, in one round trip (this is the
 * webhook's whole job). A second delivery with the same id or about the same thing (dedupe
 * key) inserts nothing, unless the first one failed: then GitHub's "Redeliver" is an operator
 * retrying it, and the failed row goes back to pending with fresh attempts.
 */
export async function insertDelivery(db: Queryable, d: NewDelivery): Promise<InsertResult> {
  const inserted = await db.query(
    `WITH ins AS (
       INSERT INTO webhook_deliveries
         (delivery_id, event, action, installation_id, dedupe_key, payload, status)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, 'pending')
       ON CONFLICT DO NOTHING
       RETURNING delivery_id
     )
     SELECT pg_notify('${CHANNELS.intake}', delivery_id) FROM ins`,
    [d.deliveryId, d.event, d.action, d.installationId, d.dedupeKey, d.payloadJson],
  );
  if (inserted.rowCount) return "inserted";
  return requeueFailed(db, d);
}

/**
 * Take many deliveries into the inbox in one statement (one commit), then NOTIFY once. The
 * payloads are spliced into one JSON array as they are (already serialised), and Postgres
 * splits it. Returns, per delivery, whether it was inserted, requeued or a duplicate.
 */
export async function insertDeliveries(
  db: Queryable,
  list: readonly NewDelivery[],
): Promise<InsertResult[]> {
  if (!list.length) return [];
  const json = `[${list
    .map(
      (d) =>
        `{"delivery_id":${JSON.stringify(d.deliveryId)},"event":${JSON.stringify(d.event)},` +
        `"action":${JSON.stringify(d.action)},"installation_id":${d.installationId},` +
        `"dedupe_key":${JSON.stringify(d.dedupeKey)},"payload":${d.payloadJson}}`,
    )
    .join(",")}]`;
  const { rows } = await db.query<{ delivery_id: string }>(
    `WITH ins AS (
       INSERT INTO webhook_deliveries
         (delivery_id, event, action, installation_id, dedupe_key, payload, status)
       SELECT x->>'delivery_id', x->>'event', x->>'action', (x->>'installation_id')::bigint,
              x->>'dedupe_key', x->'payload', 'pending'
         FROM jsonb_array_elements($1::jsonb) AS x
       ON CONFLICT DO NOTHING
       RETURNING delivery_id
     )
     SELECT ins.delivery_id FROM ins,
            (SELECT pg_notify('${CHANNELS.intake}', '') WHERE EXISTS (SELECT 1 FROM ins)) AS n`,
    [json],
  );
  const inserted = new Set(rows.map((r) => r.delivery_id));
  const rest = list.filter((d) => !inserted.has(d.deliveryId));
  const requeued = new Set<string>();
  if (rest.length) {
    const { rows: back } = await db.query<{ delivery_id: string; dedupe_key: string | null }>(
      `WITH upd AS (
         UPDATE webhook_deliveries
            SET status = 'pending', attempts = 0, run_after = now(), error = NULL, outcome = NULL,
                processed_at = NULL, locked_by = NULL, locked_at = NULL
          WHERE (delivery_id = ANY($1) OR dedupe_key = ANY($2)) AND status = 'failed'
          RETURNING delivery_id, dedupe_key
       )
       SELECT upd.*, pg_notify('${CHANNELS.intake}', upd.delivery_id) FROM upd`,
      [rest.map((d) => d.deliveryId), rest.map((d) => d.dedupeKey)],
    );
    for (const r of back) {
      requeued.add(r.delivery_id);
      if (r.dedupe_key) requeued.add(`key:${r.dedupe_key}`);
    }
  }
  return list.map((d) =>
    inserted.has(d.deliveryId)
      ? "inserted"
      : requeued.has(d.deliveryId) || requeued.has(`key:${d.dedupeKey}`)
        ? "requeued"
        : "duplicate",
  );
}

/** A second delivery of something that failed is an operator retrying it: back to pending. */
async function requeueFailed(db: Queryable, d: NewDelivery): Promise<InsertResult> {
  const requeued = await db.query(
    `WITH upd AS (
       UPDATE webhook_deliveries
          SET status = 'pending', attempts = 0, run_after = now(), error = NULL, outcome = NULL,
              processed_at = NULL, locked_by = NULL, locked_at = NULL
        WHERE (delivery_id = $1 OR dedupe_key = $2) AND status = 'failed'
        RETURNING delivery_id
     )
     SELECT pg_notify('${CHANNELS.intake}', delivery_id) FROM upd`,
    [d.deliveryId, d.dedupeKey],
  );
  return requeued.rowCount ? "requeued" : "duplicate";
}

/** Is the delivery about `dedupeKey` still waiting to be processed (or being processed)? */
export async function isDeliveryPending(db: Queryable, dedupeKey: string): Promise<boolean> {
  const { rows } = await db.query(
    "SELECT 1 FROM webhook_deliveries WHERE dedupe_key = $1 AND status = 'pending'",
    [dedupeKey],
  );
  return rows.length > 0;
}

/**
 * Claim up to `limit` ready deliveries, oldest first, for `worker`. One statement: rows locked
 * by another claimer are skipped, so any number of processors can share the inbox.
 */
export async function claimDeliveries(
  db: Queryable,
  opts: { worker: string; limit: number; leaseMs: number },
): Promise<Delivery[]> {
  const { rows } = await db.query<DeliveryRow>(
    `WITH ready AS (
       SELECT delivery_id FROM webhook_deliveries
        WHERE status = 'pending' AND run_after <= now()
        ORDER BY received_at, delivery_id
        LIMIT $2
        FOR UPDATE SKIP LOCKED
     )
     UPDATE webhook_deliveries d
        SET locked_by = $1, locked_at = now(), attempts = d.attempts + 1,
            run_after = now() + make_interval(secs => $3::double precision / 1000)
       FROM ready
      WHERE d.delivery_id = ready.delivery_id
     RETURNING d.*`,
    [opts.worker, opts.limit, opts.leaseMs],
  );
  return rows.map(toDelivery).sort((a, b) => a.receivedAt.getTime() - b.receivedAt.getTime());
}

/** Finish a claimed delivery. Scoped to the claimer: a row whose lease was taken over is left alone. */
export async function completeDelivery(
  db: Queryable,
  opts: { deliveryId: string; worker: string; status: "done" | "skipped"; outcome: string },
): Promise<boolean> {
  const res = await db.query(
    `UPDATE webhook_deliveries
        SET status = $3, outcome = $4, error = NULL, processed_at = now(),
            locked_by = NULL, locked_at = NULL
      WHERE delivery_id = $1 AND locked_by = $2 AND status = 'pending'`,
    [opts.deliveryId, opts.worker, opts.status, opts.outcome.slice(0, 2000)],
  );
  return (res.rowCount ?? 0) > 0;
}

/**
 * Record a failed attempt: back to pending after `retryInMs`, or failed for good when
 * `retryInMs` is null or the attempts are used up. `refund` gives the attempt back, for a
 * delivery that only has to wait for another one (it cannot wait forever: that one finishes).
 */
export async function failDeliveryAttempt(
  db: Queryable,
  opts: {
    deliveryId: string;
    worker: string;
    error: string;
    retryInMs: number | null;
    refund?: boolean;
  },
): Promise<DeliveryStatus | undefined> {
  const { rows } = await db.query<{ status: DeliveryStatus }>(
    `UPDATE webhook_deliveries
        SET attempts = attempts - $5::int,
            status = CASE WHEN $4::double precision IS NULL OR attempts - $5::int >= max_attempts
                          THEN 'failed' ELSE 'pending' END,
            run_after = now() + make_interval(secs => coalesce($4::double precision, 0) / 1000),
            error = $3,
            processed_at = CASE WHEN $4::double precision IS NULL OR attempts - $5::int >= max_attempts
                                THEN now() END,
            locked_by = NULL, locked_at = NULL
      WHERE delivery_id = $1 AND locked_by = $2 AND status = 'pending'
     RETURNING status`,
    [opts.deliveryId, opts.worker, opts.error.slice(0, 4000), opts.retryInMs, opts.refund ? 1 : 0],
  );
  return rows[0]?.status;
}

/** Hand back whatever `worker` still holds (shutdown): claimable again at once. */
export async function releaseDeliveries(db: Queryable, worker: string): Promise<number> {
  const res = await db.query(
    `UPDATE webhook_deliveries
        SET locked_by = NULL, locked_at = NULL, run_after = now(), attempts = greatest(attempts - 1, 0)
      WHERE locked_by = $1 AND status = 'pending'`,
    [worker],
  );
  return res.rowCount ?? 0;
}

export async function readDelivery(
  db: Queryable,
  deliveryId: string,
): Promise<Delivery | undefined> {
  const { rows } = await db.query<DeliveryRow>(
    "SELECT * FROM webhook_deliveries WHERE delivery_id = $1",
    [deliveryId],
  );
  return rows[0] ? toDelivery(rows[0]) : undefined;
}

/**
 * Which of these delivery ids the inbox holds, whatever their status, in one statement. The
 * redelivery sweeper leaves those alone: the delivery was kept, only GitHub missed the answer.
 */
export async function deliveriesInInbox(
  db: Queryable,
  deliveryIds: readonly string[],
): Promise<Set<string>> {
  if (!deliveryIds.length) return new Set();
  const { rows } = await db.query<{ delivery_id: string }>(
    "SELECT delivery_id FROM webhook_deliveries WHERE delivery_id = ANY($1::text[])",
    [[...new Set(deliveryIds)]],
  );
  return new Set(rows.map((r) => r.delivery_id));
}

/** Counts by status, for health, metrics and tests. */
export async function countDeliveries(db: Queryable): Promise<Record<DeliveryStatus, number>> {
  const { rows } = await db.query<{ status: DeliveryStatus; n: number }>(
    "SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status",
  );
  const out: Record<DeliveryStatus, number> = { pending: 0, done: 0, failed: 0, skipped: 0 };
  for (const r of rows) out[r.status] = r.n;
  return out;
}

/**
 * Delete finished deliveries (done, skipped, failed) last touched more than `olderThanMs` ago,
 * `batch` rows per statement so no statement holds many row locks for long. Pending rows are
 * work still to do and stay, whatever their age. Run by one replica at a time: a session
 * advisory lock on a connection of its own; when another replica holds it, nothing is done and
 * the result is undefined. Returns how many rows went.
 *
 * A row's age counts from when it was last finished (processed_at; received_at for rows the
 * old inbox left without one), so a delivery an operator redelivered counts from the redelivery.
 */
export async function pruneDeliveries(
  pool: Pool,
  opts: { olderThanMs: number; batch?: number },
): Promise<number | undefined> {
  const batch = opts.batch ?? 5000;
  const client = await pool.connect();
  try {
    const lock = await client.query<{ ok: boolean }>(
      `SELECT pg_try_advisory_lock(hashtext('tether:prune-deliveries')) AS ok`,
    );
    if (!lock.rows[0]?.ok) return undefined;
    try {
      let total = 0;
      for (;;) {
        const res = await client.query(
          `DELETE FROM webhook_deliveries
            WHERE delivery_id IN (
              SELECT delivery_id FROM webhook_deliveries
               WHERE status <> 'pending'
                 AND coalesce(processed_at, received_at)
                     < now() - make_interval(secs => $1::double precision / 1000)
               LIMIT $2
               FOR UPDATE SKIP LOCKED)`,
          [opts.olderThanMs, batch],
        );
        const n = res.rowCount ?? 0;
        total += n;
        if (n < batch) return total;
      }
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtext('tether:prune-deliveries'))`);
    }
  } finally {
    client.release();
  }
}
