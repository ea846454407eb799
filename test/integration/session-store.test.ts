/**
 * The Postgres session store (src/sessions/postgres-transcripts.ts) against a real Postgres and
 * real files: what one runner saves, another restores byte for byte into the place the CLI
 * looks; saves send only what was appended; a rewrite is stored whole; the size bound holds.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { postgresTranscripts } from "../../src/sessions/postgres-transcripts.js";
import { claudeLayout } from "../../src/claude/session-files.js";
import { codexLayout } from "../../src/codex/rollout-layout.js";
import { sessionFile } from "../../src/claude/session-files.js";
import { upsertSession } from "../../src/sql/sessions.js";
import {
  chainDigest,
  EMPTY_DIGEST,
  pruneTranscripts,
  transcriptChunks,
  transcriptHead,
} from "../../src/sql/transcripts.js";
import { createTestDatabase } from "../helpers/db.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
const log = createLogger("silent");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-session-store-"));
const CWD = "/workspace";
let n = 0;

/** One runner's view: its own cache directory and HOMEs. */
function runner(
  name: string,
  over: { maxBytes?: number; cliVersion?: string; codex?: boolean } = {},
) {
  const root = path.join(tmp, name);
  fs.mkdirSync(root, { recursive: true });
  const store = postgresTranscripts({
    pool: db.pool,
    cacheRoot: path.join(root, "sessions"),
    log,
    maxBytes: over.maxBytes ?? 64 * 1024 * 1024,
    cliVersion: over.codex
      ? async () => over.cliVersion ?? "0.169.0"
      : (over.cliVersion ?? "2.1.197 (Claude Code)"),
    chunkBytes: 64 * 1024,
    layout: over.codex ? codexLayout : claudeLayout,
  });
  let homes = 0;
  const home = () => fs.mkdtempSync(path.join(root, `home-${homes++}-`));
  return { store, root, home };
}

