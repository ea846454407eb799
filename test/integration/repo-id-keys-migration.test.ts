/**
 * Migration 1763800005000_repo-id-keys (#38 item 5) on rows seeded as the schema stood before
 * it, in a real Postgres: every conversation table is keyed by the repository id afterwards,
 * what could be mapped is, what could not is said, and a stored session still resumes.
 */
import fs from "node:fs";
import { runner as migrateRunner } from "node-pg-migrate";
import { describe, expect, it } from "vitest";
import { MIGRATIONS_DIR, migrate } from "../../src/db/migrate.js";
import { priorSession } from "../../src/sql/sessions.js";
import { transcriptHead } from "../../src/sql/transcripts.js";
import { readEpoch } from "../../src/sql/history.js";
import { getConversation } from "../../src/sql/conversations.js";
import { createEmptyDatabase } from "../helpers/db.js";

const MINE = "1763800005000";

describe("migration 1763800005000_repo-id-keys", () => {
  it("keys every conversation table by the repository id, and a stored session still resumes", async () => {
    const db = await createEmptyDatabase();
    const before = fs
      .readdirSync(MIGRATIONS_DIR)
      .filter((f) => f.endsWith(".sql") && f < MINE)
      .sort();
    await migrateRunner({
      databaseUrl: db.url,
      dir: MIGRATIONS_DIR,
      direction: "up",
      migrationsTable: "pgmigrations",
      checkOrder: true,
      count: before.length,
      log: () => {},
    });
    const q = (text: string, values: unknown[] = []) => db.pool.query(text, values);
    const task = (repo: string, repoId: number | null, o: Record<string, unknown> = {}) =>
      q(
        `INSERT INTO tasks (repo, repo_id, installation_id, issue_number, agent, status,
                            trigger_author, trigger_url, trigger_body, session_id, finished_at)
         VALUES ($1, $2, 1, $3, 'tether', $4, 'alice', 'u', 'b', $5, $6) RETURNING id`,
        [
          repo,
          repoId,
          o.issue ?? 1,
          o.status ?? "succeeded",
          o.session ?? null,
          o.status === "queued" ? null : new Date(),
        ],
      ).then((r) => Number(r.rows[0].id));

    // octo/a is repository 77: one task recorded the id, an older one did not.
    const oldTask = await task("octo/a", null, { session: "sess-a" });
    await task("octo/a", 77, { session: "sess-a" });
    // gone/x never recorded an id: a finished turn and one still queued.
    await task("gone/x", null, { session: "sess-x" });
    const queuedX = await task("gone/x", null, { status: "queued", issue: 2 });
    await q(
      `INSERT INTO sessions (session_id, repo, issue_number, agent, runtime_id, work_dir)
       VALUES ('sess-a', 'octo/a', 1, 'tether', 'rt', '/ws/octo/a/issue-1/tether'),
              ('sess-x', 'gone/x', 1, 'tether', 'rt', '/ws/gone/x/issue-1/tether'),
              ('sess-orphan', 'never/ran', 1, 'tether', 'rt', '/w')`,
    );
    await q(
      `INSERT INTO session_transcripts (repo, issue_number, agent, session_id, raw_bytes, sha256,
                                        stored_bytes, chunks, digest_scheme, cli_version)
       VALUES ('octo/a', 1, 'tether', 'sess-a', 3, '\\x00', 10, 1, 2, '2.1.197 (Claude Code)')`,
    );
    await q(
      `INSERT INTO session_transcript_chunks (repo, issue_number, agent, session_id, seq,
                                              raw_offset, raw_bytes, data)
       VALUES ('octo/a', 1, 'tether', 'sess-a', 0, 0, 3, '\\x00')`,
    );
    await q(
      `INSERT INTO history_epochs (repo, issue_number, agent, epoch)
       VALUES ('octo/a', 1, 'tether', 2), ('never/ran', 1, 'tether', 1)`,
    );
    await q(
      `INSERT INTO history_edits (repo, issue_number, agent, epoch, source, deleted)
       VALUES ('octo/a', 1, 'tether', 2, 'comment:9', true)`,
    );
    await q(
      `INSERT INTO conversation_branches (repo, issue_number, agent, branch, base_branch, pull_number)
       VALUES ('octo/a', 1, 'tether', 'tether/1-tether', 'main', 5)`,
    );
    await q(
      `WITH l AS (INSERT INTO ci_loops (repo, issue_number, agent, pull_number)
                  VALUES ('octo/a', 1, 'tether', 5) RETURNING id)
       INSERT INTO ci_commits (repo, issue_number, agent, head_sha, loop_id, result)
       SELECT 'octo/a', 1, 'tether', 'abc', id, 'queued' FROM l`,
    );

    expect(await migrate(db.url)).toContain(`${MINE}_repo-id-keys`);

    // Tasks: the id of the newest task under the name; a name with none a stand-in below zero.
    const tasks = await q(
      "SELECT id, repo, repo_id, status, failure_reason FROM tasks ORDER BY id",
    );
    const byId = new Map(tasks.rows.map((r) => [Number(r.id), r]));
    expect(byId.get(oldTask)?.repo_id).toBe(77);
    const gone = tasks.rows.filter((r) => r.repo === "gone/x");
    expect(gone.map((r) => r.repo_id)).toEqual([-1, -1]);
    expect(byId.get(queuedX)).toMatchObject({ status: "cancelled" });
    expect(String(byId.get(queuedX)?.failure_reason)).toContain("id is not known");

    // The conversation of octo/a, under its id, whatever the name now: a rename resumes it.
    const renamed = { repoId: 77, repo: "octo/renamed", issueNumber: 1, agent: "tether" };
    expect(await priorSession(db.pool, renamed)).toMatchObject({
      sessionId: "sess-a",
      state: "active",
    });
    expect(await transcriptHead(db.pool, renamed, "sess-a")).toMatchObject({
      rawBytes: 3,
      cliVersion: "2.1.197 (Claude Code)",
    });
    expect(await readEpoch(db.pool, renamed)).toBe(2);
    expect(await getConversation(db.pool, renamed)).toMatchObject({
      repoId: 77,
      pullNumber: 5,
      branch: "tether/1-tether",
    });
    const ci = await q("SELECT repo_id FROM ci_loops UNION ALL SELECT repo_id FROM ci_commits");
    expect(ci.rows).toEqual([{ repo_id: 77 }, { repo_id: 77 }]);
    // Another repository under the old name has none of it.
    const newcomer = { repoId: 78, repo: "octo/a", issueNumber: 1, agent: "tether" };
    expect(await priorSession(db.pool, newcomer)).toBeNull();
    expect(await transcriptHead(db.pool, newcomer, "sess-a")).toBeNull();
    expect(await readEpoch(db.pool, newcomer)).toBe(0);
    expect(await getConversation(db.pool, newcomer)).toBeNull();

    // Rows no task ever ran for are gone; the unmapped name's session is kept under its stand-in.
    const sessions = await q("SELECT session_id, repo_id FROM sessions ORDER BY session_id");
    expect(sessions.rows).toEqual([
      { session_id: "sess-a", repo_id: 77 },
      { session_id: "sess-x", repo_id: -1 },
    ]);
    const epochs = await q("SELECT repo_id FROM history_epochs");
    expect(epochs.rows).toEqual([{ repo_id: 77 }]);

    // The way back: names again, the rows kept.
    await migrateRunner({
      databaseUrl: db.url,
      dir: MIGRATIONS_DIR,
      direction: "down",
      migrationsTable: "pgmigrations",
      checkOrder: false,
      // Back through this one: every migration from it on (later ones come after it).
      count: fs.readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith(".sql") && f >= MINE).length,
      log: () => {},
    });
    const back = await q(
      `SELECT (SELECT repo FROM session_transcript_chunks) AS chunk,
              (SELECT repo FROM history_epochs) AS epoch,
              (SELECT repo FROM ci_commits) AS ci,
              (SELECT count(*)::int FROM conversation_branches WHERE repo = 'octo/a') AS branches`,
    );
    expect(back.rows[0]).toEqual({ chunk: "octo/a", epoch: "octo/a", ci: "octo/a", branches: 1 });
  });
});
