import { describe, expect, it } from "vitest";
import {
  afterFailedPost,
  answerBackoffMs,
  answerRetryPolicy,
  DEFAULT_ANSWER_RETRY,
  type AfterFailure,
} from "../../src/runner/turn/answer-retry.js";

const p = DEFAULT_ANSWER_RETRY;
const httpError = (status: number) => Object.assign(new Error(`HTTP ${status}`), { status });

describe("answerBackoffMs", () => {
  it.each([
    [0, 30_000],
    [1, 60_000],
    [2, 120_000],
    [5, 960_000],
    [6, 1_800_000], // 1,920 s capped at 30 min
    [19, 1_800_000],
    [10_000, 1_800_000], // no overflow to Infinity/NaN
  ])("after %i failed deliveries waits %i ms", (failed, ms) => {
    expect(answerBackoffMs(failed, p)).toBe(ms);
  });

  it("keeps trying for hours with the defaults, not minutes or days", () => {
    let total = 0;
    for (let n = 0; n < p.maxAttempts; n++) total += answerBackoffMs(n, p);
    expect(total / 3600_000).toBeGreaterThan(6);
    expect(total / 3600_000).toBeLessThan(10);
  });

  it("a base above the cap raises the cap instead of shrinking the first wait", () => {
    const big = answerRetryPolicy({ baseMs: 3_600_000 });
    expect(answerBackoffMs(0, big)).toBe(3_600_000);
    expect(answerBackoffMs(3, big)).toBe(3_600_000);
    expect(answerRetryPolicy({ maxAttempts: 0 }).maxAttempts).toBe(1);
  });
});

describe("afterFailedPost", () => {
  const rows: Array<[string, number, unknown, AfterFailure]> = [
    ["503 on the first delivery", 1, httpError(503), { kind: "retry", waitMs: 60_000 }],
    ["network failure (no status)", 3, new Error("ECONNRESET"), { kind: "retry", waitMs: 240_000 }],
    ["rate limited", 2, httpError(429), { kind: "retry", waitMs: 120_000 }],
    ["403 while an operator fixes access", 1, httpError(403), { kind: "retry", waitMs: 60_000 }],
    ["401", 1, httpError(401), { kind: "retry", waitMs: 60_000 }],
    ["the issue or repository is gone", 1, httpError(404), { kind: "give_up", why: "permanent" }],
    ["410 gone", 4, httpError(410), { kind: "give_up", why: "permanent" }],
    ["GitHub refuses the body", 1, httpError(422), { kind: "give_up", why: "permanent" }],
    ["the last allowed delivery", 20, httpError(503), { kind: "give_up", why: "attempts" }],
    [
      "beyond the last (a crashed answer poster)",
      23,
      httpError(503),
      { kind: "give_up", why: "attempts" },
    ],
    ["one short of the last", 19, httpError(502), { kind: "retry", waitMs: 1_800_000 }],
  ];
  it.each(rows)("%s", (_name, attempts, err, expected) => {
    expect(afterFailedPost(attempts, err, p)).toEqual(expected);
  });
});
