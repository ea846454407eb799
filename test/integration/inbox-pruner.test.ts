/**
 * The deliveries inbox is pruned on real Postgres: rows are back-dated in SQL, then swept.
 */
import pg from "pg";
import { beforeEach, describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import {
  DELIVERY_RETENTION_MS,
  InboxPruner,
  PRUNE_INTERVAL_MS,
} from "../../src/intake/inbox-pruner.js";
import { createLogger } from "../../src/log.js";
import { Metrics } from "../../src/metrics.js";
import { insertDelivery, pruneDeliveries } from "../../src/sql/deliveries.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();
const log = createLogger("silent");
const DAY_MS = 86_400_000;

beforeEach(async () => {
  await db.pool.query("TRUNCATE webhook_deliveries");
});

/** A delivery in the inbox with its status, received and finished `days` ago. */
async function row(
  id: string,
  status: "pending" | "done" | "skipped" | "failed",
  receivedDaysAgo: number,
  processedDaysAgo: number | null = status === "pending" ? null : receivedDaysAgo,
): Promise<void> {
  await insertDelivery(db.pool, {
    deliveryId: id,
    event: "issue_comment",
    action: "created",
    installationId: 1,
    dedupeKey: `comment:${id}:created`,
    payloadJson: JSON.stringify({ action: "created", id }),
  });
  await db.pool.query(
    `UPDATE webhook_deliveries
        SET status = $2,
            received_at = now() - make_interval(days => $3),
            processed_at = CASE WHEN $4::int IS NULL THEN NULL ELSE now() - make_interval(days => $4::int) END
      WHERE delivery_id = $1`,
    [id, status, receivedDaysAgo, processedDaysAgo],
  );
}

async function ids(): Promise<string[]> {
  const { rows } = await db.pool.query<{ delivery_id: string }>(
    "SELECT delivery_id FROM webhook_deliveries ORDER BY delivery_id",
  );
  return rows.map((r) => r.delivery_id);
}

describe("pruneDeliveries", () => {
  it("keeps the window longer than GitHub's redelivery horizon (7 days on GHES, 3 on github.com)", () => {
    expect(DELIVERY_RETENTION_MS).toBeGreaterThan(7 * DAY_MS);
  });

  it("deletes finished deliveries past the window, and nothing else", async () => {
    await row("done-old", "done", 15);
    await row("skipped-old", "skipped", 30);
    await row("failed-old", "failed", 15);
    await row("done-recent", "done", 13);
    await row("failed-recent", "failed", 2);
    // Pending rows are work still to do, however old.
    await row("pending-old", "pending", 60);
    // Received long ago but finished again lately (an operator's redelivery): counts from then.
    await row("redelivered", "done", 20, 1);
    // A row the first inbox left (no processed_at): counts from when it came.
    await row("legacy-old", "done", 20, null);
    await row("legacy-recent", "done", 1, null);

    const deleted = await pruneDeliveries(db.pool, { olderThanMs: DELIVERY_RETENTION_MS });
    expect(deleted).toBe(4);
    expect(await ids()).toEqual([
      "done-recent",
      "failed-recent",
      "legacy-recent",
      "pending-old",
      "redelivered",
    ]);
    expect(await pruneDeliveries(db.pool, { olderThanMs: DELIVERY_RETENTION_MS })).toBe(0);
  });

  it("deletes in batches until none is left", async () => {
    for (let i = 0; i < 25; i++) await row(`old-${String(i).padStart(2, "0")}`, "done", 20);
    await row("young", "done", 1);
    expect(await pruneDeliveries(db.pool, { olderThanMs: DELIVERY_RETENTION_MS, batch: 10 })).toBe(
      25,
    );
    expect(await ids()).toEqual(["young"]);
  });

  it("one replica at a time: while another holds the lock, nothing is deleted", async () => {
    await row("done-old", "done", 20);
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query(`SELECT pg_advisory_lock(hashtext('tether:prune-deliveries'))`);
      expect(
        await pruneDeliveries(db.pool, { olderThanMs: DELIVERY_RETENTION_MS }),
      ).toBeUndefined();
      expect(await ids()).toEqual(["done-old"]);
      await other.query(`SELECT pg_advisory_unlock(hashtext('tether:prune-deliveries'))`);
      expect(await pruneDeliveries(db.pool, { olderThanMs: DELIVERY_RETENTION_MS })).toBe(1);
    } finally {
      await other.end();
    }
  });

  it("sweeps started together delete each row once", async () => {
    for (let i = 0; i < 40; i++) await row(`old-${i}`, "failed", 20);
    const results = await Promise.all(
      Array.from({ length: 4 }, () =>
        pruneDeliveries(db.pool, { olderThanMs: DELIVERY_RETENTION_MS, batch: 7 }),
      ),
    );
    expect(results.reduce<number>((sum, n) => sum + (n ?? 0), 0)).toBe(40);
    expect(await ids()).toEqual([]);
  });
});

describe("InboxPruner", () => {
  it("sweeps after its first delay and then every interval, counting what it deleted", async () => {
    expect(PRUNE_INTERVAL_MS).toBe(3600_000);
    const metrics = new Metrics();
    const pruner = new InboxPruner({
      pool: db.pool,
      log,
      pruned: (n) => metrics.recordDeliveriesPruned(n),
      firstDelayMs: 0,
      intervalMs: 20,
    });
    await row("a", "done", 20);
    await row("b", "skipped", 20);
    pruner.start();
    try {
      await waitFor(async () => (await ids()).length === 0);
      // A later sweep finds what aged past the window since.
      await row("c", "done", 20);
      await waitFor(async () => (await ids()).length === 0);
    } finally {
      await pruner.stop();
    }
    const text = await metrics.render();
    expect(text).toMatch(/^tether_deliveries_pruned_total 3$/m);
  });

  it("a sweep that fails is logged and reported as nothing done; the next one runs", async () => {
    const broken = {
      connect: () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:1")),
    } as unknown as Pool;
    const warnings: unknown[] = [];
    const spy = createLogger("silent");
    spy.warn = ((obj: unknown) => {
      warnings.push(obj);
    }) as typeof spy.warn;
    const pruner = new InboxPruner({ pool: broken, log: spy });
    expect(await pruner.sweep()).toBeUndefined();
    expect(await pruner.sweep()).toBeUndefined();
    expect(warnings).toHaveLength(2);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 25));
  }
}
