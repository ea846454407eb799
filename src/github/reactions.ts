import type { GitHub, RepoRef } from "./types.js";

export type ReactionTarget =
  | { kind: "comment"; commentId: number }
  /** A comment on a pull request's diff: another REST route than a conversation comment. */
  | { kind: "review_comment"; commentId: number }
  | { kind: "issue"; issueNumber: number };

/**
 * React to a comment, a review comment, or an issue's body. GitHub answers an existing
 * identical reaction with 200 instead of adding a second, so this is safe to repeat.
 */
export async function addReaction(
  octokit: GitHub,
  where: RepoRef & { target: ReactionTarget; content: "eyes" | "confused" },
): Promise<void> {
  const { owner, repo, target, content } = where;
  if (target.kind === "issue") {
    await octokit.rest.reactions.createForIssue({
      owner,
      repo,
      issue_number: target.issueNumber,
      content,
    });
    return;
  }
  // Both kinds of comment take the same parameters; only the route differs.
  const params = { owner, repo, comment_id: target.commentId, content };
  if (target.kind === "comment") await octokit.rest.reactions.createForIssueComment(params);
  else await octokit.rest.reactions.createForPullRequestReviewComment(params);
}
