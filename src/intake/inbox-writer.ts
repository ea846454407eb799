import type { Pool } from "../db/pool.js";
import {
  insertDelivery,
  insertDeliveries,
  type InsertResult,
  type NewDelivery,
} from "../sql/deliveries.js";

export interface InboxWriterOptions {
  /** Most deliveries in one INSERT. Default 100. */
  maxBatch?: number;
  /** Most INSERTs under way at once (each holds a pool connection). Default 2. */
  maxInFlight?: number;
}

/**
 * Group commit for the inbox. A delivery that arrives while earlier ones are being written
 * waits for the next INSERT, which takes everything that queued up meanwhile: one statement,
 * one commit (one WAL flush) and one NOTIFY for the lot. Alone, a delivery is written at once.
 *
 * Why: 200 deliveries arriving together, each in its own transaction, queued for the pool's
 * connections and took ~250 ms to all be answered (bench/intake.ts). GitHub counts a delivery
 * as failed after 10 s, and a slow answer holds its connection open meanwhile.
 */
export class InboxWriter {
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private queue: Array<{
    delivery: NewDelivery;
    resolve: (r: InsertResult) => void;
    reject: (e: unknown) => void;
  }> = [];
  private inFlight = 0;

  constructor(
    private readonly pool: Pool,
    opts: InboxWriterOptions = {},
  ) {
    this.maxBatch = Math.max(1, opts.maxBatch ?? 100);
    this.maxInFlight = Math.max(1, opts.maxInFlight ?? 2);
  }

  /** Resolves once the delivery is committed (or known to be a duplicate). */
  insert(delivery: NewDelivery): Promise<InsertResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ delivery, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length && this.inFlight < this.maxInFlight) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.flush();
      });
    }
  }

  private async write(batch: InboxWriter["queue"]): Promise<void> {
    try {
      const results = await insertDeliveries(
        this.pool,
        batch.map((b) => b.delivery),
      );
      batch.forEach((b, i) => b.resolve(results[i]!));
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      // One bad row must not fail the others: write them one by one, each with its own fate.
      await Promise.all(
        batch.map((b) => insertDelivery(this.pool, b.delivery).then(b.resolve, b.reject)),
      );
    }
  }
}
