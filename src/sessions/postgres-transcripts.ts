/**
 * Session transcripts kept in Postgres (src/sql/transcripts.ts), with this runner's disk as a
 * cache. Any runner can restore any session, so a runner's HOME and data directory hold nothing
 * that cannot be lost: runners are cattle, Postgres holds what matters.
 *
 * A save sends only what the CLI appended since the last one (its JSONL is append-mostly): the
 * file's prefix is compared with the stored version (with this runner's cache of it, byte for
 * byte, or else by hashing it along the stored chunks); when they differ (the CLI rewrote the
 * file) the whole file is stored again. The head's digest is chained over the chunks
 * (sql/transcripts.ts chainDigest), so a save hashes only what it adds and its cost does not
 * grow with the transcript. Chunks are gzip'd. A transcript over
 * `maxBytes` is not kept: the session is marked over the bound and its next turn starts fresh
 * (`session_too_large`).
 *
 * The cache is `<cacheRoot>/<key>/<session>.jsonl` beside a `.sha256` file naming the stored
 * version it holds; a restore copies it when it is that version and reads the chunks otherwise.
 *
 * A transcript is stored under its conversation (the task key) and session id together: a
 * session id asked for under another key finds nothing (sql/transcripts.ts).
 *
 * The same store keeps Claude Code's transcripts and Codex's rollouts; a `layout` says where
 * each CLI files a session in its HOME (its registry entry's `layout`, src/cli-registry.ts).
 */
import { createHash, randomBytes } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import fs, { type FileHandle } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import zlib from "node:zlib";
import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import {
  chainDigest,
  EMPTY_DIGEST,
  markOverBound,
  transcriptChunks,
  transcriptChunkSizes,
  transcriptHead,
  writeTranscript,
  type TranscriptChunk,
  type TranscriptHead,
} from "../sql/transcripts.js";
import { keyDir, type TranscriptLayout } from "../agent-cli/session-layout.js";
import type { Saved, TranscriptStore } from "./transcripts.js";
import type { TaskKey } from "../core/task.js";

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

export interface PostgresTranscriptsOptions {
  pool: Pool;
  /** This runner's cache directory (Tether's own, never bound into a sandbox). */
  cacheRoot: string;
  log: Logger;
  /** A transcript larger than this is not kept; the session's next turn starts fresh. */
  maxBytes: number;
  /**
   * This runner's version of the CLI whose sessions these are (`claude --version`, `codex
   * --version`): recorded with each save (which CLIs can read it). A function is asked at each
   * save (Codex is probed on its first turn, not at start).
   */
  cliVersion: string | null | (() => Promise<string | null>);
  /** Where the CLI files a session in its HOME. */
  layout: TranscriptLayout;
  /** Raw bytes per stored chunk. */
  chunkBytes?: number;
}

