/**
 * The Postgres session store (src/sessions/postgres-transcripts.ts) against a real Postgres and
 * real files: what one runner saves, another restores byte for byte into the place the CLI
 * looks; saves send only what was appended; a rewrite is stored whole; the size bound holds.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { postgresTranscripts } from "../../src/sessions/postgres-transcripts.js";
import { sessionFile } from "../../src/sessions/transcripts.js";
import { upsertSession } from "../../src/sql/sessions.js";
import { pruneTranscripts, transcriptHead } from "../../src/sql/transcripts.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();
const log = createLogger("silent");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-session-store-"));
const CWD = "/workspace";
let n = 0;

/** One runner's view: its own cache directory and HOMEs. */
function runner(name: string, over: { maxBytes?: number; cliVersion?: string } = {}) {
  const root = path.join(tmp, name);
  fs.mkdirSync(root, { recursive: true });
  const store = postgresTranscripts({
    pool: db.pool,
    cacheRoot: path.join(root, "sessions"),
    log,
    maxBytes: over.maxBytes ?? 64 * 1024 * 1024,
    cliVersion: over.cliVersion ?? "2.1.197 (Claude Code)",
    chunkBytes: 64 * 1024,
  });
  let homes = 0;
  const home = () => fs.mkdtempSync(path.join(root, `home-${homes++}-`));
  return { store, root, home };
}

async function newSession() {
  n++;
  const key = { repo: "octo/store", issueNumber: n, agent: "tether" };
  const sessionId = `sess-${n}-${process.pid}`;
  await upsertSession(db.pool, {
    ...key,
    sessionId,
    runtimeId: "rt-a",
    workDir: "/w",
    model: null,
    historyEpoch: 0,
  });
  return { key, sessionId };
}

/** Lines shaped like the CLI's (compressible, as real transcripts are). */
function lines(from: number, count: number): string {
  let s = "";
  for (let i = from; i < from + count; i++)
    s += `${JSON.stringify({ type: "user", uuid: `u-${i}`, cwd: CWD, message: { role: "user", content: `turn ${i}: explain split() and the trailing newline` } })}\n`;
  return s;
}

function writeSession(home: string, sessionId: string, text: string) {
  const f = sessionFile(home, CWD, sessionId);
  fs.mkdirSync(path.dirname(f), { recursive: true });
  fs.writeFileSync(f, text);
}

