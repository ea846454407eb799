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

export interface TranscriptStore {
  /** Where the session's transcript can be restored from, as this runner sees it. */
  state(key: TaskKey, sessionId: string): Promise<TranscriptState>;
  /** Puts the transcript into `home` where a CLI working in `cwd` looks for it. */
  restore(key: TaskKey, sessionId: string, home: string, cwd: string): Promise<Restored>;
  /** After the run (no process of it left): keeps the session's transcript from `home`. */
  save(key: TaskKey, sessionId: string, home: string): Promise<Saved | null>;
}

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
