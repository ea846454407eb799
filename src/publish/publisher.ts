/**
 * After a turn: the agent's changes leave its workspace as one commit, are checked, and are
 * pushed to the conversation's branch (or a same-repository pull request's head), and the
 * conversation's pull request is opened. The agent never holds a GitHub token: the commit is
 * made in its sandbox (Workspaces.collect), carried out as a bundle, fetched into the
 * repository's mirror, judged there by Tether (checks.ts), and pushed from there with a token
 * scoped to this repository and `contents: write` alone (src/github/scoped-auth.ts).
 *
 * How it reaches GitHub: with `changes.signedCommits` (the default) the commit is made through
 * the REST API's git database (signed-commit.ts), so GitHub signs it and marks it "Verified"; a
 * change too large for the request budget, or `signedCommits: false`, is pushed with git. A
 * commit made through the API is GitHub's own object, with another id than the one in the
 * workspace, so afterwards the mirror fetches it and the workspace moves onto it
 * (Workspaces.adopt). See docs/changes.md "Changes".
 */
import type { PublishSettings } from "../core/settings.js";
import type { Pool } from "../db/pool.js";
import type { Logger } from "../log.js";
import type { IssueInfo, PullRef, RepoWriter } from "../core/github.js";
import { getConversation, recordPull, recordPush } from "../sql/conversations.js";
import { draftsRefused, recordDraftsRefused } from "../sql/repo-facts.js";
import type { TaskKey } from "../core/task.js";
import { isObjectId } from "../workspace/git-refs.js";
import { pullRef } from "../workspace/mirror.js";
import { WorkspaceError } from "../workspace/errors.js";
import { mirrorRefOf, type Workspaces } from "../workspace/workspace.js";
import { isDraftRefusal } from "../github/errors.js";
import { PushTokenError } from "../github/scoped-auth.js";
import { checkPublish, size, touchesWorkflows, type Refusal } from "./checks.js";
import { DEFAULT_PROTECTED_PATHS } from "./protected-paths.js";
import { MirrorGit, type FileChange } from "./mirror-git.js";
import { MAX_PATCH, type PublishReport } from "./report.js";
import { scanDiff, scanMessage } from "./secret-scan.js";
import {
  commitThroughApi,
  SIGNED_COMMIT_REQUEST_BUDGET,
  type ApiCommitResult,
} from "./signed-commit.js";

/** The branch a key's changes go to: one per issue and agent, the same on every turn. */
export function conversationBranch(issueNumber: number, agent: string): string {
  return `tether/${issueNumber}-${agent}`;
}

/** Where a turn's changes go. */
export type PublishTarget =
  /** An issue: its conversation branch, and a pull request for it. */
  | { kind: "conversation"; branch: string }
  /** A pull request from this repository: its head branch. */
  | { kind: "pull-head"; branch: string; pull: number }
  /** A pull request from a fork (or a deleted one): nothing is pushed. */
  | { kind: "fork"; branch: string; pull: number };

export function publishTarget(key: TaskKey, issue: IssueInfo): PublishTarget {
  const pr = issue.pullRequest;
  if (!pr) return { kind: "conversation", branch: conversationBranch(key.issueNumber, key.agent) };
  const same =
    typeof pr.headRepo === "string" && pr.headRepo.toLowerCase() === key.repo.toLowerCase();
  return same
    ? { kind: "pull-head", branch: pr.headRef, pull: key.issueNumber }
    : { kind: "fork", branch: pr.headRef, pull: key.issueNumber };
}

export interface PublishRequest {
  key: TaskKey;
  taskId: number;
  /** Clone URL and installation token: the mirror's fetch. */
  cloneUrl: string;
  token: string;
  writer: RepoWriter;
  issue: IssueInfo;
  /** The ref the workspace followed this turn (Workspace.upstream.ref), and the default branch. */
  upstreamRef: string;
  /**
   * That ref's commit as Tether's mirror held it when the turn began (Workspace.upstream.sha):
   * with the same ref in the mirror now, what the turn's commit must build on. Never a value the
   * sandbox reported. "" when unknown.
   */
  upstreamSha: string;
  defaultBranch: string;
  mode: "pull_request" | "branch";
  config: PublishSettings;
  /** Who asked, for the `Co-authored-by:` trailers and the pull request's body. */
  requesters: Array<{ login: string; url: string }>;
  /** The agent's final message (already scrubbed): the pull request's body. */
  summary: string;
  /** Values the secret scan looks for. */
  secrets: Iterable<string | undefined>;
  signal?: AbortSignal | undefined;
}

