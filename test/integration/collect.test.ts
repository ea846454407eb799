/**
 * Collection (src/sessions/collect.ts) on real directories and a real Postgres: idle workspaces
 * and cached transcripts go, busy and recent ones and Tether's own dirs stay, and saved
 * transcripts of retired sessions are pruned.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { collectIdle, touchWorkspace } from "../../src/sessions/collect.js";
import { upsertSession } from "../../src/sql/sessions.js";
import { transcriptHead } from "../../src/sql/transcripts.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();
const DAY = 24 * 3600_000;
const NOW = new Date("2026-11-24T12:00:00Z");

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
        "INSERT INTO session_transcripts (session_id, sha256, stored_bytes) VALUES ($1, '\\x00', 100)",
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
    expect(await transcriptHead(db.pool, "c-retired")).toBeNull();
    expect(await transcriptHead(db.pool, "c-active")).not.toBeNull();

    // A turn touching the workspace keeps it from the next collection.
    await touchWorkspace(recent, NOW);
    const again = await collectIdle({
      workspaceRoot: ws,
      cacheRoot: cache,
      idleMs: 7 * DAY,
      busy: () => [],
      now: () => new Date(NOW.getTime() + 6 * DAY),
      log: createLogger("silent"),
    });
    expect(again.workspaces).toBe(1); // only the no-longer-busy one
    expect(fs.existsSync(recent)).toBe(true);
    fs.rmSync(root, { recursive: true, force: true });
  });
});
