/**
 * One conversation's chain (repository, issue, agent): every task of the key with what started
 * it, its session and resume decision, model, tokens, cost and outcome; the key's branch and
 * pull request (conversation_branches); its sessions with their state and stored transcript.
 * Read in one snapshot (snapshot.ts), so the totals agree with the rows. Behind
 * GET /dashboard/conversations/… and GET /api/conversations/… (src/web/dashboard-routes.ts).
 */
import type { Pool, PoolClient } from "../../db/pool.js";
import type { TaskKey } from "../../core/task.js";
import { getConversation } from "../conversations.js";
import { inSnapshot } from "./snapshot.js";

/** How many of a conversation's tasks the chain lists (newest); the totals count them all. */
export const MAX_CHAIN_TASKS = 500;

export interface ChainTurn {
  id: number;
  /** What started it: comment, review, label, assignment, ci. */
  trigger: string;
  triggerAuthor: string;
  triggerUrl: string;
  status: string;
  outcome: string | null;
  failureReason: string | null;
  resumeDecision: "resume" | "fresh" | null;
  resumeReason: string | null;
  isFollowUp: boolean | null;
  sessionId: string | null;
  model: string | null;
  cli: string | null;
  cacheTtl: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadTokens: number | null;
  cacheCreationTokens: number | null;
  costUsd: number | null;
  durationMs: number | null;
  publishResult: string | null;
  pullOpened: number | null;
  answerCommentId: number | null;
  createdAt: string;
  finishedAt: string | null;
}

export interface ChainSession {
  sessionId: string;
  cli: string;
  state: string;
  stateReason: string | null;
  stateChangedAt: string | null;
  createdAt: string;
  lastUsedAt: string;
  /** The stored transcript's size; null when none is kept (never saved, pruned, over the bound). */
  transcriptBytes: number | null;
  /** Gzip'd bytes stored. */
  transcriptStoredBytes: number | null;
}

export interface ChainTotals {
  /** Every task of the key, turns or not (queued, refused, cancelled before it ran). */
  tasks: number;
  /** Tasks with a resume decision: what /api/stats counts as turns. */
  turns: number;
  followUps: number;
  resumed: number;
  /** Tasks a spend limit kept from running. */
  refused: number;
  failed: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
  costUsd: number;
  durationMs: number;
}

