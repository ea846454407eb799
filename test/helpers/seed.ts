import type { Pool } from "../../src/db/pool.js";

export type Row = Record<string, unknown>;

let nextComment = 1000;

/** Insert a task row with sensible defaults; any column can be overridden. Returns the row. */
export async function seedTask(pool: Pool, overrides: Row = {}): Promise<Row> {
  const commentId = nextComment++;
  const row: Row = {
    repo: "octo/widgets",
    repo_id: 1,
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
