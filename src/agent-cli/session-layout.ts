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

/**
 * The key's directory in a session store, `_repos/<repository id>/issue-<n>/<agent>` (the agent
 * percent-encoded): by the repository's id, as everything of a conversation is. `_repos` is no
 * GitHub owner's name (they hold no `_`), so no directory of the older `<owner>/<name>` layout
 * is ever taken for a key's.
 */
export function keyDir(key: TaskKey): string {
  const enc = (s: string) =>
    s.replace(/[^A-Za-z0-9._-]/gu, (c) =>
      Array.from(Buffer.from(c, "utf8"), (b) => `%${b.toString(16).padStart(2, "0")}`).join(""),
    );
  if (
    !Number.isSafeInteger(key.repoId) ||
    key.repoId < 1 ||
    !Number.isSafeInteger(key.issueNumber) ||
    key.agent === "" ||
    key.agent === "." ||
    key.agent === ".."
  )
    throw new Error(`not a task key: ${JSON.stringify(key)}`);
  return path.join("_repos", String(key.repoId), `issue-${key.issueNumber}`, enc(key.agent));
}

/**
 * Where a session saved on a runner's disk before the session store may be: the key's directory,
 * then the one the layout before repository ids gave it (`<owner>/<name>/issue-<n>/<agent>`).
 * Only read, and only for a session id the key's own rows (keyed by id) name, so a new
 * repository under an old name never reaches the old one's files through it.
 */
export function legacyKeyDirs(key: TaskKey): string[] {
  const enc = (s: string) =>
    s.replace(/[^A-Za-z0-9._-]/gu, (c) =>
      Array.from(Buffer.from(c, "utf8"), (b) => `%${b.toString(16).padStart(2, "0")}`).join(""),
    );
  const [owner = "", name = ""] = key.repo.toLowerCase().split("/");
  const named =
    owner && name && ![owner, name, key.agent].some((p) => p === "." || p === "..")
      ? [path.join(enc(owner), enc(name), `issue-${key.issueNumber}`, enc(key.agent))]
      : [];
  return [keyDir(key), ...named];
}
