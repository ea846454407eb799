import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { gitAuthEnv, parseRepoName, redactToken } from "../github/git-auth.js";
import type { Logger } from "../log.js";
import {
  isObjectId,
  isValidBranchName,
  refFiles,
  type RefFiles,
  type RefValue,
} from "./git-refs.js";
import {
  checkOriginConfig,
  ORIGIN_CONFIG_PATTERN,
  parseConfigListing,
  refusal,
  type ConfigEntry,
} from "./origin-config.js";

export { cloneUrlFor } from "../github/git-auth.js";
export { isValidBranchName } from "./git-refs.js";

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

/*
 * Both paths below are on a turn's hot path (comment webhook → CLI spawn), where each git
 * process costs 5–10 ms of start-up on a busy machine. So: one git process per question that
 * only git can answer, questions that do not depend on each other asked at once, and refs git
 * has just written read from their files (git-refs.ts), with git asked whenever a file is odd.
 */

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
    // A pull request's head comes in the clone's own fetch (one negotiation, not two): clone
    // honours extra fetch refspecs configured with --config, and fails like `git fetch` would
    // ("couldn't find remote ref") when the pull ref is not on the server. The refspec stays in
    // .git/config, so the agent's own `git fetch` updates the pull ref too.
    const prArgs = pr
      ? [
          "--no-checkout",
          `--config=remote.origin.fetch=+${pullRef(pr.number)}:${pullRef(pr.number)}`,
        ]
      : [];
    await git.run("clone", ["clone", ...prArgs, "--", opts.cloneUrl, tmp], {
      cwd: tmpRoot,
      auth: true,
    });
    if (pr) {
      await git.run(
        "clone",
        ["checkout", "--quiet", "--no-track", "-B", pr.headRef, pullRef(pr.number)],
        { cwd: tmp },
      );
    }
    const refs = refFiles(path.join(tmp, ".git"));
    const [head, upstreamRef] = await Promise.all([
      readHead(git, refs, tmp),
      pr
        ? pullRef(pr.number)
        : refs
            .read("refs/remotes/origin/HEAD")
            .then((value) => defaultBranch(git, tmp, value))
            .then((branch) => `refs/remotes/origin/${branch}`),
    ]);
    const upstreamSha = await refSha(git, refs, tmp, upstreamRef, false);
    await fs.mkdir(path.dirname(dir), { recursive: true });
    await fs.rmdir(dir).catch(() => undefined); // an empty leftover; a full one makes rename fail
    await fs.rename(tmp, dir);
    return {
      dir,
      created: true,
      headSha: head.sha,
      branch: head.branch,
      upstream: { ref: upstreamRef, sha: upstreamSha },
      update: { kind: "cloned" },
    };
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
  const gitDir = path.join(dir, ".git");
  // The fetch moves neither HEAD, the index nor refs/heads/*, so status may run alongside the
  // config check and the fetch itself (on a large tree it is the slow one): what it sees still
  // holds afterwards. It carries no token. Its failure is awaited below, not left unhandled.
  const localState = readLocalState(git, dir);
  localState.catch(() => undefined);
  // Everything before the fetch is read at once; origin/HEAD is not touched by a fetch either.
  const [origin, originHead] = await Promise.all([
    readOriginConfig(git, dir),
    pr ? undefined : refFiles(gitDir).read("refs/remotes/origin/HEAD"),
  ]);
  const target = pr ? pr.headRef : await defaultBranch(git, dir, originHead);
  const upstreamRef = pr ? pullRef(pr.number) : `refs/remotes/origin/${target}`;
  const check = checkOriginConfig(origin, opts.cloneUrl);
  if (check.repoint) {
    // Keep origin pointing at the clone URL (a changed GHE_HOST, or an agent that repointed it).
    await git.run("fetch", ["remote", "set-url", "origin", opts.cloneUrl], { cwd: dir });
  }
  // With unsafe keys present git is not asked anything more: the fetch is refused either way.
  const effective =
    check.unsafeKeys.length === 0 && check.askGit
      ? await effectiveOriginUrl(git, dir)
      : opts.cloneUrl;
  const unsafe = refusal(check, effective, opts.cloneUrl);
  if (unsafe) {
    // Settings would steer where the token goes: do not fetch.
    const [local, upstreamSha] = await Promise.all([
      localState,
      refSha(git, refFiles(gitDir), dir, upstreamRef, true),
    ]);
    return result(dir, git, local, upstreamRef, upstreamSha ?? "", {
      kind: "left",
      reason: "unsafe-git-config",
      detail: unsafe,
    });
  }
  const refspecs = ["+refs/heads/*:refs/remotes/origin/*"];
  if (pr) refspecs.push(`+${pullRef(pr.number)}:${pullRef(pr.number)}`);
  // Never into submodules: a populated submodule's git dir (.git/modules/*) has a config of its
  // own that the agent can write and the check above never reads, and the fetch there would
  // inherit the token. By default git recurses "on demand", whenever fetched commits move a
  // populated submodule.
  await git.run("fetch", ["fetch", "--prune", "--no-recurse-submodules", "origin", ...refspecs], {
    cwd: dir,
    auth: true,
  });

  const refs = refFiles(gitDir);
  const [local, targetSha, upstreamSha] = await Promise.all([
    localState,
    refSha(git, refs, dir, `refs/heads/${target}`, true),
    refSha(git, refs, dir, upstreamRef, true),
  ]);
  let ahead = 0;
  let behind = 0;
  // Equal commits: nothing to count (the common turn, when nothing new arrived). A missing
  // upstream makes rev-list fail as it always did.
  if (targetSha !== null && targetSha !== upstreamSha) {
    const counts = await git.run(
      "fetch",
      ["rev-list", "--left-right", "--count", `refs/heads/${target}...${upstreamRef}`],
      { cwd: dir },
    );
    [ahead, behind] = counts.stdout.trim().split(/\s+/).map(Number) as [number, number];
  }
  const plan = planUpdate({
    currentBranch: local.branch,
    targetBranch: target,
    targetExists: targetSha !== null,
    trackedChanges: local.trackedChanges,
    operationInProgress: local.operationInProgress,
    ahead,
    behind,
  });
  if (pr?.headSha && upstreamSha !== pr.headSha) {
    opts.log.debug(
      { repo: opts.repo, pr: pr.number, expected: pr.headSha, got: upstreamSha },
      "pull request head moved since the webhook",
    );
  }
  const upstream = upstreamSha ?? "";
  switch (plan.action) {
    case "up-to-date":
      return result(dir, git, local, upstreamRef, upstream, {
        kind: "up-to-date",
        ahead: plan.ahead,
      });
    case "leave":
      return result(dir, git, local, upstreamRef, upstream, {
        kind: "left",
        reason: plan.reason,
        detail: plan.detail,
      });
    case "fast-forward": {
      const merged = await git.run("fetch", ["merge", "--ff-only", "--quiet", upstreamRef], {
        cwd: dir,
        allowFailure: true,
      });
      if (merged.exitCode !== 0) {
        return result(dir, git, local, upstreamRef, upstream, inTheWay(merged.stderr, git));
      }
      // The plan fast-forwards only from the checked-out target branch, so HEAD was at
      // targetSha; a fast-forward to a ref leaves HEAD at exactly that ref's commit.
      return result(dir, git, { ...local, headSha: upstream }, upstreamRef, upstream, {
        kind: "fast-forwarded",
        from: targetSha as string,
        to: upstream,
      });
    }
    case "create-branch": {
      const created = await git.run(
        "fetch",
        ["checkout", "--quiet", "--no-track", "-b", target, upstreamRef],
        { cwd: dir, allowFailure: true },
      );
      if (created.exitCode !== 0) {
        return result(dir, git, local, upstreamRef, upstream, inTheWay(created.stderr, git));
      }
      return result(
        dir,
        git,
        { ...local, headSha: upstream, branch: target },
        upstreamRef,
        upstream,
        { kind: "switched", branch: target },
      );
    }
  }
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

