import { loadRepoConfig } from "../config/load-repo-config.js";
import { DEFAULT_CONFIG, formatConfigProblems, type RepoConfig } from "../config/repo-config.js";
import type { Pool } from "../db/pool.js";
import { postComment } from "../github/comments.js";
import { getPermission } from "../github/permission.js";
import { addReaction, type ReactionTarget } from "../github/reactions.js";
import type { GitHub } from "../github/types.js";
import type { Logger } from "../log.js";
import { isDeliveryPending, type Delivery } from "../sql/deliveries.js";
import { bumpEpochsForComment, bumpEpochsForIssueBody } from "../sql/history.js";
import {
  cancelKey,
  enqueueComment,
  removeQueuedComment,
  updateQueuedComment,
  type CancelResult,
  type TaskKey,
  type TriggerComment,
} from "../sql/tasks.js";
import { decideAccess, isBot, type Author } from "./access.js";
import type { RepoHints } from "./repo-hints.js";
import { renderHelp } from "./help.js";
import { mentionedNames, parseComment, type Command } from "./parse-comment.js";
import { IssueCommentEvent, IssuesEvent, repoKey } from "./payloads.js";
import type { DescribeStatus } from "./status.js";

/** What handling a delivery needs from the outside world. */
export interface IntakeEffects {
  pool: Pool;
  log: Logger;
  /** An installation-authenticated Octokit: Probot's `app.auth(installationId)`. */
  auth: (installationId: number) => Promise<GitHub>;
  describeStatus: DescribeStatus;
  now: () => Date;
  /** Tether's own GitHub App id: its comments never trigger. */
  appId?: number;
  /**
   * Run `work` after the delivery is recorded, without holding its slot. For the 👀 only:
   * write spacing lets one write a second through per installation, and a burst of comments
   * should become queued tasks without waiting for their reactions.
   */
  defer: (what: string, work: () => Promise<void>) => void;
  /** What each repository's config said when last read: lets the permission lookup start early. */
  repoHints?: RepoHints;
}

export interface Handled {
  status: "done" | "skipped";
  /** What happened, for operators reading the inbox. */
  outcome: string;
}

/** Not a failure: the delivery must wait for another one (its comment's creation) to finish. */
export class RetryLater extends Error {
  override name = "RetryLater";
}

const skipped = (outcome: string): Handled => ({ status: "skipped", outcome });
const done = (outcome: string): Handled => ({ status: "done", outcome });

/**
 * The intake funnel for one inbox delivery. Every step is safe to repeat, because a delivery
 * that fails half-way is tried again: enqueueing is idempotent per (comment, agent), /cancel
 * only touches tasks older than the delivery, a 👀 reaction is not added twice. Replies come
 * last, so a failure before them does not post twice.
 */
export async function handleDelivery(fx: IntakeEffects, d: Delivery): Promise<Handled> {
  const kind = `${d.event}.${d.action}`;
  switch (kind) {
    case "issue_comment.created":
    case "issue_comment.edited":
    case "issue_comment.deleted": {
      const parsed = IssueCommentEvent.safeParse(d.payload);
      if (!parsed.success) return skipped(`unexpected ${kind} payload: ${parsed.error.message}`);
      const e = parsed.data;
      if (e.action === "created") return handleTrigger(fx, d, triggerFromComment(e));
      return handleCommentChange(fx, e);
    }
    case "issues.opened":
    case "issues.edited": {
      const parsed = IssuesEvent.safeParse(d.payload);
      if (!parsed.success) return skipped(`unexpected ${kind} payload: ${parsed.error.message}`);
      const e = parsed.data;
      if (e.action === "opened") return handleTrigger(fx, d, triggerFromIssue(e));
      return handleIssueEdit(fx, e);
    }
  }
  return skipped(`${kind} is not handled`);
}

// ---------------------------------------------------------------------------------------------
// A comment (or a new issue's body) that may address agents

interface Trigger {
  owner: string;
  name: string;
  /** `owner/name` lower case. */
  repo: string;
  repoId: number;
  issueNumber: number;
  isPullRequest: boolean;
  comment: TriggerComment;
  author: Author;
  viaAppId: number | undefined;
  reactTo: ReactionTarget;
}

function triggerFromComment(e: IssueCommentEvent): Trigger {
  return {
    ...repoOf(e),
    issueNumber: e.issue.number,
    isPullRequest: e.issue.pull_request !== undefined && e.issue.pull_request !== null,
    comment: {
      source: `comment:${e.comment.id}`,
      commentId: e.comment.id,
      author: e.comment.user.login,
      url: e.comment.html_url,
      body: e.comment.body ?? "",
      createdAt: new Date(e.comment.created_at),
    },
    author: e.comment.user,
    viaAppId: e.comment.performed_via_github_app?.id,
    reactTo: { kind: "comment", commentId: e.comment.id },
  };
}

