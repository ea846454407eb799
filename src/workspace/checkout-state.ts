/**
 * What a key's checkout is like, as the sandboxed look (STATE) reports it, and how a later turn
 * may move it: only moves that cannot lose the agent's work.
 */
import { gitFailure, WorkspaceError, type FailureContext } from "./errors.js";
import { isObjectId } from "./git-refs.js";
import { parseReport, type ScriptResult } from "./sandboxed-git.js";

/** Why a later turn left the checkout as it was. */
export type LeftReason =
  | "uncommitted-changes"
  | "diverged"
  | "other-branch"
  | "detached"
  | "operation-in-progress"
  | "untracked-files-in-the-way";

/** What a later turn sees in the checkout, gathered before deciding how to update it. */
export interface CheckoutState {
  /** Branch HEAD points at; null when detached. */
  currentBranch: string | null;
  /** The branch the workspace follows: the default branch, or the PR's head ref. */
  targetBranch: string;
  targetExists: boolean;
  /** Tracked files modified, staged or unmerged. Untracked files do not count: a fast-forward keeps them. */
  trackedChanges: boolean;
  /** A merge, rebase, cherry-pick, revert or bisect is under way. */
  operationInProgress: boolean;
  /** Commits on the target branch that upstream lacks, and the reverse (0 when the target is missing). */
  ahead: number;
  behind: number;
}

export type UpdatePlan =
  | { action: "up-to-date"; ahead: number }
  | { action: "fast-forward" }
  | { action: "create-branch" }
  | { action: "leave"; reason: LeftReason; detail: string };

/** How a later turn updates the checkout: only moves that cannot lose the agent's work. */
export function planUpdate(s: CheckoutState): UpdatePlan {
  if (s.targetExists && s.currentBranch === s.targetBranch && s.behind === 0) {
    return { action: "up-to-date", ahead: s.ahead };
  }
  if (s.operationInProgress) {
    return leave("operation-in-progress", "a merge, rebase or cherry-pick is under way");
  }
  if (s.currentBranch === null) {
    return leave("detached", `HEAD is detached, not on ${s.targetBranch}`);
  }
  if (!s.targetExists) {
    return s.trackedChanges
      ? leave("uncommitted-changes", `${s.targetBranch} does not exist and files are modified`)
      : { action: "create-branch" };
  }
  if (s.currentBranch !== s.targetBranch) {
    return leave("other-branch", `on ${s.currentBranch}, not ${s.targetBranch}`);
  }
  if (s.trackedChanges) {
    return leave("uncommitted-changes", `files are modified; upstream is ${s.behind} ahead`);
  }
  if (s.ahead > 0) {
    return leave("diverged", `${s.ahead} local and ${s.behind} upstream commits differ`);
  }
  return { action: "fast-forward" };
}

function leave(reason: LeftReason, detail: string): UpdatePlan {
  return { action: "leave", reason, detail };
}
/** The checkout as the sandboxed look found it. */
export interface LocalState {
  /** From status's "# branch.oid"; "(initial)" on an unborn branch. */
  headSha: string | null;
  /** Checked-out branch; null when detached. */
  branch: string | null;
  trackedChanges: boolean;
  operationInProgress: boolean;
  targetSha: string | null;
  upstreamSha: string | null;
  ahead: number;
  behind: number;
}
/** STATE's report, read; a failed look throws WorkspaceError. */
export function readState(
  r: ScriptResult,
  ctx: FailureContext,
  step: "clone" | "update" | "fetch",
): LocalState {
  if (r.stoppedBy) throw gitFailure(ctx, step, r.stderr, r.stoppedBy);
  if (r.startError)
    throw new WorkspaceError(
      "git-failed",
      ctx.repo,
      `could not ${step} ${ctx.repo}: the runner could not start its sandbox or git`,
      { detail: r.startError },
    );
  if (r.exitCode === 3)
    throw new WorkspaceError(
      "not-a-checkout",
      ctx.repo,
      `the workspace for ${ctx.repo} exists but is not a git checkout; an operator must move it away`,
      { detail: r.stderr.trim() },
    );
  if (r.exitCode !== 0) throw gitFailure(ctx, step, r.stderr, "git-failed", r.exitCode);
  const { values, status } = parseReport(r.stdout);
  const fields = status.split("\0");
  const header = (name: string) =>
    fields.find((f) => f.startsWith(`# ${name} `))?.slice(`# ${name} `.length);
  const head = header("branch.head");
  const [ahead, behind] = (values.get("counts") ?? "0 0").trim().split(/\s+/).map(Number);
  const sha = (k: string) => {
    const v = values.get(k) ?? "";
    return isObjectId(v) ? v : null;
  };
  return {
    headSha: header("branch.oid") ?? null,
    branch: head === undefined || head === "(detached)" ? null : head,
    trackedChanges: fields.some((f) => /^[12u] /.test(f)),
    operationInProgress: values.get("operation") === "1",
    targetSha: sha("target_sha"),
    upstreamSha: sha("upstream_sha"),
    ahead: ahead ?? 0,
    behind: behind ?? 0,
  };
}
