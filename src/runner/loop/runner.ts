/**
 * The runner: claims tasks up to its concurrency, runs them, heartbeats their leases, stops
 * cancelled ones, (one replica at a time) sweeps tasks whose runner died, and posts the
 * final answers GitHub refused earlier. LISTEN/NOTIFY wakes it at once; a poll is the floor,
 * because a NOTIFY is only ever a latency hint.
 */
import os from "node:os";
import type { Pool } from "../../db/pool.js";
import { retryingPool } from "../../db/retry-on-disconnect.js";
import type { Logger } from "../../log.js";
import { CHANNELS, listen, type Listener } from "../../sql/notify.js";
import { heartbeatRuntime, markRuntimeStopped, registerRuntime } from "../../sql/runtimes.js";
import { claimTasks } from "../../sql/tasks/claim.js";
import type { Task } from "../../core/task.js";
import type { TurnStore } from "../../core/turn-journal.js";
import { adoptOrphans, heartbeatTasks } from "../../sql/tasks/lease.js";
import { sweepExpired } from "../../sql/tasks/sweep.js";
import { sandboxLabel, type SandboxStatus } from "../../sandbox/sandbox.js";
import { postPendingAnswers } from "./post-answers.js";
import { runTask, SHUTDOWN, type RunTaskDeps } from "../turn/run-task.js";
import { tellDeferred } from "./rate-limit-defer.js";

export interface RunnerOptions extends Omit<RunTaskDeps, "runnerId" | "store"> {
  /** The loop's own reads and writes (claims, leases, the sweep, the answer outbox). */
  pool: Pool;
  /**
   * The turns' store over a pool (src/sql/turn-store.ts postgresTurnStore). The runner gives it
   * a pool that waits out a database restart for half a lease, so a turn does not fail of it.
   */
  store: (pool: Pool) => TurnStore;
  concurrency: number;
  runtime: {
    homeDir: string;
    /** The default CLI's binary, version and whether it resumes (the runtimes table). */
    cliPath: string;
    cliVersion: string | null;
    canResume: boolean | null;
    /** Each CLI's version once its probe said, by name (absent before: not run yet). */
    cliVersions?: () => Record<string, string | null>;
  };
  pollMs?: number;
  heartbeatMs?: number;
  /** A running task whose heartbeat is older than this is handed back to the queue. */
  leaseMs?: number;
  /** How often pending answers (the answer outbox) are looked for. */
  answerPollMs?: number;
  /**
   * Collection of idle workspaces and sessions (src/workspace/collect-idle.ts), run at start and
   * every `everyMs`; told the workspaces of the tasks running here, which it must not take.
   */
  collect?: { everyMs: number; run(busy: string[]): Promise<unknown> };
  /**
   * Whether agents may run here (the sandbox works, or is off on purpose). While it says no,
   * the runner claims nothing: queued tasks wait for a runner that can contain them.
   */
  sandbox?: () => SandboxStatus;
  /**
   * TETHER_RATE_LIMIT_RESERVE: an installation whose GitHub headroom is below this has its
   * tasks wait for the window's reset, each thread told once (src/runner/rate-limit-defer.ts).
   * 0 or absent: none wait on headroom.
   */
  rateLimitReserve?: number;
  /** Told of the tasks whose threads were just told they wait for a rate limit's reset. */
  onDeferred?: (taskIds: number[]) => void;
  /** Writes this process's observed headroom to Postgres; run before each claim. */
  headroom?: { flush(): Promise<void> };
}

export class Runner {
  readonly runnerId: string;
  private readonly running = new Map<
    number,
    { task: Task; abort: AbortController; done: Promise<void> }
  >();
  private listener: Listener | undefined;
  private timers: NodeJS.Timeout[] = [];
  private stopping = false;
  private ticking: Promise<void> | undefined;
  private again = false;
  private posting: Promise<void> | undefined;
  private telling: Promise<void> | undefined;
  private lastHeartbeat = Date.now();
  /** Where turns write and read: a Postgres restart mid-turn waits for the server instead of failing the turn. */
  private readonly store: TurnStore;

  constructor(private readonly opts: RunnerOptions) {
    this.runnerId = `${opts.runtimeId}/${os.hostname()}/${process.pid}/${Math.random().toString(36).slice(2, 8)}`;
    // Half the lease: past that, the sweeper may hand the task on, so the turn gives up and the
    // task is left to it (see heartbeat()).
    const taskPool = retryingPool(opts.pool, {
      maxWaitMs: (opts.leaseMs ?? 60_000) / 2,
      onRetry: (err, attempt) => {
        if (attempt === 1)
          this.log.warn(
            { err: (err as Error).message },
            "database unreachable during a turn; retrying until it is back",
          );
      },
    });
    this.store = opts.store(taskPool);
  }

  private get pool(): Pool {
    return this.opts.pool;
  }

