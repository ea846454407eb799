import { randomBytes } from "node:crypto";
import os from "node:os";
import type { Pool } from "../db/pool.js";
import { retryingPool } from "../db/retry-on-disconnect.js";
import { describeError, isRetryable } from "../github/errors.js";
import type { GitHub } from "../github/types.js";
import type { Logger } from "../log.js";
import {
  claimDeliveries,
  completeDelivery,
  failDeliveryAttempt,
  releaseDeliveries,
  type Delivery,
} from "../sql/deliveries.js";
import { CHANNELS, listen, type Listener } from "../sql/notify.js";
import { RepoHints } from "./repo-hints.js";
import { handleDelivery, RetryLater, type IntakeEffects } from "./handle-delivery.js";
import { describeIssueStatus, type DescribeStatus } from "./status.js";

export interface IntakeProcessorOptions {
  pool: Pool;
  log: Logger;
  /** An installation-authenticated Octokit: Probot's `app.auth(installationId)`. */
  auth: (installationId: number) => Promise<GitHub>;
  /** Tether's own GitHub App id: its comments never trigger. */
  appId?: number;
  /** Tether's own bot login, from GitHub (GET /app): its reviews never trigger. Asked once. */
  appLogin?: () => Promise<string>;
  /** Renders /status replies. Default: what intake knows (tasks and sessions). */
  describeStatus?: DescribeStatus;
  now?: () => Date;
  /** Deliveries handled at once. Default 4. */
  concurrency?: number;
  /** Poll floor: the inbox is checked this often even without a NOTIFY. Default 5 s. */
  pollMs?: number;
  /** How long a claim holds a delivery before another processor may take it. Default 2 min. */
  leaseMs?: number;
  /** A delivery still being handled after this long counts as failed (and is retried). Default 60 s. */
  deliveryTimeoutMs?: number;
  /** Delay before retry number `attempt` (1-based). Default 2 s doubling, at most 5 min. */
  backoffMs?: (attempt: number) => number;
  /** Delay before looking again at a delivery waiting for another (an edit for its creation). Default 1 s. */
  waitMs?: number;
  /** LISTEN for tether_intake. Default true; tests may drive the processor by hand. */
  listen?: boolean;
  workerId?: string;
}

/**
 * Drains the intake inbox: claims pending deliveries (FOR UPDATE SKIP LOCKED, so many web
 * processes can share it), handles each with GitHub and Postgres, and records the result.
 * Wakes on NOTIFY tether_intake and polls as a floor. A failing delivery is retried with
 * backoff a bounded number of times, then marked failed with its error; nothing a delivery
 * does can stop the loop.
 */
export class IntakeProcessor {
  readonly workerId: string;
  private readonly fx: IntakeEffects;
  private readonly concurrency: number;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly deliveryTimeoutMs: number;
  private readonly backoffMs: (attempt: number) => number;
  private readonly waitMs: number;
  private readonly inflight = new Set<Promise<void>>();
  /** Deferred work (the 👀): not holding a slot, but waited for by idle() and stop(). */
  private readonly background = new Set<Promise<void>>();
  private pumping: Promise<void> | undefined;
  private again = false;
  private stopping = false;
  private timer: NodeJS.Timeout | undefined;
  private listener: Listener | undefined;
  /**
   * For recording a delivery's result: a write lost to a Postgres restart would leave the
   * delivery locked until its lease ran out (minutes), so it waits for the server instead.
   */
  private readonly bookkeeping: Pool;

