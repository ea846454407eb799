/** GitHubThread over an installation's Octokit (REST only). */
import type { ProbotOctokit } from "probot";
import type { ConfigResult, GitHubThread, IssueComment, IssueInfo } from "./ports.js";

type Octokit = InstanceType<typeof ProbotOctokit>;

export interface GitHubThreadOptions {
  octokit: Octokit;
  repo: string;
  /** HTTPS clone URL without credentials (src/github/git-auth.ts cloneUrlFor). */
  cloneUrl: string;
  loadConfig: (octokit: Octokit, owner: string, repo: string) => Promise<ConfigResult>;
}

export function githubThread(o: GitHubThreadOptions): GitHubThread {
  const [owner = "", repo = ""] = o.repo.split("/");
  const { octokit } = o;
  return {
    cloneUrl: o.cloneUrl,
    async token() {
      const auth = (await octokit.auth({ type: "installation" })) as { token: string };
      return auth.token;
    },
    async getIssue(issueNumber): Promise<IssueInfo> {
      const { data } = await octokit.rest.issues.get({ owner, repo, issue_number: issueNumber });
      const info: IssueInfo = {
        title: data.title,
        body: data.body ?? "",
        author: data.user?.login ?? "ghost",
        url: data.html_url,
        isPullRequest: Boolean(data.pull_request),
      };
      if (data.pull_request) {
        const pr = await octokit.rest.pulls.get({ owner, repo, pull_number: issueNumber });
        info.pullRequest = {
          headRef: pr.data.head.ref,
          baseRef: pr.data.base.ref,
          headSha: pr.data.head.sha,
        };
      }
      return info;
    },
    async listComments(issueNumber): Promise<IssueComment[]> {
      const all = await octokit.paginate(octokit.rest.issues.listComments, {
        owner,
        repo,
        issue_number: issueNumber,
        per_page: 100,
      });
      return all.map((c) => ({
        id: c.id,
        author: c.user?.login ?? "ghost",
        url: c.html_url,
        body: c.body ?? "",
        createdAt: c.created_at,
      }));
    },
    async createComment(issueNumber, body) {
      const { data } = await octokit.rest.issues.createComment({
        owner,
        repo,
        issue_number: issueNumber,
        body,
      });
      return data.id;
    },
    async updateComment(commentId, body) {
      await octokit.rest.issues.updateComment({ owner, repo, comment_id: commentId, body });
    },
    loadConfig: () => o.loadConfig(octokit, owner, repo),
  };
}
