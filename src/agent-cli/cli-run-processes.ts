/**
 * The processes of a CLI run (cli-run.ts): its process tree followed from the child's pid,
 * stopped with SIGTERM then SIGKILL, swept of what the CLI left after it exited, and killed
 * with this process if it exits with runs going.
 */
import os from "node:os";
import type { Logger } from "../log.js";
import { ProcessTracker } from "../process/process-tree.js";

/** If this process exits with runs going, their processes go with it. */
export const allRuns = new Set<{ killNow(): void }>();
let exitHookInstalled = false;
export function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const run of allRuns) run.killNow();
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** One run's process tree: from its spawn to the sweep after its exit. */
export class RunProcesses {
  private tracker: ProcessTracker | undefined;
  private terminating: Promise<void> | undefined;
  private exitWaiter: Promise<void> = Promise.resolve();
  private pid: number | undefined;
  /** The CLI has exited: nothing of the run is signalled any more but in the sweep. */
  exited = false;

  constructor(private readonly o: { log: Logger; short: string; killGraceMs: number }) {}

  /** The child was spawned: a stop waits for this exit (its pid may still be undefined). */
  spawned(exited: Promise<unknown>): void {
    this.exitWaiter = exited.then(() => undefined);
  }

  /** The child started: its process tree is followed from here on. */
  track(pid: number): void {
    this.pid = pid;
    this.tracker = new ProcessTracker(pid);
  }

  /** Looks at the process tree again (new members are found between samples). */
  sample(): void {
    this.tracker?.sample();
  }

  /** SIGKILL everything of the run, synchronously (process exit). */
  killNow(): void {
    if (this.tracker && !this.exited) this.tracker.signal("SIGKILL");
  }

  /** SIGTERM to the run's processes, SIGKILL to what is left after the grace period. */
  terminate(): Promise<void> {
    this.terminating ??= (async () => {
      const tracker = this.tracker;
      if (!tracker) return;
      tracker.signal("SIGTERM");
      const graceOver = sleep(this.o.killGraceMs).then(() => "grace" as const);
      if (
        (await Promise.race([this.exitWaiter.then(() => "exited" as const), graceOver])) === "grace"
      ) {
        this.o.log.warn({ pid: this.pid }, `${this.o.short} ignored SIGTERM; sending SIGKILL`);
      }
      tracker.signal("SIGKILL");
    })();
    return this.terminating;
  }

  /** After the CLI exited: end every process it left, and check that none remain. */
  async sweep(): Promise<void> {
    const tracker = this.tracker;
    if (!tracker) return;
    for (let round = 0; round < 5; round++) {
      const members = tracker.sample();
      if (members.length === 0) return;
      if (round === 0) {
        this.o.log.debug(
          { pids: members.map((p) => p.pid) },
          "ending processes the CLI left behind",
        );
      }
      tracker.signal(round === 0 ? "SIGTERM" : "SIGKILL", members);
      await sleep(round === 0 ? 200 : 100);
    }
    const left = tracker.sample();
    if (left.length > 0) {
      this.o.log.error(
        { pids: left.map((p) => p.pid) },
        `processes of a ${this.o.short} run survived SIGKILL`,
      );
    }
  }
}

/** bwrap reports a child killed by signal N as exit code 128 + N, as a shell does. */
export function signalFromExitCode(exit: { code: number | null; signal: string | null }): {
  code: number | null;
  signal: string | null;
} {
  if (exit.signal || exit.code === null || exit.code <= 128) return exit;
  const name = Object.entries(os.constants.signals).find(([, n]) => n === exit.code! - 128)?.[0];
  return name ? { code: null, signal: name } : exit;
}