async function result(
  dir: string,
  git: GitRunner,
  local: LocalState,
  upstreamRef: string,
  upstreamSha: string,
  update: WorkspaceUpdate,
): Promise<Workspace> {
  // status reports an unborn HEAD as "(initial)": let git say what is wrong with it.
  const headSha =
    local.headSha !== null && isObjectId(local.headSha)
      ? local.headSha
      : await git.revParse(dir, "HEAD");
  return {
    dir,
    created: false,
    headSha,
    branch: local.branch,
    upstream: { ref: upstreamRef, sha: upstreamSha },
    update,
  };
}

/** The checkout as the agent left it: what HEAD is, and whether anything is under way. */
interface LocalState {
  /** From status's "# branch.oid"; "(initial)" on an unborn branch. */
  headSha: string | null;
  /** Checked-out branch; null when detached. */
  branch: string | null;
  trackedChanges: boolean;
  operationInProgress: boolean;
}

const OPERATION_MARKERS = [
  "MERGE_HEAD",
  "rebase-merge",
  "rebase-apply",
  "CHERRY_PICK_HEAD",
  "REVERT_HEAD",
  "BISECT_LOG",
];

async function readLocalState(git: GitRunner, dir: string): Promise<LocalState> {
  const [status, present] = await Promise.all([
    // --no-ahead-behind: the counts against the branch's upstream are not used, and cost a walk.
    git.run(
      "fetch",
      ["status", "--porcelain=v2", "--branch", "--no-ahead-behind", "--untracked-files=no", "-z"],
      { cwd: dir },
    ),
    Promise.all(
      OPERATION_MARKERS.map((m) =>
        fs.stat(path.join(dir, ".git", m)).then(
          () => true,
          () => false,
        ),
      ),
    ),
  ]);
  const fields = status.stdout.split("\0");
  const header = (name: string) =>
    fields.find((f) => f.startsWith(`# ${name} `))?.slice(`# ${name} `.length);
  const head = header("branch.head");
  return {
    headSha: header("branch.oid") ?? null,
    branch: head === undefined || head === "(detached)" ? null : head,
    trackedChanges: fields.some((f) => /^[12u] /.test(f)),
    operationInProgress: present.some(Boolean),
  };
}

