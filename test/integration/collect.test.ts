/**
 * Collection (src/workspace/collect-idle.ts) on real directories and a real Postgres: idle workspaces
 * and cached transcripts go, busy and recent ones and Tether's own dirs stay, and saved
 * transcripts of retired sessions are pruned.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { AGENT_CLIS } from "../../src/cli-registry.js";
import { defaultConfig } from "../../src/config/repo-config.js";
import { snapshotSettings } from "../../src/config/repo-settings.js";
import { decideResume } from "../../src/core/resume-decision.js";
import { collectIdle, touchWorkspace } from "../../src/workspace/collect-idle.js";
import { upsertSession } from "../../src/sql/sessions.js";
import { transcriptHead } from "../../src/sql/transcripts.js";
import { createTestDatabase } from "../helpers/db.js";
import { seedTask } from "../helpers/seed.js";
import { repoIdOf } from "../helpers/seed.js";
import type { TaskKey } from "../../src/core/task.js";

const db = await createTestDatabase();
const DAY = 24 * 3600_000;
const NOW = new Date("2026-11-24T12:00:00Z");
/** A repository's config with that session TTL, the rest the defaults. */
const withTtl = (ttlHours: number) => {
  const config = defaultConfig(AGENT_CLIS);
  return { ...config, resume: { ...config.resume, ttlHours } };
};

function dirAged(p: string, ageMs: number): string {
  fs.mkdirSync(p, { recursive: true });
  fs.writeFileSync(path.join(p, "README.md"), "x\n");
  const t = new Date(NOW.getTime() - ageMs);
  fs.utimesSync(p, t, t);
  return p;
}
function fileAged(p: string, ageMs: number): string {
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, "{}\n");
  fs.writeFileSync(`${p}.sha256`, "00");
  const t = new Date(NOW.getTime() - ageMs);
  fs.utimesSync(p, t, t);
  return p;
}

