/**
 * Where Claude Code files a session in its HOME (seen with 2.1.197 and 2.1.332):
 * `$HOME/.claude/projects/<cwd, every non-alphanumeric character made "-">/<session-id>.jsonl`;
 * the CLI finds a session only there. Claude's own layout, so it lives with the Claude dialect;
 * the session store (src/sessions/) and the run's cost (claude-cli.ts) both read it.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { legacyKeyDirs, type TranscriptLayout } from "../agent-cli/session-layout.js";
import { SESSION_ID } from "./claude-args.js";

/** The CLI's project directory name for a working directory. */
export function projectDirName(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

/** `id` can name a session file: what the CLI prints, nothing that could walk a path. */
export function isSessionId(id: string): boolean {
  return SESSION_ID.test(id);
}

/** Where the CLI looks for a session's file, in `home`, working in `cwd`. */
export function sessionFile(home: string, cwd: string, sessionId: string): string {
  if (!SESSION_ID.test(sessionId))
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
  if (!SESSION_ID.test(sessionId)) return null;
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
    for (const kd of legacyKeyDirs(key)) {
      const file = path.join(cacheRoot, kd, `${sessionId}.jsonl`);
      const st = await fs.stat(file).catch(() => null);
      if (st?.isFile()) return { file, name: `${sessionId}.jsonl` };
    }
    return null;
  },
};
