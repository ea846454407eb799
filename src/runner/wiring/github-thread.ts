/** GitHubThread over an installation's Octokit (REST only). */
import type { ProbotOctokit } from "probot";
import type { RequestCounter } from "../../github/request-count.js";
import type {
  ConfigResult,
  GitHubThread,
  IssueComment,
  IssueInfo,
  PullRef,
  RepoWriter,
  ReviewDiscussion,
  ReviewLineComment,
  ReviewSummary,
} from "../ports.js";

import { appBotLogin } from "../../github/app-login.js";
import { reviewCommentPlace } from "../../github/review-comment.js";
import { pushToken } from "../../github/scoped-auth.js";
import { gitDataWriter, requiresSignatures } from "../../github/git-data.js";

type Octokit = InstanceType<typeof ProbotOctokit>;

/**
 * How many of a pull request's review comments one turn reads. A prompt shows far fewer
 * (prompts.ts LIMITS.review); this only keeps a PR with tens of thousands of comments from
 * costing hundreds of requests. They are read newest first, so the cap drops the oldest.
 */
export const REVIEW_FETCH_CAP = 1000;

export interface GitHubThreadOptions {
  octokit: Octokit;
  repo: string;
  /** HTTPS clone URL without credentials (src/github/git-auth.ts cloneUrlFor). */
  cloneUrl: string;
  loadConfig: (octokit: Octokit, owner: string, repo: string) => Promise<ConfigResult>;
  /** What publishing needs beyond the installation's Octokit; without it, no writer. */
  publishing?: {
    /** The app's own (JWT) Octokit: it mints push tokens. */
    app: () => Promise<Octokit>;
    installationId: number;
    /** GitHub's id of the repository: push tokens name it (src/github/scoped-auth.ts). */
    repoId: number | null;
    /** https://github.com or GHE's web origin. */
    webUrl: string;
    /**
     * An Octokit for the Git Data API: this repository alone, push permissions
     * (src/github/scoped-auth.ts pushPermissions), its requests counted with the turn's.
     */
    writeClient: (o: { workflows: boolean }) => Octokit;
  };
  /** The token git fetches the mirror with (scoped: this repository, contents read). */
  gitToken?: () => Promise<string>;
  /** What counts `octokit`'s requests (src/github/request-count.ts); the thread reports it. */
  counter?: RequestCounter;
}

export function githubThread(o: GitHubThreadOptions): GitHubThread {
  const [owner = "", repo = ""] = o.repo.split("/");
  const { octokit } = o;
  const { counter } = o;
  return {
    cloneUrl: o.cloneUrl,
    ...(counter
      ? {
          requests: () => counter.count,
          limitedUntil: () => counter.limitedUntil,
          notModified: () => counter.notModified,
        }
      : {}),
    async token() {
      if (o.gitToken) return o.gitToken();
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
          headRepo: pr.data.head.repo?.full_name ?? null,
          state: pr.data.state,
        };
      }
      return info;
    },
    async branchHead(branch, signal) {
      const data = await getBranch(octokit, owner, repo, branch, signal);
      // A renamed branch answers (through a redirect) as its new name: the name asked is gone.
      return data?.name === branch ? data.commit.sha : null;
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
    async listReviewDiscussion(pullNumber): Promise<ReviewDiscussion> {
      const params = { owner, repo, pull_number: pullNumber, per_page: 100 };
      let truncated = false;
      const [lineComments, reviews] = await Promise.all([
        octokit.paginate(
          octokit.rest.pulls.listReviewComments,
          { ...params, sort: "created", direction: "desc" },
          capped(() => (truncated = true)),
        ),
        // Reviews list oldest first with no way to reverse, so a cap would drop the newest:
        // read them all, as the conversation is.
        octokit.paginate(octokit.rest.pulls.listReviews, params),
      ]);
      return {
        comments: lineComments
          .map((c): ReviewLineComment => ({
            id: c.id,
            author: c.user?.login ?? "ghost",
            url: c.html_url,
            body: c.body ?? "",
            createdAt: c.created_at,
            place: reviewCommentPlace(c),
          }))
          .reverse(),
        // A review's body is usually empty (the comments carry it); a pending one is a draft.
        reviews: reviews
          .filter((r) => (r.body ?? "").trim() !== "" && r.state.toUpperCase() !== "PENDING")
          .map((r): ReviewSummary => ({
            id: r.id,
            author: r.user?.login ?? "ghost",
            url: r.html_url,
            body: r.body ?? "",
            createdAt: r.submitted_at ?? "",
            state: r.state.toLowerCase(),
            commitId: r.commit_id ?? null,
          })),
        truncated,
      };
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
    async listPullFiles(pullNumber) {
      // GitHub lists at most 3000 files; a `patch` is absent for binary or very large diffs.
      const files = await octokit.paginate(octokit.rest.pulls.listFiles, {
        owner,
        repo,
        pull_number: pullNumber,
        per_page: 100,
      });
      return files.map((f) => ({ filename: f.filename, patch: f.patch ?? null }));
    },
    async createReview(pullNumber, r) {
      const { data } = await octokit.rest.pulls.createReview({
        owner,
        repo,
        pull_number: pullNumber,
        commit_id: r.commitId,
        event: r.event,
        body: r.body,
        comments: r.comments,
      });
      return { id: data.id, url: data.html_url };
    },
    async updateComment(commentId, body) {
      await octokit.rest.issues.updateComment({ owner, repo, comment_id: commentId, body });
    },
    loadConfig: () => o.loadConfig(octokit, owner, repo),
    ...(o.publishing ? { writer: repoWriter(octokit, owner, repo, o.publishing) } : {}),
  };
}

