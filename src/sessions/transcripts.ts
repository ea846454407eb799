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

export interface TranscriptKey {
  repo: string;
  issueNumber: number;
  agent: string;
}

export interface TranscriptStore {
  /** Where the session's transcript can be restored from, as this runner sees it. */
  state(key: TranscriptKey, sessionId: string): Promise<TranscriptState>;
  /** Puts the transcript into `home` where a CLI working in `cwd` looks for it. */
  restore(key: TranscriptKey, sessionId: string, home: string, cwd: string): Promise<Restored>;
  /** After the run (no process of it left): keeps the session's transcript from `home`. */
  save(key: TranscriptKey, sessionId: string, home: string): Promise<Saved | null>;
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
    key: TranscriptKey,
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
    if (!SESSION_FILE.test(sessionId)) return null;
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

/** The CLI's project directory name for a working directory. */
export function projectDirName(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

/** A session id as a file name: what the CLI prints, nothing that could walk a path. */
const SESSION_FILE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** Where the CLI looks for a session's file, in `home`, working in `cwd`. */
export function sessionFile(home: string, cwd: string, sessionId: string): string {
  if (!SESSION_FILE.test(sessionId))
    throw new Error(`not a session id: ${JSON.stringify(sessionId)}`);
  return path.join(home, ".claude", "projects", projectDirName(cwd), `${sessionId}.jsonl`);
}

/**
 * The session's transcript in a HOME a sandbox wrote. The agent could have put links there
 * (`.claude` → some file of Tether's): no link is followed, and only a regular file counts.
 * Called after the run, when no process of the sandbox is left to swap a path meanwhile.
 */
export async function findTranscript(
  home: string,
  sessionId: string,
): Promise<{ file: string; size: number } | null> {
  if (!SESSION_FILE.test(sessionId)) return null;
  const projects = path.join(home, ".claude", "projects");
  for (const dir of [path.join(home, ".claude"), projects]) {
    const st = await fs.lstat(dir).catch(() => null);
    if (!st?.isDirectory()) return null;
  }
  for (const entry of await fs.readdir(projects, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const file = path.join(projects, entry.name, `${sessionId}.jsonl`);
    const st = await fs.lstat(file).catch(() => null);
    if (st?.isFile()) return { file, size: st.size };
  }
  return null;
}

/** A fresh, private HOME for one run, under `root`. */
export async function turnHome(root: string): Promise<string> {
  await fs.mkdir(root, { recursive: true, mode: 0o700 });
  return fs.mkdtemp(path.join(root, "home-"));
}

/** The key's directory in a session store, every part percent-encoded. */
export function keyDir(key: TranscriptKey): string {
  const enc = (s: string) =>
    s.replace(/[^A-Za-z0-9._-]/gu, (c) =>
      Array.from(Buffer.from(c, "utf8"), (b) => `%${b.toString(16).padStart(2, "0")}`).join(""),
    );
  const [owner = "", name = ""] = key.repo.toLowerCase().split("/");
  if (!owner || !name || [owner, name, key.agent].some((p) => p === "." || p === ".."))
    throw new Error(`not a task key: ${JSON.stringify(key)}`);
  return path.join(enc(owner), enc(name), `issue-${key.issueNumber}`, enc(key.agent));
}
