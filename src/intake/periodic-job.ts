/**
 * A job a process runs every interval, one run at a time: a run asked for while one is under
 * way joins it, the next run is scheduled an interval after the last one ended (a slow run
 * never overlaps the next), and stop() waits for the run under way. The timer does not keep the
 * process alive. Reporting a run's failure is the job's own business; the schedule goes on
 * whatever a run did.
 */
export class PeriodicJob<T> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<T> | undefined;
  private halted = false;

  constructor(
    private readonly job: () => Promise<T>,
    private readonly intervalMs: number,
  ) {}

  /** The first run after `firstDelayMs`, then one every interval. */
  start(firstDelayMs: number): void {
    this.schedule(firstDelayMs);
  }

  /** Run now, or join the run under way. */
  run(): Promise<T> {
    this.running ??= this.job().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Set once stop() is called: a long run checks it to end early. */
  get stopped(): boolean {
    return this.halted;
  }

  /** No run after this; resolves when the run under way (if any) has ended. */
  async stop(): Promise<void> {
    this.halted = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  private schedule(ms: number): void {
    if (this.halted) return;
    this.timer = setTimeout(() => {
      void this.run()
        .catch(() => undefined)
        .finally(() => this.schedule(this.intervalMs));
    }, ms);
    this.timer.unref();
  }
}
