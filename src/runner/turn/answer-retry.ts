/**
 * When to try a pending answer again, and when to stop. Pure, so every branch is a table row in
 * test/unit/answer-retry.test.ts.
 *
 * The request policy already retried each GitHub request for about 15 s (1, 4, 9 s) before an
 * answer became pending, so what is left is an outage: the waits start at half a minute and
 * double to half an hour, which with the default 20 attempts keeps trying for about 7.5 hours,
 * longer than GitHub's longest incidents, without hammering it while it recovers.
 */
import { httpStatusOf } from "../../github/errors.js";

export interface AnswerRetryPolicy {
  /** Wait before the first retry of an answer the run could not post; doubles per failure. */
  baseMs: number;
  /** The longest wait between two tries. */
  capMs: number;
  /** Tries before giving up (and logging an error). */
  maxAttempts: number;
}

export const DEFAULT_ANSWER_RETRY: AnswerRetryPolicy = {
  baseMs: 30_000,
  capMs: 30 * 60_000,
  maxAttempts: 20,
};

export function answerRetryPolicy(given: Partial<AnswerRetryPolicy> = {}): AnswerRetryPolicy {
  const p = { ...DEFAULT_ANSWER_RETRY, ...given };
  return { ...p, capMs: Math.max(p.capMs, p.baseMs), maxAttempts: Math.max(1, p.maxAttempts) };
}

/** The wait after `failed` failed tries (0: the run's own failed post). */
export function answerBackoffMs(failed: number, p: AnswerRetryPolicy): number {
  // 2^n overflows nothing that matters before the cap: n is at most maxAttempts.
  return Math.min(p.capMs, p.baseMs * 2 ** Math.max(0, Math.min(failed, 40)));
}

/**
 * Statuses that will not change by waiting: the issue or repository is gone (404, 410 on
 * creating the comment; a deleted comment is replaced, not retried), or GitHub refuses this
 * body (422). Everything else (5xx, network, rate limits, 401/403 while an operator fixes the
 * app's access) is worth another try later.
 */
const PERMANENT = new Set([404, 410, 422]);

export type AfterFailure =
  { kind: "retry"; waitMs: number } | { kind: "give_up"; why: "permanent" | "attempts" };

/** What to do after try number `attempts` (1-based, this one included) failed with `err`. */
export function afterFailedPost(
  attempts: number,
  err: unknown,
  p: AnswerRetryPolicy,
): AfterFailure {
  const status = httpStatusOf(err);
  if (status !== undefined && PERMANENT.has(status)) return { kind: "give_up", why: "permanent" };
  if (attempts >= p.maxAttempts) return { kind: "give_up", why: "attempts" };
  return { kind: "retry", waitMs: answerBackoffMs(attempts, p) };
}
