/**
 * A turn that ran into GitHub's rate limit and could not wait it out goes back to the queue until
 * the reset instead of failing (#34; the request policy waits out up to 10 minutes, a longer
 * limit fails the request at once: src/github/request-policy.ts).
 */
import type { Logger } from "../../log.js";
import type { Finish, TurnJournal } from "../../core/turn-journal.js";
import type { GitHubThread } from "../ports.js";

/**
 * A turn about to end as failed before its agent ran, because GitHub's rate limit asked for a
 * longer wait than the request policy takes (the thread's client says until when), goes back to
 * the queue until then instead (its attempt given back). True: requeued, the turn ends here.
 */
export async function requeueIfRateLimited(
  o: { journal: TurnJournal; log: Logger },
  gh: GitHubThread | undefined,
  f: Pick<Finish, "status" | "sessionId" | "usage">,
): Promise<boolean> {
  if (f.status !== "failed" || f.sessionId !== null || f.usage !== null) return false;
  const until = gh?.limitedUntil?.() ?? null;
  if (until === null) return false;
  const at = new Date(until);
  if (!(await o.journal.requeued(at))) return false;
  o.log.warn(
    { until: at.toISOString() },
    "GitHub's rate limit is spent; the task goes back to the queue until it resets",
  );
  return true;
}