/** The checkout's config entries that bear on where a fetch goes (see origin-config.ts). */
async function readOriginConfig(git: GitRunner, dir: string): Promise<ConfigEntry[]> {
  const listed = await git.run(
    "fetch",
    ["config", "-z", "--show-scope", "--get-regexp", ORIGIN_CONFIG_PATTERN],
    { cwd: dir, allowFailure: true },
  );
  // Exit 1 means nothing matched; anything else is a config git cannot read, and a fetch
  // would fail on it as well.
  if (listed.exitCode !== 0 && listed.exitCode !== 1) {
    throw git.failure("fetch", listed.stderr, "git-failed", listed.exitCode);
  }
  return parseConfigListing(listed.stdout);
}

/** origin's URL after git's url.*.insteadOf rewriting, from every config scope. */
async function effectiveOriginUrl(git: GitRunner, dir: string): Promise<string> {
  const r = await git.run("fetch", ["ls-remote", "--get-url", "origin"], { cwd: dir });
  return r.stdout.trim();
}

async function defaultBranch(
  git: GitRunner,
  dir: string,
  originHead: RefValue | undefined,
): Promise<string> {
  const prefix = "refs/remotes/origin/";
  if (originHead?.kind === "symref" && originHead.target.startsWith(prefix)) {
    return originHead.target.slice(prefix.length);
  }
  // Absent or odd: git's own reading decides (and fails the same way it always did).
  const head = await git.run("fetch", ["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"], {
    cwd: dir,
    allowFailure: true,
  });
  const ref = head.stdout.trim();
  if (head.exitCode === 0 && ref.startsWith(prefix)) {
    return ref.slice(prefix.length);
  }
  throw git.failure(
    "fetch",
    "the clone has no origin/HEAD, so its default branch is unknown",
    "git-failed",
  );
}

/** HEAD's commit and branch (null when detached), from the files when they are plain. */
async function readHead(
  git: GitRunner,
  refs: RefFiles,
  dir: string,
): Promise<{ sha: string; branch: string | null }> {
  const head = await refs.resolve("HEAD");
  const branch =
    head === undefined
      ? undefined
      : head.ref === "HEAD"
        ? null
        : head.ref.startsWith("refs/heads/")
          ? head.ref.slice("refs/heads/".length)
          : undefined;
  const [sha, name] = await Promise.all([
    head?.sha ?? git.revParse(dir, "HEAD"),
    branch === undefined ? currentBranch(git, dir) : branch,
  ]);
  return { sha, branch: name };
}

