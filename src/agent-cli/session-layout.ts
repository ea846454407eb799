/**
 * Where a CLI files a session in its HOME, and where the session store keeps a key's files: the
 * contract each CLI's folder implements for src/sessions/ (which saves the file to Postgres after
 * a turn and puts it back before the next one, on any runner).
 */
import path from "node:path";
import type { TaskKey } from "../core/task.js";

/**
 * Where a CLI files a session in its HOME: each CLI's folder has its own
 * (registered with the CLI in src/cli-registry.ts).
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
