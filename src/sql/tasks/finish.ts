/**
 * Finish: the task gets the status its run earned, its usage, and where its final answer stands
 * (posted, or pending in the answer outbox).
 */
import type { Finish } from "../../core/turn-journal.js";
import type { Queryable } from "../db.js";
import { leasedUpdate } from "./record.js";

/**
 * Finish the task with the status its run earned, whether or not the thread has heard yet (a
 * pending answer goes to the outbox in the same statement). Scoped to its runner; returns false
 * when the lease had been lost.
 */
export async function finishTask(
  db: Queryable,
  taskId: number,
  runnerId: string,
  f: Finish,
): Promise<boolean> {
  const u = f.usage;
  const a = f.answer;
  // Finishing ends the lease too (locked_by cleared), under the same lease as every write.
  return leasedUpdate(
    db,
    taskId,
    runnerId,
    `status = $3, outcome = $4, failure_reason = $5,
     session_id = COALESCE(session_id, $6),
     model = COALESCE($7, model), input_tokens = $8, output_tokens = $9,
     cache_read_tokens = $10, cache_creation_tokens = $11, context_tokens = $12,
     cost_usd = $13, num_turns = $14, duration_ms = $15,
     answer_comment_id = COALESCE(answer_comment_id, $16),
     answer_pending = $17, answer_body = $18,
     answer_next_at = CASE WHEN $17 THEN now() + make_interval(secs => $19::double precision / 1000) END,
     prompt_bytes = $20, answer_bytes = $21, cache_ttl = COALESCE($22, cache_ttl),
     github_requests = $23, review_result = $24, review_line_comments = $25,
     github_requests_not_modified = $26, mcp_tool_calls = $27,
     finished_at = now(), locked_by = NULL, heartbeat_at = NULL`,
    [
      f.status,
      f.outcome,
      f.failureReason,
      f.sessionId,
      u?.model ?? null,
      u?.inputTokens ?? null,
      u?.outputTokens ?? null,
      u?.cacheReadTokens ?? null,
      u?.cacheCreationTokens ?? null,
      u?.contextTokens ?? null,
      u?.costUsd ?? null,
      u?.numTurns ?? null,
      u?.durationMs ?? null,
      a.kind === "posted" ? a.commentId : null,
      a.kind === "pending",
      a.kind === "pending" ? a.body : null,
      a.kind === "pending" ? a.retryInMs : null,
      f.promptBytes ?? null,
      f.answerBytes ?? null,
      f.cacheTtl ?? null,
      f.githubRequests ?? null,
      f.review?.result ?? null,
      f.review?.lineComments ?? null,
      f.githubRequestsNotModified ?? null,
      f.mcpToolCalls ? JSON.stringify(f.mcpToolCalls) : null,
    ],
  );
}
