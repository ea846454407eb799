/**
 * GitHub's Git Data API (blobs, trees, commits, refs) for one repository, as publishing with
 * signed commits uses it (src/publish/signed-commit.ts). A commit made here is GitHub's own
 * object: no author or committer is sent, so GitHub writes the app's bot as both and signs it,
 * and answers `verification.verified: true`.
 */
import type { ProbotOctokit } from "probot";
import type { ApiTreeEntry, GitDataWriter } from "../core/github.js";

type Octokit = InstanceType<typeof ProbotOctokit>;

const status = (err: unknown) => (err as { status?: number }).status;
const message = (err: unknown) => String((err as { message?: string }).message ?? "");

export function gitDataWriter(octokit: Octokit, owner: string, repo: string): GitDataWriter {
  return {
    async createBlob(content) {
      const { data } = await octokit.rest.git.createBlob({
        owner,
        repo,
        content: content.toString("base64"),
        encoding: "base64",
      });
      return data.sha;
    },
    async createTree(baseTree, entries: ApiTreeEntry[]) {
      const { data } = await octokit.rest.git.createTree({
        owner,
        repo,
        base_tree: baseTree,
        tree: entries,
      });
      return data.sha;
    },
    async createCommit(o) {
      const { data } = await octokit.rest.git.createCommit({ owner, repo, ...o });
      return {
        sha: data.sha,
        verified: data.verification?.verified ?? false,
        reason: data.verification?.reason ?? "unknown",
      };
    },
    async createBranch(branch, sha) {
      try {
        await octokit.rest.git.createRef({ owner, repo, ref: `refs/heads/${branch}`, sha });
        return "created";
      } catch (err) {
        if (status(err) === 422 && /already exists/i.test(message(err))) return "exists";
        throw err;
      }
    },
    async moveBranch(branch, sha) {
      try {
        await octokit.rest.git.updateRef({
          owner,
          repo,
          ref: `heads/${branch}`,
          sha,
          force: false,
        });
        return "moved";
      } catch (err) {
        if (status(err) === 422 && /fast.forward/i.test(message(err))) return "stale";
        throw err;
      }
    },
  };
}

/**
 * Whether a ruleset requires signed commits on `branch`. The rules for a branch are readable
 * with `metadata: read`, which every installation token has; classic branch protection's
 * `required_signatures` needs `administration: read`, which app.yml does not ask for (such a
 * branch refuses an unsigned push itself, in GitHub's words). Null when GitHub would not say.
 */
export async function requiresSignatures(
  octokit: Octokit,
  owner: string,
  repo: string,
  branch: string,
): Promise<boolean | null> {
  try {
    const { data } = await octokit.rest.repos.getBranchRules({
      owner,
      repo,
      branch,
      per_page: 100,
    });
    return data.some((r) => r.type === "required_signatures");
  } catch (err) {
    const s = status(err);
    if (s === 404 || s === 403) return null;
    throw err;
  }
}
