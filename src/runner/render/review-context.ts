/**
 * A pull request's review discussion as a fresh turn's context. The conversation (issue
 * comments) leaves it out, yet "address the review" is mostly about what reviewers wrote on the
 * diff, so a fresh turn reads it too. Each item carries the same location note intake puts in
 * front of a review comment that asks for an agent, so context and request read alike.
 */
import { describeReviewPlace, describeReviewState } from "../../intake/review-request.js";
import type { IssueComment, ReviewDiscussion } from "../ports.js";
import type { PromptReviewItem, ReviewContext } from "./prompts.js";

/**
 * Pure: the items to show, oldest first. `asked` holds the URLs of this turn's requests (they
 * are shown as the instruction, not again as context); `skip` drops anything else (Tether's own
 * in-progress comments).
 */
export function reviewContext(
  d: ReviewDiscussion,
  asked: ReadonlySet<string>,
  skip: (c: IssueComment) => boolean = () => false,
): ReviewContext {
  const keep = (c: IssueComment) => !asked.has(c.url) && !skip(c);
  const items: PromptReviewItem[] = [
    ...d.comments.filter(keep).map((c): PromptReviewItem => ({
      kind: "review-comment",
      author: c.author,
      url: c.url,
      body: c.body,
      createdAt: c.createdAt,
      location: describeReviewPlace(c.place),
    })),
    ...d.reviews
      .filter((r) => r.body.trim() !== "" && keep(r))
      .map((r): PromptReviewItem => ({
        kind: "review",
        author: r.author,
        url: r.url,
        body: r.body,
        createdAt: r.createdAt,
        location: describeReviewState(r.state, r.commitId),
      })),
  ];
  // Array.prototype.sort is stable: items at the same instant keep comments before reviews.
  items.sort((a, b) => time(a.createdAt) - time(b.createdAt));
  return { items, unread: d.truncated };
}

/** An unparseable time sorts first rather than breaking the order of the rest. */
function time(iso: string | undefined): number {
  const t = Date.parse(iso ?? "");
  return Number.isNaN(t) ? 0 : t;
}
