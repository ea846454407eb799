/**
 * Issue #28 item 6: a stored transcript belongs to its conversation (repository, issue, agent:
 * the task key) as well as its session id. Session ids were posted whole in threads (/status),
 * so a session id alone must open nothing: asked for under another key, the store has nothing,
 * and another key's save under the same id cannot touch the first one's transcript.
 */
import { claudeLayout } from "../../src/claude/session-files.js";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { runner as migrateRunner } from "node-pg-migrate";
import { describe, expect, it } from "vitest";
import { MIGRATIONS_DIR, migrate } from "../../src/db/migrate.js";
import { createLogger } from "../../src/log.js";
import { postgresTranscripts } from "../../src/sessions/postgres-transcripts.js";
import { sessionFile } from "../../src/claude/session-files.js";
import { upsertSession } from "../../src/sql/sessions.js";
import { transcriptHead } from "../../src/sql/transcripts.js";
import { createEmptyDatabase, createTestDatabase } from "../helpers/db.js";
import { seedTask } from "../helpers/seed.js";
import { repoIdOf } from "../helpers/seed.js";

const log = createLogger("silent");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-transcript-keys-"));
const CWD = "/workspace";

describe("stored transcripts are keyed by the conversation", () => {
  it("a session id asked for under another conversation finds nothing, and cannot be overwritten from there", async () => {
    const db = await createTestDatabase();
    const store = (name: string) =>
      postgresTranscripts({
        pool: db.pool,
        cacheRoot: path.join(tmp, name, "sessions"),
        log,
        maxBytes: 64 * 1024 * 1024,
        cliVersion: "2.1.197 (Claude Code)",
        layout: claudeLayout,
      });
    const home = (name: string) => fs.mkdtempSync(path.join(tmp, `${name}-home-`));
    const owner = {
      repoId: repoIdOf("octo/private-repo"),
      repo: "octo/private-repo",
      issueNumber: 5,
      agent: "tether",
    };
    const other = {
      repoId: repoIdOf("mallory/public-repo"),
      repo: "mallory/public-repo",
      issueNumber: 1,
      agent: "tether",
    };
    const sessionId = "0b6a1c7e-5f2d-4c3b-9a8e-1d2c3b4a5f60";
    await upsertSession(db.pool, {
      cli: "claude",
      ...owner,
      sessionId,
      runtimeId: "rt-a",
      workDir: "/w",
      model: null,
      historyEpoch: 0,
    });

    const secret = `${JSON.stringify({ type: "user", message: "the private repo's code" })}\n`;
    const h1 = home("owner");
    fs.mkdirSync(path.dirname(sessionFile(h1, CWD, sessionId)), { recursive: true });
    fs.writeFileSync(sessionFile(h1, CWD, sessionId), secret);
    expect(await store("a").save(owner, sessionId, h1)).toMatchObject({ kind: "replace" });

    // Another runner (no cache) asked for the id under the other conversation.
    const b = store("b");
    expect(await b.state(other, sessionId)).toEqual({ where: "none" });
    const hb = home("other");
    expect((await b.restore(other, sessionId, hb, CWD)).from).toBeNull();
    expect(fs.existsSync(sessionFile(hb, CWD, sessionId))).toBe(false);
    expect(await transcriptHead(db.pool, other, sessionId)).toBeNull();

    // A save from the other conversation under the same id is its own, not the owner's.
    const hm = home("mallory");
    fs.mkdirSync(path.dirname(sessionFile(hm, CWD, sessionId)), { recursive: true });
    fs.writeFileSync(sessionFile(hm, CWD, sessionId), "overwritten\n");
    await b.save(other, sessionId, hm);
    const ho = home("owner-again");
    expect((await store("c").restore(owner, sessionId, ho, CWD)).from).toBe("store");
    expect(fs.readFileSync(sessionFile(ho, CWD, sessionId), "utf8")).toBe(secret);
    expect(await b.state(owner, sessionId)).toMatchObject({ where: "store" });
  });

  it("the migration gives each stored transcript the conversation of the first task that pinned its session", async () => {
    const db = await createEmptyDatabase();
    const before = fs
      .readdirSync(MIGRATIONS_DIR)
      .filter((f) => f.endsWith(".sql") && f < "1763800003900")
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

    const key = {
      repoId: repoIdOf("octo/widgets"),
      repo: "octo/widgets",
      issueNumber: 9,
      agent: "reviewer",
    };
    const sessionId = "sess-before-the-key";
    // The sessions table as it was then (no repo_id yet): written in SQL, not by today's code.
    const oldSession = (id: string, repo: string, issue: number, agent: string) =>
      db.pool.query(
        `INSERT INTO sessions (session_id, repo, issue_number, agent, runtime_id, work_dir)
         VALUES ($1, $2, $3, $4, 'rt-a', '/w')`,
        [id, repo, issue, agent],
      );
    await oldSession(sessionId, key.repo, key.issueNumber, key.agent);
    await seedTask(db.pool, {
      repo: key.repo,
      issue_number: key.issueNumber,
      agent: key.agent,
      status: "succeeded",
      session_id: sessionId,
      finished_at: new Date(),
    });
    // A session two keys pinned (the second by a forged init line, say): the first one's.
    const shared = "sess-pinned-twice";
    await oldSession(shared, "octo/first", 10, key.agent);
    for (const repo of ["octo/first", "evil/second"])
      await seedTask(db.pool, {
        repo,
        issue_number: 10,
        agent: key.agent,
        status: "succeeded",
        session_id: shared,
        finished_at: new Date(),
      });
    await db.pool.query(
      `INSERT INTO session_transcripts (session_id, raw_bytes, sha256) VALUES ($1, 0, '\\x00')`,
      [shared],
    );
    const raw = Buffer.from("{}\n");
    await db.pool.query(
      `INSERT INTO session_transcripts (session_id, raw_bytes, sha256, stored_bytes, chunks, digest_scheme)
       VALUES ($1, $2, '\\x00', 10, 1, 2)`,
      [sessionId, raw.length],
    );
    await db.pool.query(
      `INSERT INTO session_transcript_chunks (session_id, seq, raw_offset, raw_bytes, data)
       VALUES ($1, 0, 0, $2, $3)`,
      [sessionId, raw.length, zlib.gzipSync(raw)],
    );

    const applied = await migrate(db.url);
    expect(applied).toContain("1763800003900_transcripts-by-conversation");
    expect(await transcriptHead(db.pool, key, sessionId)).toMatchObject({ rawBytes: raw.length });
    expect(await transcriptHead(db.pool, { ...key, agent: "tether" }, sessionId)).toBeNull();
    const twice = {
      repoId: repoIdOf("octo/first"),
      repo: "octo/first",
      issueNumber: 10,
      agent: key.agent,
    };
    expect(await transcriptHead(db.pool, twice, shared)).not.toBeNull();
    expect(
      await transcriptHead(
        db.pool,
        { ...twice, repoId: repoIdOf("evil/second"), repo: "evil/second" },
        shared,
      ),
    ).toBeNull();
    // Keyed by the repository's id since 1763800005000_repo-id-keys.
    const { rows } = await db.pool.query(
      "SELECT repo_id, issue_number, agent FROM session_transcript_chunks WHERE session_id = $1",
      [sessionId],
    );
    expect(rows).toEqual([
      { repo_id: key.repoId, issue_number: key.issueNumber, agent: key.agent },
    ]);

    // And back down: one row per session id again, its chunks kept.
    await migrateRunner({
      databaseUrl: db.url,
      dir: MIGRATIONS_DIR,
      direction: "down",
      migrationsTable: "pgmigrations",
      checkOrder: false,
      count: applied.length,
      log: () => {},
    });
    const down = await db.pool.query(
      `SELECT tr.session_id, count(c.seq)::int AS chunks FROM session_transcripts tr
         LEFT JOIN session_transcript_chunks c USING (session_id) GROUP BY tr.session_id`,
    );
    expect(down.rows).toEqual(
      expect.arrayContaining([
        { session_id: sessionId, chunks: 1 },
        { session_id: shared, chunks: 0 },
      ]),
    );
  });
});
