/**
 * Preparing a key's checkout for a turn: the repository's mirror synced, then the checkout
 * cloned from it (first turn) or brought to the commit it follows (later turns), by sandboxed
 * git only. Later turns fast-forward only when that cannot touch the agent's own work; otherwise
 * the checkout is left as it is and the returned `update` says why. Workspaces.prepare()
 * (workspace.ts) checks the request and calls these.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log.js";
import type { TaskKey } from "../core/task.js";
import type { AfterTurn } from "./after-turn.js";
import { planUpdate, readState, type LeftReason, type LocalState } from "./checkout-state.js";
import { gitFailure, type FailureContext } from "./errors.js";
import { isObjectId, refFiles } from "./git-refs.js";
import { pullRef, type Mirrors, type MirrorSync } from "./mirror.js";
import type { SandboxedGit } from "./sandboxed-git.js";
import { sweepStale } from "./scratch.js";
import { CLONE, FETCH, MOVE, STATE } from "./scripts.js";

export interface PullRequestRef {
  number: number;
  /** The head branch's name; the workspace checks out a local branch of this name. */
  headRef: string;
  /**
   * The head commit GitHub reported when the turn began: logged when the mirror's head differs,
   * and what the mirror must already hold for the fetch to be skipped (`serverHead`).
   */
  headSha?: string;
  /** The branch the pull request merges into; with `serverHead`, checked like the head. */
  baseRef?: string;
}

export interface PrepareRequest extends TaskKey {
  /** HTTPS clone URL without credentials (see cloneUrlFor). */
  cloneUrl: string;
  /** Installation token: used by the mirror's fetch only, through git's environment. */
  token: string;
  /** Set for pull requests: the workspace follows the PR's head instead of the default branch. */
  pullRequest?: PullRequestRef | undefined;
  /**
   * An issue's conversation branch (`tether/<issue>-<agent>`): followed instead of the default
   * branch once it exists on the server. Ignored for pull requests.
   */
  follow?: string | undefined;
  /**
   * A branch's commit on GitHub now (null: no such branch), asked by REST. With it, a later
   * turn skips the mirror's `git fetch` when the mirror already holds every ref the turn stands
   * on (the default branch, the conversation branch or the pull request's head and base) as
   * GitHub has them, and was fetched whole less than `mirrorFreshMs` ago. Absent, or when it
   * fails: the mirror fetches.
   */
  serverHead?: ((branch: string, signal?: AbortSignal) => Promise<string | null>) | undefined;
  /** Aborting stops the running git and rejects with a "cancelled" WorkspaceError. */
  signal?: AbortSignal | undefined;
}

export type WorkspaceUpdate =
  | { kind: "cloned" }
  /** Already at the upstream commit; `ahead` counts local commits upstream does not have. */
  | { kind: "up-to-date"; ahead: number }
  | { kind: "fast-forwarded"; from: string; to: string }
  /** The branch to follow did not exist locally (a renamed PR head); it was created and checked out. */
  | { kind: "switched"; branch: string }
  | { kind: "left"; reason: LeftReason; detail: string };

export interface Workspace {
  /** Absolute, symlink-free host path; the same string on every turn of the key. */
  dir: string;
  /** The repository's mirror (host path): the workspace's read-only `origin` in the sandbox. */
  origin: string;
  /** The repository's default branch, as GitHub says. */
  defaultBranch: string;
  /** True when this call cloned the repository. */
  created: boolean;
  /** HEAD after preparing. */
  headSha: string;
  /** Checked-out branch, null when HEAD is detached. */
  branch: string | null;
  /**
   * The ref the workspace follows, and its commit as Tether's own mirror holds it (the host's
   * record, never the checkout's: the agent can move its own refs; "" when the mirror lacks it).
   */
  upstream: { ref: string; sha: string };
  update: WorkspaceUpdate;
}

/** Temporary clones live beside the workspaces (same file system, so the final rename is atomic). */
const TMP_DIR = ".tmp";

/** What preparing a checkout works with: the Workspaces' own. */
export interface CheckoutDeps {
  /** The workspace root (real path); temporary clones go in its TMP_DIR. */
  root: string;
  mirrors: Mirrors;
  git: SandboxedGit;
  log: Logger;
}

