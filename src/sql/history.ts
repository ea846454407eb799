import type { TaskKey } from "../core/task.js";
import type { Queryable } from "./db.js";

/**
 * `history_epochs`: one counter per task key, bumped when something in the key's session
 * history changed under it (a comment edited or deleted, the issue body edited). The runner
 * records the epoch a session was pinned at and does not resume it once the counter has moved
 * on (guard `history_edited`). Nothing else is stored: the comparison is the runner's.
 */

/**
 * Tasks whose session may hold the thread as it was: those that ran (a session is pinned) or
 * are running (one is about to be). A running task's epoch was recorded when it started, so a
 * bump now also catches a turn that read the old text moments ago.
 */
const HAS_SESSION = "(t.session_id IS NOT NULL OR t.status = 'running')";

/**
 * A comment was edited or deleted: bump the keys on its issue whose session history contains it.
 * A comment is in a key's history when it fed one of the key's turns (the turn's request), or,
 * for a comment in the conversation thread (`inThread`), when a cold turn of that key (one that
 * read the whole thread) started after the comment was written. Review comments on the diff
 * and review bodies are not in the thread a cold turn reads: only the turns they fed saw them.
 * Matched by `source` (`comment:<id>`, `review_comment:<id>`…), since GitHub numbers
 * conversation comments and review comments separately. Returns the agents whose epoch moved.
 */
export async function bumpEpochsForComment(
  db: Queryable,
  opts: {
    repo: string;
    issueNumber: number;
    /** The comment's `task_comments.source`. */
    source: string;
    commentCreatedAt: Date;
    inThread: boolean;
    reason: string;
  },
): Promise<string[]> {
  return bump(
    db,
    `SELECT DISTINCT t.agent FROM tasks t
      WHERE t.repo = $1 AND t.issue_number = $2 AND ${HAS_SESSION}
        AND (($5 AND t.started_at >= $3
                 AND (coalesce(t.resume_decision, 'fresh') = 'fresh' OR t.retried_fresh))
             OR EXISTS (SELECT 1 FROM task_comments tc WHERE tc.task_id = t.id AND tc.source = $4))`,
    [opts.repo, opts.issueNumber, opts.commentCreatedAt, opts.source, opts.inThread],
    opts.reason,
  );
}

/** The issue (or PR) body was edited: every turn read it, so every key with a session is bumped. */
export async function bumpEpochsForIssueBody(
  db: Queryable,
  opts: { repo: string; issueNumber: number; reason: string },
): Promise<string[]> {
  return bump(
    db,
    `SELECT t.agent FROM tasks t WHERE t.repo = $1 AND t.issue_number = $2 AND ${HAS_SESSION}
     UNION
     SELECT s.agent FROM sessions s WHERE s.repo = $1 AND s.issue_number = $2`,
    [opts.repo, opts.issueNumber],
    opts.reason,
  );
}

async function bump(
  db: Queryable,
  agentsQuery: string,
  params: unknown[],
  reason: string,
): Promise<string[]> {
  const n = params.length;
  const { rows } = await db.query<{ agent: string }>(
    `WITH keys AS (${agentsQuery})
     INSERT INTO history_epochs AS h (repo, issue_number, agent, epoch, reason, bumped_at)
     SELECT $1, $2, keys.agent, 1, $${n + 1}, now() FROM keys
     ON CONFLICT (repo, issue_number, agent)
       DO UPDATE SET epoch = h.epoch + 1, reason = EXCLUDED.reason, bumped_at = now()
     RETURNING agent`,
    [...params, reason.slice(0, 500)],
  );
  return rows.map((r) => r.agent).sort();
}

/** The key's current epoch (0 when never bumped). */
export async function readEpoch(db: Queryable, key: TaskKey): Promise<number> {
  const { rows } = await db.query<{ epoch: number }>(
    "SELECT epoch FROM history_epochs WHERE repo = $1 AND issue_number = $2 AND agent = $3",
    [key.repo, key.issueNumber, key.agent],
  );
  return rows[0]?.epoch ?? 0;
}
