/**
 * One file of a repository at a commit, read from Tether's mirror (never a checkout, whose git
 * config the agent may have written). git's trees confine the path: ls-tree walks tree objects
 * only, so a path through a symbolic link, into a submodule or above the root lists nothing, and
 * only a regular file (a blob that is not a link) is read.
 */
import type { FailureContext } from "./errors.js";
import type { HostGit } from "./git.js";
import { parseLsTree } from "./agent-control.js";

export async function readRepoFile(req: {
  git: HostGit;
  mirror: string;
  repo: string;
  commit: string;
  path: string;
  maxBytes: number;
  signal?: AbortSignal | undefined;
}): Promise<Buffer | "too_big" | null> {
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(req.commit)) return null;
  if (req.path.split("/").some((p) => p === "" || p === "." || p === "..")) return null;
  const ctx: FailureContext = { repo: req.repo, host: "", timeoutMs: 60_000 };
  const call = { cwd: req.mirror, step: "read" as const, ctx, signal: req.signal };
  const listed = await req.git(["ls-tree", "-z", "-l", req.commit, "--", req.path], {
    ...call,
    allowFailure: true,
  });
  if (listed.exitCode !== 0) return null;
  const entry = parseLsTree(listed.stdout).find((e) => e.path === req.path);
  if (!entry || entry.kind !== "blob" || entry.mode === "120000") return null;
  if ((entry.size ?? 0) > req.maxBytes) return "too_big";
  const r = await req.git.bytes(["cat-file", "blob", entry.sha], {
    ...call,
    maxBuffer: req.maxBytes + 1,
    allowFailure: true,
  });
  if (r.exitCode !== 0) return null;
  return r.stdout.length > req.maxBytes ? "too_big" : r.stdout;
}
