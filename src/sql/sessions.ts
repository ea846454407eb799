/** The sessions table: one row per agent CLI session, holding its latest state. */
import type { PriorSession } from "../core/resume-decision.js";
import type { CliKind } from "../core/settings.js";
import type { TaskKey } from "../core/task.js";
import type { Queryable } from "./db.js";

/** Record (or refresh) a session when the CLI reports it. */
export async function upsertSession(
  db: Queryable,
  s: TaskKey & {
    sessionId: string;
    runtimeId: string;
    /** The caller's: the query layer knows no CLI (src/cli-registry.ts sits above it). */
    cli: CliKind;
    workDir: string;
    model: string | null;
    historyEpoch: number;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO sessions (session_id, repo, issue_number, agent, runtime_id, work_dir, model, history_epoch, cli, repo_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (session_id) DO UPDATE SET last_used_at = now(),
       model = COALESCE(EXCLUDED.model, sessions.model), last_runtime_id = EXCLUDED.runtime_id,
       repo = EXCLUDED.repo`,
    [
      s.sessionId,
      s.repo,
      s.issueNumber,
      s.agent,
      s.runtimeId,
      s.workDir,
      s.model,
      s.historyEpoch,
      s.cli,
      s.repoId,
    ],
  );
}

/** After a turn: how full the context is now, and that it was used. */
export async function touchSession(
  db: Queryable,
  sessionId: string,
  contextTokens: number | null,
  contextWindow: number | null,
): Promise<void> {
  await db.query(
    `UPDATE sessions SET last_used_at = now(), context_tokens = COALESCE($2, context_tokens),
            context_window = COALESCE($3, context_window)
      WHERE session_id = $1`,
    [sessionId, contextTokens, contextWindow],
  );
}

/**
 * A rewound turn took the session back to before every changed comment: its history now holds
 * the key's history as of `epoch`, so the next turn resumes it as it is.
 */
export async function advanceSessionEpoch(
  db: Queryable,
  sessionId: string,
  epoch: number,
): Promise<void> {
  await db.query(
    `UPDATE sessions SET history_epoch = GREATEST(history_epoch, $2) WHERE session_id = $1`,
    [sessionId, epoch],
  );
}

/**
 * The context window the CLI last reported for `model` (a session whose latest turn ran on it);
 * null when no session has run on it yet.
 */
export async function knownWindow(db: Queryable, model: string): Promise<number | null> {
  const { rows } = await db.query<{ context_window: string }>(
    `SELECT context_window FROM sessions WHERE model = $1 AND context_window IS NOT NULL
      ORDER BY last_used_at DESC LIMIT 1`,
    [model],
  );
  return rows[0] ? Number(rows[0].context_window) : null;
}

/** Poisoned (it overflowed, or the API rejected its history) or retired (the CLI would not resume it). */
export async function markSession(
  db: Queryable,
  sessionId: string,
  state: "poisoned" | "retired",
  reason: string,
): Promise<void> {
  await db.query(
    `UPDATE sessions SET state = $2, state_reason = $3, state_changed_at = now() WHERE session_id = $1`,
    [sessionId, state, reason],
  );
}

/**
 * The key's prior session: the one a person chose with `/resume` while no turn has run in a
 * session since, else the one of its latest finished task that has a session, with the
 * session's latest state (so a newer poisoned turn outweighs older good ones). A turn that ran
 * after the choice (in the chosen session, or a `/fresh` one) settles it: from then on the
 * latest task's session is the prior one again. A turn that never reached a session (a spend
 * refusal) leaves the choice standing.
 */
export async function priorSession(db: Queryable, key: TaskKey): Promise<PriorSession | null> {
  const { rows } = await db.query(
    `WITH pinned AS (
       SELECT p.session_id FROM sessions p
        WHERE p.repo_id = $1 AND p.issue_number = $2 AND p.agent = $3 AND p.pinned_at IS NOT NULL
          AND NOT EXISTS (
            SELECT 1 FROM tasks t
             WHERE t.repo_id = $1 AND t.issue_number = $2 AND t.agent = $3
               AND t.status IN ('succeeded', 'failed', 'cancelled') AND t.session_id IS NOT NULL
               AND t.started_at > p.pinned_at)
        ORDER BY p.pinned_at DESC LIMIT 1),
     latest AS (
       SELECT t.session_id FROM tasks t
        WHERE t.repo_id = $1 AND t.issue_number = $2 AND t.agent = $3
          AND t.status IN ('succeeded', 'failed', 'cancelled') AND t.session_id IS NOT NULL
        ORDER BY t.finished_at DESC NULLS LAST, t.id DESC
        LIMIT 1)
     SELECT s.session_id, s.cli, COALESCE(s.last_runtime_id, s.runtime_id) AS runtime_id, s.work_dir, s.state, s.history_epoch, s.last_used_at,
            s.context_tokens, s.context_window
       FROM sessions s
      WHERE s.session_id = COALESCE((SELECT session_id FROM pinned), (SELECT session_id FROM latest))`,
    [key.repoId, key.issueNumber, key.agent],
  );
  const r = rows[0] as Record<string, unknown> | undefined;
  if (!r) return null;
  return {
    sessionId: r.session_id as string,
    cli: r.cli as CliKind,
    runtimeId: (r.runtime_id as string | null) ?? null,
    workDir: (r.work_dir as string | null) ?? null,
    state: r.state as PriorSession["state"],
    historyEpoch: r.history_epoch as number,
    lastUsedAt: r.last_used_at as Date,
    contextTokens: (r.context_tokens as number | null) ?? null,
    contextWindow: (r.context_window as number | null) ?? null,
  };
}

/** A session by its id, with the key it belongs to (`/from`: another agent's session). */
export async function sessionById(
  db: Queryable,
  sessionId: string,
): Promise<(PriorSession & { key: TaskKey }) | null> {
  const { rows } = await db.query(
    `SELECT s.session_id, s.repo_id, s.repo, s.issue_number, s.agent, s.cli,
            COALESCE(s.last_runtime_id, s.runtime_id) AS runtime_id, s.work_dir, s.state,
            s.history_epoch, s.last_used_at, s.context_tokens, s.context_window
       FROM sessions s WHERE s.session_id = $1`,
    [sessionId],
  );
  const r = rows[0] as Record<string, unknown> | undefined;
  if (!r) return null;
  return {
    key: {
      repoId: r.repo_id as number,
      repo: r.repo as string,
      issueNumber: r.issue_number as number,
      agent: r.agent as string,
    },
    sessionId: r.session_id as string,
    cli: r.cli as CliKind,
    runtimeId: (r.runtime_id as string | null) ?? null,
    workDir: (r.work_dir as string | null) ?? null,
    state: r.state as PriorSession["state"],
    historyEpoch: r.history_epoch as number,
    lastUsedAt: r.last_used_at as Date,
    contextTokens: (r.context_tokens as number | null) ?? null,
    contextWindow: (r.context_window as number | null) ?? null,
  };
}

/** Characters a session id prefix may hold (SESSION_ID's), at least 4 of them. */
export const SESSION_PREFIX = /^[A-Za-z0-9][A-Za-z0-9_-]{3,127}$/;

/** The key's sessions whose id starts with `prefix` (a valid SESSION_PREFIX), newest first. */
export async function sessionsByPrefix(
  db: Queryable,
  key: TaskKey,
  prefix: string,
): Promise<Array<{ sessionId: string; state: PriorSession["state"] }>> {
  // left() rather than LIKE: `_` in an id is a LIKE wildcard.
  const { rows } = await db.query<{ session_id: string; state: PriorSession["state"] }>(
    `SELECT session_id, state FROM sessions
      WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND left(session_id, length($4)) = $4
      ORDER BY last_used_at DESC LIMIT 10`,
    [key.repoId, key.issueNumber, key.agent, prefix],
  );
  return rows.map((r) => ({ sessionId: r.session_id, state: r.state }));
}

/** `/resume`: make this session of the key the one its next turn resumes (see priorSession). */
export async function pinSession(db: Queryable, key: TaskKey, sessionId: string): Promise<boolean> {
  const r = await db.query(
    `UPDATE sessions SET pinned_at = clock_timestamp()
      WHERE session_id = $4 AND repo_id = $1 AND issue_number = $2 AND agent = $3`,
    [key.repoId, key.issueNumber, key.agent, sessionId],
  );
  return (r.rowCount ?? 0) > 0;
}

/** One session of an issue, as `/sessions` lists it. */
export interface SessionSummary {
  agent: string;
  sessionId: string;
  cli: CliKind;
  state: PriorSession["state"];
  /** Turns that ran in it (tasks that pinned it). */
  turns: number;
  lastUsedAt: Date;
  /** The models its turns ran on, oldest first, each once. */
  models: string[];
  costUsd: number;
}

/** The issue's sessions of `agents`, each agent's newest first, at most `perAgent` each. */
export async function issueSessions(
  db: Queryable,
  repoId: number,
  issueNumber: number,
  agents: readonly string[],
  perAgent = 20,
): Promise<SessionSummary[]> {
  const { rows } = await db.query(
    `SELECT * FROM (
       SELECT s.agent, s.session_id, s.cli, s.state, s.last_used_at, s.model,
              count(t.id)::int AS turns, COALESCE(sum(t.cost_usd), 0)::float8 AS cost_usd,
              array_remove(array_agg(t.model ORDER BY t.id), NULL) AS models,
              row_number() OVER (PARTITION BY s.agent ORDER BY s.last_used_at DESC) AS n
         FROM sessions s LEFT JOIN tasks t ON t.session_id = s.session_id
        WHERE s.repo_id = $1 AND s.issue_number = $2 AND s.agent = ANY($3)
        GROUP BY s.session_id) x
      WHERE n <= $4
      ORDER BY array_position($3::text[], agent), last_used_at DESC`,
    [repoId, issueNumber, agents, perAgent],
  );
  return rows.map((r: Record<string, unknown>) => {
    const models = [...new Set((r.models as string[] | null) ?? [])];
    if (!models.length && typeof r.model === "string") models.push(r.model);
    return {
      agent: r.agent as string,
      sessionId: r.session_id as string,
      cli: r.cli as CliKind,
      state: r.state as PriorSession["state"],
      turns: r.turns as number,
      lastUsedAt: r.last_used_at as Date,
      models,
      costUsd: r.cost_usd as number,
    };
  });
}
