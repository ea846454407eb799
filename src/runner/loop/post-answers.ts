/**
 * The answer answer poster: posts the final answers the thread has not heard yet (the answer
 * outbox, src/sql/answer-outbox.ts). A run whose last write GitHub refused past the request
 * policy's retries, and a task the sweeper failed, finish with their answer pending; a runner
 * calls this every few seconds, and any replica may, at the same time.
 *
 * Exactly one answer per task: the answer goes into the task's own comment (its recorded id,
 * else the one carrying the task marker, else a new one), so a posting that is repeated (a
 * lost lease, a crash after the post but before the record) edits that comment again instead
 * of posting a second.
 */
import { httpStatusOf, describeError } from "../../github/errors.js";
import type { Pool } from "../../db/pool.js";
import type { Logger } from "../../log.js";
import {
  answerPosted,
  claimAnswers,
  giveUpAnswer,
  retryAnswer,
  type PendingAnswer,
} from "../../sql/answer-outbox.js";
import type { Outcome } from "../../core/task.js";
import type { Task } from "../../core/task.js";
import {
  afterFailedPost,
  answerRetryPolicy,
  type AnswerRetryPolicy,
} from "../turn/answer-retry.js";
import type { GitHubThread } from "../ports.js";
import { redact } from "../../core/redact.js";
import { REASON_CODES, type ReasonCode } from "../../core/resume-decision.js";
import { conversationUrl } from "../../core/conversation-path.js";
import { findTaskMarker, renderFailure } from "../render/thread-comments.js";

export interface PostAnswersDeps {
  pool: Pool;
  log: Logger;
  github: (task: Task) => Promise<GitHubThread>;
  /** Secrets to scrub from anything posted. */
  secrets?: () => Iterable<string | undefined>;
  answerRetry?: Partial<AnswerRetryPolicy>;
  /**
   * How long a claimed answer is this answer poster's before another may claim it again. One
   * posting is a handful of requests, each retried for at most ~15 s.
   */
  leaseMs?: number;
  /** Answers posted per call at most. */
  limit?: number;
  /** TETHER_PUBLIC_URL: a failure rendered here links to the conversation's dashboard page. */
  publicUrl?: string;
}

export interface PostingReport {
  posted: number[];
  retrying: number[];
  gaveUp: number[];
}

export const DEFAULT_POSTING_LEASE_MS = 2 * 60_000;

/**
 * Post due pending answers, one claim at a time (each lease covers only its own posting),
 * until none is due, `limit` is reached, or one fails: when GitHub refuses one it is most
 * likely down, and the rest wait for the next call rather than each waiting out the retries.
 */
export async function postPendingAnswers(deps: PostAnswersDeps): Promise<PostingReport> {
  const report: PostingReport = { posted: [], retrying: [], gaveUp: [] };
  const policy = answerRetryPolicy(deps.answerRetry);
  const limit = deps.limit ?? 20;
  for (let i = 0; i < limit; i++) {
    const [claimed] = await claimAnswers(deps.pool, 1, deps.leaseMs ?? DEFAULT_POSTING_LEASE_MS);
    if (!claimed) break;
    const result = await postOne(deps, policy, claimed);
    report[result].push(claimed.task.id);
    if (result !== "posted") break;
  }
  return report;
}

async function postOne(
  deps: PostAnswersDeps,
  policy: AnswerRetryPolicy,
  a: PendingAnswer,
): Promise<keyof PostingReport> {
  const { task } = a;
  const log = deps.log.child({
    task: task.id,
    repo: task.repo,
    issue: task.issueNumber,
    attempt: a.attempt,
  });
  const secrets = new Set<string | undefined>(deps.secrets?.() ?? []);
  const written: { commentId: number | null } = { commentId: null };
  try {
    const gh = await deps.github(task);
    secrets.add(await gh.token().catch(() => undefined));
    const body = redact(a.body ?? renderPendingFailure(a, deps.publicUrl), secrets);
    const commentId = await writeTaskComment(gh, task, body, written);
    if (await answerPosted(deps.pool, task.id, a.attempt, commentId)) {
      log.info({ comment: commentId }, "pending answer posted");
    } else {
      log.warn(
        { comment: commentId },
        "pending answer posted after its lease ran out; another posting may edit the same comment",
      );
    }
    return "posted";
  } catch (err) {
    const error = redact(describeError(err), secrets);
    const next = afterFailedPost(a.attempt, err, policy);
    if (next.kind === "retry") {
      await retryAnswer(deps.pool, task.id, a.attempt, next.waitMs, error, written.commentId);
      log.warn(
        { err: error, retryInMs: next.waitMs },
        "GitHub refused a pending answer; will try again",
      );
      return "retrying";
    }
    await giveUpAnswer(deps.pool, task.id, a.attempt, `gave up: ${error}`);
    log.error(
      { err: error, why: next.why },
      next.why === "permanent"
        ? "gave up on a pending answer: GitHub says the thread is gone or refuses it; the answer stays in tasks.answer_body"
        : `gave up on a pending answer after ${a.attempt} tries; the answer stays in tasks.answer_body`,
    );
    return "gaveUp";
  }
}

/**
 * Put `body` into the task's own comment: the one recorded on the task, else the one carrying
 * its marker (a comment GitHub created although the request that created it failed), else a
 * new one. A recorded comment someone deleted is replaced by a new one.
 */
async function writeTaskComment(
  gh: GitHubThread,
  task: Task,
  body: string,
  written: { commentId: number | null },
): Promise<number> {
  if (task.trackingCommentId !== null) {
    try {
      await gh.updateComment(task.trackingCommentId, body);
      return task.trackingCommentId;
    } catch (err) {
      if (httpStatusOf(err) !== 404) throw err;
    }
  }
  const comments = await gh.listComments(task.threadNumber);
  const own = comments.find(
    (c) => c.id !== task.trackingCommentId && findTaskMarker(c.body) === task.id,
  );
  if (own) {
    await gh.updateComment(own.id, body);
    return own.id;
  }
  const id = await gh.createComment(task.threadNumber, body);
  written.commentId = id;
  return id;
}

/** A failure whose body was not rendered by a run (a swept task, no GitHub access): plain words. */
export function renderPendingFailure(a: PendingAnswer, publicUrl?: string): string {
  const outcome: Exclude<Outcome, "success"> =
    a.outcome === null || a.outcome === "success" ? "failed" : a.outcome;
  const reason = REASON_CODES.includes(a.resumeReason as ReasonCode)
    ? (a.resumeReason as ReasonCode)
    : null;
  return renderFailure(
    { outcome, detail: a.failureReason, taskId: a.task.id },
    {
      resumed: a.resumeDecision === "resume",
      reason,
      sessionId: a.task.sessionId,
      usage: a.usage,
      ...(publicUrl ? { chainUrl: conversationUrl(publicUrl, a.task) } : {}),
    },
  );
}