export interface Chain {
  repoId: number;
  repo: string;
  issueNumber: number;
  agent: string;
  totals: ChainTotals;
  branch: {
    branch: string;
    baseBranch: string;
    headSha: string | null;
    commits: number;
    pullNumber: number | null;
    pullUrl: string | null;
  } | null;
  sessions: ChainSession[];
  /** Newest first, at most MAX_CHAIN_TASKS. */
  turns: ChainTurn[];
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** The key's chain; null when the key has no task at all. */
export async function readChain(
  pool: Pool,
  key: TaskKey,
  timeoutMs: number,
): Promise<Chain | null> {
  return inSnapshot(pool, timeoutMs, async (c) => {
    const totals = await chainTotals(c, key);
    if (totals.tasks === 0) return null;
    const conv = await getConversation(c, key);
    return {
      repoId: key.repoId,
      repo: key.repo,
      issueNumber: key.issueNumber,
      agent: key.agent,
      totals,
      branch: conv && {
        branch: conv.branch,
        baseBranch: conv.baseBranch,
        headSha: conv.headSha,
        commits: conv.commits,
        pullNumber: conv.pullNumber,
        pullUrl: conv.pullUrl,
      },
      sessions: await chainSessions(c, key),
      turns: await chainTurns(c, key),
    };
  });
}

async function chainTotals(c: PoolClient, key: TaskKey): Promise<ChainTotals> {
  // The same rules as the roll-ups (migration 1763800000600): a turn has a resume decision; a
  // follow-up is is_follow_up or resumed; resumed is decision resume with reason resumed.
  const { rows } = await c.query(
    `SELECT count(*)::int AS tasks,
            count(*) FILTER (WHERE resume_decision IS NOT NULL)::int AS turns,
            count(*) FILTER (WHERE resume_decision IS NOT NULL
                               AND (coalesce(is_follow_up, false) OR resumed))::int AS follow_ups,
            count(*) FILTER (WHERE resume_decision IS NOT NULL AND resumed)::int AS resumed,
            count(*) FILTER (WHERE outcome = 'limit_refused')::int AS refused,
            count(*) FILTER (WHERE resume_decision IS NOT NULL
                               AND outcome IS NOT NULL
                               AND outcome NOT IN ('success', 'cancelled'))::int AS failed,
            coalesce(sum(input_tokens) FILTER (WHERE resume_decision IS NOT NULL), 0) AS input_tokens,
            coalesce(sum(output_tokens) FILTER (WHERE resume_decision IS NOT NULL), 0) AS output_tokens,
            coalesce(sum(cache_read_tokens) FILTER (WHERE resume_decision IS NOT NULL), 0) AS cache_read_tokens,
            coalesce(sum(cache_creation_tokens) FILTER (WHERE resume_decision IS NOT NULL), 0) AS cache_creation_tokens,
            coalesce(sum(cost_usd) FILTER (WHERE resume_decision IS NOT NULL), 0) AS cost_usd,
            coalesce(sum(duration_ms) FILTER (WHERE resume_decision IS NOT NULL), 0) AS duration_ms
       FROM (SELECT *, resume_decision = 'resume'
                         AND resume_reason IS NOT DISTINCT FROM 'resumed' AS resumed
               FROM tasks WHERE repo_id = $1 AND issue_number = $2 AND agent = $3) t`,
    [key.repoId, key.issueNumber, key.agent],
  );
  const r = rows[0] as Record<string, number>;
  return {
    tasks: r.tasks!,
    turns: r.turns!,
    followUps: r.follow_ups!,
    resumed: r.resumed!,
    refused: r.refused!,
    failed: r.failed!,
    inputTokens: Number(r.input_tokens),
    outputTokens: Number(r.output_tokens),
    cacheReadTokens: Number(r.cache_read_tokens),
    cacheCreationTokens: Number(r.cache_creation_tokens),
    costUsd: Math.round(Number(r.cost_usd) * 1e6) / 1e6,
    durationMs: Number(r.duration_ms),
  };
}

async function chainTurns(c: PoolClient, key: TaskKey): Promise<ChainTurn[]> {
  const { rows } = await c.query(
    `SELECT id, trigger, trigger_author, trigger_url, status, outcome, failure_reason,
            resume_decision, resume_reason, is_follow_up, session_id, model, cli, cache_ttl,
            input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cost_usd,
            duration_ms, publish_result, pull_opened, answer_comment_id, created_at, finished_at
       FROM tasks WHERE repo_id = $1 AND issue_number = $2 AND agent = $3
      ORDER BY id DESC LIMIT $4`,
    [key.repoId, key.issueNumber, key.agent, MAX_CHAIN_TASKS],
  );
  return rows.map((r: Record<string, unknown>) => ({
    id: Number(r.id),
    trigger: r.trigger as string,
    triggerAuthor: r.trigger_author as string,
    triggerUrl: r.trigger_url as string,
    status: r.status as string,
    outcome: (r.outcome as string | null) ?? null,
    failureReason: (r.failure_reason as string | null) ?? null,
    resumeDecision: (r.resume_decision as "resume" | "fresh" | null) ?? null,
    resumeReason: (r.resume_reason as string | null) ?? null,
    isFollowUp: (r.is_follow_up as boolean | null) ?? null,
    sessionId: (r.session_id as string | null) ?? null,
    model: (r.model as string | null) ?? null,
    cli: (r.cli as string | null) ?? null,
    cacheTtl: (r.cache_ttl as string | null) ?? null,
    inputTokens: (r.input_tokens as number | null) ?? null,
    outputTokens: (r.output_tokens as number | null) ?? null,
    cacheReadTokens: (r.cache_read_tokens as number | null) ?? null,
    cacheCreationTokens: (r.cache_creation_tokens as number | null) ?? null,
    costUsd: (r.cost_usd as number | null) ?? null,
    durationMs: (r.duration_ms as number | null) ?? null,
    publishResult: (r.publish_result as string | null) ?? null,
    pullOpened: (r.pull_opened as number | null) ?? null,
    answerCommentId: r.answer_comment_id === null ? null : Number(r.answer_comment_id),
    createdAt: (r.created_at as Date).toISOString(),
    finishedAt: iso(r.finished_at as Date | null),
  }));
}

async function chainSessions(c: PoolClient, key: TaskKey): Promise<ChainSession[]> {
  const { rows } = await c.query(
    `SELECT s.session_id, s.cli, s.state, s.state_reason, s.state_changed_at, s.created_at,
            s.last_used_at, tr.raw_bytes, tr.stored_bytes, tr.over_bound
       FROM sessions s
       LEFT JOIN session_transcripts tr
         ON tr.session_id = s.session_id AND tr.repo_id = $1 AND tr.issue_number = $2 AND tr.agent = $3
      WHERE s.repo_id = $1 AND s.issue_number = $2 AND s.agent = $3
      ORDER BY s.created_at DESC LIMIT 100`,
    [key.repoId, key.issueNumber, key.agent],
  );
  return rows.map((r: Record<string, unknown>) => {
    const kept = r.raw_bytes !== null && r.raw_bytes !== undefined && !r.over_bound;
    return {
      sessionId: r.session_id as string,
      cli: r.cli as string,
      state: r.state as string,
      stateReason: (r.state_reason as string | null) ?? null,
      stateChangedAt: iso(r.state_changed_at as Date | null),
      createdAt: (r.created_at as Date).toISOString(),
      lastUsedAt: (r.last_used_at as Date).toISOString(),
      transcriptBytes: kept ? Number(r.raw_bytes) : null,
      transcriptStoredBytes: kept ? Number(r.stored_bytes) : null,
    };
  });
}

/**
 * A session of this key whose stored transcript an operator may download: poisoned or retired
 * (kept TETHER_DEBUG_KEEP_HOURS for debugging), with chunks stored. Null otherwise.
 */
export async function debugTranscriptSession(
  pool: Pool,
  key: TaskKey,
  sessionId: string,
): Promise<{ state: string; rawBytes: number } | null> {
  const { rows } = await pool.query(
    `SELECT s.state, tr.raw_bytes FROM sessions s
       JOIN session_transcripts tr
         ON tr.session_id = s.session_id AND tr.repo_id = $2 AND tr.issue_number = $3 AND tr.agent = $4
      WHERE s.session_id = $1 AND s.repo_id = $2 AND s.issue_number = $3 AND s.agent = $4
        AND s.state IN ('poisoned', 'retired') AND NOT tr.over_bound`,
    [sessionId, key.repoId, key.issueNumber, key.agent],
  );
  const r = rows[0] as { state: string; raw_bytes: number } | undefined;
  return r ? { state: r.state, rawBytes: Number(r.raw_bytes) } : null;
}
