import {
  decideRedeliveries,
  lookbackStart,
  type DeliveryAttempt,
  type LeaveReason,
  type RedeliveryPolicy,
} from "../core/redelivery-decision.js";
import type { Pool } from "../db/pool.js";
import type { DeliveryLog } from "../github/webhook-deliveries.js";
import type { Logger } from "../log.js";
import type { Queryable } from "../sql/db.js";
import { deliveriesInInbox } from "../sql/deliveries.js";
import { readRedeliveryMark, saveRedeliveryMark, withRedeliveryLock } from "../sql/redelivery.js";
import { PeriodicJob } from "./periodic-job.js";

/** How often each web process tries to sweep (TETHER_REDELIVER_MINUTES). */
export const REDELIVER_INTERVAL_MS = 5 * 60_000;
/** The first sweep, soon after start: an outage that ended with a restart is looked at at once. */
export const REDELIVER_FIRST_DELAY_MS = 30_000;
/**
 * A delivery whose newest attempt is younger than this waits: GitHub may still be waiting for
 * an answer (10 s on github.com, 30 s on GitHub Enterprise Server) and its log may lag, and a
 * redelivery another replica asked for may not have been made yet.
 */
export const REDELIVER_SETTLE_MS = 2 * 60_000;
/** The original and three redeliveries; after that a delivery is given up on. */
export const REDELIVER_MAX_ATTEMPTS = 4;
/** Pages of 100 walked per sweep at most: 5,000 attempts, far more than one interval brings. */
export const REDELIVER_MAX_PAGES = 50;
/** The first sweep ever (no mark in Postgres) looks back this far. */
export const REDELIVER_FIRST_LOOKBACK_MS = 24 * 3600_000;
/** GitHub keeps deliveries 3 days on github.com (7 on GitHub Enterprise Server). */
export const DELIVERY_LOG_HORIZON_MS = 3 * 24 * 3600_000;
/** Room for GitHub's clock and this process's to differ, and for the log to lag. */
export const REDELIVER_CLOCK_MARGIN_MS = 5 * 60_000;

export interface RedeliverySweeperOptions {
  pool: Pool;
  log: Logger;
  /** GitHub's log of the app's deliveries, through a fresh app-authenticated client. */
  github: () => Promise<DeliveryLog>;
  /** Counts redeliveries asked of GitHub (tether_webhook_redeliveries_total). */
  redelivered?: (result: "requested" | "failed") => void;
  intervalMs?: number;
  firstDelayMs?: number;
  settleMs?: number;
  maxAttempts?: number;
  maxPages?: number;
  firstLookbackMs?: number;
  horizonMs?: number;
  now?: () => Date;
}

export interface RedeliverySweep {
  /** Where the walk was to stop (the lookback start). */
  since: Date;
  pages: number;
  /** The page bound stopped the walk before it reached `since`. */
  truncated: boolean;
  /** The oldest attempt the walk saw. */
  oldestSeen: Date | undefined;
  /** Attempts listed back to `since`, and listing items that had not the expected shape. */
  attempts: number;
  malformed: number;
  /** Delivery guids GitHub was asked to redeliver, and those it refused to (or errors). */
  redelivered: string[];
  failed: string[];
  /** Deliveries left alone, by why. */
  left: Record<LeaveReason, number>;
}

/**
 * Asks GitHub to redeliver the webhook deliveries Tether's endpoint failed to take (it was down,
 * restarting, or its database away: the route answered 5xx or nothing at all), since GitHub
 * never does so by itself. Every interval it walks GitHub's delivery log back to where the last
 * sweep began (kept in Postgres, so a process down for hours looks back over those hours),
 * decides with decideRedeliveries, and redelivers. Every web process runs one; an advisory lock
 * lets one replica sweep at a time. A sweep that fails is logged and the next one tries again:
 * nothing here can stop the process. A needless redelivery is harmless: the inbox recognises a
 * delivery id it holds. The requests to redeliver are writes of the app, so with
 * TETHER_GITHUB_THROTTLE on they go a second apart, with the lock held meanwhile.
 */
export class RedeliverySweeper {
  private readonly job: PeriodicJob<RedeliverySweep | undefined>;

  constructor(private readonly opts: RedeliverySweeperOptions) {
    this.job = new PeriodicJob(() => this.sweepOnce(), opts.intervalMs ?? REDELIVER_INTERVAL_MS);
  }

  start(): void {
    this.job.start(this.opts.firstDelayMs ?? REDELIVER_FIRST_DELAY_MS);
  }

  /** One sweep now. Resolves to what it did, or undefined when another replica swept or it failed. */
  sweep(): Promise<RedeliverySweep | undefined> {
    return this.job.run();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }

  private get stopped(): boolean {
    return this.job.stopped;
  }

