import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { gitAuthEnv, parseRepoName, redactToken } from "../github/git-auth.js";
import type { Logger } from "../log.js";

export { cloneUrlFor } from "../github/git-auth.js";

/**
 * One working directory per task key, cloned on the key's first turn and fetched on later ones.
 *
 * The path never changes for a key: Claude Code files a session under its working directory,
 * and resuming from any other directory fails as if the session did not exist. Later turns
 * fetch and fast-forward only when that cannot touch the agent's own work; otherwise the
 * checkout is left as it is and the returned `update` says why.
 */

export interface TaskKey {
  /** "owner/name"; GitHub treats it case-insensitively, so the path uses it lower-cased. */
  repo: string;
  issueNumber: number;
  agent: string;
}

export interface PullRequestRef {
  number: number;
  /** The head branch's name; the workspace checks out a local branch of this name. */
  headRef: string;
  /** The head commit the webhook reported; only logged when the server's head has moved on. */
  headSha?: string;
}

export interface PrepareWorkspaceOptions extends TaskKey {
  /** TETHER_WORKSPACE_DIR. */
  root: string;
  /** HTTPS clone URL without credentials (see cloneUrlFor). */
  cloneUrl: string;
  /** Installation token; given to git through its environment only. */
  token: string;
  /** Set for pull requests: the workspace follows the PR's head instead of the default branch. */
  pullRequest?: PullRequestRef;
  log: Logger;
  /** Aborting kills the running git command and rejects with a "cancelled" WorkspaceError. */
  signal?: AbortSignal;
  /** Limit for each git command. Default 10 minutes (a first clone of a large repository). */
  timeoutMs?: number;
  /** git executable. Default "git" on PATH. */
  gitPath?: string;
}

/** Why a later turn left the checkout as it was. */
export type LeftReason =
  | "uncommitted-changes"
  | "diverged"
  | "other-branch"
  | "detached"
  | "operation-in-progress"
  | "untracked-files-in-the-way"
  | "unsafe-git-config";

export type WorkspaceUpdate =
  | { kind: "cloned" }
  /** Already at the upstream commit; `ahead` counts local commits upstream does not have. */
  | { kind: "up-to-date"; ahead: number }
  | { kind: "fast-forwarded"; from: string; to: string }
  /** The branch to follow did not exist locally (a renamed PR head); it was created and checked out. */
  | { kind: "switched"; branch: string }
  | { kind: "left"; reason: LeftReason; detail: string };

export interface Workspace {
  /** Absolute, symlink-free path; the same string on every turn of the key. */
  dir: string;
  /** True when this call cloned the repository. */
  created: boolean;
  /** HEAD after preparing. */
  headSha: string;
  /** Checked-out branch, null when HEAD is detached. */
  branch: string | null;
  /** The ref the workspace follows and the commit it pointed at after the fetch. */
  upstream: { ref: string; sha: string };
  update: WorkspaceUpdate;
}

export type WorkspaceErrorKind =
  | "invalid-key"
  | "not-found"
  | "auth"
  | "network"
  | "unavailable"
  | "missing-ref"
  | "not-a-checkout"
  | "timeout"
  | "cancelled"
  | "filesystem"
  | "git-failed";

/**
 * A workspace could not be prepared. `message` is plain words safe to post to the thread (no
 * token, no local paths); `detail` is git's redacted stderr tail, for logs.
 */
export class WorkspaceError extends Error {
  readonly kind: WorkspaceErrorKind;
  readonly repo: string;
  readonly detail: string | undefined;
  readonly command: string | undefined;
  readonly exitCode: number | undefined;

  constructor(
    kind: WorkspaceErrorKind,
    repo: string,
    message: string,
    extra: { detail?: string; command?: string; exitCode?: number } = {},
  ) {
    super(message);
    this.name = "WorkspaceError";
    this.kind = kind;
    this.repo = repo;
    this.detail = extra.detail;
    this.command = extra.command;
    this.exitCode = extra.exitCode;
  }
}

