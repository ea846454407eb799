/**
 * Whose a finished CI run is (issue 38). A fork can push the very commit of a conversation's
 * branch to a branch of the same name and open a pull request: GitHub then runs the fork's
 * workflows on that commit, in this repository, and sends their `check_run`, `check_suite` and
 * `workflow_run` events with the same `head_sha` and `head_branch`. Their output is the fork's
 * to write. So a run is the conversation's only when all three hold: its head repository is the
 * repository itself (a workflow run says which; a check suite or check run does not, but then
 * GitHub names no pull request for a head in a fork), its branch is the conversation's, and the
 * pull requests GitHub matched to it include the conversation's, head and base in this
 * repository. Pure: table rows in test/unit/ci-ownership.test.ts.
 */
import type { CiRun } from "./payloads.js";

/** Conversation branches: `tether/<issue>-<agent>` (src/publish/publisher.ts). */
const CONVERSATION_BRANCH = /^tether\/\d+-[^/]+$/;

/**
 * The webhook's part, from the payload alone: why the run cannot be any conversation's, or null
 * when it may be (which conversation is the processor's, `ciRunRefusal`).
 */
export function screenCiRun(run: CiRun): string | null {
  if (!run.headBranch || !CONVERSATION_BRANCH.test(run.headBranch))
    return "CI on a branch that is no conversation's";
  if (run.headRepoId !== null && run.headRepoId !== run.repository.id)
    return "CI on a commit from another repository (a fork's pull request)";
  if (!run.pulls.some((p) => ownPull(run, p)))
    return "CI for no pull request of this repository (a fork's, or none)";
  return null;
}

/** The processor's part: why the run is not the conversation's, or null when it is. */
export function ciRunRefusal(
  run: CiRun,
  conversation: { branch: string; pullNumber: number },
): string | null {
  const screened = screenCiRun(run);
  if (screened) return screened;
  if (run.headBranch !== conversation.branch) return "CI on a branch that is no conversation's";
  if (!run.pulls.some((p) => p.number === conversation.pullNumber && ownPull(run, p)))
    return `CI not for the conversation's pull request #${conversation.pullNumber}`;
  return null;
}

function ownPull(run: CiRun, p: CiRun["pulls"][number]): boolean {
  return p.headRepoId === run.repository.id && p.baseRepoId === run.repository.id;
}
