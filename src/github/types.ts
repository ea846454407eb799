import type { ProbotOctokit } from "probot";

/** An installation-authenticated Octokit, as Probot's `app.auth(installationId)` returns it. */
export type GitHub = ProbotOctokit;

export interface RepoRef {
  owner: string;
  repo: string;
}
