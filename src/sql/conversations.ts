/**
 * The `conversation_branches` table: where each key's published changes go, and the pull
 * request Tether opened for them. Written by the runner after a publish; read by the runner
 * (which branch the workspace follows, whether a pull request exists), by intake (a comment on
 * the pull request belongs to the issue's key) and by /status.
 */
import type { TaskKey } from "../core/task.js";
import type { Queryable } from "./db.js";

export interface Conversation extends TaskKey {
  branch: string;
  baseBranch: string;
  /** The last commit Tether pushed to the branch. */
  headSha: string | null;
  pullNumber: number | null;
  pullUrl: string | null;
  /** Commits Tether pushed to the branch, in all. */
  commits: number;
}

function toConversation(r: Record<string, unknown>): Conversation {
  return {
    repoId: r.repo_id as number,
    repo: r.repo as string,
    issueNumber: r.issue_number as number,
    agent: r.agent as string,
    branch: r.branch as string,
    baseBranch: r.base_branch as string,
    headSha: (r.head_sha as string | null) ?? null,
    pullNumber: (r.pull_number as number | null) ?? null,
    pullUrl: (r.pull_url as string | null) ?? null,
    commits: r.commits as number,
  };
}

export async function getConversation(db: Queryable, key: TaskKey): Promise<Conversation | null> {
  const { rows } = await db.query(
    `SELECT * FROM conversation_branches WHERE repo_id = $1 AND issue_number = $2 AND agent = $3`,
    [key.repoId, key.issueNumber, key.agent],
  );
  return rows[0] ? toConversation(rows[0] as Record<string, unknown>) : null;
}

/** The key whose pull request `pullNumber` is, for `agent`; null when it is no key's. */
export async function conversationOfPull(
  db: Queryable,
  repoId: number,
  pullNumber: number,
  agent: string,
): Promise<Conversation | null> {
  const { rows } = await db.query(
    `SELECT * FROM conversation_branches WHERE repo_id = $1 AND pull_number = $2 AND agent = $3`,
    [repoId, pullNumber, agent],
  );
  return rows[0] ? toConversation(rows[0] as Record<string, unknown>) : null;
}

/** Every key with a pull request numbered `pullNumber` (one at most; a list for the intake loop). */
export async function conversationsOfPull(
  db: Queryable,
  repoId: number,
  pullNumber: number,
): Promise<Conversation[]> {
  const { rows } = await db.query(
    `SELECT * FROM conversation_branches WHERE repo_id = $1 AND pull_number = $2`,
    [repoId, pullNumber],
  );
  return rows.map((r) => toConversation(r as Record<string, unknown>));
}

/** After a push: the branch's new head, and the commits counted. Creates the row on the first. */
export async function recordPush(
  db: Queryable,
  c: TaskKey & { branch: string; baseBranch: string; headSha: string; commits: number },
): Promise<void> {
  await db.query(
    `INSERT INTO conversation_branches (repo, issue_number, agent, branch, base_branch, head_sha, commits, repo_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (repo_id, issue_number, agent) DO UPDATE
        SET head_sha = EXCLUDED.head_sha, branch = EXCLUDED.branch, repo = EXCLUDED.repo,
            commits = conversation_branches.commits + EXCLUDED.commits, updated_at = now()`,
    [c.repo, c.issueNumber, c.agent, c.branch, c.baseBranch, c.headSha, c.commits, c.repoId],
  );
}

/** The pull request opened (or found) for the key's branch. */
export async function recordPull(
  db: Queryable,
  key: TaskKey,
  pull: { number: number; url: string },
): Promise<void> {
  await db.query(
    `UPDATE conversation_branches SET pull_number = $4, pull_url = $5, updated_at = now()
      WHERE repo_id = $1 AND issue_number = $2 AND agent = $3`,
    [key.repoId, key.issueNumber, key.agent, pull.number, pull.url],
  );
}
