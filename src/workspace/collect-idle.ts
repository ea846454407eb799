/**
 * Collection: what a runner keeps on its disk is a cache of what Postgres and the repository
 * hold, so what no turn used for `idleMs` is removed. A later turn of the key re-clones its
 * workspace from the repository's mirror and restores its session from Postgres.
 *
 * - workspaces, `<root>/_repos/<repository id>/issue-<n>/<agent>`: idle by the directory's mtime,
 *   which the runner sets at every turn's prepare (touchWorkspace); a key running here is never
 *   taken. The layout before it, `<root>/<owner>/<repo>/…`, has the same depth: its directories,
 *   never used again, go once idle;
 * - cached transcripts, `<cache>/_repos/<repository id>/issue-<n>/<agent>/<id>.jsonl` (+
 *   `.sha256`), rewritten at every save and restore (the older `<owner>/<repo>/…` likewise);
 * - in Postgres, the transcripts of sessions idle as long and past their repository's resume time
 *   to live, and of sessions poisoned or retired longer ago than the debugging window
 *   (pruneTranscripts).
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import { MAX_RESUME_TTL_HOURS } from "../config/repo-config.js";
import { pruneTranscripts } from "../sql/transcripts.js";

export interface Collected {
  workspaces: number;
  sessionFiles: number;
  transcripts: number;
  transcriptBytes: number;
}

export interface CollectOptions {
  workspaceRoot: string;
  cacheRoot: string;
  idleMs: number;
  /** Workspaces of tasks running on this runner now: never removed. */
  busy: () => Iterable<string>;
  now: () => Date;
  log: Logger;
  /** Where saved transcripts are pruned; without it only this runner's disk is collected. */
  pool?: Pool;
  /** How long a poisoned or retired session's saved transcript is kept, for debugging. */
  debugKeepMs: number;
}

/** The workspace was used now: what collection measures idleness by. */
export async function touchWorkspace(dir: string, now = new Date()): Promise<void> {
  await fs.utimes(dir, now, now).catch(() => {});
}

export async function collectIdle(opts: CollectOptions): Promise<Collected> {
  const cutoff = opts.now().getTime() - opts.idleMs;
  const busy = new Set([...opts.busy()].map((d) => path.resolve(d)));
  const out: Collected = { workspaces: 0, sessionFiles: 0, transcripts: 0, transcriptBytes: 0 };

  // Four levels down: `_repos`, id, issue-<n>, agent (or owner, repo, …). Links are never followed.
  for (const dir of await leaves(opts.workspaceRoot, 4)) {
    if (busy.has(path.resolve(dir))) continue;
    const st = await fs.lstat(dir).catch(() => null);
    if (!st?.isDirectory() || st.mtimeMs > cutoff) continue;
    await fs.rm(dir, { recursive: true, force: true });
    out.workspaces++;
  }
  for (const dir of await leaves(opts.cacheRoot, 4)) {
    for (const e of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (!e.isFile() || !e.name.endsWith(".jsonl")) continue;
      const file = path.join(dir, e.name);
      const st = await fs.lstat(file).catch(() => null);
      if (!st || st.mtimeMs > cutoff) continue;
      await fs.rm(file, { force: true });
      await fs.rm(`${file}.sha256`, { force: true });
      out.sessionFiles++;
    }
  }
  if (opts.pool) {
    const pruned = await pruneTranscripts(opts.pool, {
      idleMs: opts.idleMs,
      // A key with no settings snapshot: its repository may allow the longest.
      unknownTtlMs: MAX_RESUME_TTL_HOURS * 3600_000,
      debugKeepMs: opts.debugKeepMs,
    });
    out.transcripts = pruned.transcripts;
    out.transcriptBytes = pruned.bytes;
  }
  if (out.workspaces || out.sessionFiles || out.transcripts)
    opts.log.info(out, "collected idle workspaces and sessions");
  return out;
}

/** Directories exactly `depth` levels below `root` (real directories only). */
async function leaves(root: string, depth: number): Promise<string[]> {
  let level = [root];
  for (let i = 0; i < depth; i++) {
    const next: string[] = [];
    for (const dir of level) {
      for (const e of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
        // The workspace root also holds Tether's own dirs (mirrors, temporary clones), dot-named;
        // no GitHub owner's name starts with a dot.
        if (e.isDirectory() && !(i === 0 && e.name.startsWith(".")))
          next.push(path.join(dir, e.name));
      }
    }
    level = next;
  }
  return level;
}