async function newSession(threadId?: string) {
  n++;
  const key = {
    repoId: repoIdOf("octo/store"),
    repo: "octo/store",
    issueNumber: n,
    agent: "tether",
  };
  const sessionId = threadId ?? `sess-${n}-${process.pid}`;
  await upsertSession(db.pool, {
    cli: "claude",
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
    const head1 = (await transcriptHead(db.pool, key, sessionId))!;
    expect(head1.rawBytes).toBe(Buffer.byteLength(first));
    // Compressed: repetitive JSONL takes a fraction of its size.
    expect(head1.storedBytes).toBeLessThan(head1.rawBytes / 4);

    // The next turn (on runner a) appends; only the new bytes go out, as one more chunk.
    const added = lines(2000, 10);
    fs.appendFileSync(sessionFile(h1, CWD, sessionId), added);
    const saved = await a.store.save(key, sessionId, h1);
    expect(saved).toMatchObject({ kind: "append", addedBytes: Buffer.byteLength(added) });
    const head2 = (await transcriptHead(db.pool, key, sessionId))!;
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
    const head = (await transcriptHead(db.pool, key, sessionId))!;
    expect(head.rewrites).toBe(1);
    const b = runner(`b-${n}`);
    const hb = b.home();
    await b.store.restore(key, sessionId, hb, CWD);
    expect(fs.readFileSync(sessionFile(hb, CWD, sessionId), "utf8")).toBe(rewritten);
  });

  it("chains the head's digest over the chunks, so a save hashes only what it adds", async () => {
    const { key, sessionId } = await newSession();
    const a = runner(`a-${n}`);
    const h = a.home();
    writeSession(h, sessionId, lines(0, 3000));
    await a.store.save(key, sessionId, h);
    for (let t = 0; t < 3; t++) {
      fs.appendFileSync(sessionFile(h, CWD, sessionId), lines(3000 + t * 10, 10));
      expect(await a.store.save(key, sessionId, h)).toMatchObject({ kind: "append" });
    }
    const head = (await transcriptHead(db.pool, key, sessionId))!;
    expect(head.chained).toBe(true);
    const raw = (await transcriptChunks(db.pool, key, sessionId)).map((c) =>
      zlib.gunzipSync(c.data),
    );
    expect(raw.length).toBeGreaterThan(4);
    // The digest is the chain over the stored chunks' raw bytes, link by link ...
    expect(head.sha256.equals(chainDigest(EMPTY_DIGEST, raw))).toBe(true);
    // ... which is not the whole file's sha256 (what a scheme 1 head held).
    const whole = createHash("sha256").update(Buffer.concat(raw)).digest();
    expect(head.sha256.equals(whole)).toBe(false);
    expect(Buffer.concat(raw).toString()).toBe(lines(0, 3030));
  });

  it("appends without its cache too (the prefix is checked along the stored chunks), and a change inside the prefix is stored whole, with or without a cache", async () => {
    const { key, sessionId } = await newSession();
    const a = runner(`a-${n}`);
    const h = a.home();
    const file = sessionFile(h, CWD, sessionId);
    writeSession(h, sessionId, lines(0, 3000));
    await a.store.save(key, sessionId, h);
    fs.appendFileSync(file, lines(3000, 5));
    await a.store.save(key, sessionId, h);
    const cache = fs
      .readdirSync(path.join(a.root, "sessions"), { recursive: true })
      .map(String)
      .find((f) => f.endsWith(`${sessionId}.jsonl`))!;
    const dropCache = () => {
      fs.rmSync(path.join(a.root, "sessions", cache));
      fs.rmSync(path.join(a.root, "sessions", `${cache}.sha256`));
    };

    // No cache: the prefix is hashed along the stored links, and it continues them.
    dropCache();
    fs.appendFileSync(file, lines(3005, 5));
    expect(await a.store.save(key, sessionId, h)).toMatchObject({
      kind: "append",
      addedBytes: Buffer.byteLength(lines(3005, 5)),
    });
    expect(fs.existsSync(path.join(a.root, "sessions", cache))).toBe(true);

    // One byte changed in the middle, the length the same, then an append: the prefix is not
    // what is stored, whichever way it is checked.
    const flip = (text: string) => text.replace("turn 1500:", "turn 1501:");
    for (const withCache of [true, false]) {
      const before = (await transcriptHead(db.pool, key, sessionId))!;
      if (!withCache) dropCache();
      const text = flip(fs.readFileSync(file, "utf8")) + lines(4000 + (withCache ? 0 : 1), 1);
      fs.writeFileSync(file, text);
      expect(await a.store.save(key, sessionId, h), `with cache: ${withCache}`).toMatchObject({
        kind: "replace",
      });
      const after = (await transcriptHead(db.pool, key, sessionId))!;
      expect(after.rewrites).toBe(before.rewrites + 1);
      const b = runner(`b-${n}-${withCache}`);
      const hb = b.home();
      expect((await b.store.restore(key, sessionId, hb, CWD)).from).toBe("store");
      expect(fs.readFileSync(sessionFile(hb, CWD, sessionId), "utf8")).toBe(text);
      // Flip it back for the next round.
      fs.writeFileSync(file, text.replace("turn 1501:", "turn 1500:"));
      await a.store.save(key, sessionId, h);
    }
  });

  it("a head saved before chaining (the whole file's sha256) still restores, and its next save stores it whole, chained", async () => {
    const { key, sessionId } = await newSession();
    const a = runner(`a-${n}`);
    const h = a.home();
    const text = lines(0, 200);
    writeSession(h, sessionId, text);
    await a.store.save(key, sessionId, h);
    // What the store held before the migration: scheme 1, the file's own sha256.
    const sha = createHash("sha256").update(text).digest();
    await db.pool.query(
      "UPDATE session_transcripts SET digest_scheme = 1, sha256 = $2 WHERE session_id = $1",
      [sessionId, sha],
    );
    const b = runner(`b-${n}`);
    const hb = b.home();
    expect((await b.store.restore(key, sessionId, hb, CWD)).from).toBe("store");
    expect(fs.readFileSync(sessionFile(hb, CWD, sessionId), "utf8")).toBe(text);
    expect((await transcriptHead(db.pool, key, sessionId))!.chained).toBe(false);

    fs.appendFileSync(sessionFile(hb, CWD, sessionId), lines(200, 3));
    expect(await b.store.save(key, sessionId, hb)).toMatchObject({ kind: "replace" });
    const head = (await transcriptHead(db.pool, key, sessionId))!;
    expect(head.chained).toBe(true);
    expect(head.rawBytes).toBe(Buffer.byteLength(lines(0, 203)));
    fs.appendFileSync(sessionFile(hb, CWD, sessionId), lines(203, 3));
    expect(await b.store.save(key, sessionId, hb)).toMatchObject({ kind: "append" });
    const hc = runner(`c-${n}`).home();
    await runner(`c-${n}`).store.restore(key, sessionId, hc, CWD);
    expect(fs.readFileSync(sessionFile(hc, CWD, sessionId), "utf8")).toBe(lines(0, 206));
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
    const pruned = await pruneTranscripts(db.pool, {
      idleMs: 7 * 24 * 3600_000,
      unknownTtlMs: 7 * 24 * 3600_000,
      debugKeepMs: 0,
    });
    expect(pruned.transcripts).toBeGreaterThanOrEqual(2);
    expect(pruned.bytes).toBeGreaterThan(0);
    expect(await transcriptHead(db.pool, active.key, active.sessionId)).not.toBeNull();
    expect(await transcriptHead(db.pool, retired.key, retired.sessionId)).toBeNull();
    expect(await transcriptHead(db.pool, idle.key, idle.sessionId)).toBeNull();
  });

  describe("Codex rollouts (codexLayout)", () => {
    /** A thread id (a UUID, as Codex makes them) unique to this test. */
    const thread = () =>
      `01a20d6e-2d35-7a90-b107-${String(process.pid % 1e6).padStart(6, "0")}${String(n + 1).padStart(6, "0")}`;
    /** Where Codex files a rollout: `.codex/sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl`. */
    const writeRollout = (home: string, threadId: string, day: string, text: string) => {
      const [y, m, d] = day.split("-");
      const dir = path.join(home, ".codex", "sessions", y!, m!, d!);
      fs.mkdirSync(dir, { recursive: true });
      const file = path.join(dir, `rollout-${day}T10-11-12-${threadId}.jsonl`);
      fs.writeFileSync(file, text);
      return file;
    };

    it("restores on another runner under the name and date directory Codex gave it; saves append", async () => {
      const { key, sessionId } = await newSession(thread());
      const a = runner(`a-${n}`, { codex: true });
      const b = runner(`b-${n}`, { codex: true, cliVersion: "0.170.0" });
      const ha = a.home();
      const file = writeRollout(ha, sessionId, "2026-05-06", lines(0, 500));
      expect(await a.store.save(key, sessionId, ha)).toMatchObject({ kind: "replace" });
      fs.appendFileSync(file, lines(500, 5));
      expect(await a.store.save(key, sessionId, ha)).toMatchObject({
        kind: "append",
        addedBytes: Buffer.byteLength(lines(500, 5)),
      });
      const head = (await transcriptHead(db.pool, key, sessionId))!;
      expect(head.fileName).toBe(path.basename(file));
      expect(head.cliVersion).toBe("0.169.0");
      expect(head.storedBytes).toBeLessThan(head.rawBytes / 4);
      expect(await b.store.state(key, sessionId)).toEqual({
        where: "store",
        cliVersion: "0.169.0",
      });

      const hb = b.home();
      expect((await b.store.restore(key, sessionId, hb, CWD)).from).toBe("store");
      const placed = path.join(hb, ".codex", "sessions", "2026", "05", "06", path.basename(file));
      expect(fs.readFileSync(placed, "utf8")).toBe(lines(0, 505));
      // Nothing else lands in the HOME: only the rollout.
      expect(fs.readdirSync(path.join(hb, ".codex"))).toEqual(["sessions"]);
      // b's turn appends, and b's version is now the writer's.
      fs.appendFileSync(placed, lines(505, 2));
      expect(await b.store.save(key, sessionId, hb)).toMatchObject({ kind: "append" });
      expect((await transcriptHead(db.pool, key, sessionId))!.cliVersion).toBe("0.170.0");
      // a's cache holds an older version: it reads the newer one from Postgres.
      const ha2 = a.home();
      expect((await a.store.restore(key, sessionId, ha2, CWD)).from).toBe("store");
      expect(
        fs.readFileSync(
          path.join(ha2, ".codex", "sessions", "2026", "05", "06", path.basename(file)),
          "utf8",
        ),
      ).toBe(lines(0, 507));
    });

    it("keeps a rollout's new name even when its bytes did not change", async () => {
      const { key, sessionId } = await newSession(thread());
      const a = runner(`a-${n}`, { codex: true });
      const h = a.home();
      const old = writeRollout(h, sessionId, "2026-05-06", lines(0, 20));
      await a.store.save(key, sessionId, h);
      fs.rmSync(old);
      const renamed = writeRollout(h, sessionId, "2026-05-07", lines(0, 20));
      await a.store.save(key, sessionId, h);
      expect((await transcriptHead(db.pool, key, sessionId))!.fileName).toBe(
        path.basename(renamed),
      );
    });

    it("places only a rollout name of the thread, with no path in it", async () => {
      const id = thread();
      const home = "/h";
      expect(codexLayout.place(home, CWD, id, `rollout-2026-05-06T10-11-12-${id}.jsonl`)).toBe(
        `/h/.codex/sessions/2026/05/06/rollout-2026-05-06T10-11-12-${id}.jsonl`,
      );
      expect(codexLayout.place(home, CWD, id, `rollout-x-${id}.jsonl`)).toBe(
        `/h/.codex/sessions/rollout-x-${id}.jsonl`,
      );
      for (const bad of [
        null,
        `${id}.jsonl`,
        `rollout-../../../../etc/${id}.jsonl`,
        `rollout-2026-05-06T10-11-12-01a20d6e-2d35-7a90-b107-000000000000.jsonl`,
      ])
        expect(() => codexLayout.place(home, CWD, id, bad)).toThrow(/not a rollout/);
    });

    it("a rollout over the size bound is not kept; a link in the HOME is not followed", async () => {
      const { key, sessionId } = await newSession(thread());
      const a = runner(`a-${n}`, { codex: true, maxBytes: 4096 });
      const h = a.home();
      writeRollout(h, sessionId, "2026-05-06", lines(0, 100));
      expect(await a.store.save(key, sessionId, h)).toMatchObject({ kind: "over_bound" });
      expect(await a.store.state(key, sessionId)).toEqual({ where: "over_bound" });

      const other = await newSession(thread());
      const h2 = a.home();
      const secret = path.join(tmp, `secret-${n}`);
      fs.writeFileSync(secret, "not a rollout\n");
      fs.mkdirSync(path.join(h2, ".codex", "sessions"), { recursive: true });
      fs.symlinkSync(
        secret,
        path.join(h2, ".codex", "sessions", `rollout-2026-05-06T10-11-12-${other.sessionId}.jsonl`),
      );
      expect(await a.store.save(other.key, other.sessionId, h2)).toBeNull();
      expect(await transcriptHead(db.pool, other.key, other.sessionId)).toBeNull();
    });

    it("a rollout a runner kept on its disk before the store still resumes there", async () => {
      const { key, sessionId } = await newSession(thread());
      const a = runner(`a-${n}`, { codex: true });
      const name = `rollout-2026-05-06T10-11-12-${sessionId}.jsonl`;
      const dir = path.join(a.root, "sessions", "octo", "store", `issue-${n}`, "tether");
      fs.mkdirSync(path.join(dir, `codex-${sessionId}`), { recursive: true });
      fs.writeFileSync(path.join(dir, `codex-${sessionId}`, name), lines(0, 3));
      expect(await a.store.state(key, sessionId)).toEqual({ where: "local" });
      const h = a.home();
      expect((await a.store.restore(key, sessionId, h, CWD)).from).toBe("cache");
      expect(
        fs.readFileSync(path.join(h, ".codex", "sessions", "2026", "05", "06", name), "utf8"),
      ).toBe(lines(0, 3));
      // Another runner has nothing.
      expect(await runner(`b-${n}`, { codex: true }).store.state(key, sessionId)).toEqual({
        where: "none",
      });
    });
  });
});
