/**
 * A pull request's head is written by whoever opened it, who needs no permission on the
 * repository at all. Files that configure the tools an agent runs must not come from there: on a
 * pull request turn, each agent-control path the head changed from its base is shown inside the
 * sandbox as the base branch has it (materialized from the mirror into a directory of the run's
 * own and bound read-only over the checkout's copy), or hidden when the base has none. The
 * checkout itself is left as it is; only the sandbox's view changes.
 *
 * The masks cover each registered CLI's own instructions and settings (its registry entry's
 * `controlFiles`, whichever CLI runs the turn), git hooks the agent's own `git commit` runs
 * (`.husky/`, `.githooks/`, lefthook, pre-commit) and `.gitmodules` for the agent's git.
 *
 * Tether's own git reads the mirror only (no token, no network); nothing here follows a link in
 * the checkout.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { CLI_CONTROL_FILES } from "../cli-registry.js";
import type { Logger } from "../log.js";
import type { Mask } from "../sandbox/sandbox.js";
import type { FailureContext } from "./errors.js";
import type { HostGit } from "./git.js";
import { isValidBranchName } from "./git-refs.js";

/** Paths at the top of a checkout that configure an agent or run code when git or a CLI acts. */
export const AGENT_CONTROL_PATHS: readonly string[] = [
  ...CLI_CONTROL_FILES,
  ".gitmodules",
  ".husky",
  ".githooks",
  "lefthook.yml",
  ".pre-commit-config.yaml",
];

/** What a tree holds at a path: git's object type, with links and submodules told apart. */
export type TreeKind = "tree" | "blob" | "symlink" | "gitlink";
/** What the checkout holds at a path, by lstat (a link is never followed). */
export type CheckoutKind = "file" | "dir" | "symlink" | "other";

export interface MaskPlan {
  path: string;
  /** The checkout's kind at the path: a mask must be of the same kind to be bound over it. */
  kind: "file" | "dir";
  /** Show the base's version, or hide the path (an empty file or directory). */
  from: "base" | "hide";
}

export interface MaskDecision {
  masks: MaskPlan[];
  /** Changed paths that cannot be masked, and why (logged). */
  skipped: Array<{ path: string; reason: string }>;
}

export interface MaskInput {
  /**
   * File paths (as `git diff-tree --name-only` gives them) that differ between the base and the
   * head. null when that could not be learned: every control path present is then masked.
   */
  changed: readonly string[] | null;
  /** The base's entry at each control path; absent when the base has none. */
  base: ReadonlyMap<string, TreeKind>;
  /** The checkout's entry at each control path; absent when there is none. */
  checkout: ReadonlyMap<string, CheckoutKind>;
}

/**
 * Which agent-control paths to mask, and how. A path is masked when the checkout has it and the
 * head changed it (a file under a directory counts for the directory). It shows the base's
 * version when the base has one of the same kind, and is hidden otherwise (the base has none,
 * or a link, or a submodule, or the other kind). A link in the checkout is left: bubblewrap would
 * follow it, and mount over wherever it points.
 */
export function planMasks(input: MaskInput): MaskDecision {
  const out: MaskDecision = { masks: [], skipped: [] };
  for (const p of AGENT_CONTROL_PATHS) {
    const here = input.checkout.get(p);
    if (here === undefined) continue;
    const changed =
      input.changed === null || input.changed.some((n) => n === p || n.startsWith(`${p}/`));
    if (!changed) continue;
    if (here === "symlink") {
      out.skipped.push({
        path: p,
        reason: "a symbolic link in the checkout (a mask would follow it)",
      });
      continue;
    }
    if (here === "other") {
      out.skipped.push({ path: p, reason: "neither a file nor a directory in the checkout" });
      continue;
    }
    const there = input.base.get(p);
    const same = (here === "dir" && there === "tree") || (here === "file" && there === "blob");
    out.masks.push({ path: p, kind: here, from: same ? "base" : "hide" });
  }
  return out;
}

/** Most of the base's files materialized for one directory mask; past it, the path is hidden. */
export const MASK_LIMITS = { files: 1000, bytes: 8 * 1024 * 1024 };

export interface AgentControlRequest {
  git: HostGit;
  /** The repository's bare mirror (host path). */
  mirror: string;
  repo: string;
  /** The pull request's base branch, by name. */
  baseRef: string;
  /** The head, as a full ref in the mirror (refs/pull/<n>/head). */
  headRef: string;
  /** The key's checkout (host path); only its top-level entries are looked at, with lstat. */
  checkout: string;
  /** A directory of the run's own for the base's files; made here, removed by dispose(). */
  runDir: string;
  log: Logger;
  signal?: AbortSignal | undefined;
}

export interface AgentControlMasks {
  masks: Mask[];
  skipped: MaskDecision["skipped"];
  dispose(): Promise<void>;
}

