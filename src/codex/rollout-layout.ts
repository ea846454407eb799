/**
 * Where Codex keeps a thread, for the session store (postgres-transcripts.ts, which keeps
 * Claude's transcripts the same way). Codex keeps a thread in one rollout file under
 * `$CODEX_HOME/sessions/` (`CODEX_HOME` is `$HOME/.codex` in the sandbox), and that file alone
 * resumes it from an otherwise empty CODEX_HOME, found by the thread id in its name, wherever it
 * sits under `sessions/` (docs/codex-cli-facts.md, "Where things live"). So, as for Claude,
 * every turn gets a fresh HOME holding only the rollout it resumes, restored under the name
 * Codex gave it (a renamed file is not found) into the `sessions/YYYY/MM/DD/` directory that
 * name's date says; after the turn the rollout is saved and the HOME deleted. The rest of
 * CODEX_HOME (SQLite state, `.env`, `AGENTS.md`, `config.toml`) is never kept: an agent that
 * wrote one there cannot reach the next turn with it.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { legacyKeyDirs, type TranscriptLayout } from "../agent-cli/session-layout.js";
import { findRollout, isRolloutName, THREAD_ID } from "./rollout.js";

/** `rollout-2026-05-06T12-34-56-<id>.jsonl`: the local date Codex filed it under. */
const DATED = /^rollout-(\d{4})-(\d{2})-(\d{2})T/;

/** Codex's layout: `$HOME/.codex/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl`. */
export const codexLayout: TranscriptLayout = {
  find: (home, threadId) => findRollout(path.join(home, ".codex"), threadId),
  place(home, _cwd, threadId, name) {
    // The name comes from Postgres: only a rollout name of this thread, and no path, is placed.
    if (!THREAD_ID.test(threadId) || !name || !isRolloutName(name, threadId) || name.includes("/"))
      throw new Error(`not a rollout of thread ${threadId}: ${JSON.stringify(name)}`);
    const sessions = path.join(home, ".codex", "sessions");
    const d = DATED.exec(name);
    return d ? path.join(sessions, d[1]!, d[2]!, d[3]!, name) : path.join(sessions, name);
  },
  keepsName: true,
  // Before the shared store, a runner kept rollouts on its own disk as
  // `<cacheRoot>/<key>/codex-<thread id>/<rollout name>`.
  async legacy(cacheRoot, key, threadId) {
    if (!THREAD_ID.test(threadId)) return null;
    for (const kd of legacyKeyDirs(key)) {
      const dir = path.join(cacheRoot, kd, `codex-${threadId}`);
      for (const e of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
        if (e.isFile() && isRolloutName(e.name, threadId))
          return { file: path.join(dir, e.name), name: e.name };
      }
    }
    return null;
  },
};