export interface Publisher {
  publish(req: PublishRequest): Promise<PublishReport>;
  /**
   * Before a turn: the key's pull request, and the commits others pushed to its branch since
   * Tether last did (the checkout has taken them in), for the agent's prompt.
   */
  news(
    key: TaskKey,
    upstream: { ref: string; sha: string } | undefined,
  ): Promise<{
    pullNumber: number | null;
    commits: Array<{ sha: string; author: string; subject: string }>;
  }>;
}

export function publisher(deps: { workspaces: Workspaces; pool: Pool; log: Logger }): Publisher {
  const { workspaces, pool } = deps;
  return {
    async news(key, upstream) {
      const conv = await getConversation(pool, key);
      const pullNumber = conv?.pullNumber ?? null;
      if (!conv?.headSha || !upstream?.sha || conv.headSha === upstream.sha)
        return { pullNumber, commits: [] };
      if (upstream.ref !== `refs/remotes/origin/${conv.branch}`) return { pullNumber, commits: [] };
      const m = mirrorGit(workspaces, key);
      return { pullNumber, commits: await m.log(conv.headSha, upstream.sha, 10) };
    },
    async publish(req) {
      const log = deps.log.child({
        repo: req.key.repo,
        issue: req.key.issueNumber,
        agent: req.key.agent,
      });
      try {
        return await publishNow(workspaces, pool, req, log);
      } catch (err) {
        if (err instanceof PushTokenError)
          return {
            result: "failed",
            reason: err.reason === "github" ? "error" : err.reason,
            message: `${err.message}.`,
          };
        const message =
          err instanceof WorkspaceError
            ? `${err.message}.`
            : "something went wrong while publishing them; the runner's log says what.";
        log.error(
          { err: err instanceof Error ? err.message : String(err) },
          "publishing the agent's changes failed",
        );
        return {
          result: "failed",
          reason: err instanceof WorkspaceError ? "workspace" : "error",
          message,
        };
      }
    },
  };
}

function mirrorGit(workspaces: Workspaces, key: TaskKey): MirrorGit {
  const { repo } = key;
  return new MirrorGit(workspaces.mirrors.git, workspaces.mirrors.pathFor(key.repoId), {
    repo,
    host: "",
    timeoutMs: 10 * 60_000,
  });
}

async function publishNow(
  workspaces: Workspaces,
  pool: Pool,
  req: PublishRequest,
  log: Logger,
): Promise<PublishReport> {
  const { key, writer } = req;
  const target = publishTarget(key, req.issue);
  const identity = await writer.identity();
  const askers = [...new Map(req.requesters.map((r) => [r.login.toLowerCase(), r])).values()];
  const trailers = await Promise.all(
    askers
      .filter((a) => !a.login.endsWith("[bot]"))
      .map(async (a) => `Co-authored-by: ${await writer.coAuthor(a.login)}`),
  );
  const subject = clip(`${req.issue.title} (#${key.issueNumber})`, 72);
  const collected = await workspaces.collect({
    ...key,
    branch: target.branch,
    upstreamRef: req.upstreamRef,
    identity,
    message: [
      subject,
      "",
      `Changes by the agent "${key.agent}" for ${key.repo}#${key.issueNumber}${askers[0] ? `, asked by @${askers[0].login} in ${askers[askers.length - 1]!.url}` : ""}.`,
    ].join("\n"),
    trailers,
    signal: req.signal,
  });
  if (collected.kind === "unchanged") return { result: "unchanged" };
  if (collected.kind === "blocked")
    return {
      result: "refused",
      reason: "workspace",
      messages: [blockedMessage(collected.reason)],
      files: [],
    };
  const m = mirrorGit(workspaces, key);
  const followed = mirrorRefOf(req.upstreamRef);
  const incoming = `refs/tether/incoming/${key.issueNumber}-${key.agent}-${req.taskId}`;
  try {
    for (let attempt = 1; ; attempt++) {
      // What GitHub has now: the branch may have moved since the turn started.
      const synced = await workspaces.mirrors.sync({
        repoId: key.repoId,
        repo: key.repo,
        cloneUrl: req.cloneUrl,
        token: req.token,
        ...(target.kind === "conversation" ? {} : { pullRequest: target.pull }),
        report: [`refs/heads/${target.branch}`, followed],
        signal: req.signal,
      });
      const remote =
        target.kind === "fork" ? null : (synced.refs[`refs/heads/${target.branch}`] ?? null);
      // What the turn's commit may build on: the followed ref as the mirror had it when the turn
      // began and as it has it now, and the target branch. Tether fetched all three itself.
      const anchors = [
        ...new Set([req.upstreamSha, synced.refs[followed] ?? "", remote ?? ""]),
      ].filter(isObjectId);
      const step = await workspaces.mirrors.exclusive(key, () =>
        judgeAndPush(
          pool,
          m,
          req,
          target,
          collected,
          incoming,
          remote,
          anchors,
          identity,
          synced.defaultBranch,
        ),
      );
      if (step.kind === "done") {
        // Published already: a workspace that cannot take GitHub's commit now is told so by
        // its next prepare() (it sees its branch diverged), never the publish's answer.
        if (step.adopt)
          await adoptApiCommit(workspaces, req, target, step.adopt).catch((err: Error) =>
            log.warn({ err: err.message }, "the workspace could not take GitHub's commit"),
          );
        return step.report;
      }
      if (attempt >= 2)
        return {
          result: "failed",
          reason: "push-refused",
          message: `\`${target.branch}\` kept moving on GitHub while I pushed.`,
        };
    }
  } finally {
    await m.deleteRef(incoming);
    await collected.dispose();
  }
}

