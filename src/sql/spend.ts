/**
 * What conversations, repositories and installations have spent: sums of the costs the CLI
 * reported for finished turns (`tasks.cost_usd`). Read before a turn starts (the spend limits)
 * and by /status.
 */
import type { TaskKey } from "../core/task.js";
import type { ConversationSpend } from "../core/turn-history.js";
import type { CacheTtl } from "../core/settings.js";
import type { Queryable } from "./db.js";

/** One finished turn of a conversation, as the spend accounting reads it. */
export interface ConversationTurn {
  id: number;
  /** It resumed its session (decision `resume`, reason `resumed`). */
  resumed: boolean;
  forceFresh: boolean;
  sessionId: string | null;
  costUsd: number | null;
  inputTokens: number | null;
  cacheReadTokens: number | null;
  cacheCreationTokens: number | null;
  promptBytes: number | null;
  answerBytes: number | null;
  /** The prompt cache's lifetime the turn asked for; null when unknown (older turns, Codex). */
  cacheTtl: CacheTtl | null;
  /** When the run began and ended; null for a turn recorded without them. */
  startedAt: Date | null;
  finishedAt: Date | null;
}

/**
 * What one conversation (repository, issue, agent: every session the agent had there) has
 * spent, leaving out `exceptTaskId` (the turn about to run). With `freshResets`, the counted
 * part starts at the latest turn that ran because of `/fresh`.
 */
export async function conversationSpend(
  db: Queryable,
  key: TaskKey,
  opts: { exceptTaskId?: number | null; freshResets: boolean },
): Promise<ConversationSpend> {
  const { rows } = await db.query<{
    total: number;
    turns: number;
    counted: number;
    counted_turns: number;
    reset_at: number | null;
  }>(
    `WITH t AS (
       SELECT id, cost_usd, resume_decision, force_fresh FROM tasks
        WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND id IS DISTINCT FROM $4),
     reset AS (
       SELECT max(id) AS id FROM t WHERE $5 AND force_fresh AND resume_decision IS NOT NULL),
     counted AS (
       SELECT t.* FROM t WHERE t.id >= coalesce((SELECT id FROM reset), 0))
     SELECT (SELECT coalesce(sum(cost_usd), 0) FROM t) AS total,
            (SELECT count(*) FROM t WHERE resume_decision IS NOT NULL) AS turns,
            (SELECT coalesce(sum(cost_usd), 0) FROM counted) AS counted,
            (SELECT count(*) FROM counted WHERE resume_decision IS NOT NULL) AS counted_turns,
            (SELECT id FROM reset) AS reset_at`,
    [key.repoId, key.issueNumber, key.agent, opts.exceptTaskId ?? null, opts.freshResets],
  );
  const r = rows[0];
  return {
    totalUsd: r?.total ?? 0,
    turns: r?.turns ?? 0,
    countedUsd: r?.counted ?? 0,
    countedTurns: r?.counted_turns ?? 0,
    resetAtTask: r?.reset_at ?? null,
  };
}

/** Most turns of one conversation the savings estimate reads: the newest ones. */
export const MAX_TURNS_READ = 500;

/** The conversation's turns that ran, oldest first (the newest MAX_TURNS_READ of them). */
export async function conversationTurns(db: Queryable, key: TaskKey): Promise<ConversationTurn[]> {
  const { rows } = await db.query<{
    id: number;
    resume_decision: string | null;
    resume_reason: string | null;
    force_fresh: boolean;
    session_id: string | null;
    cost_usd: number | null;
    input_tokens: number | null;
    cache_read_tokens: number | null;
    cache_creation_tokens: number | null;
    prompt_bytes: number | null;
    answer_bytes: number | null;
    cache_ttl: CacheTtl | null;
    started_at: Date | null;
    finished_at: Date | null;
  }>(
    `SELECT id, resume_decision, resume_reason, force_fresh, session_id, cost_usd, input_tokens,
            cache_read_tokens, cache_creation_tokens, prompt_bytes, answer_bytes, cache_ttl,
            started_at, finished_at
       FROM tasks
      WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND resume_decision IS NOT NULL
        AND status IN ('succeeded', 'failed', 'cancelled')
      ORDER BY id DESC
      LIMIT $4`,
    [key.repoId, key.issueNumber, key.agent, MAX_TURNS_READ],
  );
  return rows.reverse().map((r) => ({
    id: r.id,
    resumed: r.resume_decision === "resume" && r.resume_reason === "resumed",
    forceFresh: r.force_fresh,
    sessionId: r.session_id,
    costUsd: r.cost_usd,
    inputTokens: r.input_tokens,
    cacheReadTokens: r.cache_read_tokens,
    cacheCreationTokens: r.cache_creation_tokens,
    promptBytes: r.prompt_bytes,
    answerBytes: r.answer_bytes,
    cacheTtl: r.cache_ttl,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  }));
}

/**
 * What a repository (or a whole installation) spent on turns asked for since `from` (a turn
 * counts in the month its task was created, like the dashboard's figures). Costs of turns still
 * running are not known yet, so they are not in the sum.
 */
export async function spentSince(
  db: Queryable,
  scope: { repoId: number } | { installationId: number },
  from: Date,
): Promise<number> {
  const { rows } =
    "repoId" in scope
      ? await db.query<{ cost: number }>(
          `SELECT coalesce(sum(cost_usd), 0) AS cost FROM tasks
            WHERE repo_id = $1 AND created_at >= $2 AND cost_usd IS NOT NULL`,
          [scope.repoId, from],
        )
      : await db.query<{ cost: number }>(
          `SELECT coalesce(sum(cost_usd), 0) AS cost FROM tasks
            WHERE installation_id = $1 AND created_at >= $2 AND cost_usd IS NOT NULL`,
          [scope.installationId, from],
        );
  return rows[0]?.cost ?? 0;
}
