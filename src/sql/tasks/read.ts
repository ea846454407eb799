/**
 * Intake's reads of tasks: which agents work on an issue, whether it has tasks at all, each
 * key's state for /status, and which repository a name stands for.
 */
import type { TaskKey, TaskStatus, TriggerKind } from "../../core/task.js";
import type { Queryable } from "../db.js";

/** Agents with any task on this issue, in order of their first task. */
export async function agentsOnIssue(
  db: Queryable,
  repoId: number,
  issueNumber: number,
): Promise<string[]> {
  const { rows } = await db.query<{ agent: string }>(
    `SELECT agent FROM tasks WHERE repo_id = $1 AND issue_number = $2
      GROUP BY agent ORDER BY min(id)`,
    [repoId, issueNumber],
  );
  return rows.map((r) => r.agent);
}

/** Does any task exist on this issue? (The webhook's cheap check for edits and deletions.) */
export async function issueHasTasks(
  db: Queryable,
  repoId: number,
  issueNumber: number,
): Promise<boolean> {
  // A conversation's pull request has no tasks of its own: its comments are the issue's turns.
  const { rows } = await db.query(
    `SELECT 1 FROM tasks WHERE repo_id = $1 AND issue_number = $2
     UNION ALL
     SELECT 1 FROM tasks WHERE repo_id = $1 AND thread_number = $2
     LIMIT 1`,
    [repoId, issueNumber],
  );
  return rows.length > 0;
}

/**
 * The id of the repository that last had tasks under `repo` (a name, lower case): what a page
 * addressed by name shows. A name another repository had before shows that one's conversations
 * until the new one has a task.
 */
export async function repoIdByName(db: Queryable, repo: string): Promise<number | null> {
  const { rows } = await db.query<{ repo_id: number }>(
    `SELECT repo_id FROM tasks WHERE repo = $1 ORDER BY id DESC LIMIT 1`,
    [repo],
  );
  return rows[0]?.repo_id ?? null;
}

export interface TaskSummary {
  id: number;
  status: TaskStatus;
  triggerAuthor: string;
  triggerUrl: string;
  createdAt: Date;
  startedAt: Date | null;
  cancelRequested: boolean;
  forceFresh: boolean;
  /** `/model <name>` (or, for a CI turn, the CI loop's `escalate`): this turn's model; null: the agent's. */
  requestedModel: string | null;
  /** What started the task: its first request's kind. */
  trigger: TriggerKind;
  /** Comments the task answers (more than one when comments were coalesced). */
  comments: number;
}

export interface KeyState {
  agent: string;
  running?: TaskSummary;
  queued?: TaskSummary;
  /** The newest session a task of this key ran in, with the session's latest state. */
  lastSession?: {
    sessionId: string;
    state: string;
    taskId: number;
    lastUsedAt: Date | null;
    /** The model that task's turn ran on, as the CLI reported it. */
    model: string | null;
  };
}

/**
 * The state of each of `agents` on one issue, for /status. Reads sessions too: the key's last
 * session is found through its tasks.
 */
export async function readKeyStates(
  db: Queryable,
  repoId: number,
  issueNumber: number,
  agents: readonly string[],
): Promise<KeyState[]> {
  const active = await db.query<{
    id: number;
    agent: string;
    status: TaskStatus;
    trigger_author: string;
    trigger_url: string;
    created_at: Date;
    started_at: Date | null;
    cancel_requested: boolean;
    force_fresh: boolean;
    requested_model: string | null;
    trigger: TriggerKind;
    comments: number;
  }>(
    `SELECT t.id, t.agent, t.status, t.trigger_author, t.trigger_url, t.created_at, t.started_at,
            t.cancel_requested, t.force_fresh, t.requested_model, t.trigger,
            (SELECT count(*)::int FROM task_comments tc WHERE tc.task_id = t.id) AS comments
       FROM tasks t
      WHERE t.repo_id = $1 AND t.issue_number = $2 AND t.agent = ANY($3)
        AND t.status IN ('queued', 'running')`,
    [repoId, issueNumber, agents],
  );
  const sessions = await db.query<{
    agent: string;
    id: number;
    session_id: string;
    state: string | null;
    last_used_at: Date | null;
    model: string | null;
  }>(
    `SELECT DISTINCT ON (t.agent) t.agent, t.id, t.session_id, s.state, s.last_used_at, t.model
       FROM tasks t LEFT JOIN sessions s ON s.session_id = t.session_id
      WHERE t.repo_id = $1 AND t.issue_number = $2 AND t.agent = ANY($3) AND t.session_id IS NOT NULL
      ORDER BY t.agent, t.id DESC`,
    [repoId, issueNumber, agents],
  );
  return agents.map((agent) => {
    const state: KeyState = { agent };
    for (const r of active.rows) {
      if (r.agent !== agent) continue;
      const summary: TaskSummary = {
        id: r.id,
        status: r.status,
        triggerAuthor: r.trigger_author,
        triggerUrl: r.trigger_url,
        createdAt: r.created_at,
        startedAt: r.started_at,
        cancelRequested: r.cancel_requested,
        forceFresh: r.force_fresh,
        requestedModel: r.requested_model,
        trigger: r.trigger,
        comments: r.comments,
      };
      if (r.status === "running") state.running = summary;
      else state.queued = summary;
    }
    const s = sessions.rows.find((r) => r.agent === agent);
    if (s)
      state.lastSession = {
        sessionId: s.session_id,
        state: s.state ?? "active",
        taskId: s.id,
        lastUsedAt: s.last_used_at,
        model: s.model,
      };
    return state;
  });
}

/**
 * The key's last turn that ran (it has a resume decision): whether it was a plan turn and how it
 * ended. Null: no turn of the key has run. `/plan`'s follow-ups and `/status` read it.
 */
export async function lastTurnPlan(
  db: Queryable,
  key: TaskKey,
  beforeTaskId?: number,
): Promise<{ planTurn: boolean; status: TaskStatus } | null> {
  const { rows } = await db.query<{ plan_turn: boolean; status: TaskStatus }>(
    `SELECT plan_turn, status FROM tasks
      WHERE repo_id = $1 AND issue_number = $2 AND agent = $3
        AND status IN ('succeeded', 'failed', 'cancelled') AND resume_decision IS NOT NULL
        AND ($4::bigint IS NULL OR id < $4)
      ORDER BY id DESC LIMIT 1`,
    [key.repoId, key.issueNumber, key.agent, beforeTaskId ?? null],
  );
  const r = rows[0];
  return r ? { planTurn: r.plan_turn, status: r.status } : null;
}
