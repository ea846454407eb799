/**
 * A text that may address agents (a comment, a new issue's body, a review; or an edit that
 * addresses one for the first time): who it asks, what it asks, and the task it queues or the
 * answer a control command gives at once.
 */
import { AGENT_CLIS } from "../cli-registry.js";
import { loadRepoConfig, type LoadedConfig } from "../config/load-repo-config.js";
import { DEFAULT_CONFIG, formatConfigProblems, type RepoConfig } from "../config/repo-config.js";
import { snapshotSettings } from "../config/repo-settings.js";
import type { Pool } from "../db/pool.js";
import { postComment } from "../github/comments.js";
import { getPermission } from "../github/permission.js";
import { addReaction } from "../github/reactions.js";
import type { GitHub } from "../github/types.js";
import type { Logger } from "../log.js";
import { conversationOfPull } from "../sql/conversations.js";
import type { Delivery } from "../sql/deliveries.js";
import { cancelKey, type CancelResult } from "../sql/tasks/cancel.js";
import { queuedTasksFedBy } from "../sql/tasks/edit.js";
import { enqueueComment } from "../sql/tasks/enqueue.js";
import type { PlanRequest, TaskKey } from "../core/task.js";
import { isBot, type Author } from "./access.js";
import { refusalOf } from "./may-trigger.js";
import { renderHelp } from "./help.js";
import { checkModel, chooseFork, chooseSession, describeSessions } from "./session-commands.js";
import {
  addedMentionNames,
  mentionedNames,
  newlyAddressed,
  parseComment,
  type Command,
} from "./parse-comment.js";
import { getReplyParent } from "../github/review-comment.js";
import { reviewCommentRequest } from "./review-request.js";
import type { ReviewTrigger, TextTrigger } from "./events.js";
import { handleReviewTurns, reviewLineComments } from "./event-triggers.js";
import { done, skipped, type Handled, type IntakeEffects } from "./intake-effects.js";

/**
 * A submitted review: the agents it mentions take it as a comment (its body is their request),
 * and a review of an agent's own pull request reaches that agent without a mention too, per its
 * `reviews` setting. Both queue the review's source once per agent, so an agent reached both
 * ways gets one request.
 */
export async function handleReview(
  fx: IntakeEffects,
  d: Delivery,
  t: TextTrigger,
  r: ReviewTrigger,
): Promise<Handled> {
  const asked = mentionedNames(t.text).length ? await handleTrigger(fx, d, t) : null;
  const taken = await handleReviewTurns(fx, d, r);
  if (!asked) return taken;
  if (taken.status === "skipped") return asked;
  return done([asked.outcome, taken.outcome].join("; "));
}

export async function anyQueued(pool: Pool, refs: Parameters<typeof queuedTasksFedBy>[1][]) {
  for (const r of refs) if ((await queuedTasksFedBy(pool, r)).length) return true;
  return false;
}

/**
 * Control commands answer or stop; they never start a turn for the agent they address.
 * `/resume <id>` only chooses the session, unless the comment also asks something.
 */
function startsTurn(commands: readonly Command[], asks: () => boolean): boolean {
  return !isControl(commands) && (!commands.includes("resume") || asks());
}

/** `/plan` or `/go` (a comment with both is refused before this). */
function planRequestOf(commands: readonly Command[]): { planRequest?: PlanRequest } {
  if (commands.includes("plan")) return { planRequest: "plan" };
  if (commands.includes("go")) return { planRequest: "go" };
  return {};
}

function isControl(commands: readonly Command[]): boolean {
  return commands.some((c) => c === "cancel" || c === "status" || c === "help" || c === "sessions");
}

/** An edit of a text: its earlier words, who made it, and what was read for it already. */
interface EditOf {
  previousText: string;
  editor: Author;
  /** Read (and the editor judged) by the edit's handling, before it asks agents anew. */
  view?: RepoView;
}

/** What a delivery reads of the repository: the installation's Octokit, the config, a verdict. */
export interface RepoView {
  octokit: GitHub;
  loaded: LoadedConfig;
  /** Why the asker may not make a request, or null when they may; absent: not judged yet. */
  refusal?: string | null;
}

/**
 * A text that may address agents, from its creation or (with `edit`) from an edit: then only
 * agents the edit addresses for the first time are asked, as a new comment would ask them, and
 * whoever made the edit is who asks: they must pass the access rules, whoever wrote the rest.
 */