type Step =
  | {
      kind: "done";
      report: PublishReport;
      /** Made through the API: the mirror and the workspace take GitHub's commit (`theirs`). */
      adopt?: { local: string; theirs: string; head: string };
    }
  | { kind: "stale" };

/**
 * After a commit made through the API: the mirror fetches it from GitHub, and the key's
 * checkout moves from its own commit onto GitHub's (same tree), so the next turn builds on what
 * GitHub holds. A checkout that cannot move is left as it is (its next turn sees it diverged
 * and says so); the publish itself already happened, so nothing here fails it.
 */
async function adoptApiCommit(
  workspaces: Workspaces,
  req: PublishRequest,
  target: PublishTarget,
  a: { local: string; theirs: string; head: string },
): Promise<void> {
  const { key } = req;
  await workspaces.mirrors.sync({
    repoId: key.repoId,
    repo: key.repo,
    cloneUrl: req.cloneUrl,
    token: req.token,
    ...(target.kind === "pull-head" ? { pullRequest: target.pull } : {}),
    report: [`refs/heads/${target.branch}`],
    signal: req.signal,
  });
  const m = mirrorGit(workspaces, key);
  if (target.kind === "pull-head" && (await m.resolve(a.head)))
    await m.setRef(pullRef(target.pull), a.head);
  const adopted = await workspaces.adopt({
    ...key,
    branch: target.branch,
    local: a.local,
    theirs: a.theirs,
    ...(target.kind === "pull-head" ? { pullRequest: target.pull } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  });
  if (adopted !== "adopted") throw new Error(`the checkout stayed on its own commit (${adopted})`);
}

/**
 * How much of the change's patch the secret scan reads: what it adds is at most `maxBytes` of
 * file contents (more is refused as too large), and each added line costs a `+` and its hunk's
 * header, so twice that, and never less than 8 MiB.
 */
function scanBudget(maxBytes: number): number {
  return Math.max(8 * 1024 * 1024, 2 * maxBytes);
}

/** Whether `sha` is one of `anchors` or an ancestor of one (read in the mirror). */
async function someAncestor(m: MirrorGit, sha: string, anchors: string[]): Promise<boolean> {
  for (const a of anchors) if (a === sha || (await m.isAncestor(sha, a))) return true;
  return false;
}

async function judgeAndPush(
  pool: Pool,
  m: MirrorGit,
  req: PublishRequest,
  target: PublishTarget,
  c: { base: string; commit: string; bundle: string },
  incoming: string,
  remote: string | null,
  anchors: string[],
  identity: { name: string; email: string },
  defaultBranch: string,
): Promise<Step> {
  const done = (report: PublishReport): Step => ({ kind: "done", report });
  // The bundle is data from the sandbox: the commit in it must be exactly the one Tether made.
  const imported = await m.importBundle(
    c.bundle,
    `refs/heads/${target.branch}`,
    incoming,
    Math.max(req.config.maxBytes * 2, 1024 * 1024),
  );
  if (!imported.ok)
    return done({
      result: "refused",
      reason: imported.why === "too-large" ? "too-large" : "not-tethers-commit",
      messages: [
        imported.why === "too-large"
          ? `the change is larger than \`publish.maxBytes\` allows.`
          : "the workspace did not hand over a commit Tether could read.",
      ],
      files: [],
    });
  const commit = await m.resolve(incoming);
  const info = commit ? await m.commitInfo(commit) : null;
  if (
    !commit ||
    !info ||
    commit !== c.commit ||
    info.parents.length !== 1 ||
    info.parents[0] !== c.base ||
    info.author.email !== identity.email ||
    info.committer.email !== identity.email
  )
    return done({
      result: "refused",
      reason: "not-tethers-commit",
      messages: [
        "the commit the workspace handed over is not the one Tether made there (something in the checkout's git configuration changed it).",
      ],
      files: [],
    });
  // The base every check measures from is the commit's parent as the mirror reads it, and it
  // must be history Tether itself fetched from GitHub. The checkout's refs are the agent's: a
  // base it forged (a remote-tracking ref moved onto a commit of its own) would carry that
  // commit into the push unmeasured, while the checks saw only the last step (#28).
  const base = info.parents[0]!;
  if (!(await someAncestor(m, base, anchors)))
    return done({
      result: "refused",
      reason: "not-tethers-commit",
      messages: [
        `the commit the workspace handed over does not build on ${followedName(req.upstreamRef)} as GitHub has it (the checkout's copy of it was changed), so nothing was pushed.`,
      ],
      files: [],
    });

  // What the push adds to the branch: the turn's commit, merged with what others pushed.
  let pushed = commit;
  let merged: Array<{ sha: string; author: string; subject: string }> = [];
  if (remote && remote !== base && !(await m.isAncestor(remote, commit))) {
    const tree = await m.mergeTree(remote, commit);
    if (!tree)
      return done({
        result: "refused",
        reason: "conflict",
        messages: [
          `someone pushed to \`${target.branch}\` while I worked, and their changes conflict with mine. Pull the branch, resolve it, or ask me again to work on top of theirs.`,
        ],
        files: await m.changes(base, commit),
      });
    merged = await m.log(base, remote, 10);
    pushed = await m.commitTree(
      tree,
      [remote, commit],
      `Merge the commits pushed to ${target.branch} during the turn\n`,
      identity,
    );
  }
  const from = remote && target.kind !== "fork" ? remote : base;
  const files = await m.changes(from, pushed);
  const scanned = await m.addedLines(from, pushed, scanBudget(req.config.maxBytes));
  const secrets = [
    ...scanDiff(scanned.text, req.secrets),
    ...scanMessage(info.message, req.secrets),
  ];
  const limits = {
    maxFiles: req.config.maxFiles,
    maxBytes: req.config.maxBytes,
    workflows: req.config.workflows,
    protectedPaths: req.config.protectedPaths ?? DEFAULT_PROTECTED_PATHS,
  };
  // A change the rules refuse: the first refusal is its reason, and the answer shows them all.
  const refused = (refusals: Refusal[]): Step =>
    done({
      result: "refused",
      reason: refusals[0]!.reason,
      messages: refusals.map((r) => r.message),
      files,
    });

  // A scan that did not read the whole change found nothing about the rest of it (#38).
  if (scanned.cut)
    return refused([
      {
        reason: "too-large",
        message: `the change's patch (what it adds, and what it removes from the files it keeps) is longer than the secret scan reads (${size(scanBudget(req.config.maxBytes))}), so it was not checked whole. Split it into smaller changes, then ask again.`,
      },
    ]);

  if (target.kind === "fork") {
    // Nothing is pushed: the refusals that protect the repository do not apply, those that
    // protect the thread (a secret posted in a comment, a patch too big to show) do.
    const refusals = checkPublish({
      branch: target.branch,
      allowedBranch: target.branch,
      defaultBranch: "",
      protectedBranch: false,
      files,
      secrets,
      limits: { ...limits, workflows: true, protectedPaths: [] },
    });
    if (refusals.length) return refused(refusals);
    const patch = await m.diff(base, commit, MAX_PATCH);
    return done({ result: "patch", files, patch: patch.text, cut: patch.cut });
  }

  const allowed =
    target.kind === "conversation"
      ? conversationBranch(req.key.issueNumber, req.key.agent)
      : (req.issue.pullRequest?.headRef ?? "");
  const onGitHub = await req.writer.branch(target.branch);
  const refusals = checkPublish({
    branch: target.branch,
    allowedBranch: allowed,
    defaultBranch,
    protectedBranch: onGitHub?.protected ?? false,
    files,
    secrets,
    limits,
  });
  if (refusals.length) return refused(refusals);

  const workflows = touchesWorkflows(files).length > 0;
  const token = await req.writer.pushToken({ workflows });
  const commits = pushed === commit ? 1 : 2;
  let signed: { verified: boolean } | undefined;
  let note: string | undefined;
  let adopt: { local: string; theirs: string; head: string } | undefined;
  if (req.config.signedCommits) {
    let made: ApiCommitResult;
    try {
      made = await commitThroughApi(m, () => req.writer.gitData({ workflows }), {
        branch: target.branch,
        remote,
        base,
        commit,
        pushed,
        budget: SIGNED_COMMIT_REQUEST_BUDGET,
      });
    } catch (err) {
      const status = (err as { status?: number }).status;
      if (typeof status !== "number") throw err;
      return done({
        result: "failed",
        reason: "push-refused",
        message: `GitHub refused the commit made through its API for \`${target.branch}\` (${status}): ${String(
          (err as Error).message,
        )
          .slice(0, 600)
          .replace(/`/g, "'")}`,
      });
    }
    if (made.kind === "stale") return { kind: "stale" };
    if (made.kind === "published") {
      signed = { verified: made.verified };
      adopt = { local: commit, theirs: made.turnSha, head: made.sha };
      pushed = made.sha;
    } else {
      const limit = `this change needs ${made.requests} requests to GitHub's API, more than the ${SIGNED_COMMIT_REQUEST_BUDGET} one publish may make`;
      if ((await req.writer.requiresSignatures(target.branch)) === true)
        return done({
          result: "refused",
          reason: "signatures-required",
          messages: [
            `\`${target.branch}\` requires signed commits, and ${limit} (one per new file content, plus the tree, the commit and the branch), so it was not committed. Ask for the change in smaller parts.`,
          ],
          files,
        });
      note = `Pushed with git, unsigned: ${limit} (\`changes.signedCommits\`).`;
    }
  }
  if (!signed) {
    const result = await m.push(req.cloneUrl, token, pushed, target.branch);
    if (result.kind === "stale") return { kind: "stale" };
    if (result.kind === "refused")
      return done({
        result: "failed",
        reason: "push-refused",
        message: `GitHub refused the push to \`${target.branch}\`: ${result.message.replace(/`/g, "'")}`,
      });
    await m.setRef(`refs/heads/${target.branch}`, pushed);
    if (target.kind === "pull-head") await m.setRef(pullRef(target.pull), pushed);
  }
  const how = { ...(signed ? { signed: signed.verified } : {}), ...(note ? { note } : {}) };
  const finish = (report: PublishReport): Step =>
    adopt ? { kind: "done", report, adopt } : done(report);
  const branchUrl = `${req.writer.webUrl}/tree/${target.branch}`;
  if (target.kind === "pull-head")
    return finish({
      result: "published",
      branch: target.branch,
      branchUrl,
      sha: pushed,
      commits,
      files,
      merged,
      pull: null,
      compareUrl: null,
      ...how,
    });
  return finish({
    ...(await afterConversationPush(pool, req, {
      branch: target.branch,
      sha: pushed,
      commits,
      files,
      merged,
      branchUrl,
      defaultBranch,
    })),
    ...how,
  });
}

/** The conversation branch moved: record it, and open its pull request the first time. */
async function afterConversationPush(
  pool: Pool,
  req: PublishRequest,
  p: {
    branch: string;
    sha: string;
    commits: number;
    files: FileChange[];
    merged: Array<{ sha: string; author: string; subject: string }>;
    branchUrl: string;
    defaultBranch: string;
  },
): Promise<PublishReport> {
  const { branch, defaultBranch } = p;
  const base = {
    result: "published" as const,
    branch,
    branchUrl: p.branchUrl,
    sha: p.sha,
    commits: p.commits,
    files: p.files,
    merged: p.merged,
  };
  await recordPush(pool, {
    ...req.key,
    branch,
    baseBranch: defaultBranch,
    headSha: p.sha,
    commits: p.commits,
  });
  if (req.mode === "branch")
    return {
      ...base,
      pull: null,
      compareUrl: `${req.writer.webUrl}/compare/${defaultBranch}...${branch}?expand=1`,
    };
  const conv = await getConversation(pool, req.key);
  // The conversation's pull request, or one opened by a turn that crashed before recording it
  // (found, not opened twice). One that was merged is done: new work on the branch gets a new one.
  let pull = conv?.pullNumber ? await req.writer.getPull(conv.pullNumber) : null;
  if (pull?.merged) pull = null;
  pull ??= await req.writer.findPull(branch);
  if (pull?.merged) pull = null;
  let opened = false;
  let draftsUnsupported = false;
  if (!pull) {
    ({ pull, draftsUnsupported } = await openPull(pool, req.writer, req.key.repo, {
      title: clip(req.issue.title, 200),
      head: branch,
      base: defaultBranch,
      draft: req.config.draft,
      body: pullBody(req),
    }));
    opened = true;
  }
  if (conv?.pullNumber !== pull.number) await recordPull(pool, req.key, pull);
  return {
    ...base,
    pull: {
      number: pull.number,
      url: pull.url,
      opened,
      draft: pull.draft,
      state: pull.state,
      ...(draftsUnsupported ? { draftsUnsupported } : {}),
    },
    compareUrl: null,
  };
}

/**
 * Open a pull request, as a draft when asked and the repository has drafts. GitHub refuses
 * drafts on private repositories of Free and Pro plans (422, "Draft pull requests are not
 * supported in this repository."), and `publish.draft` defaults to true: then it is opened ready
 * for review, the answer says so, and the repository is remembered in Postgres (repo_facts) so
 * that no runner asks for a draft there again for a while.
 */
export async function openPull(
  pool: Pool,
  writer: Pick<RepoWriter, "createPull">,
  repo: string,
  o: Parameters<RepoWriter["createPull"]>[0],
): Promise<{ pull: PullRef; draftsUnsupported: boolean }> {
  const ready = async () => ({
    pull: await writer.createPull({ ...o, draft: false }),
    draftsUnsupported: true,
  });
  if (!o.draft) return { pull: await writer.createPull(o), draftsUnsupported: false };
  if (await draftsRefused(pool, repo)) return ready();
  try {
    return { pull: await writer.createPull(o), draftsUnsupported: false };
  } catch (err) {
    if (!isDraftRefusal(err)) throw err;
    await recordDraftsRefused(pool, repo);
    return ready();
  }
}

function pullBody(req: PublishRequest): string {
  const n = req.key.issueNumber;
  const link = req.config.link === "closes" ? `Closes #${n}` : `Refs #${n}`;
  const asker = req.requesters[0];
  const summary = clip(req.summary.trim(), 20_000) || "_(The agent left no summary.)_";
  return [
    summary,
    "",
    "---",
    link,
    "",
    `Opened by Tether for the agent \`${req.key.agent}\`${asker ? `, asked by @${asker.login} in ${asker.url}` : ""}. Comment on this pull request to continue the same conversation: its commits come to this branch.`,
  ].join("\n");
}

/** How the answer names the ref a workspace followed. */
function followedName(upstreamRef: string): string {
  if (upstreamRef.startsWith("refs/pull/")) return "the pull request's head";
  return `\`${upstreamRef.replace(/^refs\/remotes\/origin\//, "").replace(/`/g, "'")}\``;
}

function blockedMessage(reason: string): string {
  switch (reason) {
    case "operation-in-progress":
      return "a merge, rebase or cherry-pick is under way in the workspace; finish or abort it first.";
    case "no-commit":
      return "the workspace has no commit to build on.";
    case "no-upstream":
      return "the workspace does not have the branch it follows; the next turn fetches it again.";
    default:
      return "the workspace's history shares no commit with the branch it follows.";
  }
}

function clip(s: string, max: number): string {
  const flat = max < 500 ? s.replace(/\s+/g, " ").trim() : s;
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