/** The key's first turn: the mirror synced, a clone of it made aside and renamed into `dir`. */
export async function cloneCheckout(
  deps: CheckoutDeps,
  dir: string,
  req: PrepareRequest,
  ctx: FailureContext,
): Promise<Workspace> {
  const pr = req.pullRequest;
  const follow = pr ? undefined : req.follow;
  const mirrorUpstream = pr ? pullRef(pr.number) : follow ? `refs/heads/${follow}` : undefined;
  const mirror = await deps.mirrors.sync({
    repoId: req.repoId,
    repo: req.repo,
    cloneUrl: req.cloneUrl,
    token: req.token,
    pullRequest: pr?.number,
    ...(mirrorUpstream ? { report: [mirrorUpstream] } : {}),
    signal: req.signal,
  });
  const target = targetBranch(pr, follow, mirror);
  const upstreamRef = upstreamOf(pr, target);
  const tmpRoot = path.join(deps.root, TMP_DIR);
  await fs.mkdir(tmpRoot, { recursive: true });
  await sweepStale(tmpRoot, deps.log);
  const tmp = path.join(tmpRoot, `clone-${Date.now()}-${randomBytes(4).toString("hex")}`);
  await fs.mkdir(tmp);
  try {
    const r = await deps.git.run(tmp, CLONE, [target, upstreamRef, pr ? String(pr.number) : ""], {
      origin: mirror.dir,
      signal: req.signal,
    });
    const state = readState(r, ctx, "clone");
    await fs.mkdir(path.dirname(dir), { recursive: true });
    await fs.rmdir(dir).catch(() => undefined); // an empty leftover; a full one makes rename fail
    await fs.rename(tmp, dir);
    const hostSha = await mirrorSha(mirror, mirrorRefOf(upstreamRef));
    return result(dir, mirror, state, upstreamRef, hostSha, { kind: "cloned" }, true);
  } catch (err) {
    await fs.rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * A later turn: the checkout looked at (while the mirror syncs, or as the last turn left it,
 * `remembered`), fetched from the mirror when it is behind, and moved when planUpdate says so.
 */
export async function updateCheckout(
  deps: CheckoutDeps,
  dir: string,
  req: PrepareRequest,
  ctx: FailureContext,
  remembered: AfterTurn | undefined,
): Promise<Workspace> {
  const pr = req.pullRequest;
  const follow = pr ? undefined : req.follow;
  const mirrorDir = deps.mirrors.pathFor(req.repoId);
  // The default branch as the mirror last saw it: the checkout can be looked at while the
  // mirror fetches (it rarely changes; when it did, the look is taken again). An issue's
  // conversation branch, once the mirror has it, is followed instead.
  const mirrorDefault = await mirrorHead(mirrorDir);
  const knownDefault = pr ? null : mirrorDefault;
  const knownFollow =
    follow && (await refFiles(mirrorDir).resolve(`refs/heads/${follow}`))?.sha ? follow : null;
  const guess = knownFollow ?? knownDefault;
  const look = (target: string) => {
    const upstream = upstreamOf(pr, target);
    const after = remembered?.look?.result;
    if (after && remembered.target === target && remembered.upstreamRef === upstream) {
      deps.log.debug({ repo: req.repo, dir }, "checkout as the last turn left it");
      return Promise.resolve(after);
    }
    return deps.git.run(dir, STATE, [target, upstream], {
      origin: mirrorDir,
      signal: req.signal,
    });
  };
  const early = pr ? look(pr.headRef) : guess ? look(guess) : null;
  early?.catch(() => undefined); // awaited below
  const mirrorRef = (target: string) => (pr ? pullRef(pr.number) : `refs/heads/${target}`);
  const mirror = await deps.mirrors.sync({
    repoId: req.repoId,
    repo: req.repo,
    cloneUrl: req.cloneUrl,
    token: req.token,
    pullRequest: pr?.number,
    expect: await serverRefs(deps, req, mirrorDefault),
    report: pr
      ? [pullRef(pr.number)]
      : [knownDefault, follow].filter((b): b is string => !!b).map((b) => `refs/heads/${b}`),
    signal: req.signal,
  });
  const target = targetBranch(pr, follow, mirror);
  const upstreamRef = upstreamOf(pr, target);
  let mirrorSha = mirror.refs[mirrorRef(target)];
  if (mirrorSha === undefined) {
    // The default branch changed under us: read its commit now.
    mirrorSha = (await refFiles(mirror.dir).resolve(mirrorRef(target)))?.sha ?? null;
  }
  let state =
    early && (pr || guess === target)
      ? readState(await early, ctx, "update")
      : readState(await look(target), ctx, "update");
  if (mirrorSha !== null && state.upstreamSha !== mirrorSha) {
    // The mirror has what the checkout has not seen yet: fetch it from there, look again.
    state = readState(
      await deps.git.run(dir, FETCH, [target, upstreamRef, pr ? String(pr.number) : ""], {
        origin: mirror.dir,
        signal: req.signal,
      }),
      ctx,
      "fetch",
    );
  }
  if (pr?.headSha && state.upstreamSha !== pr.headSha) {
    deps.log.debug(
      { repo: req.repo, pr: pr.number, expected: pr.headSha, got: state.upstreamSha },
      "pull request head moved since the webhook",
    );
  }
  const plan = planUpdate({
    currentBranch: state.branch,
    targetBranch: target,
    targetExists: state.targetSha !== null,
    trackedChanges: state.trackedChanges,
    operationInProgress: state.operationInProgress,
    ahead: state.ahead,
    behind: state.behind,
  });
  const upstream = state.upstreamSha ?? "";
  switch (plan.action) {
    case "up-to-date":
      return result(dir, mirror, state, upstreamRef, mirrorSha, {
        kind: "up-to-date",
        ahead: plan.ahead,
      });
    case "leave":
      return result(dir, mirror, state, upstreamRef, mirrorSha, {
        kind: "left",
        reason: plan.reason,
        detail: plan.detail,
      });
    case "fast-forward":
    case "create-branch": {
      const ff = plan.action === "fast-forward";
      const moved = await deps.git.run(dir, MOVE, [ff ? "ff" : "create", target, upstreamRef], {
        origin: mirror.dir,
        signal: req.signal,
      });
      if (moved.stoppedBy) throw gitFailure(ctx, "update", moved.stderr, moved.stoppedBy);
      if (moved.exitCode !== 0) {
        if (/untracked working tree files would be overwritten/i.test(moved.stderr)) {
          return result(dir, mirror, state, upstreamRef, mirrorSha, {
            kind: "left",
            reason: "untracked-files-in-the-way",
            detail: "untracked files would be overwritten by the update",
          });
        }
        throw gitFailure(ctx, "update", moved.stderr, "git-failed", moved.exitCode);
      }
      const after = { ...state, headSha: upstream, branch: target };
      return result(
        dir,
        mirror,
        after,
        upstreamRef,
        mirrorSha,
        ff
          ? { kind: "fast-forwarded", from: state.targetSha as string, to: upstream }
          : { kind: "switched", branch: target },
      );
    }
  }
}

/**
 * What GitHub says the refs this turn stands on point at, for the mirror to compare before it
 * fetches: the default branch (as the mirror last saw it), and the conversation branch or the
 * pull request's base branch and head. Undefined when there is nothing to skip the fetch on:
 * no `serverHead`, a mirror not fetched whole lately, a pull request without its head commit,
 * or GitHub did not answer (the fetch then tells the real story).
 */
async function serverRefs(
  deps: CheckoutDeps,
  req: PrepareRequest,
  mirrorDefault: string | null,
): Promise<Record<string, string | null> | undefined> {
  const ask = req.serverHead;
  const pr = req.pullRequest;
  if (!ask || mirrorDefault === null || !deps.mirrors.recentlyFetched(req)) return;
  if (pr && !(pr.headSha && isObjectId(pr.headSha) && pr.baseRef)) return;
  const branches = [
    ...new Set([mirrorDefault, ...(pr ? [pr.baseRef!] : req.follow ? [req.follow] : [])]),
  ];
  try {
    const heads = await Promise.all(branches.map((b) => ask(b, req.signal)));
    if (heads.some((h) => h !== null && !isObjectId(h))) return;
    const out: Record<string, string | null> = {};
    branches.forEach((b, i) => (out[`refs/heads/${b}`] = heads[i] ?? null));
    if (pr) out[pullRef(pr.number)] = pr.headSha!;
    return out;
  } catch (err) {
    deps.log.debug(
      { repo: req.repo, err: err instanceof Error ? err.message : String(err) },
      "could not ask GitHub for the turn's branches; the mirror fetches",
    );
    return;
  }
}

/** A ref's commit in the mirror: from the sync's report when it has it, else read now. */
async function mirrorSha(mirror: MirrorSync, ref: string): Promise<string | null> {
  const reported = mirror.refs[ref];
  if (reported !== undefined) return reported;
  return (await refFiles(mirror.dir).resolve(ref))?.sha ?? null;
}

function result(
  dir: string,
  mirror: MirrorSync,
  local: LocalState,
  upstreamRef: string,
  /** The upstream's commit in the mirror (upstream.sha): Tether's record, not the checkout's. */
  hostSha: string | null,
  update: WorkspaceUpdate,
  created = false,
): Workspace {
  return {
    dir,
    origin: mirror.dir,
    defaultBranch: mirror.defaultBranch,
    created,
    headSha: local.headSha !== null && isObjectId(local.headSha) ? local.headSha : "",
    branch: local.branch,
    upstream: { ref: upstreamRef, sha: hostSha !== null && isObjectId(hostSha) ? hostSha : "" },
    update,
  };
}

/**
 * The branch a checkout follows, once the mirror is synced: the pull request's head; else the
 * issue's conversation branch, once the server has it; else the default branch.
 */
function targetBranch(
  pr: PullRequestRef | undefined,
  follow: string | undefined,
  mirror: MirrorSync,
): string {
  if (pr) return pr.headRef;
  return follow && mirror.refs[`refs/heads/${follow}`] ? follow : mirror.defaultBranch;
}

/** The mirror's ref for a checkout's upstream ref (`refs/remotes/origin/<b>` is `refs/heads/<b>`). */
export function mirrorRefOf(upstreamRef: string): string {
  const remote = "refs/remotes/origin/";
  return upstreamRef.startsWith(remote)
    ? `refs/heads/${upstreamRef.slice(remote.length)}`
    : upstreamRef;
}

/** The checkout's ref for what it follows: the pull request's own ref, or origin's branch. */
function upstreamOf(pr: PullRequestRef | undefined, target: string): string {
  return pr ? pullRef(pr.number) : `refs/remotes/origin/${target}`;
}

/** The mirror's HEAD branch (Tether's own file), or null when there is no mirror yet. */
async function mirrorHead(dir: string): Promise<string | null> {
  const head = await refFiles(dir)
    .read("HEAD")
    .catch(() => undefined);
  return head?.kind === "symref" && head.target.startsWith("refs/heads/")
    ? head.target.slice("refs/heads/".length)
    : null;
}
