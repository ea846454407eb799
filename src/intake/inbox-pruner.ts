import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import { pruneDeliveries } from "../sql/deliveries.js";
import { pruneTurnEvents } from "../sql/turn-events.js";
import { PeriodicJob } from "./periodic-job.js";

/**
 * How long a finished delivery stays in the inbox. It must outlive GitHub's redelivery
 * horizon: a delivery can be redelivered for 3 days on github.com and 7 days on GitHub
 * Enterprise Server ("Redelivering webhooks" in GitHub's docs), and while its row is here a
 * redelivery is known for what it is (same delivery id or dedupe key: a duplicate, or a failed
 * one tried again) instead of becoming a second task. Twice the longer horizon.
 */
export const DELIVERY_RETENTION_MS = 14 * 24 * 3600_000;
/** How often each web process tries to sweep (only one replica at a time gets to). */
export const PRUNE_INTERVAL_MS = 3600_000;
/** The first sweep waits this long after start, away from the start-up's own work. */
export const PRUNE_FIRST_DELAY_MS = 60_000;

export interface InboxPrunerOptions {
  pool: Pool;
  log: Logger;
  /** Counts what a sweep deleted (tether_deliveries_pruned_total). */
  pruned?: (n: number) => void;
  retentionMs?: number;
  intervalMs?: number;
  firstDelayMs?: number;
}

/**
 * Deletes finished deliveries from the inbox once they are older than the retention window,
 * every PRUNE_INTERVAL_MS. Every web process runs one; pruneDeliveries' advisory lock lets one
 * replica sweep at a time. A sweep that fails (the database away) is logged and the next one
 * tries again: nothing here can stop the process.
 */
export class InboxPruner {
  private readonly job: PeriodicJob<number | undefined>;

  constructor(private readonly opts: InboxPrunerOptions) {
    this.job = new PeriodicJob(() => this.prune(), opts.intervalMs ?? PRUNE_INTERVAL_MS);
  }

  start(): void {
    this.job.start(this.opts.firstDelayMs ?? PRUNE_FIRST_DELAY_MS);
  }

  /** One sweep now. Resolves to what it deleted, or undefined when another replica swept. */
  sweep(): Promise<number | undefined> {
    return this.job.run();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }

  /**
   * The live view's events of tasks finished longer ago than the retention window (past any
   * live link's expiry), swept by the replica that swept the inbox.
   */
  private async pruneLiveEvents(retentionMs: number): Promise<void> {
    try {
      const gone = await pruneTurnEvents(this.opts.pool, { olderThanMs: retentionMs });
      if (gone > 0) this.opts.log.info({ deleted: gone }, "pruned finished turns' live events");
    } catch (err) {
      this.opts.log.warn({ err }, "pruning the turns' live events failed; trying again later");
    }
  }

  private async prune(): Promise<number | undefined> {
    const retentionMs = this.opts.retentionMs ?? DELIVERY_RETENTION_MS;
    try {
      const n = await pruneDeliveries(this.opts.pool, { olderThanMs: retentionMs });
      if (n !== undefined) await this.pruneLiveEvents(retentionMs);
      if (n === undefined) {
        this.opts.log.debug("another replica is pruning the deliveries inbox");
      } else {
        this.opts.pruned?.(n);
        if (n > 0) {
          this.opts.log.info(
            { deleted: n, retentionDays: retentionMs / 86_400_000 },
            "pruned finished deliveries from the inbox",
          );
        }
      }
      return n;
    } catch (err) {
      this.opts.log.warn({ err }, "pruning the deliveries inbox failed; trying again later");
      return undefined;
    }
  }
}
