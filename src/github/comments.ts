import type { GitHub, RepoRef } from "./types.js";

/** GitHub refuses comment bodies over 65 536 characters. */
export const MAX_COMMENT_CHARS = 65_536;

/** Post a comment on an issue or pull request; returns its id. */
export async function postComment(
  octokit: GitHub,
  where: RepoRef & { issueNumber: number; body: string },
): Promise<number> {
  const body =
    where.body.length > MAX_COMMENT_CHARS
      ? `${where.body.slice(0, MAX_COMMENT_CHARS - 40)}\n\n… (cut to fit GitHub's limit)`
      : where.body;
  const { data } = await octokit.rest.issues.createComment({
    owner: where.owner,
    repo: where.repo,
    issue_number: where.issueNumber,
    body,
  });
  return data.id;
}