const DEFAULT_TIMEOUT_MS = 10 * 60_000;
const KILL_GRACE_MS = 2000;
/** Temporary clones live beside the workspaces (same file system, so the final rename is atomic). */
const TMP_DIR = ".tmp";
const STALE_TMP_MS = 6 * 60 * 60_000;

/**
 * `<root>/<owner>/<repo>/issue-<n>/<agent>`. Owner and repo are lower-cased (GitHub's names are
 * case-insensitive); every character outside [A-Za-z0-9._-] is percent-encoded, so two keys
 * never map to one directory and no segment can climb out of the root.
 */
export function workspacePath(root: string, key: TaskKey): string {
  const fail = (what: string) =>
    new WorkspaceError(
      "invalid-key",
      key.repo,
      `cannot make a workspace for ${JSON.stringify(key.repo)} #${key.issueNumber} (${JSON.stringify(key.agent)}): ${what}`,
    );
  let owner: string;
  let name: string;
  try {
    ({ owner, name } = parseRepoName(key.repo));
  } catch {
    throw fail('the repository must be "owner/name"');
  }
  if (!Number.isSafeInteger(key.issueNumber) || key.issueNumber < 1) {
    throw fail("the issue number must be a positive whole number");
  }
  if (key.agent === "" || key.agent === "." || key.agent === "..") {
    throw fail("the agent name must not be empty, '.' or '..'");
  }
  if (/\p{Surrogate}/u.test(key.agent)) {
    // A lone surrogate has no UTF-8 form: two such names would encode alike.
    throw fail("the agent name is not valid text");
  }
  const resolvedRoot = path.resolve(root);
  const dir = path.join(
    resolvedRoot,
    encodeSegment(owner.toLowerCase()),
    encodeSegment(name.toLowerCase()),
    `issue-${key.issueNumber}`,
    encodeSegment(key.agent),
  );
  if (path.relative(resolvedRoot, dir).split(path.sep).includes("..")) {
    throw fail("the path would leave the workspace root");
  }
  return dir;
}

function encodeSegment(value: string): string {
  return value.replace(/[^A-Za-z0-9._-]/gu, (ch) =>
    Array.from(
      Buffer.from(ch, "utf8"),
      (b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`,
    ).join(""),
  );
}

/** Git's rules for a branch name (git-check-ref-format), so a PR head ref is safe to check out. */
export function isValidBranchName(name: string): boolean {
  if (name === "" || name === "@" || name.startsWith("-") || name.startsWith("/")) return false;
  if (name.endsWith("/") || name.endsWith(".") || name.includes("//") || name.includes(".."))
    return false;
  if (name.includes("@{") || /[~^:?*[\\]/u.test(name)) return false;
  if ([...name].some((ch) => ch <= " " || ch === "\x7f")) return false;
  return name.split("/").every((c) => !c.startsWith(".") && !c.endsWith(".lock"));
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

/**
 * Clone (first turn) or fetch and carefully update (later turns) the key's workspace.
 * Throws WorkspaceError; its message can be posted to the thread as it is.
 */
export async function prepareWorkspace(opts: PrepareWorkspaceOptions): Promise<Workspace> {
  const { repo, log } = opts;
  const pr = opts.pullRequest;
  checkCloneUrl(repo, opts.cloneUrl);
  if (pr && (!Number.isSafeInteger(pr.number) || pr.number < 1 || !isValidBranchName(pr.headRef))) {
    throw new WorkspaceError(
      "invalid-key",
      repo,
      `cannot check out pull request #${pr.number} of ${repo}: its head branch name ${JSON.stringify(pr.headRef)} is not valid in git`,
    );
  }
  workspacePath(opts.root, opts); // refuses a bad key before anything touches the disk
  const git = gitRunner(opts);
  const started = Date.now();
  let ws: Workspace;
  try {
    await fs.mkdir(opts.root, { recursive: true });
    // The session is filed under the real path; resolve symlinks so every turn sees one string.
    const root = await fs.realpath(opts.root);
    const dir = workspacePath(root, opts);
    const existing = await checkoutState(dir);
    if (existing === "absent") {
      ws = await cloneInto(root, dir, git, opts);
    } else if (existing === "checkout") {
      ws = await updateCheckout(dir, git, opts);
    } else {
      throw new WorkspaceError(
        "not-a-checkout",
        repo,
        `the workspace for ${repo} #${opts.issueNumber} exists but is not a git checkout; an operator must move it away`,
      );
    }
  } catch (err) {
    if (err instanceof WorkspaceError) throw err;
    // A file-system failure (permissions, a full disk, a race on the directory): say so without
    // the path, which is the runner's business, not the thread's.
    const code = (err as NodeJS.ErrnoException).code;
    throw new WorkspaceError(
      "filesystem",
      repo,
      `could not prepare the workspace for ${repo}: the runner's workspace directory failed${code ? ` (${code})` : ""}`,
      { detail: redactToken(err instanceof Error ? err.message : String(err), opts.token) },
    );
  }
  log.info(
    {
      repo,
      issue: opts.issueNumber,
      agent: opts.agent,
      dir: ws.dir,
      update: ws.update,
      headSha: ws.headSha,
      ms: Date.now() - started,
    },
    ws.created ? "workspace cloned" : `workspace ${ws.update.kind}`,
  );
  return ws;
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
    // A URL with credentials would be written to .git/config; the token goes by environment.
    throw new WorkspaceError(
      "invalid-key",
      repo,
      `cannot clone ${repo}: the clone URL must not carry credentials`,
    );
  }
}

