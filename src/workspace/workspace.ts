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
import { readRepoFile } from "./repo-file.js";
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log.js";
import type { Sandbox } from "../sandbox/sandbox.js";
import { agentControlMasks, type AgentControlMasks } from "./agent-control.js";
import { AfterTurnLooks, type AfterTurn } from "./after-turn.js";
import { planUpdate, readState, type LeftReason, type LocalState } from "./checkout-state.js";
import { collectWork, type Collected, type CollectRequest } from "./collect.js";
import { gitFailure, WorkspaceError, type FailureContext } from "./errors.js";
import { holdCheckout, type CheckoutHold } from "./plan-hold.js";
import { readProjectInstructions, type ProjectInstructions } from "./project-instructions.js";
import { hostGit, type HostGit } from "./git.js";
import { isObjectId, isValidBranchName, refFiles } from "./git-refs.js";
import { MIRROR_FRESH_MS, Mirrors, pullRef, type MirrorSync } from "./mirror.js";
import type { TaskKey } from "../core/task.js";
import { workspacePath } from "./paths.js";
import { parseReport, sandboxedGit, type SandboxedGit } from "./sandboxed-git.js";
import { ADOPT, CLONE, FETCH, MAINTAIN, MOVE, STATE } from "./scripts.js";

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

export class Workspaces {
  readonly root: string;
  readonly mirrors: Mirrors;
  private readonly git: SandboxedGit;
  private readonly hostGit: HostGit;
  private readonly timeoutMs: number;
  /** Per checkout, its last turn (after-turn.ts): the next prepare() may use its look. */
  private readonly afterTurn: AfterTurnLooks;

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
    this.afterTurn = new AfterTurnLooks(opts.mirrorFreshMs ?? MIRROR_FRESH_MS);
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

  mirrorFor(repoId: number): string {
    return this.mirrors.pathFor(repoId);
  }

  /**
   * The repository's CLAUDE.md as `branch` (the default branch) has it in the mirror, capped;
   * null when there is none. Never the checkout's copy. After prepare() (the mirror is fresh).
   */
  projectInstructions(req: {
    repoId: number;
    repo: string;
    branch: string;
    signal?: AbortSignal | undefined;
  }): Promise<ProjectInstructions | null> {
    return readProjectInstructions({
      git: this.hostGit,
      mirror: this.mirrors.pathFor(req.repoId),
      repo: req.repo,
      branch: req.branch,
      log: this.opts.log,
      signal: req.signal,
    });
  }

  /** A file of the repository at a commit, from its mirror (repo-file.ts). */
  readFile(req: {
    repoId: number;
    repo: string;
    commit: string;
    path: string;
    maxBytes: number;
    signal?: AbortSignal | undefined;
  }): Promise<Buffer | "too_big" | null> {
    return readRepoFile({ ...req, git: this.hostGit, mirror: this.mirrors.pathFor(req.repoId) });
  }

