/**
 * Where a session's transcript (the CLI's `<session-id>.jsonl`) is kept between turns, outside
 * any sandbox. Every turn gets a fresh, empty HOME holding only the transcript of the session it
 * resumes; after the turn the transcript is saved and the HOME deleted. So whatever an agent
 * writes to its HOME (a `~/.claude/settings.json` hook, a `~/.gitconfig`, a shell profile) is
 * gone before the next turn of any key, its own included.
 *
 * A session's file lives at `$HOME/.claude/projects/<cwd, every non-alphanumeric character
 * made "->/<session-id>.jsonl` (seen with 2.1.197); the CLI only finds it there. Inside the
 * sandbox the working directory is always /workspace, so a transcript restored on any runner
 * lands where the CLI looks.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { TranscriptState } from "../core/resume-decision.js";
import type { TaskKey } from "../core/task.js";
import { findTranscript, isSessionId, sessionFile } from "../claude/session-files.js";

export interface TranscriptStore {
  /** Where the session's transcript can be restored from, as this runner sees it. */
  state(key: TaskKey, sessionId: string): Promise<TranscriptState>;
  /** Puts the transcript into `home` where a CLI working in `cwd` looks for it. */
  restore(key: TaskKey, sessionId: string, home: string, cwd: string): Promise<Restored>;
  /** After the run (no process of it left): keeps the session's transcript from `home`. */
  save(key: TaskKey, sessionId: string, home: string): Promise<Saved | null>;
}

/**
 * Where a CLI files a session in its HOME: Claude Code's `<session id>.jsonl` under its project
 * directory (claudeLayout), Codex's rollout under `.codex/sessions/` (rollouts.ts codexLayout).
 */
export interface TranscriptLayout {
  /** The session's file in a HOME a sandbox wrote: a regular file, reached through no link. */
  find(
    home: string,
    sessionId: string,
  ): Promise<{ file: string; name: string; size: number } | null>;
  /** Where the CLI, working in `cwd`, looks for the session's file (named `name`) in `home`. */
  place(home: string, cwd: string, sessionId: string, name: string | null): string;
  /** Whether the file's name is kept with it (Codex finds a rollout only under its own name). */
  keepsName: boolean;
  /** A copy this runner's disk holds from before the shared store kept the CLI's sessions. */
  legacy(
    cacheRoot: string,
    key: TaskKey,
    sessionId: string,
  ): Promise<{ file: string; name: string } | null>;
}

/** Claude Code's layout: `$HOME/.claude/projects/<cwd>/<session id>.jsonl`. */
export const claudeLayout: TranscriptLayout = {
  async find(home, sessionId) {
    const found = await findTranscript(home, sessionId);
    return found ? { ...found, name: `${sessionId}.jsonl` } : null;
  },
  place: (home, cwd, sessionId) => sessionFile(home, cwd, sessionId),
  keepsName: false,
  async legacy(cacheRoot, key, sessionId) {
    if (!isSessionId(sessionId)) return null;
    const file = path.join(cacheRoot, keyDir(key), `${sessionId}.jsonl`);
    const st = await fs.stat(file).catch(() => null);
    return st?.isFile() ? { file, name: `${sessionId}.jsonl` } : null;
  },
};

/** Where a restore came from (null: nothing held), and how long it took. */
export interface Restored {
  from: "cache" | "store" | null;
  ms: number;
}

export interface Saved {
  /** `append`: only what the CLI added went out; `replace`: the whole file (first save, rewrite). */
  kind: "append" | "replace" | "unchanged" | "local" | "over_bound";
  bytes: number;
  /** Raw bytes written to the store by this save. */
  addedBytes: number;
}

/** A fresh, private HOME for one run, under `root`. */
export async function turnHome(root: string): Promise<string> {
  await fs.mkdir(root, { recursive: true, mode: 0o700 });
  return fs.mkdtemp(path.join(root, "home-"));
}

/** The key's directory in a session store, every part percent-encoded. */
export function keyDir(key: TaskKey): string {
  const enc = (s: string) =>
    s.replace(/[^A-Za-z0-9._-]/gu, (c) =>
      Array.from(Buffer.from(c, "utf8"), (b) => `%${b.toString(16).padStart(2, "0")}`).join(""),
    );
  const [owner = "", name = ""] = key.repo.toLowerCase().split("/");
  if (!owner || !name || [owner, name, key.agent].some((p) => p === "." || p === ".."))
    throw new Error(`not a task key: ${JSON.stringify(key)}`);
  return path.join(enc(owner), enc(name), `issue-${key.issueNumber}`, enc(key.agent));
}
