import type { Logger } from "./log.js";

type Step = { name: string; run: () => Promise<unknown> | unknown };

/**
 * Ordered shutdown: stop taking work (HTTP, claims), let running work finish or hand it back,
 * close connections, stop the embedded database last. Each phase gets its share of the
 * deadline; a phase that overruns is abandoned so the process always exits in time.
 */
export class Shutdown {
  private readonly phases = new Map<number, Step[]>();
  private running: Promise<void> | undefined;

  constructor(
    private readonly log: Logger,
    private readonly totalMs: number,
  ) {}

  /** Lower phases run first: 10 = intake, 20 = runners, 30 = pools, 40 = database. */
  add(phase: number, name: string, run: Step["run"]): void {
    const list = this.phases.get(phase) ?? [];
    list.push({ name, run });
    this.phases.set(phase, list);
  }

  run(reason: string): Promise<void> {
    this.running ??= this.doRun(reason);
    return this.running;
  }

  private async doRun(reason: string): Promise<void> {
    const started = Date.now();
    this.log.info({ reason }, "shutting down");
    const order = [...this.phases.keys()].sort((a, b) => a - b);
    for (const [i, phase] of order.entries()) {
      const left = this.totalMs - (Date.now() - started);
      const budget = Math.max(200, Math.floor(left / (order.length - i)));
      const steps = this.phases.get(phase) ?? [];
      await Promise.all(
        steps.map(async (step) => {
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<"timeout">(
            (r) => (timer = setTimeout(() => r("timeout"), budget)),
          );
          try {
            const outcome = await Promise.race([Promise.resolve().then(step.run), timeout]);
            if (outcome === "timeout")
              this.log.warn(
                { step: step.name, budgetMs: budget },
                "shutdown step overran its deadline",
              );
          } catch (err) {
            this.log.error({ step: step.name, err }, "shutdown step failed");
          } finally {
            clearTimeout(timer);
          }
        }),
      );
    }
    this.log.info({ ms: Date.now() - started }, "stopped");
  }
}
