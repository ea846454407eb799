/**
 * Taking the agent's work out of a key's checkout after a turn: COLLECT, in the sandbox, makes
 * it one commit and bundles it into a fresh directory of the outbox, for the publisher.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { TaskKey } from "../core/task.js";
import { gitFailure, tail, WorkspaceError, type FailureContext } from "./errors.js";
import { isObjectId, isValidBranchName } from "./git-refs.js";
import { parseReport, type SandboxedGit } from "./sandboxed-git.js";
import { COLLECT } from "./scripts.js";

export interface CollectRequest extends TaskKey {
  /** The branch the work goes to: the conversation branch, or a pull request's head. */
  branch: string;
  /** The ref in the checkout the work is measured against (Workspace.upstream.ref). */
  upstreamRef: string;
  /** Who commits: Tether. */
  identity: { name: string; email: string };
  /** The message when the agent made no commit of its own; its first line is the subject. */
  message: string;
  /** Lines that end every message (`Co-authored-by: …`). */
  trailers: string[];
  signal?: AbortSignal | undefined;
}

/** Why the checkout's work could not be taken. */
export type CollectBlock = "operation-in-progress" | "no-commit" | "no-upstream" | "unrelated";

export type Collected =
  | { kind: "unchanged" }
  | { kind: "blocked"; reason: CollectBlock }
  | {
      kind: "committed";
      /** The commit's parent: the last one the checkout shares with upstream. */
      base: string;
      commit: string;
      /** Commits the agent made itself, now folded into `commit`. */
      agentCommits: number;
      /** Host path of the bundle (`refs/heads/<branch>`, `^base`); gone after dispose(). */
      bundle: string;
      dispose(): Promise<void>;
    };

/**
 * Take the agent's work out of the checkout at `dir` (COLLECT, in the sandbox). Throws
 * WorkspaceError when git fails; `blocked` when the checkout is in no state to take from.
 */
export async function collectWork(
  req: CollectRequest,
  o: {
    dir: string;
    git: SandboxedGit;
    /** Where the per-publish directories go (never a workspace). */
    outRoot: string;
    timeoutMs: number;
  },
): Promise<Collected> {
  if (!isValidBranchName(req.branch) || !req.upstreamRef.startsWith("refs/")) {
    throw new WorkspaceError(
      "invalid-key",
      req.repo,
      `cannot publish to ${JSON.stringify(req.branch)}: not a valid branch name`,
    );
  }
  await fs.mkdir(o.outRoot, { recursive: true, mode: 0o700 });
  const out = await fs.mkdtemp(path.join(o.outRoot, "collect-"));
  const dispose = () => fs.rm(out, { recursive: true, force: true });
  try {
    const oneLine = (s: string) => s.replace(/[\r\n]+/g, " ").trim();
    await fs.writeFile(path.join(out, "message"), `${req.message.trim()}\n`);
    await fs.writeFile(
      path.join(out, "trailers"),
      req.trailers.map((t) => `${oneLine(t)}\n`).join(""),
    );
    const id = req.identity;
    const r = await o.git.run(o.dir, COLLECT, [req.branch, req.upstreamRef], {
      outbox: out,
      signal: req.signal,
      env: {
        GIT_AUTHOR_NAME: oneLine(id.name),
        GIT_AUTHOR_EMAIL: oneLine(id.email),
        GIT_COMMITTER_NAME: oneLine(id.name),
        GIT_COMMITTER_EMAIL: oneLine(id.email),
      },
      config: ["-c", "commit.gpgSign=false", "-c", "core.autocrlf=false"],
    });
    const ctx: FailureContext = { repo: req.repo, host: "", timeoutMs: o.timeoutMs };
    if (r.stoppedBy) throw gitFailure(ctx, "update", r.stderr, r.stoppedBy);
    if (r.exitCode === 3)
      throw new WorkspaceError(
        "not-a-checkout",
        req.repo,
        `the workspace for ${req.repo} is not a git checkout, so its changes cannot be published`,
      );
    if (r.startError || r.exitCode !== 0)
      throw new WorkspaceError(
        "git-failed",
        req.repo,
        `could not commit the agent's changes in ${req.repo}: git failed${r.exitCode ? ` (exit ${r.exitCode})` : ""}`,
        { detail: tail(r.stderr || r.startError || "") },
      );
    const { values } = parseReport(r.stdout);
    const state = values.get("state");
    if (state === "unchanged") {
      await dispose();
      return { kind: "unchanged" };
    }
    if (
      state === "operation-in-progress" ||
      state === "no-commit" ||
      state === "no-upstream" ||
      state === "unrelated"
    ) {
      await dispose();
      return { kind: "blocked", reason: state };
    }
    const base = values.get("base") ?? "";
    const commit = values.get("commit") ?? "";
    if (state !== "committed" || !isObjectId(base) || !isObjectId(commit))
      throw new WorkspaceError(
        "git-failed",
        req.repo,
        `could not commit the agent's changes in ${req.repo}: git's report was not understood`,
        { detail: tail(r.stdout) },
      );
    return {
      kind: "committed",
      base,
      commit,
      agentCommits: Number(values.get("agent_commits") ?? "0") || 0,
      bundle: path.join(out, "changes.bundle"),
      dispose,
    };
  } catch (err) {
    await dispose();
    throw err;
  }
}
