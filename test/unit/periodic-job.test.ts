import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PeriodicJob } from "../../src/intake/periodic-job.js";

/** A job whose runs end when the test says so. */
function gatedJob() {
  const gates: Array<(v: string) => void> = [];
  let started = 0;
  const job = new PeriodicJob<string>(() => {
    started++;
    return new Promise<string>((resolve) => gates.push(resolve));
  }, 1000);
  return {
    job,
    started: () => started,
    finish: (v: string) => gates.shift()!(v),
  };
}

describe("PeriodicJob", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a run asked for while one is under way joins it", async () => {
    const g = gatedJob();
    const a = g.job.run();
    const b = g.job.run();
    expect(g.started()).toBe(1);
    g.finish("done");
    expect(await a).toBe("done");
    expect(await b).toBe("done");
    // Once it ended, the next run is a new one.
    const c = g.job.run();
    expect(g.started()).toBe(2);
    g.finish("again");
    expect(await c).toBe("again");
  });

  it("runs after the first delay, then an interval after each run ended, never overlapping", async () => {
    const g = gatedJob();
    g.job.start(500);
    await vi.advanceTimersByTimeAsync(499);
    expect(g.started()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(g.started()).toBe(1);
    // A slow run: no second one while it lasts, however long.
    await vi.advanceTimersByTimeAsync(5000);
    expect(g.started()).toBe(1);
    g.finish("slow");
    await vi.advanceTimersByTimeAsync(999);
    expect(g.started()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(g.started()).toBe(2);
    g.finish("x");
    await g.job.stop();
  });

  it("a run that fails does not stop the schedule", async () => {
    let runs = 0;
    const job = new PeriodicJob(async () => {
      runs++;
      throw new Error("boom");
    }, 1000);
    job.start(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(2);
    await job.stop();
  });

  it("stop waits for the run under way, says it stopped, and nothing runs after it", async () => {
    const g = gatedJob();
    g.job.start(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(g.started()).toBe(1);
    let stopped = false;
    const stopping = g.job.stop().then(() => (stopped = true));
    expect(g.job.stopped).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    g.finish("last");
    await stopping;
    expect(stopped).toBe(true);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(g.started()).toBe(1);
  });

  it("the timer does not keep the process alive", () => {
    const job = new PeriodicJob(async () => undefined, 1000);
    const spy = vi.spyOn(globalThis, "setTimeout");
    job.start(1000);
    const timer = spy.mock.results[0]!.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    spy.mockRestore();
    void job.stop();
  });
});
