/**
 * One working directory per task key, cloned on the key's first turn and updated on later ones.
 *
 * Two kinds of git, kept apart (docs/security.md):
 * - Tether's own, on the host, only in the repository's mirror (mirror.ts): the network, the
 *   installation token, config only Tether writes.
 * - In the workspace, inside the sandbox (sandboxed-git.ts): clone from the mirror, fetch from
 *   it, look at the checkout, fast-forward. No token and no network; whatever the checkout's
 *   config or links make git do stays in the sandbox.
 *
 * The path never changes for a key, and inside the sandbox it is always /workspace, where the
 * agent CLI files its sessions. Later turns fast-forward only when that cannot touch the
 * agent's own work; otherwise the checkout is left as it is and the returned `update` says why.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log.js";
import type { Sandbox } from "../sandbox/sandbox.js";
import { agentControlMasks, type AgentControlMasks } from "./agent-control.js";
import { gitFailure, tail, WorkspaceError, type FailureContext } from "./errors.js";
import { readProjectInstructions, type ProjectInstructions } from "./project-instructions.js";
import { hostGit, type HostGit } from "./git.js";
import { isObjectId, isValidBranchName, refFiles } from "./git-refs.js";
import { MIRROR_FRESH_MS, Mirrors, pullRef, type MirrorSync } from "./mirror.js";
import type { TaskKey } from "../core/task.js";
import { workspacePath } from "./paths.js";
import {
  parseReport,
  sandboxedGit,
  type ScriptResult,
  type SandboxedGit,
} from "./sandboxed-git.js";

export { classifyGitFailure, WorkspaceError } from "./errors.js";
export { isValidBranchName } from "./git-refs.js";
export { workspacePath } from "./paths.js";

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

/** Why a later turn left the checkout as it was. */
export type LeftReason =
  | "uncommitted-changes"
  | "diverged"
  | "other-branch"
  | "detached"
  | "operation-in-progress"
  | "untracked-files-in-the-way";

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
  /** The ref the workspace follows and the commit it pointed at after the update. */
  upstream: { ref: string; sha: string };
  update: WorkspaceUpdate;
}

/** What a later turn sees in the checkout, gathered before deciding how to update it. */
export interface CheckoutState {
  /** Branch HEAD points at; null when detached. */
  currentBranch: string | null;
  /** The branch the workspace follows: the default branch, or the PR's head ref. */
  targetBranch: string;
  targetExists: boolean;
  /** Tracked files modified, staged or unmerged. Untracked files do not count: a fast-forward keeps them. */
  trackedChanges: boolean;
  /** A merge, rebase, cherry-pick, revert or bisect is under way. */
  operationInProgress: boolean;
  /** Commits on the target branch that upstream lacks, and the reverse (0 when the target is missing). */
  ahead: number;
  behind: number;
}

export type UpdatePlan =
  | { action: "up-to-date"; ahead: number }
  | { action: "fast-forward" }
  | { action: "create-branch" }
  | { action: "leave"; reason: LeftReason; detail: string };

/** How a later turn updates the checkout: only moves that cannot lose the agent's work. */
export function planUpdate(s: CheckoutState): UpdatePlan {
  if (s.targetExists && s.currentBranch === s.targetBranch && s.behind === 0) {
    return { action: "up-to-date", ahead: s.ahead };
  }
  if (s.operationInProgress) {
    return leave("operation-in-progress", "a merge, rebase or cherry-pick is under way");
  }
  if (s.currentBranch === null) {
    return leave("detached", `HEAD is detached, not on ${s.targetBranch}`);
  }
  if (!s.targetExists) {
    return s.trackedChanges
      ? leave("uncommitted-changes", `${s.targetBranch} does not exist and files are modified`)
      : { action: "create-branch" };
  }
  if (s.currentBranch !== s.targetBranch) {
    return leave("other-branch", `on ${s.currentBranch}, not ${s.targetBranch}`);
  }
  if (s.trackedChanges) {
    return leave("uncommitted-changes", `files are modified; upstream is ${s.behind} ahead`);
  }
  if (s.ahead > 0) {
    return leave("diverged", `${s.ahead} local and ${s.behind} upstream commits differ`);
  }
  return { action: "fast-forward" };
}

function leave(reason: LeftReason, detail: string): UpdatePlan {
  return { action: "leave", reason, detail };
}

