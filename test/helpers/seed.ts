import type { Pool } from "../../src/db/pool.js";

export type Row = Record<string, unknown>;

let nextComment = 1000;

/** Ids tests know their repositories by: the seeds' default, and GitHub's example payloads'. */
const KNOWN_IDS: Record<string, number> = {
  "octo/widgets": 1,
  "codertocat/hello-world": 186853002, // @octokit/webhooks-examples' repository
};

/**
 * A repository id for a test repository's name, as GitHub would give one: the known ones above,
 * a stable number from the name for any other. Keys and rows of one name agree on it.
 */
export function repoIdOf(repo: string): number {
  const known = KNOWN_IDS[repo.toLowerCase()];
  if (known !== undefined) return known;
  let h = 0;
  for (const c of repo.toLowerCase()) h = (h * 31 + c.charCodeAt(0)) % 1_000_000_007;
  return 1000 + h;
}

/** Insert a task row with sensible defaults; any column can be overridden. Returns the row. */
export async function seedTask(pool: Pool, overrides: Row = {}): Promise<Row> {
  const commentId = nextComment++;
  const row: Row = {
    repo: "octo/widgets",
    repo_id: typeof overrides.repo === "string" ? repoIdOf(overrides.repo) : 1,
    installation_id: 1,
    issue_number: 1,
    agent: "tether",
    status: "queued",
    trigger_comment_id: commentId,
    trigger_author: "octocat",
    trigger_url: `https://github.com/octo/widgets/issues/1#issuecomment-${commentId}`,
    trigger_body: "@tether hello",
    ...overrides,
  };
  if (row.status === "running" && row.locked_by === undefined) row.locked_by = "test-runner";
  const cols = Object.keys(row);
  const { rows } = await pool.query(
    `INSERT INTO tasks (${cols.join(", ")}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(", ")}) RETURNING *`,
    cols.map((c) => row[c]),
  );
  return rows[0] as Row;
}

export async function readTask(pool: Pool, id: unknown): Promise<Row> {
  const { rows } = await pool.query("SELECT * FROM tasks WHERE id = $1", [id]);
  if (!rows[0]) throw new Error(`no task ${String(id)}`);
  return rows[0] as Row;
}

export async function readTasks(
  pool: Pool,
  where = "true",
  params: unknown[] = [],
): Promise<Row[]> {
  const { rows } = await pool.query(`SELECT * FROM tasks WHERE ${where} ORDER BY id`, params);
  return rows as Row[];
}
