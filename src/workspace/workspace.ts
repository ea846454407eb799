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
 * agent CLI files its sessions. How a checkout is cloned or brought up to date is prepare.ts;
 * this is the keys' directories and what else a turn does in them (masks, collect, adopt,
 * housekeeping).
 */
import { readRepoFile } from "./repo-file.js";
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log.js";
import type { Sandbox } from "../sandbox/sandbox.js";
import { agentControlMasks, type AgentControlMasks } from "./agent-control.js";
import { AfterTurnLooks } from "./after-turn.js";
import { collectWork, type Collected, type CollectRequest } from "./collect.js";
import { gitFailure, WorkspaceError, type FailureContext } from "./errors.js";
import { holdCheckout, type CheckoutHold } from "./plan-hold.js";
import { readProjectInstructions, type ProjectInstructions } from "./project-instructions.js";
import { hostGit, type HostGit } from "./git.js";
import { isObjectId, isValidBranchName } from "./git-refs.js";
import { MIRROR_FRESH_MS, Mirrors, pullRef } from "./mirror.js";
import type { TaskKey } from "../core/task.js";
import { workspacePath } from "./paths.js";
import {
  cloneCheckout,
  updateCheckout,
  type CheckoutDeps,
  type PrepareRequest,
  type Workspace,
} from "./prepare.js";
import { parseReport, sandboxedGit, type SandboxedGit } from "./sandboxed-git.js";
import { sweepStale } from "./scratch.js";
import { ADOPT, MAINTAIN, STATE } from "./scripts.js";

export { classifyGitFailure, WorkspaceError } from "./errors.js";
export { isValidBranchName } from "./git-refs.js";
export { workspacePath } from "./paths.js";
export { mirrorRefOf, type PrepareRequest, type Workspace } from "./prepare.js";

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

const MIRRORS_DIR = ".mirrors";
/** Per-publish directories a sandboxed step writes its bundle into (never a workspace). */
const OUTBOX_DIR = ".outbox";
/** Per-run copies of a base branch's agent-control files (agent-control.ts); removed after the run. */
const MASKS_DIR = ".masks";

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
      const deps: CheckoutDeps = {
        root: this.root,
        mirrors: this.mirrors,
        git: this.git,
        log: this.opts.log,
      };
      ws = present
        ? await updateCheckout(deps, dir, req, ctx, remembered)
        : await cloneCheckout(deps, dir, req, ctx);
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