export interface WorkspacesOptions {
  /** TETHER_WORKSPACE_DIR. */
  root: string;
  sandbox: Sandbox;
  log: Logger;
  /** Tether's own git HOME (empty; never the agent's). Default `<root>/.git-home`. */
  gitHome?: string;
  gitPath?: string;
  /** Limit for each git step. Default 10 minutes (a first clone of a large repository). */
  timeoutMs?: number;
  /** How old the mirror's other branches may be when a turn skips its fetch (PrepareRequest.serverHead). Default 10 minutes. */
  mirrorFreshMs?: number;
}

/** Temporary clones live beside the workspaces (same file system, so the final rename is atomic). */
const TMP_DIR = ".tmp";
const MIRRORS_DIR = ".mirrors";
/** Per-publish directories a sandboxed step writes its bundle into (never a workspace). */
const OUTBOX_DIR = ".outbox";
/** Per-run copies of a base branch's agent-control files (agent-control.ts); removed after the run. */
const MASKS_DIR = ".masks";
const STALE_TMP_MS = 6 * 60 * 60_000;

const OPERATION_MARKERS =
  "MERGE_HEAD rebase-merge rebase-apply CHERRY_PICK_HEAD REVERT_HEAD BISECT_LOG";

/**
 * What the checkout is like (args: target branch, upstream ref). Exit 3: not a git checkout.
 * `git status` comes last, after a marker, since it prints file names.
 */
const STATE = `
target=$1; upstream=$2
emit() { printf '%s=%s\\n' "$1" "$2"; }
gd=$(git rev-parse --git-dir 2>/dev/null) || exit 3
t=; u=
refs=$(git for-each-ref --format='%(refname) %(objectname)' "refs/heads/$target" "$upstream")
while IFS=' ' read -r name sha; do
  [ "$name" = "refs/heads/$target" ] && t=$sha
  [ "$name" = "$upstream" ] && u=$sha
done <<EOF
$refs
EOF
emit target_sha "$t"
emit upstream_sha "$u"
if [ -n "$t" ] && [ -n "$u" ] && [ "$t" != "$u" ]; then
  c=$(git rev-list --left-right --count "$t...$u") || exit 4
  emit counts "$c"
fi
op=0
for m in ${OPERATION_MARKERS}; do [ -e "$gd/$m" ] && op=1; done
emit operation "$op"
if [ -n "$ORIGIN" ] && [ "$(git config --get remote.origin.url)" != "$ORIGIN" ]; then
  git remote set-url origin "$ORIGIN" 2>/dev/null || git remote add origin "$ORIGIN"
  emit repointed 1
fi
printf '@status\\n'
git status --porcelain=v2 --branch --no-ahead-behind --untracked-files=no -z || exit 5
`;

/** Fetch from the mirror, then STATE (args: target, upstream, pull request number or ""). */
const FETCH = `
pr=$3
git fetch --quiet --prune --no-tags --no-recurse-submodules "$ORIGIN" '+refs/heads/*:refs/remotes/origin/*' \${pr:+"+refs/pull/$pr/head:refs/pull/$pr/head"} || exit 6
${STATE}`;

/** A first clone from the mirror into the (empty) working directory, then STATE. */
const CLONE = `
pr=$3; head=$1
if [ -n "$pr" ]; then
  git clone --quiet --no-hardlinks --no-tags --no-checkout "--config=remote.origin.fetch=+refs/pull/$pr/head:refs/pull/$pr/head" -- "$ORIGIN" . || exit 6
  git checkout --quiet --no-track -B "$head" "refs/pull/$pr/head" || exit 7
else
  git clone --quiet --no-hardlinks --no-tags -- "$ORIGIN" . || exit 6
  if [ "$(git symbolic-ref --quiet --short HEAD)" != "$head" ]; then
    git checkout --quiet --no-track -b "$head" "$2" || exit 7
  fi
fi
${STATE}`;

/** Moves the plan allows (args: ff|create, target, upstream). */
const MOVE = `
if [ "$1" = ff ]; then exec git merge --ff-only --quiet "$3"; fi
exec git checkout --quiet --no-track -b "$2" "$3"
`;

