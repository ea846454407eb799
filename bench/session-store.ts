/**
 * The Postgres session store (src/sessions/postgres-transcripts.ts): for transcripts of 1, 10
 * and 50 MB, the time to restore one on a runner that has never seen it (from Postgres) and on
 * one whose cache holds it, and the time a turn's save adds (the turn appended ~20 KB: the
 * prefix is compared with the runner's cache, the new bytes hashed, gzip'd and appended), and
 * the same save on a runner that lost its cache (the prefix hashed along the stored chunks).
 * Prints medians.
 *
 *   npx tsx bench/session-store.ts [sizesMB=1,10,50] [rounds=5]
 */
import { claudeLayout } from "../src/claude/session-files.js";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPool } from "../src/db/pool.js";
import { createLogger } from "../src/log.js";
import { postgresTranscripts } from "../src/sessions/postgres-transcripts.js";
import { sessionFile } from "../src/claude/session-files.js";
import { upsertSession } from "../src/sql/sessions.js";
import { transcriptHead } from "../src/sql/transcripts.js";
import { benchDatabase, median } from "./support.js";
import { repoIdOf } from "../test/helpers/seed.js";

const sizes = (process.argv[2] ?? "1,10,50").split(",").map(Number);
const rounds = Number(process.argv[3] ?? 5);
const CWD = "/workspace";
const MB = 1024 * 1024;

const WORDS =
  "the split function drops last line newline file test parser buffer read write stream chunk offset value return const export import async await error".split(
    " ",
  );

/** JSONL shaped like the CLI's: messages, tool calls and tool results with code in them. */
function turnLines(turn: number, bytes: number): string {
  let out = "";
  let i = 0;
  while (out.length < bytes) {
    const words = Array.from({ length: 60 }, () => WORDS[randomBytes(1)[0]! % WORDS.length]).join(
      " ",
    );
    out += `${JSON.stringify({
      type: i % 3 === 0 ? "user" : "assistant",
      uuid: randomBytes(16).toString("hex"),
      parentUuid: randomBytes(16).toString("hex"),
      sessionId: "bench",
      cwd: CWD,
      timestamp: new Date(1_700_000_000_000 + turn * 60_000 + i).toISOString(),
      message: {
        role: i % 3 === 0 ? "user" : "assistant",
        content: [{ type: "text", text: `${turn}.${i} ${words}` }],
      },
    })}\n`;
    i++;
  }
  return out;
}

const db = await benchDatabase();
const pool = createPool(db.url, { max: 4 });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-bench-sessions-"));
const log = createLogger("silent");
const store = (name: string) =>
  postgresTranscripts({
    pool,
    cacheRoot: path.join(tmp, name, "sessions"),
    log,
    maxBytes: 256 * MB,
    cliVersion: "2.1.197 (Claude Code)",
    layout: claudeLayout,
  });
let homes = 0;
const home = () => {
  const h = path.join(tmp, `home-${homes++}`);
  fs.mkdirSync(h, { recursive: true });
  return h;
};

try {
  console.log(`rounds=${rounds}; medians`);
  for (const mb of sizes) {
    const sessionId = `bench-${mb}`;
    const key = {
      repoId: repoIdOf("octo/bench"),
      repo: "octo/bench",
      issueNumber: mb,
      agent: "tether",
    };
    await upsertSession(pool, {
      cli: "claude",
      ...key,
      sessionId,
      runtimeId: "rt",
      workDir: "/w",
      model: null,
      historyEpoch: 0,
    });
    const writer = store("writer");
    const h = home();
    const file = sessionFile(h, CWD, sessionId);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, turnLines(0, mb * MB));
    let t = performance.now();
    await writer.save(key, sessionId, h);
    const firstSave = performance.now() - t;

    // The added time per turn: the CLI appended one turn (~20 KB), the runner saves.
    const saves: number[] = [];
    for (let r = 0; r < rounds * 2; r++) {
      fs.appendFileSync(file, turnLines(r + 1, 20 * 1024));
      t = performance.now();
      const s = await writer.save(key, sessionId, h);
      saves.push(performance.now() - t);
      if (s?.kind !== "append") throw new Error(`expected an append, got ${s?.kind}`);
    }
    // The same on a runner whose cache is gone: the prefix is hashed along the stored chunks.
    const cacheDir = path.join(tmp, "writer", "sessions");
    const noCache: number[] = [];
    for (let r = 0; r < rounds; r++) {
      fs.rmSync(cacheDir, { recursive: true, force: true });
      fs.appendFileSync(file, turnLines(1000 + r, 20 * 1024));
      t = performance.now();
      const s = await writer.save(key, sessionId, h);
      noCache.push(performance.now() - t);
      if (s?.kind !== "append") throw new Error(`expected an append, got ${s?.kind}`);
    }
    const head = (await transcriptHead(pool, key, sessionId))!;

    // A runner that never saw it: from Postgres. One whose cache holds it: a copy.
    const fromStore: number[] = [];
    const fromCache: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const fresh = store(`cold-${mb}-${r}`);
      const res = await fresh.restore(key, sessionId, home(), CWD);
      if (res.from !== "store")
        throw new Error(`expected a restore from Postgres, got ${res.from}`);
      fromStore.push(res.ms);
      const again = await fresh.restore(key, sessionId, home(), CWD);
      if (again.from !== "cache")
        throw new Error(`expected a restore from cache, got ${again.from}`);
      fromCache.push(again.ms);
    }
    console.log(
      `${String(mb).padStart(3)} MB  stored ${(head.storedBytes / MB).toFixed(2)} MB gzip'd  ` +
        `first save ${firstSave.toFixed(0)} ms  save per turn (+20 KB) ${median(saves).toFixed(1)} ms  ` +
        `without the cache ${median(noCache).toFixed(0)} ms  ` +
        `restore from Postgres ${median(fromStore).toFixed(0)} ms  from cache ${median(fromCache).toFixed(1)} ms`,
    );
  }
} finally {
  await pool.end();
  await db.cleanup();
  fs.rmSync(tmp, { recursive: true, force: true });
}
