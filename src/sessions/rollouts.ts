/**
 * The session store for Codex threads, the counterpart of transcripts.ts. Codex keeps a thread
 * in one rollout file under `$CODEX_HOME/sessions/` (`CODEX_HOME` is `$HOME/.codex` in the
 * sandbox), and that file alone resumes it from an otherwise empty CODEX_HOME, found by the
 * thread id in its name (docs/codex-cli-facts.md, "Where things live"). So, as for Claude, every
 * turn gets a fresh HOME holding only the rollout it resumes; after the turn the rollout is
 * kept, under the name Codex gave it (a renamed file is not found), and the HOME deleted. The
 * rest of CODEX_HOME (SQLite state, `.env`, `AGENTS.md`, `config.toml`) is never restored: an
 * agent that wrote one there cannot reach the next turn with it.
 */
import { randomBytes } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { findRollout, isRolloutName, THREAD_ID } from "../codex/rollout.js";
import type { Logger } from "../log.js";
import {
  keyDir,
  MAX_TRANSCRIPT_BYTES,
  type TranscriptKey,
  type TranscriptStore,
} from "./transcripts.js";

/** Rollouts on this runner's disk under `root`, one directory per thread: `codex-<id>/<name>`. */
export function localRollouts(root: string, log: Logger): TranscriptStore {
  const dirOf = (key: TranscriptKey, threadId: string) => {
    if (!THREAD_ID.test(threadId)) throw new Error(`not a thread id: ${JSON.stringify(threadId)}`);
    return path.join(root, keyDir(key), `codex-${threadId}`);
  };
  const stored = async (key: TranscriptKey, threadId: string): Promise<string | null> => {
    if (!THREAD_ID.test(threadId)) return null;
    const names = await fs.readdir(dirOf(key, threadId)).catch(() => [] as string[]);
    return names.find((n) => isRolloutName(n, threadId)) ?? null;
  };
  return {
    // Rollouts stay on the runner that made them (the Postgres store keeps Claude's transcripts).
    async state(key, threadId) {
      return (await stored(key, threadId)) !== null ? { where: "local" } : { where: "none" };
    },
    async restore(key, threadId, home) {
      const t0 = performance.now();
      const name = await stored(key, threadId);
      if (!name) return { from: null, ms: 0 };
      const dir = path.join(home, ".codex", "sessions");
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
      await fs.copyFile(path.join(dirOf(key, threadId), name), path.join(dir, name));
      return { from: "cache", ms: performance.now() - t0 };
    },
    async save(key, threadId, home) {
      const found = await findRollout(path.join(home, ".codex"), threadId);
      if (!found) {
        log.warn(
          { threadId },
          "the thread's rollout was not in the turn's HOME; it cannot be resumed",
        );
        return null;
      }
      if (found.size > MAX_TRANSCRIPT_BYTES) {
        log.warn({ threadId, bytes: found.size }, "rollout over the size bound; not kept");
        return null;
      }
      const dir = dirOf(key, threadId);
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
      const target = path.join(dir, found.name);
      const tmp = path.join(dir, `.${randomBytes(4).toString("hex")}.tmp`);
      const handle = await fs.open(found.file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
      try {
        await fs.writeFile(tmp, handle.createReadStream({ autoClose: false }), { mode: 0o600 });
      } finally {
        await handle.close();
      }
      await fs.rename(tmp, target);
      // One rollout per thread: an older name (another day's file) goes.
      for (const n of await fs.readdir(dir)) {
        if (n !== found.name && isRolloutName(n, threadId)) await fs.rm(path.join(dir, n));
      }
      return { kind: "local", bytes: found.size, addedBytes: found.size };
    },
  };
}