/**
 * After a turn: the agent's work as one commit on `branch` (args: branch, upstream ref), and a
 * bundle of it for Tether. Everything the checkout holds beyond `base` (the last commit it
 * shares with upstream: uncommitted files, untracked ones git does not ignore, commits the
 * agent made itself) becomes one commit whose parent is `base`, authored by Tether
 * ($GIT_AUTHOR_*), with the agent's own message if it made one commit, else $OUT/message; the
 * lines of $OUT/trailers close it. The checkout then stands on that commit, on `branch`: index
 * and files are exactly its tree, so nothing is checked out and nothing of the agent's is lost.
 *
 * Nothing here is trusted by what runs next: a filter or a hook of the checkout's own could
 * make this script report anything. Tether checks the commit it takes from the bundle itself.
 */
const COLLECT = `
branch=$1; upstream=$2
emit() { printf '%s=%s\\n' "$1" "$2"; }
gd=$(git rev-parse --git-dir 2>/dev/null) || exit 3
for m in ${OPERATION_MARKERS}; do
  if [ -e "$gd/$m" ]; then emit state operation-in-progress; exit 0; fi
done
tip=$(git rev-parse --quiet --verify 'HEAD^{commit}') || { emit state no-commit; exit 0; }
up=$(git rev-parse --quiet --verify "$upstream^{commit}") || { emit state no-upstream; exit 0; }
base=$(git merge-base "$tip" "$up") || { emit state unrelated; exit 0; }
emit base "$base"
git add --all . || exit 5
tree=$(git write-tree) || exit 5
if [ "$tree" = "$(git rev-parse "$base^{tree}")" ]; then emit state unchanged; exit 0; fi
n=$(git rev-list --count "$base..$tip") || exit 5
emit agent_commits "$n"
{
  if [ "$n" -eq 1 ]; then git log -1 --format=%B "$tip"
  elif [ "$n" -gt 1 ]; then sed -n 1p "$OUT/message"; echo; git log --reverse --format='- %s' "$base..$tip"
  else cat "$OUT/message"; fi
} | git stripspace > "$OUT/commit-message" || exit 5
if [ -s "$OUT/trailers" ]; then { echo; cat "$OUT/trailers"; } >> "$OUT/commit-message"; fi
commit=$(git commit-tree "$tree" -p "$base" -F "$OUT/commit-message") || exit 6
git update-ref -m "tether: the turn's changes" "refs/heads/$branch" "$commit" || exit 7
git symbolic-ref HEAD "refs/heads/$branch" || exit 7
git bundle create --quiet "$OUT/changes.bundle" "refs/heads/$branch" "^$base" || exit 8
emit commit "$commit"
emit state committed
`;

const MAINTAIN = `git rev-parse --git-dir >/dev/null 2>&1 || exit 3
exec git gc --auto --quiet`;

export class Workspaces {
  readonly root: string;
  readonly mirrors: Mirrors;
  private readonly git: SandboxedGit;
  private readonly hostGit: HostGit;
  private readonly timeoutMs: number;
  /**
   * Per checkout: what the last prepare() stood it on, and the look maintain() took at the end
   * of that turn. Nothing touches a checkout between two turns of its key (the agent runs only
   * inside a turn, and the key is held by one task at a time), so the next prepare() on this
   * runner uses that look instead of taking its own: one sandboxed git fewer before the spawn.
   * Taken by the prepare() that uses it; kept for at most the mirror's freshness window.
   */
  private readonly afterTurn = new Map<string, AfterTurn>();

  private constructor(
    root: string,
    private readonly opts: WorkspacesOptions,
  ) {
    this.root = root;
    this.timeoutMs = opts.timeoutMs ?? 10 * 60_000;
    this.hostGit = hostGit({
      home: opts.gitHome ?? path.join(root, ".git-home"),
      log: opts.log,
      ...(opts.gitPath ? { gitPath: opts.gitPath } : {}),
      timeoutMs: this.timeoutMs,
    });
    this.mirrors = new Mirrors({
      root: path.join(root, MIRRORS_DIR),
      git: this.hostGit,
      log: opts.log,
      timeoutMs: this.timeoutMs,
      ...(opts.mirrorFreshMs !== undefined ? { freshMs: opts.mirrorFreshMs } : {}),
    });
    this.git = sandboxedGit({ sandbox: opts.sandbox, log: opts.log, timeoutMs: this.timeoutMs });
  }

  /**
   * The root is resolved to its real path once, so the directory the resume decision compares
   * is the same string on every turn.
   */
  static async open(opts: WorkspacesOptions): Promise<Workspaces> {
    await fs.mkdir(opts.root, { recursive: true });
    const root = await fs.realpath(opts.root);
    const home = opts.gitHome ?? path.join(root, ".git-home");
    await fs.mkdir(home, { recursive: true, mode: 0o700 });
    await fs.mkdir(path.join(root, MASKS_DIR), { recursive: true, mode: 0o700 });
    await sweepStale(path.join(root, MASKS_DIR), opts.log);
    return new Workspaces(root, { ...opts, gitHome: home });
  }

