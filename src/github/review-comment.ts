import type { ReplyParent, ReviewCommentPlace } from "../core/github.js";
import { httpStatusOf, isRetryable } from "./errors.js";
import type { GitHub, RepoRef } from "./types.js";

/**
 * The review comment a reply answers. A 404 means it was deleted (or its thread with it): the
 * reply is still a request, so that is an answer, not a failure. A failure that waiting may cure
 * throws, and the delivery is tried again; any other (access lost) leaves the reply without its
 * parent rather than without its task.
 */
export async function getReplyParent(
  octokit: GitHub,
  where: RepoRef & { commentId: number },
): Promise<ReplyParent> {
  try {
    const { data } = await octokit.rest.pulls.getReviewComment({
      owner: where.owner,
      repo: where.repo,
      comment_id: where.commentId,
    });
    return { kind: "found", author: data.user?.login ?? "ghost", body: data.body ?? "" };
  } catch (err) {
    if (httpStatusOf(err) === 404) return { kind: "deleted" };
    if (isRetryable(err)) throw err;
    return { kind: "unreadable" };
  }
}

/** The fields saying where a review comment sits (GitHub's webhooks and REST API share them). */
export interface ReviewCommentFields {
  path: string;
  subject_type?: string | null;
  line?: number | null;
  start_line?: number | null;
  original_line?: number | null;
  original_start_line?: number | null;
  side?: string | null;
  commit_id?: string | null;
  original_commit_id?: string | null;
}

/**
 * Where a review comment sits, read from GitHub's structured fields: for intake's request note
 * (a webhook's comment) and for the runner's review context (the REST API's). An empty commit
 * id, which GitHub does not send, counts as none.
 */
export function reviewCommentPlace(c: ReviewCommentFields): ReviewCommentPlace {
  return {
    path: c.path,
    subject: c.subject_type === "file" ? "file" : "line",
    line: c.line ?? null,
    startLine: c.start_line ?? null,
    originalLine: c.original_line ?? null,
    originalStartLine: c.original_start_line ?? null,
    side: c.side === "LEFT" || c.side === "RIGHT" ? c.side : null,
    commitId: c.commit_id || null,
    originalCommitId: c.original_commit_id || null,
  };
}
