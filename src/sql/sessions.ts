/** The sessions table: one row per agent CLI session (a Claude session or a Codex thread), holding its latest state. */
import type { PriorSession } from "../core/resume-decision.js";
import type { TaskKey } from "../core/task.js";
import type { Queryable } from "./db.js";

/** Record (or refresh) a session when the CLI reports it. */
export async function upsertSession(
  db: Queryable,
  s: TaskKey & {
    sessionId: string;
    runtimeId: string;
    /** Default claude. */
    cli?: "claude" | "codex";
    workDir: string;
    model: string | null;
    historyEpoch: number;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO sessions (session_id, repo, issue_number, agent, runtime_id, work_dir, model, history_epoch, cli)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (session_id) DO UPDATE SET last_used_at = now(),
       model = COALESCE(EXCLUDED.model, sessions.model), last_runtime_id = EXCLUDED.runtime_id`,
    [
      s.sessionId,
      s.repo,
      s.issueNumber,
      s.agent,
      s.runtimeId,
      s.workDir,
      s.model,
      s.historyEpoch,
      s.cli ?? "claude",
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
 * The key's prior session: the one of its latest finished task that has a session, with the
 * session's latest state (so a newer poisoned turn outweighs older good ones).
 */
export async function priorSession(db: Queryable, key: TaskKey): Promise<PriorSession | null> {
  const { rows } = await db.query(
    `SELECT s.session_id, s.cli, COALESCE(s.last_runtime_id, s.runtime_id) AS runtime_id, s.work_dir, s.state, s.history_epoch, s.last_used_at,
            s.context_tokens, s.context_window
       FROM tasks t JOIN sessions s ON s.session_id = t.session_id
      WHERE t.repo = $1 AND t.issue_number = $2 AND t.agent = $3
        AND t.status IN ('succeeded', 'failed', 'cancelled') AND t.session_id IS NOT NULL
      ORDER BY t.finished_at DESC NULLS LAST, t.id DESC
      LIMIT 1`,
    [key.repo, key.issueNumber, key.agent],
  );
  const r = rows[0] as Record<string, unknown> | undefined;
  if (!r) return null;
  return {
    sessionId: r.session_id as string,
    cli: r.cli === "codex" ? "codex" : "claude",
    runtimeId: (r.runtime_id as string | null) ?? null,
    workDir: (r.work_dir as string | null) ?? null,
    state: r.state as PriorSession["state"],
    historyEpoch: r.history_epoch as number,
    lastUsedAt: r.last_used_at as Date,
    contextTokens: (r.context_tokens as number | null) ?? null,
    contextWindow: (r.context_window as number | null) ?? null,
  };
}