/** Works out and materializes the masks of a pull request turn. */
export async function agentControlMasks(req: AgentControlRequest): Promise<AgentControlMasks> {
  const checkout = new Map<string, CheckoutKind>();
  for (const p of AGENT_CONTROL_PATHS) {
    const st = await fs.lstat(path.join(req.checkout, p)).catch(() => null);
    if (!st) continue;
    checkout.set(
      p,
      st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other",
    );
  }
  const dispose = () => fs.rm(req.runDir, { recursive: true, force: true }).catch(() => {});
  if (checkout.size === 0) return { masks: [], skipped: [], dispose };

  const ctx: FailureContext = { repo: req.repo, host: "", timeoutMs: 60_000 };
  const call = {
    cwd: req.mirror,
    step: "read" as const,
    ctx,
    allowFailure: true,
    signal: req.signal,
  };
  const base = isValidBranchName(req.baseRef) ? `refs/heads/${req.baseRef}` : null;
  let changed: string[] | null = null;
  const baseTree = new Map<string, TreeKind>();
  if (base) {
    const [diff, tree] = await Promise.all([
      req.git(
        [
          "diff-tree",
          "-r",
          "-z",
          "--name-only",
          "--no-renames",
          `${base}^{commit}`,
          `${req.headRef}^{commit}`,
          "--",
          ...checkout.keys(),
        ],
        call,
      ),
      req.git(["ls-tree", "-z", `${base}^{commit}`, "--", ...checkout.keys()], call),
    ]);
    if (diff.exitCode === 0) changed = diff.stdout.split("\0").filter(Boolean);
    else
      req.log.warn(
        { repo: req.repo, base: req.baseRef, stderr: diff.stderr.trim().slice(-500) },
        "could not compare the pull request's head with its base: every agent-control path is masked",
      );
    if (tree.exitCode === 0) for (const e of parseLsTree(tree.stdout)) baseTree.set(e.path, e.kind);
    else changed = null;
  }
  const decision = planMasks({ changed, base: baseTree, checkout });
  const masks: Mask[] = [];
  try {
    for (const [i, m] of decision.masks.entries()) {
      const replacement =
        m.from === "base" && base
          ? await materialize(req, base, m, path.join(req.runDir, String(i)))
          : null;
      masks.push({ path: m.path, kind: m.kind, replacement });
    }
  } catch (err) {
    await dispose();
    throw err;
  }
  return { masks, skipped: decision.skipped, dispose };
}

/** `git ls-tree -z [-l]` entries. */
export function parseLsTree(
  out: string,
): Array<{ mode: string; kind: TreeKind; sha: string; size: number | null; path: string }> {
  const entries = [];
  for (const rec of out.split("\0")) {
    const tab = rec.indexOf("\t");
    if (tab < 0) continue;
    const [mode = "", type = "", sha = "", size] = rec.slice(0, tab).split(/\s+/);
    const kind: TreeKind =
      mode === "120000"
        ? "symlink"
        : type === "commit"
          ? "gitlink"
          : type === "tree"
            ? "tree"
            : "blob";
    entries.push({
      mode,
      kind,
      sha,
      size: size === undefined || size === "-" ? null : Number(size),
      path: rec.slice(tab + 1),
    });
  }
  return entries;
}

/**
 * Writes the base's version of one path under `into`; returns the host path to bind, or null
 * (hide) when it is over the limits. Only regular files and directories are written: a link in
 * the base is left out, a submodule is an empty directory.
 */
async function materialize(
  req: AgentControlRequest,
  base: string,
  m: MaskPlan,
  into: string,
): Promise<string | null> {
  const ctx: FailureContext = { repo: req.repo, host: "", timeoutMs: 60_000 };
  const call = { cwd: req.mirror, step: "read" as const, ctx, signal: req.signal };
  const listed = await req.git(
    [
      "ls-tree",
      "-z",
      "-l",
      ...(m.kind === "dir" ? ["-r", "-t"] : []),
      `${base}^{commit}`,
      "--",
      m.path,
    ],
    call,
  );
  const entries = parseLsTree(listed.stdout).filter(
    (e) => e.path === m.path || e.path.startsWith(`${m.path}/`),
  );
  const blobs = entries.filter((e) => e.kind === "blob");
  const bytes = blobs.reduce((n, e) => n + (e.size ?? 0), 0);
  if (blobs.length > MASK_LIMITS.files || bytes > MASK_LIMITS.bytes) {
    req.log.warn(
      { repo: req.repo, path: m.path, files: blobs.length, bytes },
      "the base branch's version is too large to show; the path is hidden instead",
    );
    return null;
  }
  await fs.mkdir(into, { recursive: true, mode: 0o700 });
  const target = (p: string) => {
    const parts = p.split("/");
    if (parts.some((c) => c === "" || c === "." || c === ".."))
      throw new Error(`refusing an odd path in the base tree: ${JSON.stringify(p)}`);
    return path.join(into, ...parts);
  };
  if (m.kind === "dir") await fs.mkdir(target(m.path), { mode: 0o755 });
  for (const e of entries) {
    if (e.kind === "tree" || e.kind === "gitlink")
      await fs.mkdir(target(e.path), { recursive: true, mode: 0o755 });
  }
  const contents = await readBlobs(
    req.git,
    call,
    blobs.map((b) => b.sha),
    bytes,
  );
  for (const b of blobs) {
    const file = target(b.path);
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
    await fs.writeFile(file, contents.get(b.sha) ?? Buffer.alloc(0), {
      mode: b.mode === "100755" ? 0o755 : 0o644,
      flag: "wx",
    });
  }
  return target(m.path);
}

/** Blob contents by object id, in one `git cat-file --batch`. */
async function readBlobs(
  git: HostGit,
  call: Parameters<HostGit>[1],
  shas: string[],
  bytes: number,
): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const unique = [...new Set(shas)];
  if (unique.length === 0) return out;
  const r = await git.bytes(["cat-file", "--batch"], {
    ...call,
    input: unique.map((s) => `${s}\n`).join(""),
    maxBuffer: bytes + unique.length * 128 + 1024,
  });
  let at = 0;
  const buf = r.stdout;
  while (at < buf.length) {
    const nl = buf.indexOf(0x0a, at);
    if (nl < 0) break;
    const [sha = "", type, size] = buf.subarray(at, nl).toString("latin1").split(" ");
    at = nl + 1;
    if (type === "missing" || size === undefined) continue;
    const n = Number(size);
    if (type === "blob") out.set(sha, buf.subarray(at, at + n));
    at += n + 1;
  }
  return out;
}