describe("the Postgres session store", () => {
  it("restores on another runner, byte for byte, where the CLI looks; saves send only what was appended", async () => {
    const { key, sessionId } = await newSession();
    const a = runner(`a-${n}`);
    const b = runner(`b-${n}`);

    const h1 = a.home();
    const first = lines(0, 2000);
    writeSession(h1, sessionId, first);
    expect(await a.store.save(key, sessionId, h1)).toEqual({
      kind: "replace",
      bytes: Buffer.byteLength(first),
      addedBytes: Buffer.byteLength(first),
    });
    const head1 = (await transcriptHead(db.pool, sessionId))!;
    expect(head1.rawBytes).toBe(Buffer.byteLength(first));
    // Compressed: repetitive JSONL takes a fraction of its size.
    expect(head1.storedBytes).toBeLessThan(head1.rawBytes / 4);

    // The next turn (on runner a) appends; only the new bytes go out, as one more chunk.
    const added = lines(2000, 10);
    fs.appendFileSync(sessionFile(h1, CWD, sessionId), added);
    const saved = await a.store.save(key, sessionId, h1);
    expect(saved).toMatchObject({ kind: "append", addedBytes: Buffer.byteLength(added) });
    const head2 = (await transcriptHead(db.pool, sessionId))!;
    expect(head2.chunks).toBe(head1.chunks + 1);
    expect(head2.rewrites).toBe(0);
    // A save with nothing new writes nothing.
    expect(await a.store.save(key, sessionId, h1)).toMatchObject({ kind: "unchanged" });

    // Runner b has no cache: it restores from Postgres into a fresh HOME.
    expect(await b.store.state(key, sessionId)).toEqual({
      where: "store",
      cliVersion: "2.1.197 (Claude Code)",
    });
    const hb = b.home();
    const r = await b.store.restore(key, sessionId, hb, CWD);
    expect(r.from).toBe("store");
    expect(
      fs.readFileSync(
        path.join(hb, ".claude", "projects", "-workspace", `${sessionId}.jsonl`),
        "utf8",
      ),
    ).toBe(first + added);
    // And now holds a cache of that version: the next restore copies it.
    expect((await b.store.restore(key, sessionId, b.home(), CWD)).from).toBe("cache");
  });

  it("never restores a stale cache: a runner whose copy is older reads the newer version from Postgres", async () => {
    const { key, sessionId } = await newSession();
    const a = runner(`a-${n}`);
    const b = runner(`b-${n}`);
    const ha = a.home();
    writeSession(ha, sessionId, lines(0, 50));
    await a.store.save(key, sessionId, ha);
    // b resumes it, and the turn appends.
    const hb = b.home();
    expect((await b.store.restore(key, sessionId, hb, CWD)).from).toBe("store");
    fs.appendFileSync(sessionFile(hb, CWD, sessionId), lines(50, 5));
    await b.store.save(key, sessionId, hb);
    // Back on a, whose cache holds the first version.
    const ha2 = a.home();
    expect((await a.store.restore(key, sessionId, ha2, CWD)).from).toBe("store");
    expect(fs.readFileSync(sessionFile(ha2, CWD, sessionId), "utf8")).toBe(lines(0, 55));
  });

  it("stores a rewritten file whole", async () => {
    const { key, sessionId } = await newSession();
    const a = runner(`a-${n}`);
    const h = a.home();
    writeSession(h, sessionId, lines(0, 100));
    await a.store.save(key, sessionId, h);
    const rewritten = `{"type":"summary","summary":"compacted"}\n${lines(90, 20)}`;
    writeSession(h, sessionId, rewritten);
    expect(await a.store.save(key, sessionId, h)).toMatchObject({ kind: "replace" });
    const head = (await transcriptHead(db.pool, sessionId))!;
    expect(head.rewrites).toBe(1);
    const b = runner(`b-${n}`);
    const hb = b.home();
    await b.store.restore(key, sessionId, hb, CWD);
    expect(fs.readFileSync(sessionFile(hb, CWD, sessionId), "utf8")).toBe(rewritten);
  });

  it("keeps nothing over the size bound, and says so", async () => {
    const { key, sessionId } = await newSession();
    const a = runner(`a-${n}`, { maxBytes: 4096 });
    const h = a.home();
    writeSession(h, sessionId, lines(0, 5));
    expect(await a.store.save(key, sessionId, h)).toMatchObject({ kind: "replace" });
    writeSession(h, sessionId, lines(0, 100));
    expect(await a.store.save(key, sessionId, h)).toMatchObject({ kind: "over_bound" });
    expect(await a.store.state(key, sessionId)).toEqual({ where: "over_bound" });
    const rows = await db.pool.query(
      "SELECT count(*)::int AS n FROM session_transcript_chunks WHERE session_id = $1",
      [sessionId],
    );
    expect(rows.rows[0].n).toBe(0);
    // The cache went too: no runner restores it.
    expect((await a.store.restore(key, sessionId, a.home(), CWD)).from).toBeNull();
  });

  it("refuses to restore a stored transcript that fails its check", async () => {
    const { key, sessionId } = await newSession();
    const a = runner(`a-${n}`);
    const h = a.home();
    writeSession(h, sessionId, lines(0, 10));
    await a.store.save(key, sessionId, h);
    await db.pool.query(
      "UPDATE session_transcript_chunks SET data = $2 WHERE session_id = $1 AND seq = 0",
      [sessionId, zlib.gzipSync("tampered\n")],
    );
    await expect(runner(`b-${n}`).store.restore(key, sessionId, h, CWD)).rejects.toThrow(
      /fails its check/,
    );
  });

  it("a save that lost the race to another reads the head again instead of appending on a stale base", async () => {
    const { key, sessionId } = await newSession();
    const a = runner(`a-${n}`);
    const b = runner(`b-${n}`);
    const ha = a.home();
    writeSession(ha, sessionId, lines(0, 10));
    await a.store.save(key, sessionId, ha);
    // b saved a different continuation meanwhile (a runner whose lease was lost).
    const hb = b.home();
    writeSession(hb, sessionId, lines(0, 10) + lines(500, 3));
    await b.store.save(key, sessionId, hb);
    fs.appendFileSync(sessionFile(ha, CWD, sessionId), lines(10, 3));
    // a's prefix no longer matches what is stored: the whole file replaces it.
    expect(await a.store.save(key, sessionId, ha)).toMatchObject({ kind: "replace" });
    const c = runner(`c-${n}`);
    const hc = c.home();
    await c.store.restore(key, sessionId, hc, CWD);
    expect(fs.readFileSync(sessionFile(hc, CWD, sessionId), "utf8")).toBe(lines(0, 13));
  });

  it("prunes the transcripts of retired and long-idle sessions, not active ones", async () => {
    const active = await newSession();
    const retired = await newSession();
    const idle = await newSession();
    const a = runner(`a-${n}`);
    for (const s of [active, retired, idle]) {
      const h = a.home();
      writeSession(h, s.sessionId, lines(0, 10));
      await a.store.save(s.key, s.sessionId, h);
    }
    await db.pool.query("UPDATE sessions SET state = 'retired' WHERE session_id = $1", [
      retired.sessionId,
    ]);
    await db.pool.query(
      "UPDATE sessions SET last_used_at = now() - interval '10 days' WHERE session_id = $1",
      [idle.sessionId],
    );
    const pruned = await pruneTranscripts(db.pool, 7 * 24 * 3600_000);
    expect(pruned.transcripts).toBeGreaterThanOrEqual(2);
    expect(pruned.bytes).toBeGreaterThan(0);
    expect(await transcriptHead(db.pool, active.sessionId)).not.toBeNull();
    expect(await transcriptHead(db.pool, retired.sessionId)).toBeNull();
    expect(await transcriptHead(db.pool, idle.sessionId)).toBeNull();
  });
});