/** The app's bot account, looked up once per process. */
let appIdentity: Promise<{ name: string; email: string }> | undefined;

function repoWriter(
  octokit: Octokit,
  owner: string,
  repo: string,
  p: NonNullable<GitHubThreadOptions["publishing"]>,
): RepoWriter {
  const noreply = `users.noreply.${new URL(p.webUrl).hostname.replace(/^www\./, "")}`;
  const pullRef = (d: {
    number: number;
    html_url: string;
    state: string;
    merged_at?: string | null;
    draft?: boolean;
  }): PullRef => ({
    number: d.number,
    url: d.html_url,
    state: d.state === "closed" ? "closed" : "open",
    merged: Boolean(d.merged_at),
    draft: d.draft ?? false,
  });
  const email = async (login: string) => {
    const { data } = await octokit.rest.users.getByUsername({ username: login });
    return `${data.id}+${login}@${noreply}`;
  };
  return {
    webUrl: `${p.webUrl}/${owner}/${repo}`,
    async pushToken({ workflows }) {
      return pushToken(await p.app(), {
        installationId: p.installationId,
        repo: `${owner}/${repo}`,
        repoId: p.repoId,
        workflows,
      });
    },
    async branch(name) {
      const data = await getBranch(octokit, owner, repo, name);
      return data ? { sha: data.commit.sha, protected: data.protected } : null;
    },
    async findPull(branch) {
      const { data } = await octokit.rest.pulls.list({
        owner,
        repo,
        head: `${owner}:${branch}`,
        state: "all",
        sort: "created",
        direction: "desc",
        per_page: 10,
      });
      const own = data.find((d) => d.head.ref === branch);
      return own ? pullRef(own) : null;
    },
    async getPull(number) {
      try {
        const { data } = await octokit.rest.pulls.get({ owner, repo, pull_number: number });
        return pullRef(data);
      } catch (err) {
        if ((err as { status?: number }).status === 404) return null;
        throw err;
      }
    },
    async createPull(c) {
      const { data } = await octokit.rest.pulls.create({ owner, repo, ...c });
      return pullRef(data);
    },
    identity() {
      appIdentity ??= (async () => {
        const login = await appBotLogin(await p.app());
        return { name: login, email: await email(login).catch(() => `${login}@${noreply}`) };
      })();
      appIdentity.catch(() => (appIdentity = undefined));
      return appIdentity;
    },
    async coAuthor(login) {
      return `${login} <${await email(login).catch(() => `${login}@${noreply}`)}>`;
    },
    gitData: (o) => gitDataWriter(p.writeClient(o), owner, repo),
    requiresSignatures: (branch) => requiresSignatures(octokit, owner, repo, branch),
  };
}

/** A branch as GitHub has it now; null when there is none of that name (404). */
async function getBranch(
  octokit: Octokit,
  owner: string,
  repo: string,
  branch: string,
  signal?: AbortSignal,
): Promise<{ name: string; commit: { sha: string }; protected: boolean } | null> {
  try {
    const { data } = await octokit.rest.repos.getBranch({
      owner,
      repo,
      branch,
      ...(signal ? { request: { signal } } : {}),
    });
    return data;
  } catch (err) {
    if ((err as { status?: number }).status === 404) return null;
    throw err;
  }
}

/**
 * A paginate map function that stops after REVIEW_FETCH_CAP items, telling `cut` when there
 * was more to read.
 */
function capped<T>(cut: () => void) {
  let seen = 0;
  return (res: { data: T[]; headers: { link?: string } }, done: () => void): T[] => {
    const room = REVIEW_FETCH_CAP - seen;
    seen += res.data.length;
    if (seen < REVIEW_FETCH_CAP) return res.data;
    done();
    if (seen > REVIEW_FETCH_CAP || /rel="next"/.test(res.headers.link ?? "")) cut();
    return res.data.slice(0, room);
  };
}
