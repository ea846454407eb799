/**
 * `tether transcript <session-id-prefix>` (`node dist/src/main.js transcript …`): an operator
 * reads a session's stored transcript, most often a poisoned or retired one's (kept for
 * TETHER_DEBUG_KEEP_HOURS). The transcript (the CLI's JSON lines, as the CLI wrote them) goes
 * to stdout, its control characters escaped when stdout is a terminal; what the session is, or
 * why there is nothing to read, goes to stderr.
 *
 * It reaches the database the way the running process does: DATABASE_URL, or the embedded
 * PostgreSQL of TETHER_DATA_DIR, through the port the running owner recorded in its lock (the
 * directory is one process's, so this never starts a second server beside a live one), or by
 * starting it when no process runs there.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import zlib from "node:zlib";
import { promisify } from "node:util";
import { openDatabase } from "../db/database.js";
import { judgeLock, processState } from "../db/data-dir-lock.js";
import { passwordFileFor } from "../db/embedded-password.js";
import { createPool, type Pool } from "../db/pool.js";
import { escapeForTerminal } from "../core/terminal-text.js";
import type { Env } from "../env.js";
import type { Logger } from "../log.js";
import { sessionsByPrefix, transcriptChunks } from "../sql/transcripts.js";

const gunzip = promisify(zlib.gunzip);
const SHOWN = 10;

/** The command's name: `node dist/src/main.js transcript …`. */
export const TRANSCRIPT_COMMAND = "transcript";

export const TRANSCRIPT_USAGE =
  "usage: tether transcript <session-id-prefix>   (writes the session's stored transcript to stdout)";

interface Output {
  write(chunk: string | Buffer): unknown;
  /** A terminal: it gets the transcript with control characters escaped. */
  isTTY?: boolean;
}

/**
 * Writes the transcript of the one session whose id starts with `prefix` to `out`. Returns the
 * exit status: 0 written, 1 nothing (or more than one) to write, 2 a bad argument.
 */
export async function printTranscript(
  pool: Pool,
  prefix: string | undefined,
  out: Output,
  err: Output,
): Promise<number> {
  if (!prefix || !/^[A-Za-z0-9_-]{1,128}$/.test(prefix)) {
    err.write(`${TRANSCRIPT_USAGE}\n`);
    return 2;
  }
  const found = await sessionsByPrefix(pool, prefix, SHOWN + 1);
  if (found.length === 0) {
    err.write(`tether: no session's id starts with "${prefix}"\n`);
    return 1;
  }
  const describe = (s: (typeof found)[number]) =>
    escapeForTerminal(
      `${s.sessionId}  ${s.repo}#${s.issueNumber} ${s.agent} (${s.cli})  ${s.state}` +
        `${s.stateReason ? ` (${s.stateReason})` : ""}  last used ${s.lastUsedAt.toISOString()}` +
        `  ${s.transcript ? `${s.transcript.rawBytes} bytes stored` : "no transcript stored"}`,
    );
  if (found.length > 1) {
    err.write(
      `tether: ${found.length > SHOWN ? `more than ${SHOWN}` : found.length} sessions' ids start with "${prefix}"; give more of the id:\n` +
        found
          .slice(0, SHOWN)
          .map((s) => `  ${describe(s)}\n`)
          .join(""),
    );
    return 1;
  }
  const s = found[0]!;
  err.write(`${describe(s)}\n`);
  if (!s.transcript || s.transcript.overBound) {
    err.write(
      s.transcript
        ? "tether: its transcript grew past TETHER_SESSION_MAX_BYTES and was not kept\n"
        : "tether: its transcript is not stored: never saved, or pruned by collection " +
            "(active sessions past TETHER_COLLECT_IDLE_HOURS and their repository's resume.ttlHours; " +
            "poisoned or retired ones after TETHER_DEBUG_KEEP_HOURS)\n",
    );
    return 1;
  }
  const chunks = await transcriptChunks(pool, s, s.sessionId);
  if (!out.isTTY) {
    // A file or a pipe gets the bytes as the CLI wrote them.
    for (const c of chunks) out.write(await gunzip(c.data));
    return 0;
  }
  // The agent wrote much of it (tool output, files it read): nothing in it acts on the terminal
  // (#38). A character may span two chunks, so the text is decoded as one stream.
  const text = new TextDecoder("utf-8");
  for (const c of chunks)
    out.write(escapeForTerminal(text.decode(await gunzip(c.data), { stream: true })));
  out.write(escapeForTerminal(text.decode()));
  return 0;
}

/** Where the database is for this command: see the header. */
export async function transcriptCommand(args: string[], env: Env, log: Logger): Promise<number> {
  if (args.length !== 1) {
    process.stderr.write(`${TRANSCRIPT_USAGE}\n`);
    return 2;
  }
  const url = env.DATABASE_URL ?? (await runningEmbeddedUrl(env));
  if (url) {
    const pool = createPool(url, { max: 1 });
    try {
      return await printTranscript(pool, args[0], process.stdout, process.stderr);
    } finally {
      await pool.end();
    }
  }
  const db = await openDatabase(env, log);
  try {
    return await printTranscript(db.pool, args[0], process.stdout, process.stderr);
  } finally {
    await db.close();
  }
}

/** The URL of the embedded PostgreSQL a live Tether process runs on this data directory, if one does. */
export async function runningEmbeddedUrl(env: Pick<Env, "dataDir">): Promise<string | undefined> {
  const dataDir = path.resolve(env.dataDir, "postgres");
  const lock = await readFile(`${dataDir}.lock`, "utf8").catch(() => undefined);
  const bootId = await readFile("/proc/sys/kernel/random/boot_id", "utf8")
    .then((t) => t.trim())
    .catch(() => null);
  const verdict = judgeLock(lock, { selfPid: process.pid, bootId, probe: processState });
  if (verdict.kind !== "held" || verdict.owner.port === undefined) return undefined;
  const password = (await readFile(passwordFileFor(dataDir), "utf8")).trim();
  return `postgres://tether:${encodeURIComponent(password)}@127.0.0.1:${verdict.owner.port}/postgres`;
}
