/**
 * The turn's commit made through GitHub's Git Data API instead of a git push
 * (`changes.signedCommits`): blobs for the contents GitHub does not have yet, one tree on the
 * parent's tree, one commit, then the branch's ref. GitHub writes the commit (the app's bot as
 * author and committer, since none is sent) and signs it, so it shows "Verified" and passes a
 * ruleset that requires signed commits. It has another id than the commit in the mirror, with
 * the same tree and message; the publisher then has the mirror fetch it and the workspace stand
 * on it (Workspaces.adopt), so the next turn builds on what GitHub holds.
 *
 * What is checked here is what the git push path checks: the checks ran on the mirror's commit
 * before any request, and every tree GitHub makes must have the id of the mirror's, so GitHub
 * holds exactly what was checked.
 */
import type { ApiTreeEntry, GitDataWriter } from "../core/github.js";
import type { MirrorGit } from "./mirror-git.js";

/**
 * Most requests one publish makes through the API. GitHub's secondary rate limits allow about
 * 80 content-creating requests a minute (and 500 an hour) per app; a change that needs more
 * (one blob per new file content) is pushed with git instead.
 */
export const SIGNED_COMMIT_REQUEST_BUDGET = 80;

/** One path a commit changes, as `git diff --raw` says (MirrorGit.treeChanges). */
export interface TreeChange {
  path: string;
  mode: string;
  sha: string;
  deleted: boolean;
}

export interface TreePlan {
  /** Blobs to upload (object ids, each once): new contents GitHub does not have. */
  blobs: string[];
  entries: ApiTreeEntry[];
}

const MODES = new Set(["100644", "100755", "120000", "160000"]);

/**
 * The tree entries that turn the parent's tree into the commit's, and the blobs GitHub needs
 * first. `known`: object ids GitHub already holds (the parent's tree, the branch's, blobs
 * uploaded already). Pure.
 */
export function planTree(changes: readonly TreeChange[], known: ReadonlySet<string>): TreePlan {
  const blobs = new Set<string>();
  const entries: ApiTreeEntry[] = [];
  for (const c of changes) {
    if (c.deleted) {
      entries.push({ path: c.path, mode: "100644", type: "blob", sha: null });
      continue;
    }
    if (!MODES.has(c.mode))
      throw new Error(`cannot make ${JSON.stringify(c.path)} (mode ${c.mode}) through the API`);
    const mode = c.mode as ApiTreeEntry["mode"];
    if (mode === "160000") {
      entries.push({ path: c.path, mode, type: "commit", sha: c.sha });
      continue;
    }
    if (!known.has(c.sha)) blobs.add(c.sha);
    entries.push({ path: c.path, mode, type: "blob", sha: c.sha });
  }
  return { blobs: [...blobs], entries };
}

export type ApiCommitResult =
  | {
      kind: "published";
      /** What the branch points at now (the merge, when there was one). */
      sha: string;
      /** The turn's own commit as GitHub made it: the workspace stands on it. */
      turnSha: string;
      /** GitHub marked every commit made verified. */
      verified: boolean;
      requests: number;
    }
  /** The branch moved on GitHub meanwhile (or appeared): sync and try again. */
  | { kind: "stale" }
  /** More requests than the budget allows: nothing was sent. */
  | { kind: "over-budget"; requests: number };

/**
 * Make `commit` (parent `base`), and the merge `pushed` when it is not `commit` (parents
 * `remote`, `commit`), on GitHub through the API, and point `branch` at the result.
 */
export async function commitThroughApi(
  m: MirrorGit,
  api: () => GitDataWriter,
  p: {
    branch: string;
    /** The branch's head on GitHub, null when it does not exist yet. */
    remote: string | null;
    base: string;
    commit: string;
    pushed: string;
    budget: number;
  },
): Promise<ApiCommitResult> {
  const merge = p.pushed !== p.commit;
  const known = await m.treeObjects(p.base);
  if (p.remote && p.remote !== p.base) for (const o of await m.treeObjects(p.remote)) known.add(o);
  const turn = planTree(await m.treeChanges(p.base, p.commit), known);
  for (const b of turn.blobs) known.add(b);
  const merged =
    merge && p.remote ? planTree(await m.treeChanges(p.remote, p.pushed), known) : null;
  const requests = turn.blobs.length + 2 + (merged ? merged.blobs.length + 2 : 0) + 1; // blobs, tree, commit, ref
  if (requests > p.budget) return { kind: "over-budget", requests };

  const gh = api();
  for (const sha of [...turn.blobs, ...(merged?.blobs ?? [])]) {
    const made = await gh.createBlob(await m.blob(sha));
    if (made !== sha) throw new Error(`GitHub stored blob ${made} for ${sha}`);
  }
  const make = async (parent: string, local: string, plan: TreePlan, parents: string[]) => {
    const want = await m.treeOf(local);
    const tree = await gh.createTree(await m.treeOf(parent), plan.entries);
    if (tree !== want) throw new Error(`GitHub made tree ${tree} where the mirror has ${want}`);
    // The message as git keeps it: `git show`'s own line end dropped, one newline to close it.
    const message = `${(await m.commitInfo(local)).message.replace(/\s+$/, "")}\n`;
    return gh.createCommit({ message, tree, parents });
  };
  const first = await make(p.base, p.commit, turn, [p.base]);
  const last =
    merged && p.remote ? await make(p.remote, p.pushed, merged, [p.remote, first.sha]) : first;
  const moved = p.remote
    ? await gh.moveBranch(p.branch, last.sha)
    : await gh.createBranch(p.branch, last.sha);
  if (moved === "stale" || moved === "exists") return { kind: "stale" };
  return {
    kind: "published",
    sha: last.sha,
    turnSha: first.sha,
    verified: first.verified && last.verified,
    requests,
  };
}