  pathFor(key: TaskKey): string {
    return workspacePath(this.root, key);
  }

  mirrorFor(repo: string): string {
    return this.mirrors.pathFor(repo);
  }

  /**
   * The repository's CLAUDE.md as `branch` (the default branch) has it in the mirror, capped;
   * null when there is none. Never the checkout's copy. After prepare() (the mirror is fresh).
   */
  projectInstructions(req: {
    repo: string;
    branch: string;
    signal?: AbortSignal | undefined;
  }): Promise<ProjectInstructions | null> {
    return readProjectInstructions({
      git: this.hostGit,
      mirror: this.mirrors.pathFor(req.repo),
      repo: req.repo,
      branch: req.branch,
      log: this.opts.log,
      signal: req.signal,
    });
  }

  /**
   * A pull request turn's masks: the agent-control files its head changed from its base, shown
   * as the base has them (agent-control.ts). Read from the mirror, after prepare(). None with
   * the sandbox off: nothing would apply them. Call dispose() after the run.
   */
  async agentControl(req: {
    repo: string;
    /** The key's checkout, as prepare() returned it. */
    dir: string;
    pullRequest: number;
    baseRef: string;
    signal?: AbortSignal | undefined;
  }): Promise<AgentControlMasks> {
    const runDir = path.join(this.root, MASKS_DIR, randomBytes(8).toString("hex"));
    if (!this.opts.sandbox.sandboxed) return { masks: [], skipped: [], dispose: async () => {} };
    const started = Date.now();
    const r = await agentControlMasks({
      git: this.hostGit,
      mirror: this.mirrors.pathFor(req.repo),
      repo: req.repo,
      baseRef: req.baseRef,
      headRef: pullRef(req.pullRequest),
      checkout: req.dir,
      runDir,
      log: this.opts.log,
      signal: req.signal,
    });
    if (r.masks.length)
      this.opts.log.info(
        {
          repo: req.repo,
          pr: req.pullRequest,
          masks: r.masks.map((m) => `${m.path} (${m.replacement ? "base" : "hidden"})`),
          ms: Date.now() - started,
        },
        "agent-control files of the pull request's head shown as its base has them",
      );
    for (const s of r.skipped)
      this.opts.log.warn(
        { repo: req.repo, pr: req.pullRequest, path: s.path, reason: s.reason },
        "an agent-control path the pull request changed cannot be masked",
      );
    return r;
  }