function triggerFromIssue(e: IssuesEvent): Trigger {
  return {
    ...repoOf(e),
    issueNumber: e.issue.number,
    isPullRequest: e.issue.pull_request !== undefined && e.issue.pull_request !== null,
    comment: {
      source: `issue:${e.issue.id}`,
      commentId: null,
      author: e.issue.user.login,
      url: e.issue.html_url,
      body: e.issue.body ?? "",
      createdAt: new Date(e.issue.created_at),
    },
    author: e.issue.user,
    viaAppId: e.issue.performed_via_github_app?.id,
    reactTo: { kind: "issue", issueNumber: e.issue.number },
  };
}

function repoOf(e: IssueCommentEvent | IssuesEvent) {
  return {
    owner: e.repository.owner.login,
    name: e.repository.name,
    repo: repoKey(e.repository.full_name),
    repoId: e.repository.id,
  };
}

/** Control commands answer or stop; they never start a turn for the agent they address. */
function startsTurn(commands: readonly Command[]): boolean {
  return !commands.some((c) => c === "cancel" || c === "status" || c === "help");
}

async function handleTrigger(fx: IntakeEffects, d: Delivery, t: Trigger): Promise<Handled> {
  const log = fx.log.child({ delivery: d.deliveryId, repo: t.repo, issue: t.issueNumber });
  const names = mentionedNames(t.comment.body);
  if (!names.length) return skipped("mentions no one");
  if (fx.appId !== undefined && t.viaAppId === fx.appId) return skipped("Tether's own comment");

  const octokit = await installationOctokit(fx, d.installationId);
  const where = { owner: t.owner, repo: t.name };
  const lookUpPermission = () => getPermission(octokit, { ...where, username: t.author.login });
  // A human addressing what is likely an agent will need the permission lookup: ask for it
  // alongside the config, instead of after it.
  const early =
    !isBot(t.author) && fx.repoHints?.permissionLikelyNeeded(t.repo, names, t.author.login)
      ? lookUpPermission()
      : undefined;
  early?.catch(() => {}); // awaited only if the access rule needs it
  const loaded = await loadRepoConfig(octokit, where);
  const agents = loaded.ok
    ? Object.entries(loaded.config.agents).map(([agent, a]) => ({ agent, mention: a.mention }))
    : loaded.agents;
  if (loaded.ok)
    fx.repoHints?.remember(t.repo, {
      mentions: agents.map((a) => a.mention),
      allowUsers: loaded.config.access.allowUsers,
    });
  const parsed = parseComment(t.comment.body, agents);
  if (!parsed.addressed.length) return skipped("addresses no agent");

  // A broken file cannot say who may use Tether; the defaults decide who sees the complaint.
  const access = loaded.ok ? loaded.config.access : DEFAULT_CONFIG.access;
  let decision = decideAccess(t.author, access);
  if ("lookup" in decision)
    decision = decideAccess(t.author, access, await (early ?? lookUpPermission()));
  if ("lookup" in decision || !decision.allowed) {
    const reason = "reason" in decision ? decision.reason : "no permission";
    log.info({ author: t.author.login, reason }, "comment refused");
    return skipped(`refused: ${reason}`);
  }

  const reply = (body: string) =>
    postComment(octokit, { ...where, issueNumber: t.issueNumber, body });
  const ack = () => fx.defer("👀 reaction", () => acknowledge(octokit, t, log));
  if (!loaded.ok) {
    ack();
    await reply(formatConfigProblems(loaded.problems));
    return done(`invalid config (${loaded.problems.length} problem(s)); replied`);
  }

  const config = loaded.config;
  const notes: string[] = [];
  const cancelLines: string[] = [];
  const statusFor: string[] = [];
  let help = false;
  for (const { agent, commands } of parsed.addressed) {
    const key: TaskKey = { repo: t.repo, issueNumber: t.issueNumber, agent };
    if (commands.includes("cancel")) {
      const r = await cancelKey(fx.pool, key, {
        asOf: d.receivedAt,
        reason: `cancelled by ${t.author.login} (${t.comment.url})`,
      });
      notes.push(
        `${agent}: cancelled [${r.cancelled.join(",")}], stop requested [${r.stopRequested.join(",")}]`,
      );
      cancelLines.push(describeCancel(config.agents[agent]?.mention ?? agent, r));
    }
    if (commands.includes("status")) statusFor.push(agent);
    if (commands.includes("help")) help = true;
    if (startsTurn(commands)) {
      const r = await enqueueComment(fx.pool, {
        key,
        repoId: t.repoId,
        installationId: d.installationId,
        isPullRequest: t.isPullRequest,
        comment: t.comment,
        forceFresh: commands.includes("fresh"),
        deliveryId: d.deliveryId,
      });
      notes.push(`${agent}: ${r.kind} task ${r.taskId}`);
      log.info({ agent, task: r.taskId, result: r.kind }, "comment queued");
    }
  }

  ack();

  const parts: string[] = [];
  if (help) parts.push(renderHelp(config, mentionOf(config, parsed.addressed[0]!.agent)));
  if (cancelLines.length) parts.push(cancelLines.join("\n"));
  if (statusFor.length)
    parts.push(
      await fx.describeStatus({
        pool: fx.pool,
        repo: t.repo,
        issueNumber: t.issueNumber,
        agents: statusFor,
        config,
        now: fx.now(),
      }),
    );
  if (parts.length) {
    await reply(parts.join("\n\n---\n\n"));
    notes.push("replied");
  }
  return done(notes.join("; "));
}