  private get log(): Logger {
    return this.opts.log;
  }

  async start(): Promise<void> {
    const status = this.opts.sandbox?.();
    await registerRuntime(this.pool, {
      id: this.opts.runtimeId,
      hostname: os.hostname(),
      homeDir: this.opts.runtime.homeDir,
      cliPath: this.opts.runtime.cliPath,
      cliVersion: this.opts.runtime.cliVersion,
      canResume: this.opts.runtime.canResume,
      concurrency: this.opts.concurrency,
      sandbox: status ? sandboxLabel(status) : null,
    });
    const sandbox = status;
    if (sandbox && !sandbox.ok) {
      this.log.error(
        { sandbox: sandbox.detail },
        "no agent runs on this runner: the sandbox cannot start (set TETHER_SANDBOX=off to run agents unsandboxed)",
      );
    }
    // Tasks an earlier process left running are adopted only where they can run contained.
    const adopted =
      sandbox && !sandbox.ok
        ? []
        : await adoptOrphans(this.pool, this.runnerId, this.opts.runtimeId, (holder) =>
            holderIsGone(holder),
          );
    for (const t of adopted) {
      this.log.warn(
        { task: t.id },
        "taking over a task an earlier process of this runtime left running",
      );
      this.launch(t);
    }
    await this.listen();
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const t = setInterval(
        () => void fn().catch((err) => this.log.error({ err }, "runner background step failed")),
        ms,
      );
      t.unref();
      this.timers.push(t);
    };
    every(this.opts.pollMs ?? 2000, async () => this.tick());
    every(this.opts.heartbeatMs ?? 5000, async () => this.heartbeat());
    every(Math.max(1000, (this.opts.leaseMs ?? 60_000) / 2), async () => {
      const res = await sweepExpired(this.pool, this.opts.leaseMs ?? 60_000);
      if (res.requeued.length || res.failed.length)
        this.log.warn(res, "swept tasks whose runner stopped heartbeating");
      // A swept failure is told to its thread at once, not a poll later.
      if (res.failed.length) await this.postPendingAnswers();
    });
    every(this.opts.answerPollMs ?? 5000, async () => this.postPendingAnswers());
    const collect = this.opts.collect;
    if (collect) {
      const busy = () =>
        [...this.running.values()].map(({ task: t }) => this.opts.workspace.pathFor(t));
      every(collect.everyMs, () => collect.run(busy()));
      void collect
        .run(busy())
        .catch((err) => this.log.error({ err }, "collection of idle workspaces failed"));
    }
    this.log.info({ runner: this.runnerId, concurrency: this.opts.concurrency }, "runner started");
    void this.tick();
  }

  /** Claim as many tasks as there are free slots; coalesces concurrent wake-ups into one loop. */
  tick(): Promise<void> {
    this.tellDeferred();
    if (this.ticking) {
      this.again = true;
      return this.ticking;
    }
    // `.finally` runs its callback asynchronously, after `this.ticking` is assigned. (Clearing it
    // inside the loop instead lost the race when the loop ended without awaiting anything, i.e.
    // a wake-up while every slot was busy: the settled promise stayed in `this.ticking` and every
    // later tick returned early, so the runner never claimed again.) A wake-up that arrived after
    // the loop's last look is not lost: it set `again`, and the loop runs once more.
    this.ticking = this.claimLoop().finally(() => {
      this.ticking = undefined;
      if (this.again && !this.stopping) void this.tick();
    });
    return this.ticking;
  }

  private async claimLoop(): Promise<void> {
    try {
      do {
        this.again = false;
        if (this.stopping) return;
        if (this.opts.sandbox && !this.opts.sandbox().ok) return;
        const free = this.opts.concurrency - this.running.size;
        if (free <= 0) return;
        // What this process last heard of each installation's headroom, before the claim reads it.
        await this.opts.headroom
          ?.flush()
          .catch((err) => this.log.warn({ err }, "could not store GitHub's rate-limit headroom"));
        const tasks = await claimTasks(
          this.pool,
          this.runnerId,
          this.opts.runtimeId,
          free,
          this.opts.runtime.cliVersions?.() ?? {},
          undefined,
          { rateLimitReserve: this.opts.rateLimitReserve ?? 0 },
        );
        for (const t of tasks) this.launch(t);
        if (tasks.length === free) this.again = true;
      } while (this.again && !this.stopping);
    } catch (err) {
      this.log.error({ err }, "claim failed; will retry");
    }
  }

  /** Tell the threads of tasks newly waiting for a rate limit's reset; one round at a time. */
  private tellDeferred(): void {
    const reserve = this.opts.rateLimitReserve ?? 0;
    if (reserve <= 0 || this.telling || this.stopping) return;
    const flush = this.opts.headroom?.flush() ?? Promise.resolve();
    this.telling = flush
      .then(() =>
        tellDeferred({ pool: this.pool, log: this.log, github: this.opts.github, reserve }),
      )
      .then(
        (told) => {
          if (told.length) this.opts.onDeferred?.(told);
        },
        (err) => this.log.error({ err }, "telling deferred tasks failed; will retry"),
      )
      .finally(() => {
        this.telling = undefined;
      });
  }

  private launch(task: Task): void {
    const abort = new AbortController();
    const done = runTask(
      {
        ...this.opts,
        store: this.store,
        runnerId: this.runnerId,
      },
      task,
      abort.signal,
    )
      .catch((err) =>
        this.log.error({ err, task: task.id }, "task crashed the runner step; it will be swept"),
      )
      .finally(() => {
        this.running.delete(task.id);
        void this.tick();
      });
    this.running.set(task.id, { task, abort, done });
  }

  /**
   * Post due pending answers. One posting round at a time per runner: a round waiting on a
   * slow GitHub is not joined by another from the next interval.
   */
  postPendingAnswers(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    this.posting ??= postPendingAnswers({
      pool: this.pool,
      log: this.log,
      github: this.opts.github,
      ...(this.opts.secrets ? { secrets: this.opts.secrets } : {}),
      ...(this.opts.answerRetry ? { answerRetry: this.opts.answerRetry } : {}),
      ...(this.opts.publicUrl ? { publicUrl: this.opts.publicUrl } : {}),
    })
      .then(
        (r) => {
          if (r.posted.length || r.retrying.length || r.gaveUp.length)
            this.log.info(r, "pending answers posted");
        },
        (err) => this.log.error({ err }, "posting pending answers failed; will retry"),
      )
      .finally(() => {
        this.posting = undefined;
      });
    return this.posting;
  }

  /** Stop a task this runner holds (a /cancel). */
  cancel(taskId: number): boolean {
    const r = this.running.get(taskId);
    if (!r) return false;
    this.log.info({ task: taskId }, "cancelling on request");
    r.abort.abort("cancel");
    return true;
  }

  private async heartbeat(): Promise<void> {
    const { cancel } = await heartbeatTasks(this.pool, this.runnerId, [...this.running.keys()]);
    for (const id of cancel) this.cancel(id);
    await heartbeatRuntime(this.pool, this.opts.runtimeId, this.running.size);
    this.lastHeartbeat = Date.now();
  }

  /** Started, not stopping, and its last heartbeat went through within three intervals. */
  get alive(): boolean {
    return !this.stopping && Date.now() - this.lastHeartbeat < 3 * (this.opts.heartbeatMs ?? 5000);
  }

  private listen(): Promise<void> {
    this.listener = listen(
      this.pool,
      [CHANNELS.tasks, CHANNELS.cancel],
      (channel, payload) => {
        if (channel === CHANNELS.tasks) void this.tick();
        else if (channel === CHANNELS.cancel && payload) this.cancel(Number(payload));
      },
      // onReconnect: whatever was notified while the connection was away.
      { log: this.log, name: "tether-runner-listen", onReconnect: () => void this.tick() },
    );
    return this.listener.ready;
  }

  /**
   * Stop claiming, give running tasks until the deadline, then stop their CLI processes and
   * leave the tasks to be adopted by the next start on this runtime (or swept elsewhere).
   */
  async stop(deadlineMs: number): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.listener?.close().catch(() => {});
    this.listener = undefined;
    // A posting in flight gets the same deadline as the turns; one cut short stays pending and
    // is posted again once its lease runs out, into the same comment.
    const posting = Promise.all([this.posting, this.telling]);
    const all = [...this.running.values()];
    const deadline = new Promise<boolean>((r) =>
      setTimeout(() => r(false), Math.max(0, deadlineMs - 1500)).unref(),
    );
    if (all.length === 0) {
      await Promise.race([posting, deadline]);
      await markRuntimeStopped(this.pool, this.opts.runtimeId).catch(() => {});
      return;
    }
    this.log.info({ running: all.length }, "waiting for running tasks before stopping");
    const waited = await Promise.race([
      Promise.all([...all.map((r) => r.done), posting]).then(() => true),
      deadline,
    ]);
    if (!waited) {
      for (const r of this.running.values()) r.abort.abort(SHUTDOWN);
      await Promise.race([
        Promise.all(all.map((r) => r.done)),
        new Promise((r) => setTimeout(r, 1500).unref()),
      ]);
    }
  }

  /** The sandbox's status, when the runner was given one. */
  get sandbox(): SandboxStatus | undefined {
    return this.opts.sandbox?.();
  }

  get active(): number {
    return this.running.size;
  }
}

/** Runner ids are runtime/host/pid/nonce: a holder on this host whose pid is dead is gone. */
export function holderIsGone(holder: string): boolean {
  const parts = holder.split("/");
  if (parts.length < 4) return false;
  const [, host, pidText] = parts;
  if (host !== os.hostname()) return false;
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ESRCH";
  }
}