  /**
   * Clone (first turn) or update (later turns) the key's workspace. Throws WorkspaceError;
   * its message can be posted to the thread as it is.
   */
  async prepare(req: PrepareRequest): Promise<Workspace> {
    const { repo, log } = { repo: req.repo, log: this.opts.log };
    const pr = req.pullRequest;
    checkCloneUrl(repo, req.cloneUrl);
    if (
      pr &&
      (!Number.isSafeInteger(pr.number) || pr.number < 1 || !isValidBranchName(pr.headRef))
    ) {
      throw new WorkspaceError(
        "invalid-key",
        repo,
        `cannot check out pull request #${pr.number} of ${repo}: its head branch name ${JSON.stringify(pr.headRef)} is not valid in git`,
      );
    }
    const dir = this.pathFor(req);
    const ctx: FailureContext = {
      repo,
      host: new URL(req.cloneUrl).host,
      timeoutMs: this.timeoutMs,
      pullRequest: pr?.number,
    };
    const started = Date.now();
    const remembered = this.takeLook(dir);
    let ws: Workspace;
    try {
      const present = await isPresent(dir);
      ws = present ? await this.update(dir, req, ctx, remembered) : await this.clone(dir, req, ctx);
    } catch (err) {
      if (err instanceof WorkspaceError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      throw new WorkspaceError(
        "filesystem",
        repo,
        `could not prepare the workspace for ${repo}: the runner's workspace directory failed${code ? ` (${code})` : ""}`,
        { detail: err instanceof Error ? err.message : String(err) },
      );
    }
    log.info(
      {
        repo,
        issue: req.issueNumber,
        agent: req.agent,
        dir: ws.dir,
        update: ws.update,
        headSha: ws.headSha,
        ms: Date.now() - started,
      },
      ws.created ? "workspace cloned" : `workspace ${ws.update.kind}`,
    );
    if (ws.upstream && ws.branch !== null)
      this.rememberTarget(dir, { target: ws.branch, upstreamRef: ws.upstream.ref, repo });
    return ws;
  }

  private async clone(dir: string, req: PrepareRequest, ctx: FailureContext): Promise<Workspace> {
    const pr = req.pullRequest;
    const follow = pr ? undefined : req.follow;
    const mirrorUpstream = pr ? pullRef(pr.number) : follow ? `refs/heads/${follow}` : undefined;
    const mirror = await this.mirrors.sync({
      repo: req.repo,
      cloneUrl: req.cloneUrl,
      token: req.token,
      pullRequest: pr?.number,
      ...(mirrorUpstream ? { report: [mirrorUpstream] } : {}),
      signal: req.signal,
    });
    const target = targetBranch(pr, follow, mirror);
    const upstreamRef = upstreamOf(pr, target);
    const tmpRoot = path.join(this.root, TMP_DIR);
    await fs.mkdir(tmpRoot, { recursive: true });
    await sweepStale(tmpRoot, this.opts.log);
    const tmp = path.join(tmpRoot, `clone-${Date.now()}-${randomBytes(4).toString("hex")}`);
    await fs.mkdir(tmp);
    try {
      const r = await this.git.run(tmp, CLONE, [target, upstreamRef, pr ? String(pr.number) : ""], {
        origin: mirror.dir,
        signal: req.signal,
      });
      const state = this.readState(r, ctx, "clone");
      await fs.mkdir(path.dirname(dir), { recursive: true });
      await fs.rmdir(dir).catch(() => undefined); // an empty leftover; a full one makes rename fail
      await fs.rename(tmp, dir);
      return this.result(dir, mirror, state, upstreamRef, { kind: "cloned" }, true);
    } catch (err) {
      await fs.rm(tmp, { recursive: true, force: true });
      throw err;
    }
  }

  private async update(
    dir: string,
    req: PrepareRequest,
    ctx: FailureContext,
    remembered: AfterTurn | undefined,
  ): Promise<Workspace> {
    const pr = req.pullRequest;
    const follow = pr ? undefined : req.follow;
    const mirrorDir = this.mirrors.pathFor(req.repo);
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
      const after = remembered?.look;
      if (after && remembered.target === target && remembered.upstreamRef === upstream) {
        this.opts.log.debug({ repo: req.repo, dir }, "checkout as the last turn left it");
        return Promise.resolve(after);
      }
      return this.git.run(dir, STATE, [target, upstream], {
        origin: mirrorDir,
        signal: req.signal,
      });
    };
    const early = pr ? look(pr.headRef) : guess ? look(guess) : null;
    early?.catch(() => undefined); // awaited below
    const mirrorRef = (target: string) => (pr ? pullRef(pr.number) : `refs/heads/${target}`);
    const mirror = await this.mirrors.sync({
      repo: req.repo,
      cloneUrl: req.cloneUrl,
      token: req.token,
      pullRequest: pr?.number,
      expect: await this.serverRefs(req, mirrorDefault),
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
        ? this.readState(await early, ctx, "update")
        : this.readState(await look(target), ctx, "update");
    if (mirrorSha !== null && state.upstreamSha !== mirrorSha) {
      // The mirror has what the checkout has not seen yet: fetch it from there, look again.
      state = this.readState(
        await this.git.run(dir, FETCH, [target, upstreamRef, pr ? String(pr.number) : ""], {
          origin: mirror.dir,
          signal: req.signal,
        }),
        ctx,
        "fetch",
      );
    }
    if (pr?.headSha && state.upstreamSha !== pr.headSha) {
      this.opts.log.debug(
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
        return this.result(dir, mirror, state, upstreamRef, {
          kind: "up-to-date",
          ahead: plan.ahead,
        });
      case "leave":
        return this.result(dir, mirror, state, upstreamRef, {
          kind: "left",
          reason: plan.reason,
          detail: plan.detail,
        });
      case "fast-forward":
      case "create-branch": {
        const ff = plan.action === "fast-forward";
        const moved = await this.git.run(dir, MOVE, [ff ? "ff" : "create", target, upstreamRef], {
          origin: mirror.dir,
          signal: req.signal,
        });
        if (moved.stoppedBy) throw gitFailure(ctx, "update", moved.stderr, moved.stoppedBy);
        if (moved.exitCode !== 0) {
          if (/untracked working tree files would be overwritten/i.test(moved.stderr)) {
            return this.result(dir, mirror, state, upstreamRef, {
              kind: "left",
              reason: "untracked-files-in-the-way",
              detail: "untracked files would be overwritten by the update",
            });
          }
          throw gitFailure(ctx, "update", moved.stderr, "git-failed", moved.exitCode);
        }
        const after = { ...state, headSha: upstream, branch: target };
        return this.result(
          dir,
          mirror,
          after,
          upstreamRef,
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
  private async serverRefs(
    req: PrepareRequest,
    mirrorDefault: string | null,
  ): Promise<Record<string, string | null> | undefined> {
    const ask = req.serverHead;
    const pr = req.pullRequest;
    if (!ask || mirrorDefault === null || !this.mirrors.recentlyFetched(req.repo)) return;
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
      this.opts.log.debug(
        { repo: req.repo, err: err instanceof Error ? err.message : String(err) },
        "could not ask GitHub for the turn's branches; the mirror fetches",
      );
      return;
    }
  }

  private readState(
    r: ScriptResult,
    ctx: FailureContext,
    step: "clone" | "update" | "fetch",
  ): LocalState {
    if (r.stoppedBy) throw gitFailure(ctx, step, r.stderr, r.stoppedBy);
    if (r.startError)
      throw new WorkspaceError(
        "git-failed",
        ctx.repo,
        `could not ${step} ${ctx.repo}: the runner could not start its sandbox or git`,
        { detail: r.startError },
      );
    if (r.exitCode === 3)
      throw new WorkspaceError(
        "not-a-checkout",
        ctx.repo,
        `the workspace for ${ctx.repo} exists but is not a git checkout; an operator must move it away`,
        { detail: r.stderr.trim() },
      );
    if (r.exitCode !== 0) throw gitFailure(ctx, step, r.stderr, "git-failed", r.exitCode);
    const { values, status } = parseReport(r.stdout);
    const fields = status.split("\0");
    const header = (name: string) =>
      fields.find((f) => f.startsWith(`# ${name} `))?.slice(`# ${name} `.length);
    const head = header("branch.head");
    const [ahead, behind] = (values.get("counts") ?? "0 0").trim().split(/\s+/).map(Number);
    const sha = (k: string) => {
      const v = values.get(k) ?? "";
      return isObjectId(v) ? v : null;
    };
    return {
      headSha: header("branch.oid") ?? null,
      branch: head === undefined || head === "(detached)" ? null : head,
      trackedChanges: fields.some((f) => /^[12u] /.test(f)),
      operationInProgress: values.get("operation") === "1",
      targetSha: sha("target_sha"),
      upstreamSha: sha("upstream_sha"),
      ahead: ahead ?? 0,
      behind: behind ?? 0,
    };
  }

  private result(
    dir: string,
    mirror: MirrorSync,
    local: LocalState,
    upstreamRef: string,
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
      upstream: { ref: upstreamRef, sha: local.upstreamSha ?? "" },
      update,
    };
  }

  /**
   * Take the agent's work out of the key's workspace (COLLECT, in the sandbox). Throws
   * WorkspaceError when git fails; `blocked` when the checkout is in no state to take from.
   */
  async collect(req: CollectRequest): Promise<Collected> {
    const dir = this.pathFor(req);
    const turn = this.afterTurn.get(dir);
    if (turn) delete turn.look;
    if (!isValidBranchName(req.branch) || !req.upstreamRef.startsWith("refs/")) {
      throw new WorkspaceError(
        "invalid-key",
        req.repo,
        `cannot publish to ${JSON.stringify(req.branch)}: not a valid branch name`,
      );
    }
    const outRoot = path.join(this.root, OUTBOX_DIR);
    await fs.mkdir(outRoot, { recursive: true, mode: 0o700 });
    const out = await fs.mkdtemp(path.join(outRoot, "collect-"));
    const dispose = () => fs.rm(out, { recursive: true, force: true });
    try {
      const oneLine = (s: string) => s.replace(/[\r\n]+/g, " ").trim();
      await fs.writeFile(path.join(out, "message"), `${req.message.trim()}\n`);
      await fs.writeFile(
        path.join(out, "trailers"),
        req.trailers.map((t) => `${oneLine(t)}\n`).join(""),
      );
      const id = req.identity;
      const r = await this.git.run(dir, COLLECT, [req.branch, req.upstreamRef], {
        outbox: out,
        signal: req.signal,
        env: {
          GIT_AUTHOR_NAME: oneLine(id.name),
          GIT_AUTHOR_EMAIL: oneLine(id.email),
          GIT_COMMITTER_NAME: oneLine(id.name),
          GIT_COMMITTER_EMAIL: oneLine(id.email),
        },
        config: ["-c", "commit.gpgSign=false", "-c", "core.autocrlf=false"],
      });
      const ctx: FailureContext = { repo: req.repo, host: "", timeoutMs: this.timeoutMs };
      if (r.stoppedBy) throw gitFailure(ctx, "update", r.stderr, r.stoppedBy);
      if (r.exitCode === 3)
        throw new WorkspaceError(
          "not-a-checkout",
          req.repo,
          `the workspace for ${req.repo} is not a git checkout, so its changes cannot be published`,
        );
      if (r.startError || r.exitCode !== 0)
        throw new WorkspaceError(
          "git-failed",
          req.repo,
          `could not commit the agent's changes in ${req.repo}: git failed${r.exitCode ? ` (exit ${r.exitCode})` : ""}`,
          { detail: tail(r.stderr || r.startError || "") },
        );
      const { values } = parseReport(r.stdout);
      const state = values.get("state");
      if (state === "unchanged") {
        await dispose();
        return { kind: "unchanged" };
      }
      if (
        state === "operation-in-progress" ||
        state === "no-commit" ||
        state === "no-upstream" ||
        state === "unrelated"
      ) {
        await dispose();
        return { kind: "blocked", reason: state };
      }
      const base = values.get("base") ?? "";
      const commit = values.get("commit") ?? "";
      if (state !== "committed" || !isObjectId(base) || !isObjectId(commit))
        throw new WorkspaceError(
          "git-failed",
          req.repo,
          `could not commit the agent's changes in ${req.repo}: git's report was not understood`,
          { detail: tail(r.stdout) },
        );
      return {
        kind: "committed",
        base,
        commit,
        agentCommits: Number(values.get("agent_commits") ?? "0") || 0,
        bundle: path.join(out, "changes.bundle"),
        dispose,
      };
    } catch (err) {
      await dispose();
      throw err;
    }
  }

  /** The remembered turn of a checkout, taken: a look is used by one prepare() at most. */
  private takeLook(dir: string): AfterTurn | undefined {
    const turn = this.afterTurn.get(dir);
    this.afterTurn.delete(dir);
    const freshMs = this.opts.mirrorFreshMs ?? MIRROR_FRESH_MS;
    if (turn?.look && !(Date.now() - turn.lookedAt < freshMs)) delete turn.look;
    return turn;
  }

  private rememberTarget(dir: string, turn: Omit<AfterTurn, "look" | "lookedAt">): void {
    this.afterTurn.delete(dir);
    if (this.afterTurn.size >= AFTER_TURN_MAX) {
      const oldest = this.afterTurn.keys().next().value;
      if (oldest !== undefined) this.afterTurn.delete(oldest);
    }
    this.afterTurn.set(dir, { ...turn, lookedAt: 0 });
  }

  /** The STATE look at the end of a turn, for the next prepare() (see `afterTurn`). */
  private async lookAfterTurn(dir: string, signal: AbortSignal | undefined): Promise<void> {
    const turn = this.afterTurn.get(dir);
    if (!turn || signal?.aborted) return;
    const r = await this.git.run(dir, STATE, [turn.target, turn.upstreamRef], {
      origin: this.mirrors.pathFor(turn.repo),
      signal,
    });
    // Only a clean look is kept, and only if nothing took the checkout meanwhile.
    if (this.afterTurn.get(dir) !== turn || r.stoppedBy || r.startError || r.exitCode !== 0) return;
    turn.look = r;
    turn.lookedAt = Date.now();
  }

  /**
   * git's automatic housekeeping (`gc --auto`) in a key's workspace, inside the sandbox, after
   * the turn (it takes locks the agent's own git would trip over, and is kept off the hot path:
   * every other step runs with it switched off). Never throws.
   */
  async maintain(key: TaskKey, signal?: AbortSignal): Promise<MaintenanceOutcome> {
    try {
      const dir = this.pathFor(key);
      if (!(await isPresent(dir))) return "no-checkout";
      const r = await this.git.run(dir, MAINTAIN, ["maintain"], {
        maintenance: true,
        signal,
        timeoutMs: 120_000,
      });
      if (r.stoppedBy === "cancelled") return "cancelled";
      if (r.exitCode === 3) return "no-checkout";
      if (r.exitCode !== 0)
        throw new Error(r.stderr.trim() || r.startError || `exit ${r.exitCode}`);
      await this.lookAfterTurn(dir, signal);
      return "done";
    } catch (err) {
      this.opts.log.warn(
        { repo: key.repo, issue: key.issueNumber, agent: key.agent, err: (err as Error).message },
        "workspace housekeeping failed",
      );
      return "failed";
    }
  }
}

export type MaintenanceOutcome = "done" | "no-checkout" | "cancelled" | "failed";

/** Checkouts whose last turn a runner remembers, at most (the oldest is forgotten first). */
const AFTER_TURN_MAX = 10_000;

/** What a runner remembers of a checkout's last turn (Workspaces.afterTurn). */
interface AfterTurn {
  repo: string;
  /** The branch the checkout stood on after prepare(), and the ref it follows: the look's args. */
  target: string;
  upstreamRef: string;
  /** STATE as maintain() found the checkout after the turn, and when. */
  look?: ScriptResult;
  lookedAt: number;
}

export interface CollectRequest extends TaskKey {
  /** The branch the work goes to: the conversation branch, or a pull request's head. */
  branch: string;
  /** The ref in the checkout the work is measured against (Workspace.upstream.ref). */
  upstreamRef: string;
  /** Who commits: Tether. */
  identity: { name: string; email: string };
  /** The message when the agent made no commit of its own; its first line is the subject. */
  message: string;
  /** Lines that end every message (`Co-authored-by: …`). */
  trailers: string[];
  signal?: AbortSignal | undefined;
}

/** Why the checkout's work could not be taken. */
export type CollectBlock = "operation-in-progress" | "no-commit" | "no-upstream" | "unrelated";

export type Collected =
  | { kind: "unchanged" }
  | { kind: "blocked"; reason: CollectBlock }
  | {
      kind: "committed";
      /** The commit's parent: the last one the checkout shares with upstream. */
      base: string;
      commit: string;
      /** Commits the agent made itself, now folded into `commit`. */
      agentCommits: number;
      /** Host path of the bundle (`refs/heads/<branch>`, `^base`); gone after dispose(). */
      bundle: string;
      dispose(): Promise<void>;
    };

/** The checkout as the sandboxed look found it. */
interface LocalState {
  /** From status's "# branch.oid"; "(initial)" on an unborn branch. */
  headSha: string | null;
  /** Checked-out branch; null when detached. */
  branch: string | null;
  trackedChanges: boolean;
  operationInProgress: boolean;
  targetSha: string | null;
  upstreamSha: string | null;
  ahead: number;
  behind: number;
}

/**
 * Whether the key's directory has anything in it. Only the directory itself is looked at from
 * the host (Tether made it); what is inside is the agent's, and only sandboxed git reads it.
 */
async function isPresent(dir: string): Promise<boolean> {
  const entries = await fs.readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw err;
  });
  return entries !== null && entries.length > 0;
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

function checkCloneUrl(repo: string, cloneUrl: string): void {
  let url: URL;
  try {
    url = new URL(cloneUrl);
  } catch {
    throw new WorkspaceError(
      "invalid-key",
      repo,
      `cannot clone ${repo}: the clone URL is not a URL`,
    );
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new WorkspaceError(
      "invalid-key",
      repo,
      `cannot clone ${repo}: the clone URL must be http(s)`,
    );
  }
  if (url.username || url.password) {
    // A URL with credentials would be written to the mirror's config; the token goes by environment.
    throw new WorkspaceError(
      "invalid-key",
      repo,
      `cannot clone ${repo}: the clone URL must not carry credentials`,
    );
  }
}

/** Removes what a process that died left in one of Tether's scratch directories. */
async function sweepStale(tmpRoot: string, log: Logger): Promise<void> {
  for (const name of await fs.readdir(tmpRoot).catch(() => [] as string[])) {
    const p = path.join(tmpRoot, name);
    const st = await fs.lstat(p).catch(() => null);
    if (st && Date.now() - st.mtimeMs > STALE_TMP_MS) {
      await fs.rm(p, { recursive: true, force: true }).catch(() => undefined);
      log.info({ path: p }, "removed a stale temporary directory");
    }
  }
}