  /**
   * A pull request turn's masks: the agent-control files its head changed from its base, shown
   * as the base has them (agent-control.ts). Read from the mirror, after prepare(). None with
   * the sandbox off: nothing would apply them. Call dispose() after the run.
   */
  async agentControl(req: {
    repoId: number;
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
      mirror: this.mirrors.pathFor(req.repoId),
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
    const remembered = this.afterTurn.take(dir);
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
      this.afterTurn.remember(dir, {
        target: ws.branch,
        upstreamRef: ws.upstream.ref,
        repoId: req.repoId,
      });
    return ws;
  }

  private async clone(dir: string, req: PrepareRequest, ctx: FailureContext): Promise<Workspace> {
    const pr = req.pullRequest;
    const follow = pr ? undefined : req.follow;
    const mirrorUpstream = pr ? pullRef(pr.number) : follow ? `refs/heads/${follow}` : undefined;
    const mirror = await this.mirrors.sync({
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
      const state = readState(r, ctx, "clone");
      await fs.mkdir(path.dirname(dir), { recursive: true });
      await fs.rmdir(dir).catch(() => undefined); // an empty leftover; a full one makes rename fail
      await fs.rename(tmp, dir);
      const hostSha = await this.mirrorSha(mirror, mirrorRefOf(upstreamRef));
      return this.result(dir, mirror, state, upstreamRef, hostSha, { kind: "cloned" }, true);
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
    const mirrorDir = this.mirrors.pathFor(req.repoId);
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
      repoId: req.repoId,
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
        ? readState(await early, ctx, "update")
        : readState(await look(target), ctx, "update");
    if (mirrorSha !== null && state.upstreamSha !== mirrorSha) {
      // The mirror has what the checkout has not seen yet: fetch it from there, look again.
      state = readState(
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
        return this.result(dir, mirror, state, upstreamRef, mirrorSha, {
          kind: "up-to-date",
          ahead: plan.ahead,
        });
      case "leave":
        return this.result(dir, mirror, state, upstreamRef, mirrorSha, {
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
            return this.result(dir, mirror, state, upstreamRef, mirrorSha, {
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
  private async serverRefs(
    req: PrepareRequest,
    mirrorDefault: string | null,
  ): Promise<Record<string, string | null> | undefined> {
    const ask = req.serverHead;
    const pr = req.pullRequest;
    if (!ask || mirrorDefault === null || !this.mirrors.recentlyFetched(req)) return;
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

  /** A ref's commit in the mirror: from the sync's report when it has it, else read now. */
  private async mirrorSha(mirror: MirrorSync, ref: string): Promise<string | null> {
    const reported = mirror.refs[ref];
    if (reported !== undefined) return reported;
    return (await refFiles(mirror.dir).resolve(ref))?.sha ?? null;
  }

  private result(
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
   * Take the agent's work out of the key's workspace (COLLECT, in the sandbox). Throws
   * WorkspaceError when git fails; `blocked` when the checkout is in no state to take from.
   */
  async collect(req: CollectRequest): Promise<Collected> {
    const dir = this.pathFor(req);
    this.afterTurn.dropLook(dir);
    return collectWork(req, {
      dir,
      git: this.git,
      outRoot: path.join(this.root, OUTBOX_DIR),
      timeoutMs: this.timeoutMs,
    });
  }

  /**
   * A plan turn's hold on the key's checkout: restore() puts it back as it is now (plan-hold.ts).
   * Throws WorkspaceError when git fails.
   */
  holdForPlan(key: TaskKey, signal?: AbortSignal): Promise<CheckoutHold> {
    const dir = this.pathFor(key);
    this.afterTurn.dropLook(dir);
    return holdCheckout(this.git, key.repo, dir, signal);
  }

  /**
   * After a publish through GitHub's API: stand the key's checkout on GitHub's commit (`theirs`,
   * in the mirror by now), which has the same tree as the checkout's `local` one (ADOPT). Any
   * other state of the checkout is left as it is and said (`moved`, `different`, `missing`).
   */
  async adopt(
    req: TaskKey & {
      branch: string;
      local: string;
      theirs: string;
      /** A pull request's head branch: GitHub's commit is read from its pull ref. */
      pullRequest?: number;
      signal?: AbortSignal;
    },
  ): Promise<"adopted" | "moved" | "different" | "missing"> {
    if (!isValidBranchName(req.branch) || !isObjectId(req.local) || !isObjectId(req.theirs))
      throw new WorkspaceError("invalid-key", req.repo, `cannot adopt ${req.branch}`);
    const dir = this.pathFor(req);
    this.afterTurn.dropLook(dir);
    // Where FETCH keeps the same ref: the next prepare() compares against it.
    const [src, dst] =
      req.pullRequest === undefined
        ? [`refs/heads/${req.branch}`, `refs/remotes/origin/${req.branch}`]
        : [pullRef(req.pullRequest), pullRef(req.pullRequest)];
    const r = await this.git.run(dir, ADOPT, [req.branch, req.local, req.theirs, src, dst], {
      origin: this.mirrors.pathFor(req.repoId),
      signal: req.signal,
    });
    const ctx: FailureContext = { repo: req.repo, host: "", timeoutMs: this.timeoutMs };
    if (r.stoppedBy) throw gitFailure(ctx, "update", r.stderr, r.stoppedBy);
    if (r.startError || r.exitCode !== 0)
      throw gitFailure(ctx, "update", r.stderr || r.startError || "", "git-failed", r.exitCode);
    const state = parseReport(r.stdout).values.get("state");
    return state === "adopted" || state === "different" || state === "missing" ? state : "moved";
  }

  /** The STATE look at the end of a turn, for the next prepare() (see `afterTurn`). */
  private async lookAfterTurn(dir: string, signal: AbortSignal | undefined): Promise<void> {
    const turn = this.afterTurn.get(dir);
    if (!turn || signal?.aborted) return;
    const r = await this.git.run(dir, STATE, [turn.target, turn.upstreamRef], {
      origin: this.mirrors.pathFor(turn.repoId),
      signal,
    });
    // Only a clean look is kept, and only if nothing took the checkout meanwhile.
    if (r.stoppedBy || r.startError || r.exitCode !== 0) return;
    this.afterTurn.store(dir, turn, r);
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