describe("collectIdle", () => {
  it("removes what no turn used for the idle time, and nothing else", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-collect-"));
    const ws = path.join(root, "ws");
    const cache = path.join(root, "sessions");
    const idle = dirAged(path.join(ws, "octo", "widgets", "issue-1", "tether"), 8 * DAY);
    const busy = dirAged(path.join(ws, "octo", "widgets", "issue-2", "tether"), 8 * DAY);
    const recent = dirAged(path.join(ws, "octo", "widgets", "issue-3", "tether"), 1 * DAY);
    const dotRepo = dirAged(path.join(ws, "octo", ".github", "issue-4", "tether"), 8 * DAY);
    const mirrors = dirAged(path.join(ws, ".mirrors", "octo", "widgets", "x"), 30 * DAY);
    const oldFile = fileAged(
      path.join(cache, "octo", "widgets", "issue-1", "tether", "s-old.jsonl"),
      8 * DAY,
    );
    const newFile = fileAged(
      path.join(cache, "octo", "widgets", "issue-3", "tether", "s-new.jsonl"),
      DAY,
    );

    // A retired session's saved transcript, and an active recent one's.
    for (const [id, state] of [
      ["c-retired", "retired"],
      ["c-active", "active"],
    ] as const) {
      await upsertSession(db.pool, {
        repoId: repoIdOf("octo/widgets"),
        cli: "claude",
        repo: "octo/widgets",
        issueNumber: 9,
        agent: id,
        sessionId: id,
        runtimeId: "rt",
        workDir: "/w",
        model: null,
        historyEpoch: 0,
      });
      await db.pool.query(
        `INSERT INTO session_transcripts (repo_id, issue_number, agent, session_id, sha256, stored_bytes)
         VALUES (1, 9, $1, $1, '\\x00', 100)`,
        [id],
      );
      await db.pool.query("UPDATE sessions SET state = $2 WHERE session_id = $1", [id, state]);
    }

    const out = await collectIdle({
      workspaceRoot: ws,
      cacheRoot: cache,
      idleMs: 7 * DAY,
      busy: () => [busy],
      now: () => NOW,
      log: createLogger("silent"),
      pool: db.pool,
      debugKeepMs: 0,
    });
    expect(out).toEqual({ workspaces: 2, sessionFiles: 1, transcripts: 1, transcriptBytes: 100 });
    expect(fs.existsSync(idle)).toBe(false);
    expect(fs.existsSync(dotRepo)).toBe(false); // a repository named ".github" is a workspace too
    expect(fs.existsSync(busy)).toBe(true);
    expect(fs.existsSync(recent)).toBe(true);
    expect(fs.existsSync(mirrors)).toBe(true);
    expect(fs.existsSync(oldFile)).toBe(false);
    expect(fs.existsSync(`${oldFile}.sha256`)).toBe(false);
    expect(fs.existsSync(newFile)).toBe(true);
    expect(
      await transcriptHead(
        db.pool,
        {
          repoId: repoIdOf("octo/widgets"),
          repo: "octo/widgets",
          issueNumber: 9,
          agent: "c-retired",
        },
        "c-retired",
      ),
    ).toBeNull();
    expect(
      await transcriptHead(
        db.pool,
        {
          repoId: repoIdOf("octo/widgets"),
          repo: "octo/widgets",
          issueNumber: 9,
          agent: "c-active",
        },
        "c-active",
      ),
    ).not.toBeNull();

    // A turn touching the workspace keeps it from the next collection.
    await touchWorkspace(recent, NOW);
    const again = await collectIdle({
      workspaceRoot: ws,
      cacheRoot: cache,
      idleMs: 7 * DAY,
      busy: () => [],
      now: () => new Date(NOW.getTime() + 6 * DAY),
      log: createLogger("silent"),
      debugKeepMs: 0,
    });
    expect(again.workspaces).toBe(1); // only the no-longer-busy one
    expect(fs.existsSync(recent)).toBe(true);
    fs.rmSync(root, { recursive: true, force: true });
  });

  describe("saved transcripts and the repository's time to live (#28)", () => {
    const HOUR = 3600_000;
    let issue = 100;
    const keys = new Map<string, TaskKey>();
    /** A session of a key of its own, a transcript saved, idle `idleH` hours; its key's latest
     * task carries the settings snapshot of `ttlHours` (none: no snapshot). */
    async function session(
      name: string,
      o: { idleH: number; ttlHours?: number; state?: "poisoned" | "retired"; brokeH?: number },
    ) {
      const sessionId = `ttl-${name}`;
      const key = {
        repoId: repoIdOf("octo/ttl"),
        repo: "octo/ttl",
        issueNumber: issue++,
        agent: "tether",
      };
      await upsertSession(db.pool, {
        cli: "claude",
        ...key,
        sessionId,
        runtimeId: "rt",
        workDir: "/w",
        model: null,
        historyEpoch: 0,
      });
      keys.set(sessionId, key);
      await db.pool.query(
        `INSERT INTO session_transcripts (repo_id, issue_number, agent, session_id, sha256, stored_bytes)
         VALUES ($2, $3, $4, $1, '\\x00', 10)`,
        [sessionId, key.repoId, key.issueNumber, key.agent],
      );
      await db.pool.query(
        `UPDATE sessions SET last_used_at = now() - make_interval(hours => $2),
                state = $3, state_changed_at = now() - make_interval(hours => $4)
          WHERE session_id = $1`,
        [sessionId, o.idleH, o.state ?? "active", o.brokeH ?? o.idleH],
      );
      const settings = o.ttlHours === undefined ? null : snapshotSettings(withTtl(o.ttlHours));
      // An older task of the key with another TTL: the latest one's is the one in force.
      if (settings)
        await seedTask(db.pool, {
          repo: key.repo,
          issue_number: key.issueNumber,
          status: "succeeded",
          session_id: sessionId,
          repo_settings: snapshotSettings(withTtl(1)),
        });
      await seedTask(db.pool, {
        repo: key.repo,
        issue_number: key.issueNumber,
        status: "succeeded",
        session_id: sessionId,
        repo_settings: settings,
      });
      return sessionId;
    }
    const collect = () =>
      collectIdle({
        workspaceRoot: path.join(os.tmpdir(), "tether-collect-none"),
        cacheRoot: path.join(os.tmpdir(), "tether-collect-none"),
        idleMs: 168 * HOUR,
        busy: () => [],
        now: () => new Date(),
        log: createLogger("silent"),
        pool: db.pool,
        debugKeepMs: 72 * HOUR,
      });
    const kept = async (id: string) => (await transcriptHead(db.pool, keys.get(id)!, id)) !== null;

    it("keeps what the repository's resume TTL still allows, prunes what is past it and the idle time", async () => {
      const longTtlIdle = await session("long-ttl", { idleH: 2000, ttlHours: 2160 });
      const longTtlPast = await session("long-ttl-past", { idleH: 2161, ttlHours: 2160 });
      const shortTtl = await session("short-ttl", { idleH: 200, ttlHours: 72 });
      const withinIdle = await session("within-idle", { idleH: 100, ttlHours: 72 });
      // No task of the key says its TTL: the longest any repository may set applies.
      const unknown = await session("unknown", { idleH: 2000 });
      const unknownPast = await session("unknown-past", { idleH: 2161 });
      await collect();
      expect(await kept(longTtlIdle)).toBe(true);
      expect(await kept(longTtlPast)).toBe(false);
      expect(await kept(shortTtl)).toBe(false);
      expect(await kept(withinIdle)).toBe(true);
      expect(await kept(unknown)).toBe(true);
      expect(await kept(unknownPast)).toBe(false);

      // What the next turn of a pruned key is told: expired, not runtime_mismatch.
      const { rows } = await db.pool.query(
        "SELECT runtime_id, work_dir, state, last_used_at FROM sessions WHERE session_id = $1",
        [longTtlPast],
      );
      const s = rows[0] as { runtime_id: string; work_dir: string; last_used_at: Date };
      const d = decideResume({
        prior: {
          sessionId: longTtlPast,
          cli: "claude",
          runtimeId: s.runtime_id,
          workDir: s.work_dir,
          state: "active",
          historyEpoch: 0,
          lastUsedAt: s.last_used_at,
          contextTokens: null,
          contextWindow: null,
        },
        forceFresh: false,
        policy: { enabled: true, ttlMs: 2160 * HOUR, contextBudget: 0.8 },
        runtimeId: "rt-other",
        cli: "claude",
        workDir: "/w",
        workDirExists: true,
        historyEpoch: 0,
        cliCanResume: true,
        cliVersion: "2.1.197 (Claude Code)",
        transcript: { where: "none" },
        now: new Date(),
      });
      expect(d).toMatchObject({ kind: "fresh", reason: "expired" });
    });

    it("keeps a poisoned or retired session's transcript for the debugging window, and an over-bound head", async () => {
      const fresh = await session("poisoned-recent", {
        idleH: 500,
        ttlHours: 72,
        state: "poisoned",
        brokeH: 10,
      });
      const old = await session("retired-old", {
        idleH: 80,
        ttlHours: 2160,
        state: "retired",
        brokeH: 73,
      });
      const over = await session("over-bound", { idleH: 1, ttlHours: 72 });
      await db.pool.query(
        "UPDATE session_transcripts SET over_bound = true, stored_bytes = 0 WHERE session_id = $1",
        [over],
      );
      await collect();
      expect(await kept(fresh)).toBe(true);
      expect(await kept(old)).toBe(false);
      expect(await kept(over)).toBe(true);
    });
  });
});
