import type { HistoryEdit, RewindFacts } from "../core/resume-decision.js";
import type { TaskKey } from "../core/task.js";
import type { ResentComment } from "../core/turn-history.js";
import type { Queryable } from "./db.js";

/**
 * `history_epochs`: one counter per task key, bumped when something in the key's session
 * history changed under it (a comment edited or deleted, the issue body edited). The runner
 * records the epoch a session was pinned at and does not resume it once the counter has moved
 * on (guard `history_edited`), or rewinds it to before the changed comment (`rewound`): each
 * bump leaves a row in `history_edits` saying what changed, and the comparison is the runner's.
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
    repoId: number;
    issueNumber: number;
    /** The comment's `task_comments.source`. */
    source: string;
    commentCreatedAt: Date;
    inThread: boolean;
    reason: string;
    /** Deleted, or edited to `body` (what a rewind sends again). */
    deleted: boolean;
    body: string | null;
  },
): Promise<string[]> {
  return bump(
    db,
    `SELECT DISTINCT t.agent FROM tasks t
      WHERE t.repo_id = $1 AND t.issue_number = $2 AND ${HAS_SESSION}
        AND (($5 AND t.started_at >= $3
                 AND (coalesce(t.resume_decision, 'fresh') = 'fresh' OR t.retried_fresh))
             OR EXISTS (SELECT 1 FROM task_comments tc WHERE tc.task_id = t.id AND tc.source = $4))`,
    [opts.repoId, opts.issueNumber, opts.commentCreatedAt, opts.source, opts.inThread],
    opts.reason,
    { source: opts.source, deleted: opts.deleted, body: opts.deleted ? null : opts.body },
  );
}

/** The issue (or PR) body was edited: every turn read it, so every key with a session is bumped. */
export async function bumpEpochsForIssueBody(
  db: Queryable,
  opts: { repoId: number; issueNumber: number; reason: string },
): Promise<string[]> {
  return bump(
    db,
    `SELECT t.agent FROM tasks t WHERE t.repo_id = $1 AND t.issue_number = $2 AND ${HAS_SESSION}
     UNION
     SELECT s.agent FROM sessions s WHERE s.repo_id = $1 AND s.issue_number = $2`,
    [opts.repoId, opts.issueNumber],
    opts.reason,
    { source: null, deleted: false, body: null },
  );
}

async function bump(
  db: Queryable,
  agentsQuery: string,
  params: unknown[],
  reason: string,
  change: { source: string | null; deleted: boolean; body: string | null },
): Promise<string[]> {
  const n = params.length;
  // The epoch and its record move together, in one statement.
  const { rows } = await db.query<{ agent: string }>(
    `WITH keys AS (${agentsQuery}),
     bumped AS (
       INSERT INTO history_epochs AS h (repo_id, issue_number, agent, epoch, reason, bumped_at)
       SELECT $1, $2, keys.agent, 1, $${n + 1}, now() FROM keys
       ON CONFLICT (repo_id, issue_number, agent)
         DO UPDATE SET epoch = h.epoch + 1, reason = EXCLUDED.reason, bumped_at = now()
       RETURNING agent, epoch),
     logged AS (
       INSERT INTO history_edits AS e (repo_id, issue_number, agent, epoch, source, deleted, body)
       SELECT $1, $2, b.agent, b.epoch, $${n + 2}, $${n + 3}, $${n + 4} FROM bumped b
       ON CONFLICT (repo_id, issue_number, agent, epoch) DO UPDATE
         SET source = EXCLUDED.source, deleted = EXCLUDED.deleted, body = EXCLUDED.body,
             created_at = now())
     SELECT agent FROM bumped`,
    [...params, reason.slice(0, 500), change.source, change.deleted, change.body],
  );
  return rows.map((r) => r.agent).sort();
}

/** The key's current epoch (0 when never bumped). */
export async function readEpoch(db: Queryable, key: TaskKey): Promise<number> {
  const { rows } = await db.query<{ epoch: number }>(
    "SELECT epoch FROM history_epochs WHERE repo_id = $1 AND issue_number = $2 AND agent = $3",
    [key.repoId, key.issueNumber, key.agent],
  );
  return rows[0]?.epoch ?? 0;
}

/**
 * What a rewind of `sessionId` is decided from (core/resume-decision.ts planRewind): the
 * session's finished turns, oldest first, and the key's edits in (fromEpoch, toEpoch].
 */
export async function rewindFacts(
  db: Queryable,
  key: TaskKey,
  sessionId: string,
  fromEpoch: number,
  toEpoch: number,
): Promise<RewindFacts> {
  const [turns, edits] = await Promise.all([
    db.query(
      `SELECT t.id, t.session_entry, t.compacted, t.rewound_from,
              COALESCE(array_agg(tc.source ORDER BY tc.created_at, tc.comment_id NULLS FIRST)
                         FILTER (WHERE tc.source IS NOT NULL), '{}') AS sources
         FROM tasks t LEFT JOIN task_comments tc ON tc.task_id = t.id
        WHERE t.session_id = $4 AND t.repo_id = $1 AND t.issue_number = $2 AND t.agent = $3
          AND t.status IN ('succeeded', 'failed', 'cancelled')
        GROUP BY t.id
        ORDER BY t.started_at NULLS LAST, t.id`,
      [key.repoId, key.issueNumber, key.agent, sessionId],
    ),
    db.query(
      `SELECT epoch, source, deleted FROM history_edits
        WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND epoch > $4 AND epoch <= $5
        ORDER BY epoch`,
      [key.repoId, key.issueNumber, key.agent, fromEpoch, toEpoch],
    ),
  ]);
  return {
    turns: turns.rows.map((r: Record<string, unknown>) => ({
      taskId: Number(r.id),
      entry: (r.session_entry as string | null) ?? null,
      sources: r.sources as string[],
      compacted: r.compacted === true,
      rewoundFrom: r.rewound_from === null ? null : Number(r.rewound_from),
    })),
    edits: edits.rows.map((r: Record<string, unknown>): HistoryEdit => ({
      epoch: r.epoch as number,
      source: (r.source as string | null) ?? null,
      deleted: r.deleted as boolean,
    })),
  };
}

/**
 * The key's comments `sources` as they read now (the latest edit's text, else what the turn was
 * asked), in the order given; a comment deleted since is left out.
 */
export async function resentComments(
  db: Queryable,
  key: TaskKey,
  sources: readonly string[],
): Promise<ResentComment[]> {
  if (!sources.length) return [];
  const { rows } = await db.query(
    `SELECT tc.source, tc.author, tc.url, tc.created_at, tc.body, e.deleted, e.body AS edited
       FROM task_comments tc
       LEFT JOIN LATERAL (
         SELECT deleted, body FROM history_edits
          WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND source = tc.source
          ORDER BY epoch DESC LIMIT 1) e ON true
      WHERE tc.agent = $3 AND tc.source = ANY($4)`,
    [key.repoId, key.issueNumber, key.agent, sources],
  );
  const bySource = new Map(rows.map((r: Record<string, unknown>) => [r.source as string, r]));
  return sources.flatMap((source) => {
    const r = bySource.get(source);
    if (!r || r.deleted === true) return [];
    return [
      {
        source,
        author: r.author as string,
        url: r.url as string,
        body: (r.edited as string | null) ?? (r.body as string),
        createdAt: r.created_at as Date,
      },
    ];
  });
}