  constructor(private readonly opts: IntakeProcessorOptions) {
    this.bookkeeping = retryingPool(opts.pool, { maxWaitMs: 30_000 });
    this.workerId =
      opts.workerId ?? `intake:${os.hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.fx = {
      pool: opts.pool,
      log: opts.log,
      auth: opts.auth,
      appId: opts.appId,
      ...(opts.appLogin ? { appLogin: once(opts.appLogin) } : {}),
      describeStatus: opts.describeStatus ?? describeIssueStatus,
      now: opts.now ?? (() => new Date()),
      repoHints: new RepoHints(),
      defer: (what, work) => {
        const p: Promise<void> = work()
          .catch((err: unknown) => opts.log.warn({ err, what }, "deferred intake work failed"))
          .finally(() => this.background.delete(p));
        this.background.add(p);
      },
    };
    this.concurrency = Math.max(1, opts.concurrency ?? 4);
    this.pollMs = opts.pollMs ?? 5000;
    this.leaseMs = opts.leaseMs ?? 120_000;
    this.deliveryTimeoutMs = opts.deliveryTimeoutMs ?? 60_000;
    this.backoffMs = opts.backoffMs ?? ((n) => Math.min(300_000, 2000 * 2 ** Math.max(0, n - 1)));
    this.waitMs = opts.waitMs ?? 1000;
  }

  /** Start listening and polling; handles whatever is already pending. */
  async start(): Promise<void> {
    if (this.opts.listen !== false) {
      this.listener = listen(this.opts.pool, [CHANNELS.intake], () => this.wake(), {
        log: this.opts.log,
        // Notifications sent while the connection was down are lost: look for their rows.
        onReconnect: () => this.wake(),
      });
      await this.listener.ready;
    }
    this.timer = setInterval(() => this.wake(), this.pollMs);
    this.timer.unref();
    this.wake();
  }

  /**
   * Stop claiming, give in-flight deliveries up to `graceMs` to finish, then hand back what
   * is left so another processor (or the next start) takes it at once instead of after the lease.
   */
  async stop(graceMs = 2000): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    await this.listener?.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inflight, this.pumping]).then(() =>
        Promise.allSettled([...this.background]),
      ),
      new Promise((r) => (timer = setTimeout(r, graceMs))),
    ]);
    clearTimeout(timer);
    try {
      const released = await releaseDeliveries(this.opts.pool, this.workerId);
      if (released) this.opts.log.info({ released }, "intake handed back unfinished deliveries");
    } catch (err) {
      this.opts.log.warn(
        { err },
        "intake could not hand back its deliveries; their lease will expire",
      );
    }
  }

  /** Look for ready deliveries now (a NOTIFY, the poll timer, a finished delivery). */
  wake(): void {
    if (this.stopping) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  /** Handle everything ready now, and resolve when nothing is left in flight. */
  async processPending(): Promise<void> {
    this.wake();
    await this.idle();
  }

  /** Resolves when no claim is under way and no delivery (nor its deferred work) is in flight. */
  async idle(): Promise<void> {
    for (let i = 0; i < 100_000; i++) {
      if (!this.pumping && this.inflight.size === 0 && this.background.size === 0) return;
      await Promise.allSettled([this.pumping, ...this.inflight, ...this.background]);
    }
  }

  private async pump(): Promise<void> {
    while (!this.stopping) {
      const free = this.concurrency - this.inflight.size;
      if (free <= 0) return; // a finishing delivery wakes us again
      let claimed: Delivery[];
      try {
        claimed = await claimDeliveries(this.opts.pool, {
          worker: this.workerId,
          limit: free,
          leaseMs: this.leaseMs,
        });
      } catch (err) {
        this.opts.log.error({ err }, "intake could not claim deliveries; will try again");
        return;
      }
      if (!claimed.length) return;
      for (const d of claimed) {
        const p: Promise<void> = this.run(d).finally(() => {
          this.inflight.delete(p);
          this.wake();
        });
        this.inflight.add(p);
      }
    }
  }

  private async run(d: Delivery): Promise<void> {
    const log = this.opts.log.child({ delivery: d.deliveryId, event: `${d.event}.${d.action}` });
    try {
      const handled = await withTimeout(
        handleDelivery(this.fx, d),
        this.deliveryTimeoutMs,
        `handling took longer than ${this.deliveryTimeoutMs} ms`,
      );
      const finished = await completeDelivery(this.bookkeeping, {
        deliveryId: d.deliveryId,
        worker: this.workerId,
        status: handled.status,
        outcome: handled.outcome,
      });
      if (!finished) log.warn("delivery was taken over by another processor before it finished");
      log.debug({ status: handled.status, outcome: handled.outcome }, "delivery handled");
    } catch (err) {
      const waiting = err instanceof RetryLater;
      const retryInMs = waiting
        ? this.waitMs
        : isRetryable(err)
          ? this.backoffMs(d.attempts)
          : null;
      try {
        const status = await failDeliveryAttempt(this.bookkeeping, {
          deliveryId: d.deliveryId,
          worker: this.workerId,
          error: describeError(err),
          retryInMs,
          refund: waiting,
        });
        if (waiting) log.debug({ reason: describeError(err) }, "delivery waits for another");
        else if (status === "failed")
          log.error(
            { err, attempts: d.attempts },
            "delivery failed for good; see webhook_deliveries.error",
          );
        else log.warn({ err, attempts: d.attempts, retryInMs }, "delivery failed; will retry");
      } catch (dbErr) {
        log.error(
          { err: dbErr, cause: describeError(err) },
          "could not record a failed delivery; its lease will expire",
        );
      }
    }
  }
}

function withTimeout<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** `f`'s answer, asked once; a failure is not kept, so the next call asks again. */
function once<T>(f: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () =>
    (p ??= f().catch((err: unknown) => {
      p = undefined;
      throw err;
    }));
}
