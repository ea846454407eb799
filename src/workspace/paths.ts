/**
 * Where a key's workspace lives on the host. The path never changes for a key, so a turn finds
 * its checkout again; inside the sandbox it is always /workspace.
 */
import path from "node:path";
import { parseRepoName } from "../github/git-auth.js";
import type { TaskKey } from "../core/task.js";
import { WorkspaceError } from "./errors.js";

/** Owner and name as path segments: lower-cased, anything outside [A-Za-z0-9._-] percent-encoded. */
export function repoSegments(repo: string): { owner: string; name: string } {
  const { owner, name } = parseRepoName(repo);
  return { owner: encodeSegment(owner.toLowerCase()), name: encodeSegment(name.toLowerCase()) };
}

/**
 * `<root>/<owner>/<repo>/issue-<n>/<agent>`. Owner and repo are lower-cased (GitHub's names are
 * case-insensitive); every character outside [A-Za-z0-9._-] is percent-encoded, so two keys
 * never map to one directory and no segment can climb out of the root.
 */
export function workspacePath(root: string, key: TaskKey): string {
  const fail = (what: string) =>
    new WorkspaceError(
      "invalid-key",
      key.repo,
      `cannot make a workspace for ${JSON.stringify(key.repo)} #${key.issueNumber} (${JSON.stringify(key.agent)}): ${what}`,
    );
  let segments: { owner: string; name: string };
  try {
    segments = repoSegments(key.repo);
  } catch {
    throw fail('the repository must be "owner/name"');
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
    segments.owner,
    segments.name,
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