export function postgresTranscripts(opts: PostgresTranscriptsOptions): TranscriptStore {
  const { pool, log } = opts;
  const chunkBytes = opts.chunkBytes ?? 4 * 1024 * 1024;
  const layout = opts.layout;
  const cliVersion = async () =>
    typeof opts.cliVersion === "function" ? opts.cliVersion() : opts.cliVersion;
  const cacheOf = (key: TaskKey, sessionId: string) => {
    if (!SESSION_ID.test(sessionId))
      throw new Error(`not a session id: ${JSON.stringify(sessionId)}`);
    return path.join(opts.cacheRoot, keyDir(key), `${sessionId}.jsonl`);
  };

  /** Keeps `data` (of sha256 `hash`) as the cache of the session. */
  const writeCache = async (file: string, data: Buffer, hash: Buffer) => {
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
    await fs.writeFile(tmp, data, { mode: 0o600 });
    await fs.rename(tmp, file);
    await fs.writeFile(`${file}.sha256`, hash.toString("hex"), { mode: 0o600 });
  };

  return {
    async state(key, sessionId) {
      if (!SESSION_ID.test(sessionId)) return { where: "none" };
      const head = await transcriptHead(pool, key, sessionId);
      if (head?.overBound) return { where: "over_bound" };
      if (head) return { where: "store", cliVersion: head.cliVersion };
      // A session saved before the store existed is still on the disk of the runner that ran it.
      const legacy = await layout.legacy(opts.cacheRoot, key, sessionId);
      return legacy ? { where: "local" } : { where: "none" };
    },

    async restore(key, sessionId, home, cwd) {
      const t0 = performance.now();
      const cache = cacheOf(key, sessionId);
      const head = await transcriptHead(pool, key, sessionId);
      const done = (from: "cache" | "store" | null) => ({ from, ms: performance.now() - t0 });
      const placed = async (name: string | null) => {
        const target = layout.place(home, cwd, sessionId, name);
        await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        return target;
      };
      if (!head || head.overBound) {
        // Only a session saved before the store can be on this disk and not in Postgres.
        const legacy = await layout.legacy(opts.cacheRoot, key, sessionId);
        if (!legacy) return done(null);
        const ok = await fs.copyFile(legacy.file, await placed(legacy.name)).then(
          () => true,
          () => false,
        );
        return done(ok ? "cache" : null);
      }
      const target = await placed(head.fileName);
      const want = head.sha256.toString("hex");
      const [cachedHash, cachedStat] = await Promise.all([
        fs.readFile(`${cache}.sha256`, "utf8").catch(() => null),
        fs.stat(cache).catch(() => null),
      ]);
      if (cachedHash === want && cachedStat?.size === head.rawBytes) {
        await fs.copyFile(cache, target);
        return done("cache");
      }
      const chunks = await transcriptChunks(pool, key, sessionId);
      const parts = await Promise.all(chunks.map((c) => gunzip(c.data)));
      const data = Buffer.concat(parts);
      const hash = head.chained
        ? chainDigest(EMPTY_DIGEST, parts)
        : createHash("sha256").update(data).digest();
      if (
        data.length !== head.rawBytes ||
        parts.some((p, i) => p.length !== chunks[i]!.rawBytes) ||
        !hash.equals(head.sha256)
      )
        throw new Error(
          `the stored transcript of session ${sessionId} fails its check (${data.length} bytes, expected ${head.rawBytes}); it cannot be restored`,
        );
      await fs.writeFile(target, data, { mode: 0o600 });
      await writeCache(cache, data, hash).catch((err: Error) =>
        log.warn({ err: err.message, sessionId }, "could not cache the restored transcript"),
      );
      return done("store");
    },

    async save(key, sessionId, home): Promise<Saved | null> {
      const found = await layout.find(home, sessionId);
      if (!found) {
        log.warn(
          { sessionId },
          "the session's transcript was not in the turn's HOME; it cannot be resumed",
        );
        return null;
      }
      const cache = cacheOf(key, sessionId);
      if (found.size > opts.maxBytes) {
        log.warn(
          { sessionId, bytes: found.size, maxBytes: opts.maxBytes },
          "transcript over the size bound; not kept, the next turn starts fresh",
        );
        await markOverBound(pool, key, sessionId, await cliVersion());
        await fs.rm(cache, { force: true });
        await fs.rm(`${cache}.sha256`, { force: true });
        return { kind: "over_bound", bytes: found.size, addedBytes: 0 };
      }
      const file = await fs.open(found.file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
      try {
        const size = (await file.stat()).size;
        // Two tries: a save that lost the compare-and-set to another reads the head again.
        for (let attempt = 0; ; attempt++) {
          const head = await transcriptHead(pool, key, sessionId);
          const live = head && !head.overBound ? head : null;
          // What is stored is a prefix of the file: then only the rest goes out. Checked
          // against this runner's cache of the stored version (a byte compare, no hashing),
          // else by re-hashing the prefix along the stored chunks' links. A scheme 1 head
          // (the whole file's sha256, saved before chaining) is stored whole once, chained.
          const continues =
            live?.chained &&
            live.rawBytes <= size &&
            ((await cacheHolds(cache, live, file)) ||
              (await prefixChains(file, live, await transcriptChunkSizes(pool, key, sessionId))));
          const from = continues ? live.rawBytes : 0;
          const added = await readRange(file, from, size);
          const pieces = split(added, chunkBytes);
          const digest = chainDigest(continues ? live.sha256 : EMPTY_DIGEST, pieces);
          const kind: Saved["kind"] =
            from === 0 ? "replace" : from === size ? "unchanged" : "append";
          let ok = true;
          // A rollout's name is part of what is kept: a new name alone is written too.
          const renamed = layout.keepsName && head?.fileName !== found.name;
          if (kind !== "unchanged" || renamed) {
            ok = await writeTranscript(
              pool,
              key,
              sessionId,
              live ? { rawBytes: live.rawBytes, sha256: live.sha256 } : null,
              {
                kind: kind === "append" ? "append" : "replace",
                chunks: await compress(pieces, from),
              },
              {
                rawBytes: size,
                sha256: digest,
                cliVersion: await cliVersion(),
                fileName: layout.keepsName ? found.name : null,
              },
            );
          }
          if (ok) {
            // The cache usually holds the version this turn started from: then only the new
            // bytes are written to it, not the whole file again.
            const cached =
              kind !== "replace" && live
                ? await appendCache(cache, live.sha256, live.rawBytes, added, digest)
                : false;
            if (!cached)
              await writeCache(
                cache,
                kind === "replace" ? added : await readRange(file, 0, size),
                digest,
              ).catch((err: Error) =>
                log.warn({ err: err.message, sessionId }, "could not cache the saved transcript"),
              );
            return { kind, bytes: size, addedBytes: size - from };
          }
          if (attempt >= 1)
            throw new Error(`another save of session ${sessionId} kept changing it; not saved`);
        }
      } finally {
        await file.close();
      }
    },
  };
}

/** Bytes [from, to) of an open file. */
async function readRange(file: FileHandle, from: number, to: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(to - from);
  let done = 0;
  while (done < buf.length) {
    const { bytesRead } = await file.read(buf, done, buf.length - done, from + done);
    if (bytesRead === 0) throw new Error("the transcript shrank while it was being saved");
    done += bytesRead;
  }
  return buf;
}

const COMPARE_BYTES = 1024 * 1024;

/**
 * Whether this runner's cache holds the stored version `head` (its sidecar names it and its size
 * is the head's) and the file begins with exactly the cache's bytes: compared a piece at a time.
 */
async function cacheHolds(cache: string, head: TranscriptHead, file: FileHandle): Promise<boolean> {
  const sidecar = await fs.readFile(`${cache}.sha256`, "utf8").catch(() => null);
  if (sidecar !== head.sha256.toString("hex")) return false;
  const cached = await fs
    .open(cache, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW)
    .catch(() => null);
  if (!cached) return false;
  try {
    if ((await cached.stat()).size !== head.rawBytes) return false;
    const a = Buffer.allocUnsafe(Math.min(COMPARE_BYTES, head.rawBytes));
    const b = Buffer.allocUnsafe(a.length);
    for (let at = 0; at < head.rawBytes; at += a.length) {
      const n = Math.min(a.length, head.rawBytes - at);
      const [x, y] = await Promise.all([cached.read(a, 0, n, at), file.read(b, 0, n, at)]);
      if (x.bytesRead !== n || y.bytesRead !== n) return false;
      if (!a.subarray(0, n).equals(b.subarray(0, n))) return false;
    }
    return true;
  } finally {
    await cached.close();
  }
}

/** Whether the file's first bytes, cut where the stored chunks are, chain to `head`'s digest. */
async function prefixChains(
  file: FileHandle,
  head: TranscriptHead,
  sizes: number[],
): Promise<boolean> {
  if (sizes.reduce((n, s) => n + s, 0) !== head.rawBytes) return false;
  let d: Buffer = EMPTY_DIGEST;
  let at = 0;
  for (const n of sizes) {
    d = chainDigest(d, [await readRange(file, at, at + n)]);
    at += n;
  }
  return d.equals(head.sha256);
}

function split(data: Buffer, chunkBytes: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += chunkBytes)
    out.push(data.subarray(at, Math.min(at + chunkBytes, data.length)));
  return out;
}

/** Appends `added` to a cache that holds exactly the version (`sha256`, `bytes`) it continues. */
async function appendCache(
  file: string,
  sha256: Buffer,
  bytes: number,
  added: Buffer,
  after: Buffer,
): Promise<boolean> {
  try {
    const [hash, st] = await Promise.all([fs.readFile(`${file}.sha256`, "utf8"), fs.lstat(file)]);
    if (hash !== sha256.toString("hex") || !st.isFile() || st.size !== bytes) return false;
    // The sidecar goes first: a crash in between leaves a cache no restore trusts.
    await fs.rm(`${file}.sha256`);
    if (added.length) await fs.appendFile(file, added);
    await fs.writeFile(`${file}.sha256`, after.toString("hex"), { mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}

/** Gzip'd chunks of `pieces`, the first at raw offset `from`. */
async function compress(pieces: Buffer[], from: number): Promise<TranscriptChunk[]> {
  const out: TranscriptChunk[] = [];
  let at = from;
  for (const raw of pieces) {
    out.push({ rawOffset: at, rawBytes: raw.length, data: await gzip(raw) });
    at += raw.length;
  }
  return out;
}
