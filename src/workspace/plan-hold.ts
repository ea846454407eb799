/**
 * A plan turn publishes nothing (`/plan`, README "Talking to Tether"): the CLI runs in its
 * read-only mode, and whatever gets written anyway (a shell the mode let through, a commit) is
 * put back after the run, so the `/go` turn after it starts from the checkout the plan read.
 * Both steps are sandboxed git, like every other step in the agent's checkout.
 */
import { WorkspaceError } from "./errors.js";
import { parseReport, type SandboxedGit, type ScriptResult } from "./sandboxed-git.js";
import { PLAN_HOLD, PLAN_RESTORE } from "./scripts.js";

export interface CheckoutHold {
  /** Put the checkout back as it was when held. Throws WorkspaceError when git fails. */
  restore(signal?: AbortSignal): Promise<void>;
}

export async function holdCheckout(
  git: SandboxedGit,
  repo: string,
  dir: string,
  signal?: AbortSignal,
): Promise<CheckoutHold> {
  const held = await git.run(dir, PLAN_HOLD, ["plan-hold"], { signal });
  const values = parseReport(held.stdout).values;
  const state = values.get("state");
  if (held.exitCode !== 0 || held.startError || held.stoppedBy || state === undefined)
    throw new WorkspaceError(
      "git-failed",
      repo,
      "git could not record the checkout before the plan turn",
      failure(held),
    );
  // A checkout with no commit yet has nothing a plan turn could leave behind for a branch.
  if (state === "no-commit") return { restore: async () => {} };
  const head = values.get("head") ?? "";
  const ref = values.get("ref") ?? "";
  const tree = values.get("tree") ?? "";
  return {
    async restore(restoreSignal) {
      const r = await git.run(dir, PLAN_RESTORE, ["plan-restore", head, ref, tree], {
        signal: restoreSignal,
      });
      if (r.exitCode !== 0 || r.startError || r.stoppedBy)
        throw new WorkspaceError(
          "git-failed",
          repo,
          "git could not put the checkout back after the plan turn",
          failure(r),
        );
    },
  };
}

function failure(r: ScriptResult): { detail: string; exitCode: number } {
  return {
    detail: (r.startError ?? r.stoppedBy ?? r.stderr.trim().slice(-2000)) || "no output",
    exitCode: r.exitCode,
  };
}
