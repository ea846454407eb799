/** The latest tasks list, each with links to its trigger and its answer. */
import type { PoolClient } from "../../../db/pool.js";
import type { LatestTask } from "../figures.js";

export async function latestTasks(c: PoolClient, limit: number): Promise<LatestTask[]> {
  const { rows } = await c.query<{
    id: number;
    repo: string;
    issue_number: number;
    agent: string;
    status: string;
    outcome: string | null;
    resume_decision: "resume" | "fresh" | null;
    resume_reason: string | null;
    is_follow_up: boolean | null;
    session_id: string | null;
    runtime_id: string | null;
    trigger_author: string;
    trigger_url: string;
    answer_comment_id: number | null;
    created_at: Date;
    finished_at: Date | null;
    duration_ms: number | null;
    cost_usd: number | null;
    input_tokens: number | null;
    cache_read_tokens: number | null;
  }>(
    `SELECT id, repo, issue_number, agent, status, outcome, resume_decision, resume_reason,
            is_follow_up, session_id, runtime_id, trigger_author, trigger_url, answer_comment_id,
            created_at, finished_at, duration_ms, cost_usd, input_tokens, cache_read_tokens
       FROM tasks ORDER BY id DESC LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({
    id: r.id,
    repo: r.repo,
    issueNumber: r.issue_number,
    agent: r.agent,
    status: r.status,
    outcome: r.outcome,
    resumeDecision: r.resume_decision,
    resumeReason: r.resume_reason,
    isFollowUp: r.is_follow_up,
    sessionId: r.session_id,
    runtimeId: r.runtime_id,
    triggerAuthor: r.trigger_author,
    triggerUrl: r.trigger_url,
    answerUrl: answerUrl(r.trigger_url, r.answer_comment_id),
    createdAt: r.created_at.toISOString(),
    finishedAt: r.finished_at ? r.finished_at.toISOString() : null,
    durationMs: r.duration_ms,
    costUsd: r.cost_usd,
    inputTokens: r.input_tokens,
    cacheReadTokens: r.cache_read_tokens,
  }));
}

/** The answer sits in the same thread as the trigger: same page, another comment anchor. */
export function answerUrl(triggerUrl: string, answerCommentId: number | null): string | null {
  if (answerCommentId === null) return null;
  const page = triggerUrl.split("#")[0];
  return page ? `${page}#issuecomment-${answerCommentId}` : null;
}