/** A ref's commit; null when it does not exist (only asked for with allowMissing). */
async function refSha(
  git: GitRunner,
  refs: RefFiles,
  dir: string,
  name: string,
  allowMissing: true,
): Promise<string | null>;
async function refSha(
  git: GitRunner,
  refs: RefFiles,
  dir: string,
  name: string,
  allowMissing: false,
): Promise<string>;
async function refSha(
  git: GitRunner,
  refs: RefFiles,
  dir: string,
  name: string,
  allowMissing: boolean,
): Promise<string | null> {
  const resolved = await refs.resolve(name);
  if (resolved?.sha) return resolved.sha;
  if (resolved && allowMissing) return null;
  const sha = await git.revParse(dir, name, allowMissing);
  return sha === "" ? null : sha;
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

export interface MaintainWorkspaceOptions extends TaskKey {
  /** TETHER_WORKSPACE_DIR. */
  root: string;
  log: Logger;
  /** Aborting kills git's housekeeping; the outcome is then "cancelled". */
  signal?: AbortSignal;
  /** Limit for the housekeeping. Default 10 minutes. */
  timeoutMs?: number;
  /** git executable. Default "git" on PATH. */
  gitPath?: string;
}

export type MaintenanceOutcome = "done" | "no-checkout" | "cancelled" | "failed";

/**
 * git's automatic housekeeping (`gc --auto`: pack loose objects, prune, pack refs) for a key's
 * workspace. prepareWorkspace switches it off (`maintenance.auto=false`), because git would
 * otherwise start it after every fetch and merge on the turn's hot path. Call this when the
 * turn is over and the agent no longer works in the directory (housekeeping takes locks the
 * agent's own git commands would trip over). It runs in the foreground (gc.autoDetach=false),
 * so the timeout and the signal bound it; it needs no token. Never throws: failures are
 * logged and returned.
 */
export async function maintainWorkspace(
  opts: MaintainWorkspaceOptions,
): Promise<MaintenanceOutcome> {
  const git = gitRunner(opts);
  try {
    const dir = workspacePath(await fs.realpath(opts.root), opts);
    if ((await checkoutState(dir)) !== "checkout") return "no-checkout";
    await git.run("maintain", ["gc", "--auto", "--quiet"], {
      cwd: dir,
      autoMaintenance: true,
    });
    return "done";
  } catch (err) {
    if (err instanceof WorkspaceError && err.kind === "cancelled") return "cancelled";
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "no-checkout";
    opts.log.warn(
      {
        repo: opts.repo,
        issue: opts.issueNumber,
        agent: opts.agent,
        err: err instanceof WorkspaceError ? { kind: err.kind, detail: err.detail } : String(err),
      },
      "workspace housekeeping failed",
    );
    return "failed";
  }
}

/** Words for the failed step, used in error messages: "could not clone …" / "could not fetch …". */
type Step = "clone" | "fetch" | "maintain";

interface GitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

interface GitRunner {
  run(
    step: Step,
    args: string[],
    o: {
      cwd: string;
      /** Give git the token: only for commands that talk to GitHub. */
      auth?: boolean;
      allowFailure?: boolean;
      /**
       * Let git run its automatic housekeeping, in the foreground. Off by default: fetch and
       * merge would otherwise start `git maintenance run --auto` on the turn's hot path.
       */
      autoMaintenance?: boolean;
    },
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

interface GitRunnerOptions {
  repo: string;
  log: Logger;
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
  gitPath?: string | undefined;
  /** Needed for commands run with `auth`. */
  cloneUrl?: string;
  token?: string;
  pullRequest?: PullRequestRef | undefined;
}

/** Hot-path commands never start git's housekeeping; maintainWorkspace runs it later. */
const NO_AUTO_MAINTENANCE = ["-c", "maintenance.auto=false", "-c", "gc.auto=0"];
/** Housekeeping in the foreground, so the timeout and the signal reach all of it. */
const FOREGROUND_MAINTENANCE = ["-c", "gc.autoDetach=false"];

/**
 * The one place git runs: argument arrays, no shell, an explicit environment, bounded output,
 * the whole process group killed on cancel or timeout, hooks and fsmonitor disabled (the agent
 * can write .git/hooks), and the token only in the environment of commands that talk to GitHub.
 */
function gitRunner(opts: GitRunnerOptions): GitRunner {
  const gitPath = opts.gitPath ?? "git";
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const base: Record<string, string> = { LC_ALL: "C", GIT_TERMINAL_PROMPT: "0" };
  for (const name of PASS_ENV) {
    const v = process.env[name];
    if (v !== undefined) base[name] = v;
  }
  const host = opts.cloneUrl ? new URL(opts.cloneUrl).host : "GitHub";

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
    let env = base;
    if (o.auth) {
      if (opts.cloneUrl === undefined || opts.token === undefined) {
        throw new Error("git with auth needs the clone URL and the token");
      }
      env = { ...base, ...gitAuthEnv(opts.cloneUrl, opts.token) };
    }
    const argv = [
      "-c",
      "core.hooksPath=/dev/null",
      "-c",
      "core.fsmonitor=false",
      ...(o.autoMaintenance ? FOREGROUND_MAINTENANCE : NO_AUTO_MAINTENANCE),
      ...args,
    ];
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
