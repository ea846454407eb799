/**
 * After a pull request turn: the agent's line comments (the line-comment tool's file) posted as
 * ONE review. Each comment that lands on the diff as GitHub computes it goes on its line; the
 * others go into the review's body as `path:line` and their text, so none is lost (GitHub would
 * refuse the whole review for one line outside the diff). The agent never approves.
 */
import type { Logger } from "../../log.js";
import {
  allInBody,
  planReview,
  type ReviewPlan,
  type ReviewRequest,
} from "../../review/review-plan.js";
import type { GitHubThread } from "../ports.js";

export type ReviewOutcome =
  | { kind: "posted"; url: string; onLines: number; inBody: number; event: string }
  | { kind: "failed"; detail: string };

export async function postReview(r: {
  gh: GitHubThread;
  pullNumber: number;
  /** The pull request's head commit the turn ran on. */
  commitId: string;
  review: ReviewRequest;
  /** The agent's `requestChanges` setting. */
  allowChanges: boolean;
  scrub: (s: string) => string;
  log: Logger;
}): Promise<ReviewOutcome | null> {
  const { gh, review, log } = r;
  if (!review.comments.length && !(r.allowChanges && review.requestChanges)) return null;
  if (!gh.listPullFiles || !gh.createReview) {
    log.warn("this GitHub connection cannot post reviews; the line comments are dropped");
    return { kind: "failed", detail: "this GitHub connection cannot post reviews" };
  }
  const scrubbed: ReviewRequest = {
    // The path is the agent's text too: outside the diff it is written into the body (#38).
    comments: review.comments.map((c) => ({ ...c, path: r.scrub(c.path), body: r.scrub(c.body) })),
    requestChanges: review.requestChanges === null ? null : r.scrub(review.requestChanges),
  };
  try {
    const files = await gh.listPullFiles(r.pullNumber);
    let plan = planReview(scrubbed, files, r.allowChanges);
    let posted;
    try {
      posted = await gh.createReview(r.pullNumber, { commitId: r.commitId, ...withBody(plan) });
    } catch (err) {
      // The diff moved under the turn (a push), or GitHub judges a line differently: once
      // more, every comment in the body.
      if ((err as { status?: number }).status !== 422 || plan.comments.length === 0) throw err;
      log.warn(
        { err: (err as Error).message, comments: plan.comments.length },
        "GitHub refused the review's line comments; posting them in its body",
      );
      plan = allInBody(plan, scrubbed);
      posted = await gh.createReview(r.pullNumber, { commitId: r.commitId, ...withBody(plan) });
    }
    log.info(
      { review: posted.id, onLines: plan.comments.length, inBody: plan.outside.length },
      "review posted",
    );
    return {
      kind: "posted",
      url: posted.url,
      onLines: plan.comments.length,
      inBody: plan.outside.length,
      event: plan.event,
    };
  } catch (err) {
    const detail = r.scrub((err as Error).message);
    log.warn({ err: detail }, "could not post the review");
    return { kind: "failed", detail };
  }
}

/** GitHub wants a body with a COMMENT review: every comment on the diff leaves it empty. */
function withBody(plan: ReviewPlan): ReviewPlan {
  return plan.body ? plan : { ...plan, body: "Comments on this turn's lines of the diff." };
}

/** The line under the answer that says where the review is. */
export function renderReviewLine(o: ReviewOutcome): string {
  if (o.kind === "failed")
    return `⚠️ The line comments of this turn could not be posted as a review: ${o.detail.slice(0, 300)}`;
  const n = o.onLines + o.inBody;
  const what = `${n} comment${n === 1 ? "" : "s"}`;
  const where =
    o.inBody === 0
      ? "on the diff"
      : o.onLines === 0
        ? "in its body (outside the diff)"
        : `${o.onLines} on the diff, ${o.inBody} in its body (outside the diff)`;
  const kind = o.event === "REQUEST_CHANGES" ? "Review requesting changes" : "Review";
  return `📝 ${kind} posted with ${what} (${where}): ${o.url}`;
}
