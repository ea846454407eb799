/**
 * The limits of a CLI run (cli-run.ts) in time: the start-up limit (its first line), the stall
 * limit (its silence), the wall clock, and once it has said its last word only a bound on how
 * long it lingers. It keeps when the CLI last spoke, and samples the run's process tree.
 */
import type { StopReason } from "./outcome.js";

export interface LimitsOptions {
  /** In sentences: "Claude CLI", "Codex CLI". */
  label: string;
  /** The binary, named in the start-up limit's detail. */
  path: string;
  startTimeoutMs: number;
  sampleIntervalMs: number;
  /** A limit was reached: the run is to stop. */
  stop(reason: StopReason, detail: string): void;
  /** Look at the run's process tree. */
  sample(): void;
}

export class RunLimits {
  private readonly timers: NodeJS.Timeout[] = [];
  private lastActivity = Date.now();
  /** The CLI has printed on stdout. */
  stdoutSeen = false;
  /** The caller's onEvent handler is running: nothing is read meanwhile. */
  inHandler = false;

  constructor(private readonly o: LimitsOptions) {}

  /** The CLI spoke (or the caller's handler returned). */
  touch(): void {
    this.lastActivity = Date.now();
  }

  /** How long since the CLI last spoke. */
  quietMs(): number {
    return Date.now() - this.lastActivity;
  }

  arm(timeoutMs: number, stallMs: number): void {
    const startMs = this.o.startTimeoutMs;
    this.timers.push(
      setTimeout(() => {
        if (this.stdoutSeen) return;
        this.o.stop(
          "no_start",
          `the ${this.o.label} printed nothing in the ${Math.round(startMs / 1000)} s after it started, so it was stopped; an operator should check that ${this.o.path} --version runs on the runner`,
        );
      }, startMs),
    );
    this.timers.push(
      setTimeout(
        () => this.o.stop("timed_out", `stopped at the wall-clock limit of ${timeoutMs} ms`),
        timeoutMs,
      ),
    );
    const checkStall = () => {
      // Before its first line the start-up limit watches the CLI (a slow start on a busy
      // machine is not a stall); while the caller's handler runs nothing is read, so the
      // CLI's silence cannot be told.
      const quiet = this.inHandler || !this.stdoutSeen ? 0 : Date.now() - this.lastActivity;
      if (quiet >= stallMs) {
        this.o.stop("stalled", `stopped after ${stallMs} ms without any output from the CLI`);
      } else {
        this.timers.push(setTimeout(checkStall, stallMs - quiet));
      }
    };
    this.timers.push(setTimeout(checkStall, stallMs));
    const sample = setInterval(() => this.o.sample(), this.o.sampleIntervalMs);
    sample.unref();
    this.timers.push(sample);
  }

  /** The turn is over: no limit applies any more, only a bound on lingering. */
  lingerFor(ms: number, over: () => void): void {
    this.clear();
    this.timers.push(setTimeout(over, ms));
  }

  clear(): void {
    for (const t of this.timers.splice(0)) clearTimeout(t);
  }
}