export async function handleTrigger(
  fx: IntakeEffects,
  d: Delivery,
  t: TextTrigger,
  edit?: EditOf,
): Promise<Handled> {
  const log = fx.log.child({ delivery: d.deliveryId, repo: t.repo, issue: t.issueNumber });
  const asker = edit?.editor ?? t.author;
  const names = edit ? addedMentionNames(edit.previousText, t.text) : mentionedNames(t.text);
  if (!names.length) return skipped(edit ? "mentions no one new" : "mentions no one");
  if (fx.appId !== undefined && t.viaAppId === fx.appId) return skipped("Tether's own comment");

  const octokit = edit?.view?.octokit ?? (await installationOctokit(fx, d.installationId));
  const where = { owner: t.owner, repo: t.name };
  const lookUpPermission = () => getPermission(octokit, { ...where, username: asker.login });
  // A human addressing what is likely an agent will need the permission lookup: ask for it
  // alongside the config, instead of after it.
  const early =
    !edit?.view && !isBot(asker) && fx.repoHints?.permissionLikelyNeeded(t.repo, names, asker.login)
      ? lookUpPermission()
      : undefined;
  early?.catch(() => {}); // awaited only if the access rule needs it
  const loaded =
    edit?.view?.loaded ??
    (await loadRepoConfig(octokit, where, {
      clis: AGENT_CLIS,
      orgFileLikely: fx.repoHints?.orgFileLikely(t.repo) ?? false,
    }));
  const agents = loaded.ok
    ? Object.entries(loaded.config.agents).map(([agent, a]) => ({ agent, mention: a.mention }))
    : loaded.agents;
  if (loaded.ok)
    fx.repoHints?.remember(t.repo, {
      mentions: agents.map((a) => a.mention),
      allowUsers: loaded.config.access.allowUsers,
      repoFile: loaded.repoFile,
    });
  const addressed = edit
    ? newlyAddressed(edit.previousText, t.text, agents)
    : parseComment(t.text, agents).addressed;
  if (!addressed.length) return skipped(edit ? "addresses no new agent" : "addresses no agent");

  // A broken file cannot say who may use Tether; the defaults decide who sees the complaint.
  const refusal =
    edit?.view?.refusal !== undefined
      ? edit.view.refusal
      : await refusalOf(asker, {
          octokit,
          where,
          access: loaded.ok ? loaded.config.access : DEFAULT_CONFIG.access,
          appLogin: fx.appLogin,
          permission: early,
        });
  if (refusal !== null) {
    log.info({ author: asker.login, reason: refusal }, "comment refused");
    return skipped(`refused: ${refusal}`);
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
  const settings = snapshotSettings(config); // one snapshot for every agent the comment queues
  let request: string | undefined;
  const asks = () => (request ??= parseComment(t.text, agents).request).trim() !== "";
  if (addressed.some((a) => startsTurn(a.commands, asks))) {
    t = await withReplyParent(octokit, t);
    if (t.review) {
      // The line comments submitted with the review are what it is about: context, as data.
      const context = await reviewLineComments(octokit, {
        owner: t.owner,
        repo: t.name,
        pullNumber: t.issueNumber,
        r: t.review,
      });
      t = { ...t, comment: { ...t.comment, trigger: "review", context } };
    }
  }
  const notes: string[] = [];
  const cancelLines: string[] = [];
  /** Replies of /model and /resume: a refusal, or what the next turn will do. */
  const controlLines: string[] = [];
  const statusFor = new Map<number, string[]>();
  const sessionsFor = new Map<number, string[]>();
  let help = false;
  for (const { agent, commands, args = {} } of addressed) {
    // A comment on the pull request Tether opened for an issue's conversation continues that
    // conversation: the issue's key (same session, workspace and branch), answered here.
    const conversation = t.isPullRequest
      ? await conversationOfPull(fx.pool, t.repoId, t.issueNumber, agent)
      : null;
    const key: TaskKey = {
      repoId: t.repoId,
      repo: t.repo,
      issueNumber: conversation?.issueNumber ?? t.issueNumber,
      agent,
    };
    if (conversation) notes.push(`${agent}: pull request of #${conversation.issueNumber}`);
    if (commands.includes("cancel")) {
      const r = await cancelKey(fx.pool, key, {
        asOf: d.receivedAt,
        reason: `cancelled by ${asker.login} (${t.comment.url})`,
      });
      notes.push(
        `${agent}: cancelled [${r.cancelled.join(",")}], stop requested [${r.stopRequested.join(",")}]`,
      );
      cancelLines.push(describeCancel(config.agents[agent]?.mention ?? agent, r));
    }
    if (commands.includes("status"))
      statusFor.set(key.issueNumber, [...(statusFor.get(key.issueNumber) ?? []), agent]);
    if (commands.includes("sessions"))
      sessionsFor.set(key.issueNumber, [...(sessionsFor.get(key.issueNumber) ?? []), agent]);
    if (commands.includes("help")) help = true;
    if (isControl(commands)) continue;
    // A refused /model or /resume: the reply says why, and the agent does not run.
    const refuse = (line: string, what: string) => {
      controlLines.push(line);
      notes.push(`${agent}: ${what} refused`);
    };
    const mention = mentionOf(config, agent);
    let requestedModel: string | undefined;
    if (commands.includes("model")) {
      const checked = checkModel(config.agents[agent]!, args.model ?? "");
      if (!checked.ok) {
        refuse(checked.reply, "/model");
        continue;
      }
      requestedModel = checked.model;
    }
    let forkSessionId: string | undefined;
    if (commands.includes("from")) {
      if (commands.includes("resume")) {
        refuse(
          `\`${mention}\`: \`/from\` and \`/resume\` in one comment contradict each other: give one. Nothing was run.`,
          "/from",
        );
        continue;
      }
      const fork = await chooseFork(fx.pool, config, key, args.from ?? "");
      if (!fork.ok) {
        refuse(fork.reply, "/from");
        continue;
      }
      forkSessionId = fork.sessionId;
    }
    if (commands.includes("plan") && commands.includes("go")) {
      refuse(
        `\`${mention}\`: \`/plan\` and \`/go\` in one comment contradict each other: give one. Nothing was run.`,
        "/go",
      );
      continue;
    }
    if (commands.includes("resume")) {
      if (commands.includes("fresh")) {
        refuse(
          `\`${mention}\`: \`/fresh\` and \`/resume\` in one comment contradict each other: give one. Nothing was run.`,
          "/resume",
        );
        continue;
      }
      const chosen = await chooseSession(fx.pool, key, mention, args.resume ?? "");
      if (!chosen.ok) {
        refuse(chosen.reply, "/resume");
        continue;
      }
      controlLines.push(chosen.reply);
      notes.push(`${agent}: session ${chosen.sessionId} chosen`);
      if (!asks()) continue;
    }
    const r = await enqueueComment(fx.pool, {
      key,
      installationId: d.installationId,
      isPullRequest: conversation ? false : t.isPullRequest,
      comment: t.comment,
      forceFresh: commands.includes("fresh"),
      ...(requestedModel ? { requestedModel } : {}),
      ...(forkSessionId ? { forkSessionId } : {}),
      ...planRequestOf(commands),
      deliveryId: d.deliveryId,
      settings,
      ...(conversation ? { threadNumber: t.issueNumber } : {}),
      // The issue the webhook carried is the key's own only when the comment is on it.
      ...(t.issue && key.issueNumber === t.issueNumber ? { issue: t.issue } : {}),
    });
    notes.push(`${agent}: ${r.kind} task ${r.taskId}`);
    log.info({ agent, task: r.taskId, result: r.kind }, "comment queued");
  }

  ack();

  const parts: string[] = [];
  if (help) parts.push(renderHelp(config, mentionOf(config, addressed[0]!.agent)));
  if (cancelLines.length) parts.push(cancelLines.join("\n"));
  if (controlLines.length) parts.push(controlLines.join("\n"));
  for (const [issueNumber, agents] of sessionsFor)
    parts.push(
      await describeSessions(fx.pool, {
        repoId: t.repoId,
        repo: t.repo,
        issueNumber,
        agents,
        config,
        now: fx.now(),
      }),
    );
  for (const [issueNumber, agents] of statusFor)
    parts.push(
      await fx.describeStatus({
        pool: fx.pool,
        repoId: t.repoId,
        repo: t.repo,
        issueNumber,
        installationId: d.installationId,
        agents,
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

/** The trigger with its request carrying the comment it replies to, if it is a reply. */
export async function withReplyParent(octokit: GitHub, t: TextTrigger): Promise<TextTrigger> {
  if (!t.replyTo) return t;
  const parent = await getReplyParent(octokit, {
    owner: t.owner,
    repo: t.name,
    commentId: t.replyTo.commentId,
  });
  return {
    ...t,
    comment: { ...t.comment, body: reviewCommentRequest(t.replyTo.comment, parent) },
    replyTo: undefined,
  };
}

/**
 * The installation's Octokit, with its token fetched now. Octokit fetches it lazily on the first
 * request otherwise, and a 404 from token creation (the app was uninstalled) would then look
 * like "no config file" to the config plugin and "no permission" to the access check.
 */
export async function installationOctokit(
  fx: IntakeEffects,
  installationId: number,
): Promise<GitHub> {
  const octokit = await fx.auth(installationId);
  await octokit.auth({ type: "installation" });
  return octokit;
}

/** The 👀 that says "seen". Not worth failing (and redoing) a delivery over: a failure is logged. */
async function acknowledge(octokit: GitHub, t: TextTrigger, log: Logger): Promise<void> {
  if (!t.reactTo) return;
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