/**
 * The installation's Octokit, with its token fetched now. Octokit fetches it lazily on the first
 * request otherwise, and a 404 from token creation (the app was uninstalled) would then look
 * like "no config file" to the config plugin and "no permission" to the access check.
 */
async function installationOctokit(fx: IntakeEffects, installationId: number): Promise<GitHub> {
  const octokit = await fx.auth(installationId);
  await octokit.auth({ type: "installation" });
  return octokit;
}

/** The 👀 that says "seen". Not worth failing (and redoing) a delivery over: a failure is logged. */
async function acknowledge(octokit: GitHub, t: Trigger, log: Logger): Promise<void> {
  try {
    await addReaction(octokit, {
      owner: t.owner,
      repo: t.name,
      target: t.reactTo,
      content: "eyes",
    });
  } catch (err) {
    log.warn({ err }, "could not add the 👀 reaction; carrying on");
  }
}

function mentionOf(config: RepoConfig, agent: string): string {
  return config.agents[agent]?.mention ?? `@${agent}`;
}

function describeCancel(mention: string, r: CancelResult): string {
  const who = `\`${mention}\``;
  if (r.stopRequested.length && r.cancelled.length)
    return `${who}: cancelled the queued turn and asked the running one to stop.`;
  if (r.stopRequested.length) return `${who}: asked the running turn to stop.`;
  if (r.cancelled.length) return `${who}: cancelled the queued turn.`;
  return `${who}: nothing to cancel.`;
}

// ---------------------------------------------------------------------------------------------
// Edits and deletions

async function handleCommentChange(fx: IntakeEffects, e: IssueCommentEvent): Promise<Handled> {
  if (e.action === "edited" && e.changes?.body === undefined) return skipped("body unchanged");
  const id = e.comment.id;
  // The comment's own creation is still in the inbox: let it become a task first, or this
  // edit would find nothing to update and the task would later read the old text.
  if (await isDeliveryPending(fx.pool, `comment:${id}:created`))
    throw new RetryLater(`comment ${id} is still being taken in`);
  const ref = {
    repo: repoKey(e.repository.full_name),
    issueNumber: e.issue.number,
    source: `comment:${id}`,
    commentId: id,
  };
  const notes: string[] = [];
  if (e.action === "edited") {
    const updated = await updateQueuedComment(fx.pool, { ...ref, body: e.comment.body ?? "" });
    if (updated.length) notes.push(`updated queued task(s) ${updated.join(",")}`);
  } else {
    const removed = await removeQueuedComment(fx.pool, ref);
    for (const r of removed)
      notes.push(
        r.cancelled ? `cancelled queued task ${r.taskId}` : `removed from task ${r.taskId}`,
      );
  }
  const bumped = await bumpEpochsForComment(fx.pool, {
    repo: ref.repo,
    issueNumber: ref.issueNumber,
    commentId: id,
    commentCreatedAt: new Date(e.comment.created_at),
    reason: `comment ${id} ${e.action} by ${e.sender.login}`,
  });
  if (bumped.length) notes.push(`history epoch bumped for ${bumped.join(",")}`);
  return notes.length
    ? done(notes.join("; "))
    : skipped("not in a queued task or a session's history");
}

async function handleIssueEdit(fx: IntakeEffects, e: IssuesEvent): Promise<Handled> {
  if (e.changes?.body === undefined) return skipped("body unchanged");
  if (await isDeliveryPending(fx.pool, `issue:${e.issue.id}:opened`))
    throw new RetryLater(`issue ${e.issue.id} is still being taken in`);
  const repo = repoKey(e.repository.full_name);
  const notes: string[] = [];
  const updated = await updateQueuedComment(fx.pool, {
    repo,
    issueNumber: e.issue.number,
    source: `issue:${e.issue.id}`,
    commentId: null,
    body: e.issue.body ?? "",
  });
  if (updated.length) notes.push(`updated queued task(s) ${updated.join(",")}`);
  const bumped = await bumpEpochsForIssueBody(fx.pool, {
    repo,
    issueNumber: e.issue.number,
    reason: `issue body edited by ${e.sender.login}`,
  });
  if (bumped.length) notes.push(`history epoch bumped for ${bumped.join(",")}`);
  return notes.length ? done(notes.join("; ")) : skipped("no queued task or session on the issue");
}
