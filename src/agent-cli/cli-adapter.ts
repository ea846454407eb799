/**
 * A CliAdapter over a CliDialect (cli-dialect.ts): the options' defaults, the runs it has going
 * (cli-run.ts), and cancelling them all. Each CLI's factory (its folder's) is built on it.
 */
import { pino } from "pino";
import type { CliDialect, CliRunOptions, RunConfig } from "./cli-dialect.js";
import { CliRun } from "./cli-run.js";
import { allRuns } from "./cli-run-processes.js";
import { DEFAULT_MAX_LINE_BYTES } from "./line-splitter.js";
import type { CliAdapter, AgentRun, CliProbe, RunSpec } from "./runtime-adapter.js";

/** An CliAdapter over a dialect. */
export function createDialectCli<M extends { kind: string }, S>(
  name: string,
  dialect: CliDialect<M, S>,
  opts: CliRunOptions,
  probe: () => Promise<CliProbe>,
): CliAdapter {
  const live = new Set<CliRun<M, S>>();
  const config: RunConfig = {
    path: opts.path,
    log: opts.log ?? pino({ level: "silent" }),
    baseEnv: opts.baseEnv ?? process.env,
    killGraceMs: opts.killGraceMs ?? 5000,
    afterResultGraceMs: opts.afterResultGraceMs ?? 10_000,
    startTimeoutMs: opts.startTimeoutMs ?? 20_000,
    maxLineBytes: opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
    stderrTailBytes: opts.stderrTailBytes ?? 8 * 1024,
    sampleIntervalMs: opts.sampleIntervalMs ?? 1000,
    maxBufferedEvents: opts.maxBufferedEvents ?? 10_000,
  };
  return {
    name,
    path: opts.path,
    probe,
    start(spec: RunSpec): AgentRun {
      const run = new CliRun(spec, config, dialect);
      live.add(run);
      allRuns.add(run);
      void run.outcome.finally(() => {
        live.delete(run);
        allRuns.delete(run);
      });
      return run;
    },
    activeRuns: () => live.size,
    async cancelAll(reason = "shutting down"): Promise<void> {
      const runs = [...live];
      for (const run of runs) run.cancel(reason);
      await Promise.all(runs.map((run) => run.outcome));
    },
  };
}
