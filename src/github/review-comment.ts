import type { ReplyParent } from "../core/github.js";
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