  private async sweepOnce(): Promise<RedeliverySweep | undefined> {
    try {
      const done = await withRedeliveryLock(this.opts.pool, (db) => this.walk(db));
      if (!done.held) {
        this.opts.log.debug("another replica is sweeping for failed webhook deliveries");
        return undefined;
      }
      this.report(done.value);
      return done.value;
    } catch (err) {
      this.opts.log.warn(
        { err },
        "sweeping for failed webhook deliveries failed; trying again later",
      );
      return undefined;
    }
  }

  private get policy(): RedeliveryPolicy {
    return {
      settleMs: this.opts.settleMs ?? REDELIVER_SETTLE_MS,
      maxAttempts: this.opts.maxAttempts ?? REDELIVER_MAX_ATTEMPTS,
    };
  }

  private async walk(db: Queryable): Promise<RedeliverySweep> {
    const now = this.opts.now ?? (() => new Date());
    const began = now();
    const policy = this.policy;
    const since = lookbackStart({
      now: began,
      mark: await readRedeliveryMark(db),
      policy,
      intervalMs: this.opts.intervalMs ?? REDELIVER_INTERVAL_MS,
      firstLookbackMs: this.opts.firstLookbackMs ?? REDELIVER_FIRST_LOOKBACK_MS,
      horizonMs: this.opts.horizonMs ?? DELIVERY_LOG_HORIZON_MS,
      clockMarginMs: REDELIVER_CLOCK_MARGIN_MS,
    });
    const maxPages = this.opts.maxPages ?? REDELIVER_MAX_PAGES;
    const github = await this.opts.github();

    const attempts: DeliveryAttempt[] = [];
    let malformed = 0;
    let pages = 0;
    let oldestSeen: Date | undefined;
    let cursor: string | undefined;
    do {
      const page = await github.page(cursor);
      pages++;
      malformed += page.malformed;
      let reached = false;
      for (const a of page.attempts) {
        if (oldestSeen === undefined || a.deliveredAt < oldestSeen) oldestSeen = a.deliveredAt;
        if (a.deliveredAt < since) reached = true;
        else attempts.push(a);
      }
      // Newest first: a page that goes past `since` is the last one needed.
      cursor = reached ? undefined : page.next;
    } while (cursor !== undefined && pages < maxPages && !this.stopped);
    const truncated = cursor !== undefined && !this.stopped;

    const plan = decideRedeliveries({
      attempts,
      inInbox: await deliveriesInInbox(
        db,
        attempts.map((a) => a.guid),
      ),
      now: now(),
      policy,
    });
    const redelivered: string[] = [];
    const failed: string[] = [];
    for (const r of plan.redeliver) {
      if (this.stopped) break;
      try {
        await github.redeliver(r.attemptId);
        redelivered.push(r.guid);
        this.opts.redelivered?.("requested");
      } catch (err) {
        failed.push(r.guid);
        this.opts.redelivered?.("failed");
        this.opts.log.warn(
          { err, delivery: r.guid, attempt: r.attemptId, event: r.event },
          "GitHub did not take a redelivery; the next sweep tries again",
        );
      }
    }
    // Only a sweep that walked the log and redelivered all it meant to moves the mark: otherwise
    // the next one must look back as far again, or an old delivery whose redelivery failed (or
    // was cut short by shutdown) would drop out of its window.
    if (!this.stopped && redelivered.length === plan.redeliver.length) {
      await saveRedeliveryMark(db, began);
    }
    return {
      since,
      pages,
      truncated,
      oldestSeen,
      attempts: attempts.length,
      malformed,
      redelivered,
      failed,
      left: plan.left,
    };
  }

  private report(s: RedeliverySweep): void {
    const fields = {
      redelivered: s.redelivered.length,
      failed: s.failed.length,
      left: s.left,
      attempts: s.attempts,
      pages: s.pages,
      since: s.since.toISOString(),
      ...(s.redelivered.length ? { deliveries: s.redelivered.slice(0, 20) } : {}),
    };
    if (s.truncated) {
      this.opts.log.warn(
        { ...fields, reachedBack: s.oldestSeen?.toISOString() },
        `GitHub's delivery log was walked ${s.pages} pages back, the most a sweep walks, without reaching its start; older deliveries were not looked at`,
      );
    }
    if (s.malformed) {
      this.opts.log.warn(
        { malformed: s.malformed },
        "items of GitHub's delivery log had an unexpected shape and were left out",
      );
    }
    if (s.redelivered.length || s.failed.length) {
      this.opts.log.info(fields, "asked GitHub to redeliver webhook deliveries that failed");
    } else {
      this.opts.log.debug(fields, "no failed webhook deliveries to redeliver");
    }
  }
}