async function checkoutState(dir: string): Promise<"absent" | "checkout" | "foreign"> {
  const entries = await fs.readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw err;
  });
  if (entries === null || entries.length === 0) return "absent";
  const dotGit = await fs.stat(path.join(dir, ".git")).catch(() => null);
  return dotGit?.isDirectory() ? "checkout" : "foreign";
}

async function cloneInto(
  root: string,
  dir: string,
  git: GitRunner,
  opts: PrepareWorkspaceOptions,
): Promise<Workspace> {
  const pr = opts.pullRequest;
  const tmpRoot = path.join(root, TMP_DIR);
  await fs.mkdir(tmpRoot, { recursive: true });
  await sweepStaleClones(tmpRoot, opts.log);
  const tmp = path.join(tmpRoot, `clone-${Date.now()}-${randomBytes(4).toString("hex")}`);
  await fs.mkdir(tmp);
  try {
    await git.run("clone", ["clone", ...(pr ? ["--no-checkout"] : []), "--", opts.cloneUrl, tmp], {
      cwd: tmpRoot,
      auth: true,
    });
    let upstream: { ref: string; sha: string };
    if (pr) {
      const ref = pullRef(pr.number);
      await git.run("clone", ["fetch", "--no-tags", "origin", `+${ref}:${ref}`], {
        cwd: tmp,
        auth: true,
      });
      await git.run("clone", ["checkout", "--quiet", "--no-track", "-B", pr.headRef, ref], {
        cwd: tmp,
      });
      upstream = { ref, sha: await git.revParse(tmp, ref) };
    } else {
      const branch = await defaultBranch(git, tmp);
      const ref = `refs/remotes/origin/${branch}`;
      upstream = { ref, sha: await git.revParse(tmp, ref) };
    }
    const headSha = await git.revParse(tmp, "HEAD");
    const branch = await currentBranch(git, tmp);
    await fs.mkdir(path.dirname(dir), { recursive: true });
    await fs.rmdir(dir).catch(() => undefined); // an empty leftover; a full one makes rename fail
    await fs.rename(tmp, dir);
    return { dir, created: true, headSha, branch, upstream, update: { kind: "cloned" } };
  } catch (err) {
    await fs.rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

async function updateCheckout(
  dir: string,
  git: GitRunner,
  opts: PrepareWorkspaceOptions,
): Promise<Workspace> {
  const pr = opts.pullRequest;
  // Keep origin pointing at the clone URL (a changed GHE_HOST, or an agent that repointed it).
  await git.run("fetch", ["remote", "set-url", "origin", opts.cloneUrl], { cwd: dir });
  const unsafe = await unsafeLocalConfig(git, dir, opts.cloneUrl);
  if (unsafe) {
    // Settings in the checkout's own config would steer where the token goes: do not fetch.
    return finish(dir, git, opts, false, {
      kind: "left",
      reason: "unsafe-git-config",
      detail: unsafe,
    });
  }
  const refspecs = ["+refs/heads/*:refs/remotes/origin/*"];
  if (pr) refspecs.push(`+${pullRef(pr.number)}:${pullRef(pr.number)}`);
  // The default branch comes from refs/remotes/origin/HEAD, which fetch does not touch: read it
  // while the fetch runs (each git process costs milliseconds, and this is the turn's hot path).
  const [, target] = await Promise.all([
    git.run("fetch", ["fetch", "--prune", "origin", ...refspecs], { cwd: dir, auth: true }),
    pr ? Promise.resolve(pr.headRef) : defaultBranch(git, dir),
  ]);
  const upstreamRef = pr ? pullRef(pr.number) : `refs/remotes/origin/${target}`;
  const state = await readCheckoutState(git, dir, target, upstreamRef);
  const plan = planUpdate(state);
  let update: WorkspaceUpdate;
  switch (plan.action) {
    case "up-to-date":
      update = { kind: "up-to-date", ahead: plan.ahead };
      break;
    case "leave":
      update = { kind: "left", reason: plan.reason, detail: plan.detail };
      break;
    case "fast-forward": {
      const from = await git.revParse(dir, "HEAD");
      const merged = await git.run("fetch", ["merge", "--ff-only", "--quiet", upstreamRef], {
        cwd: dir,
        allowFailure: true,
      });
      update =
        merged.exitCode === 0
          ? { kind: "fast-forwarded", from, to: await git.revParse(dir, "HEAD") }
          : inTheWay(merged.stderr, git);
      break;
    }
    case "create-branch": {
      const created = await git.run(
        "fetch",
        ["checkout", "--quiet", "--no-track", "-b", target, upstreamRef],
        { cwd: dir, allowFailure: true },
      );
      update =
        created.exitCode === 0
          ? { kind: "switched", branch: target }
          : inTheWay(created.stderr, git);
      break;
    }
  }
  if (pr?.headSha) {
    const sha = await git.revParse(dir, upstreamRef);
    if (sha !== pr.headSha) {
      opts.log.debug(
        { repo: opts.repo, pr: pr.number, expected: pr.headSha, got: sha },
        "pull request head moved since the webhook",
      );
    }
  }
  return finish(dir, git, opts, false, update, upstreamRef);
}

/** A merge or checkout git refused because untracked files would be overwritten. */
function inTheWay(stderr: string, git: GitRunner): WorkspaceUpdate {
  if (/untracked working tree files would be overwritten/i.test(stderr)) {
    return {
      kind: "left",
      reason: "untracked-files-in-the-way",
      detail: "untracked files would be overwritten by the update",
    };
  }
  throw git.failure("fetch", stderr);
}

async function finish(
  dir: string,
  git: GitRunner,
  opts: PrepareWorkspaceOptions,
  created: boolean,
  update: WorkspaceUpdate,
  upstreamRef?: string,
): Promise<Workspace> {
  const ref =
    upstreamRef ??
    (opts.pullRequest
      ? pullRef(opts.pullRequest.number)
      : `refs/remotes/origin/${await defaultBranch(git, dir)}`);
  const [upstreamSha, headSha, branch] = await Promise.all([
    git.revParse(dir, ref, true),
    git.revParse(dir, "HEAD"),
    currentBranch(git, dir),
  ]);
  return { dir, created, headSha, branch, upstream: { ref, sha: upstreamSha }, update };
}

async function readCheckoutState(
  git: GitRunner,
  dir: string,
  targetBranch: string,
  upstreamRef: string,
): Promise<CheckoutState> {
  const [status, exists] = await Promise.all([
    git.run("fetch", ["status", "--porcelain=v2", "--branch", "--untracked-files=no", "-z"], {
      cwd: dir,
    }),
    git.run("fetch", ["show-ref", "--verify", "--quiet", `refs/heads/${targetBranch}`], {
      cwd: dir,
      allowFailure: true,
    }),
  ]);
  const fields = status.stdout.split("\0");
  const head = fields.find((f) => f.startsWith("# branch.head "))?.slice("# branch.head ".length);
  const trackedChanges = fields.some((f) => /^[12u] /.test(f));
  let ahead = 0;
  let behind = 0;
  if (exists.exitCode === 0) {
    const counts = await git.run(
      "fetch",
      ["rev-list", "--left-right", "--count", `refs/heads/${targetBranch}...${upstreamRef}`],
      { cwd: dir },
    );
    [ahead, behind] = counts.stdout.trim().split(/\s+/).map(Number) as [number, number];
  }
  const markers = [
    "MERGE_HEAD",
    "rebase-merge",
    "rebase-apply",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "BISECT_LOG",
  ];
  const present = await Promise.all(
    markers.map((m) =>
      fs.stat(path.join(dir, ".git", m)).then(
        () => true,
        () => false,
      ),
    ),
  );
  return {
    currentBranch: head === undefined || head === "(detached)" ? null : head,
    targetBranch,
    targetExists: exists.exitCode === 0,
    trackedChanges,
    operationInProgress: present.some(Boolean),
    ahead,
    behind,
  };
}

/**
 * The checkout's own .git/config is writable by the agent. Settings there that redirect or
 * proxy git's HTTP traffic, or rewrite URLs, could send the token elsewhere; refuse to fetch
 * when any is present, or when the effective URL of origin is not the clone URL.
 */
/**
 * Keys that, set in the checkout's own config, would redirect or proxy the fetch, rewrite its
 * URL, pull in other config files, or run a program while the token is in the environment.
 */
const UNSAFE_CONFIG =
  "^(http|url|credential|include|includeif)\\.|^core\\.(askpass|gitproxy|sshcommand)$|^remote\\.origin\\.(proxy|vcs|uploadpack)$";

async function unsafeLocalConfig(
  git: GitRunner,
  dir: string,
  cloneUrl: string,
): Promise<string | undefined> {
  const [found, effective] = await Promise.all([
    git.run("fetch", ["config", "--local", "--name-only", "--get-regexp", UNSAFE_CONFIG], {
      cwd: dir,
      allowFailure: true,
    }),
    git.run("fetch", ["ls-remote", "--get-url", "origin"], { cwd: dir }),
  ]);
  const keys = found.stdout.split("\n").filter(Boolean);
  if (keys.length > 0) {
    return `the checkout's git config sets ${keys.join(", ")}; remove it so Tether can fetch`;
  }
  if (effective.stdout.trim() !== cloneUrl) {
    return "the checkout's git config rewrites the clone URL; remove the url.* setting so Tether can fetch";
  }
  return undefined;
}

async function defaultBranch(git: GitRunner, dir: string): Promise<string> {
  const head = await git.run("fetch", ["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"], {
    cwd: dir,
    allowFailure: true,
  });
  const ref = head.stdout.trim();
  if (head.exitCode === 0 && ref.startsWith("refs/remotes/origin/")) {
    return ref.slice("refs/remotes/origin/".length);
  }
  throw git.failure(
    "fetch",
    "the clone has no origin/HEAD, so its default branch is unknown",
    "git-failed",
  );
}

async function currentBranch(git: GitRunner, dir: string): Promise<string | null> {
  const r = await git.run("fetch", ["symbolic-ref", "--quiet", "--short", "HEAD"], {
    cwd: dir,
    allowFailure: true,
  });
  return r.exitCode === 0 ? r.stdout.trim() : null;
}

function pullRef(n: number): string {
  // Outside refs/remotes: `fetch --prune` never removes it and no branch name can collide with it.
  return `refs/pull/${n}/head`;
}

async function sweepStaleClones(tmpRoot: string, log: Logger): Promise<void> {
  for (const name of await fs.readdir(tmpRoot).catch(() => [] as string[])) {
    const p = path.join(tmpRoot, name);
    const st = await fs.stat(p).catch(() => null);
    if (st && Date.now() - st.mtimeMs > STALE_TMP_MS) {
      await fs.rm(p, { recursive: true, force: true }).catch(() => undefined);
      log.info({ path: p }, "removed a stale temporary clone");
    }
  }
}

/** Words for the failed step, used in error messages: "could not clone …" / "could not fetch …". */
type Step = "clone" | "fetch";

interface GitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

interface GitRunner {
  run(
    step: Step,
    args: string[],
    o: { cwd: string; auth?: boolean; allowFailure?: boolean },
  ): Promise<GitResult>;
  revParse(cwd: string, rev: string, allowMissing?: boolean): Promise<string>;
  failure(step: Step, stderr: string, kind?: WorkspaceErrorKind, exitCode?: number): WorkspaceError;
}

/** Environment passed through to git from the runner's own; nothing else (no secrets) reaches it. */
const PASS_ENV = [
  "PATH",
  "HOME",
  "TMPDIR",
  "HTTPS_PROXY",
  "https_proxy",
  "HTTP_PROXY",
  "http_proxy",
  "NO_PROXY",
  "no_proxy",
  "ALL_PROXY",
  "all_proxy",
  "GIT_SSL_CAINFO",
  "GIT_SSL_CAPATH",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
];

/**
 * The one place git runs: argument arrays, no shell, an explicit environment, bounded output,
 * the whole process group killed on cancel or timeout, hooks and fsmonitor disabled (the agent
 * can write .git/hooks), and the token only in the environment of commands that talk to GitHub.
 */
function gitRunner(opts: PrepareWorkspaceOptions): GitRunner {
  const gitPath = opts.gitPath ?? "git";
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const base: Record<string, string> = { LC_ALL: "C", GIT_TERMINAL_PROMPT: "0" };
  for (const name of PASS_ENV) {
    const v = process.env[name];
    if (v !== undefined) base[name] = v;
  }
  const host = new URL(opts.cloneUrl).host;

  const failure = (
    step: Step,
    stderr: string,
    kind: WorkspaceErrorKind = classifyGitFailure(stderr),
    exitCode?: number,
  ): WorkspaceError => {
    const what = `could not ${step} ${opts.repo}`;
    const messages: Record<WorkspaceErrorKind, string> = {
      "not-found": `${what}: repository not found or the app has no access`,
      auth: `${what}: GitHub refused the app's installation token (expired, revoked, or without access to the repository's contents)`,
      network: `${what}: could not reach ${host}; check the network and GHE_HOST`,
      unavailable: `${what}: the git server answered with an error; try again later`,
      "missing-ref": `${what}: ${opts.pullRequest ? `pull request #${opts.pullRequest.number}'s head` : "a branch"} is not on the server`,
      timeout: `${what}: git did not finish within ${Math.round(timeoutMs / 1000)}s`,
      cancelled: `preparing the workspace for ${opts.repo} was cancelled`,
      "git-failed": `${what}: git failed${exitCode === undefined ? "" : ` (exit ${exitCode})`}; the runner's log has git's message`,
      "invalid-key": `${what}: invalid task key`,
      "not-a-checkout": `${what}: the workspace is not a git checkout`,
      filesystem: `${what}: the runner's workspace directory failed`,
    };
    return new WorkspaceError(kind, opts.repo, messages[kind], {
      detail: tail(redactToken(stderr, opts.token)),
      ...(exitCode === undefined ? {} : { exitCode }),
    });
  };

  const run: GitRunner["run"] = async (step, args, o) => {
    if (opts.signal?.aborted) throw failure(step, "", "cancelled");
    const env = o.auth ? { ...base, ...gitAuthEnv(opts.cloneUrl, opts.token) } : base;
    const argv = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", ...args];
    const started = Date.now();
    const child = execa(gitPath, argv, {
      cwd: o.cwd,
      env,
      extendEnv: false,
      reject: false,
      stdin: "ignore",
      maxBuffer: 16 * 1024 * 1024,
      // Its own process group, so a kill also reaches git-remote-https and friends.
      detached: true,
    });
    let stopped: "timeout" | "cancelled" | undefined;
    const kill = (why: "timeout" | "cancelled") => {
      stopped ??= why;
      killGroup(child.pid, "SIGTERM");
      setTimeout(() => killGroup(child.pid, "SIGKILL"), KILL_GRACE_MS).unref();
    };
    const timer = setTimeout(() => kill("timeout"), timeoutMs);
    const onAbort = () => kill("cancelled");
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let result;
    try {
      result = await child;
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
    }
    const stderr = String(result.stderr ?? "");
    const out: GitResult = {
      exitCode: result.exitCode ?? -1,
      stdout: String(result.stdout ?? ""),
      stderr,
    };
    opts.log.debug(
      { git: args.slice(0, 2), exitCode: out.exitCode, ms: Date.now() - started },
      "git",
    );
    if (stopped) throw failure(step, stderr, stopped);
    if (result.failed && result.exitCode === undefined) {
      // Spawning failed (git missing) or a signal from elsewhere killed it. execa's message
      // names the command and the cause, never the environment.
      const why = redactToken(result.shortMessage ?? String(result.message), opts.token);
      opts.log.warn({ git: args[0], error: why }, "git did not run");
      if (/ENOENT/.test(why) && !result.signal) {
        throw new WorkspaceError(
          "git-failed",
          opts.repo,
          `could not ${step} ${opts.repo}: the runner could not start git; is it installed?`,
          { detail: why },
        );
      }
      throw failure(step, why, "git-failed");
    }
    if (out.exitCode !== 0 && !o.allowFailure) {
      opts.log.warn(
        { git: args[0], exitCode: out.exitCode, stderr: tail(redactToken(stderr, opts.token)) },
        "git failed",
      );
      throw failure(step, stderr, undefined, out.exitCode);
    }
    return out;
  };

  const revParse: GitRunner["revParse"] = async (cwd, rev, allowMissing = false) => {
    const r = await run("fetch", ["rev-parse", "--verify", "--quiet", `${rev}^{commit}`], {
      cwd,
      allowFailure: allowMissing,
    });
    return r.stdout.trim();
  };

  return { run, revParse, failure };
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}

/** Which failure git's (C-locale) stderr describes. */
export function classifyGitFailure(stderr: string): WorkspaceErrorKind {
  if (/repository '.*' not found|Repository not found|returned error: 404/i.test(stderr)) {
    return "not-found";
  }
  if (
    /Authentication failed|could not read (Username|Password)|returned error: 40[13]|Invalid username or password/i.test(
      stderr,
    )
  ) {
    return "auth";
  }
  if (/couldn't find remote ref/i.test(stderr)) return "missing-ref";
  if (
    /Could not resolve (host|proxy)|Failed to connect|Couldn't connect|Connection (refused|reset|timed out)|Operation timed out|SSL|TLS|Empty reply from server|early EOF/i.test(
      stderr,
    )
  ) {
    return "network";
  }
  if (/returned error: (5\d\d|429)/i.test(stderr)) return "unavailable";
  return "git-failed";
}

function tail(text: string, max = 2000): string {
  const t = text.trim();
  return t.length > max ? `…${t.slice(-max)}` : t;
}
