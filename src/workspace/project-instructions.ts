/**
 * The repository's own instructions for agents (`CLAUDE.md`), for agents whose config sets
 * `projectInstructions: true`. Read from the mirror's default branch, which only people who can
 * push there write, never from a checkout (on a pull request the checkout is the head, written by
 * whoever opened it). The CLI itself reads no CLAUDE.md (`--setting-sources ""`): Tether puts
 * this text into the system prompt.
 */
import type { Logger } from "../log.js";
import type { FailureContext } from "./errors.js";
import type { HostGit } from "./git.js";
import { isValidBranchName } from "./git-refs.js";
import { parseLsTree } from "./agent-control.js";

export const PROJECT_INSTRUCTIONS_FILE = "CLAUDE.md";

/** Most bytes of the file given to the agent; the rest is cut off, and the prompt says so. */
export const PROJECT_INSTRUCTIONS_MAX_BYTES = 32 * 1024;

export interface ProjectInstructions {
  /** The file's text, at most `maxBytes` of it (cut on a character boundary). */
  text: string;
  /** The file's whole size in bytes. */
  bytes: number;
  /** True when `text` is only the start of the file. */
  cut: boolean;
  /** The branch it was read from. */
  branch: string;
}

/**
 * The default branch's CLAUDE.md, or null when the branch has none (or has a link, a directory
 * or a submodule there: only a regular file is read, so nothing outside the tree is followed).
 */
export async function readProjectInstructions(req: {
  git: HostGit;
  mirror: string;
  repo: string;
  branch: string;
  maxBytes?: number;
  log: Logger;
  signal?: AbortSignal | undefined;
}): Promise<ProjectInstructions | null> {
  if (!isValidBranchName(req.branch)) return null;
  const max = req.maxBytes ?? PROJECT_INSTRUCTIONS_MAX_BYTES;
  const ctx: FailureContext = { repo: req.repo, host: "", timeoutMs: 60_000 };
  const call = { cwd: req.mirror, step: "read" as const, ctx, signal: req.signal };
  const listed = await req.git(
    ["ls-tree", "-z", "-l", `refs/heads/${req.branch}^{commit}`, "--", PROJECT_INSTRUCTIONS_FILE],
    call,
  );
  const entry = parseLsTree(listed.stdout).find((e) => e.path === PROJECT_INSTRUCTIONS_FILE);
  if (!entry) return null;
  if (entry.kind !== "blob") {
    req.log.info(
      { repo: req.repo, branch: req.branch, kind: entry.kind },
      `${PROJECT_INSTRUCTIONS_FILE} on the default branch is not a regular file; no project instructions`,
    );
    return null;
  }
  // git stops (and Tether keeps the first bytes) once the cap is passed: a huge file costs little.
  const r = await req.git.bytes(["cat-file", "blob", entry.sha], {
    ...call,
    maxBuffer: max,
    allowFailure: true,
  });
  const bytes = entry.size ?? r.stdout.length;
  if (r.stdout.length < Math.min(bytes, max))
    throw new Error(
      `could not read ${PROJECT_INSTRUCTIONS_FILE} of ${req.repo} from its mirror: ${r.stderr.trim().slice(-300) || `exit ${r.exitCode}`}`,
    );
  return { ...decodeCapped(r.stdout, max, bytes), bytes, branch: req.branch };
}

/** At most `max` bytes of UTF-8 as text, never ending inside a character. */
export function decodeCapped(
  buf: Buffer,
  max: number,
  total = buf.length,
): { text: string; cut: boolean } {
  const cut = total > max || buf.length > max;
  let end = Math.min(buf.length, max);
  if (cut) {
    // Back off over continuation bytes (10xxxxxx) to the start of the last character, and drop
    // it unless all of its bytes are here.
    let start = end;
    while (start > 0 && start > end - 4 && (buf[start - 1]! & 0xc0) === 0x80) start--;
    if (start > 0) {
      const lead = buf[start - 1]!;
      const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
      if (end - (start - 1) < need) end = start - 1;
    }
  }
  return { text: buf.subarray(0, end).toString("utf8"), cut };
}
