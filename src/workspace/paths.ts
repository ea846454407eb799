/**
 * Where a key's workspace lives on the host. The path never changes for a key, so a turn finds
 * its checkout again; inside the sandbox it is always /workspace.
 */
import path from "node:path";
import type { TaskKey } from "../core/task.js";
import { WorkspaceError } from "./errors.js";

/** The directory under the workspace root that holds every repository's keys, by id. */
const REPOS_DIR = "_repos";

/**
 * `<root>/_repos/<repository id>/issue-<n>/<agent>`: by the repository's id, so a renamed
 * repository keeps its checkouts and a new repository under an old name never gets one of the
 * old one's (docs/security.md). `_repos` is no GitHub owner's name (they hold no `_`), so a
 * directory of the older `<owner>/<repo>` layout (same depth; collection removes it once idle)
 * is never taken for a key's. The agent is percent-encoded (every character outside
 * [A-Za-z0-9._-]), so two keys never map to one directory and no segment can climb out.
 */
export function workspacePath(root: string, key: TaskKey): string {
  const fail = (what: string) =>
    new WorkspaceError(
      "invalid-key",
      key.repo,
      `cannot make a workspace for ${JSON.stringify(key.repo)} #${key.issueNumber} (${JSON.stringify(key.agent)}): ${what}`,
    );
  if (!Number.isSafeInteger(key.repoId) || key.repoId < 1) {
    throw fail("the repository id must be a positive whole number");
  }
  if (!Number.isSafeInteger(key.issueNumber) || key.issueNumber < 1) {
    throw fail("the issue number must be a positive whole number");
  }
  if (key.agent === "" || key.agent === "." || key.agent === "..") {
    throw fail("the agent name must not be empty, '.' or '..'");
  }
  if (/\p{Surrogate}/u.test(key.agent)) {
    // A lone surrogate has no UTF-8 form: two such names would encode alike.
    throw fail("the agent name is not valid text");
  }
  const resolvedRoot = path.resolve(root);
  const dir = path.join(
    resolvedRoot,
    REPOS_DIR,
    String(key.repoId),
    `issue-${key.issueNumber}`,
    encodeSegment(key.agent),
  );
  if (path.relative(resolvedRoot, dir).split(path.sep).includes("..")) {
    throw fail("the path would leave the workspace root");
  }
  return dir;
}

export function encodeSegment(value: string): string {
  return value.replace(/[^A-Za-z0-9._-]/gu, (ch) =>
    Array.from(
      Buffer.from(ch, "utf8"),
      (b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`,
    ).join(""),
  );
}
