/**
 * Turns started without a mention (README "Talking to Tether"): a review of an agent's own pull
 * request, a label, an assignment. Each becomes a request of the same (repository, issue,
 * agent) key a comment would, from someone allowed to trigger, and resumes the same session
 * under the same guards. What the request is made of is Tether's own words; what the trigger
 * brings written by others (a review's body and line comments) travels as context, which the
 * prompt shows as data.
 */
import { AGENT_CLIS } from "../cli-registry.js";
import { loadRepoConfig } from "../config/load-repo-config.js";
import type { AgentConfig } from "../config/repo-config.js";
import { snapshotSettings } from "../config/repo-settings.js";
import type { TaskKey, TriggerContextItem, TriggerKind } from "../core/task.js";
import { reviewCommentPlace } from "../github/review-comment.js";
import type { GitHub } from "../github/types.js";
import { conversationOfPull, conversationsOfPull } from "../sql/conversations.js";
import type { Delivery } from "../sql/deliveries.js";
import { enqueueComment, type TriggerComment } from "../sql/tasks/enqueue.js";
import { refusalOf } from "./may-trigger.js";
import { done, skipped, type Handled, type IntakeEffects } from "./intake-effects.js";
import type { ReviewTrigger } from "./events.js";
import { repoKey, type WorkItemTrigger } from "./payloads.js";
import { describeReviewPlace, describeReviewState } from "./review-request.js";

/** How many of a review's line comments reach the prompt; GitHub caps a review far lower in practice. */
export const REVIEW_COMMENTS_CAP = 300;

/** Label and assignment turns never stack: one covers the other while it waits or runs. */
const WORK_ITEM_TRIGGERS: readonly TriggerKind[] = ["label", "assignment"];

// ---------------------------------------------------------------------------------------------
// Labels and assignments

/** `issues.labeled|assigned`, `pull_request.labeled|assigned`, as events.ts read them. */
export async function handleWorkItem(
  fx: IntakeEffects,
  d: Delivery,
  t: WorkItemTrigger,
): Promise<Handled> {
  const repo = repoKey(t.repository.full_name);
  const where = { owner: t.repository.owner.login, repo: t.repository.name };
  const log = fx.log.child({ delivery: d.deliveryId, repo, issue: t.item.number });

  const octokit = await installationOctokit(fx, d.installationId);
  const loaded = await loadRepoConfig(octokit, where, {
    clis: AGENT_CLIS,
    orgFileLikely: fx.repoHints?.orgFileLikely(repo) ?? false,
  });
  // A broken file cannot say which label is whose; a mention gets the reply that says so.
  if (!loaded.ok) return skipped(`invalid config: ${t.how} not matched`);
  const agents = Object.entries(loaded.config.agents).filter(([, a]) => startsOn(a, t));
  if (!agents.length)
    return skipped(t.how === "label" ? "no agent's label" : "not assigned to an agent");

  const refusal = await refusalOf(t.sender, {
    octokit,
    where,
    access: loaded.config.access,
    appLogin: fx.appLogin,
  });
  if (refusal) {
    log.info({ sender: t.sender.login, reason: refusal }, `${t.how} refused`);
    return skipped(`refused: ${refusal}`);
  }

  const settings = snapshotSettings(loaded.config);
  const notes: string[] = [];
  for (const [agent] of agents) {
    const conversation = t.isPullRequest
      ? await conversationOfPull(fx.pool, t.repository.id, t.item.number, agent)
      : null;
    const key: TaskKey = {
      repoId: t.repository.id,
      repo,
      issueNumber: conversation?.issueNumber ?? t.item.number,
      agent,
    };
    const r = await enqueueComment(fx.pool, {
      key,
      installationId: d.installationId,
      isPullRequest: conversation ? false : t.isPullRequest,
      comment: workItemRequest(t, d.deliveryId),
      forceFresh: false,
      deliveryId: d.deliveryId,
      settings,
      coveredBy: WORK_ITEM_TRIGGERS,
      ...(conversation ? { threadNumber: t.item.number } : {}),
    });
    notes.push(`${agent}: ${t.how} ${r.kind} task ${r.taskId}`);
    log.info({ agent, task: r.taskId, result: r.kind, trigger: t.how }, `${t.how} queued`);
  }
  return done(notes.join("; "));
}

/** Does this label (by name, as GitHub compares them: without case) or assignee start `a`? */
function startsOn(a: AgentConfig, t: WorkItemTrigger): boolean {
  const want = t.how === "label" ? a.label : (a.assignee ?? null);
  return want !== null && want.toLowerCase() === t.value.toLowerCase();
}

/**
 * Pure: the request a label or an assignment makes. The issue is the request: whoever may
 * trigger chose to hand it to the agent. Its source carries the delivery, so a redelivery is
 * the same request and the same label added again later is a new one.
 */
export function workItemRequest(t: WorkItemTrigger, deliveryId: string): TriggerComment {
  const what = t.isPullRequest ? "pull request" : "issue";
  const act =
    t.how === "label"
      ? `added the label \`${t.value.replace(/`/g, "'")}\` to this ${what}`
      : `assigned this ${what} to @${t.value}`;
  return {
    source: `${t.how}:${t.item.id}:${deliveryId}`,
    commentId: null,
    author: t.sender.login,
    url: t.item.html_url,
    body: [
      `[@${t.sender.login} ${act}: its title and description below are the request.]`,
      "",
      `# ${t.item.title ?? ""}`,
      "",
      t.item.body || "(no description)",
    ].join("\n"),
    // When the label or assignee was set (it updated the issue): orders it among coalesced requests.
    createdAt: t.item.updated_at ? new Date(t.item.updated_at) : new Date(),
    trigger: t.how,
  };
}

// ---------------------------------------------------------------------------------------------
// Reviews of an agent's pull request

/** Which agents' `reviews` setting takes a review in this state without a mention. */
export function reviewStarts(mode: AgentConfig["reviews"], state: string): boolean {
  if (mode === "all") return true;
  if (mode === "changes_requested") return state.toLowerCase() === "changes_requested";
  return false;
}

/**
 * A review of a conversation's pull request: a turn for each of its agents whose `reviews`
 * setting takes the review's state, resumed like any follow-up. An agent the review already
 * reached by a mention has it queued (its `review:<id>` source): this adds nothing there.
 */
export async function handleReviewTurns(
  fx: IntakeEffects,
  d: Delivery,
  r: ReviewTrigger,
): Promise<Handled> {
  const conversations = await conversationsOfPull(fx.pool, r.repoId, r.pullNumber);
  if (!conversations.length) return skipped("not an agent's pull request");
  const where = { owner: r.owner, repo: r.name };
  const octokit = await installationOctokit(fx, d.installationId);
  const loaded = await loadRepoConfig(octokit, where, {
    clis: AGENT_CLIS,
    orgFileLikely: fx.repoHints?.orgFileLikely(r.repo) ?? false,
  });
  if (!loaded.ok) return skipped("invalid config: review not taken");
  const config = loaded.config;
  const taking = conversations.filter((c) => {
    const a = config.agents[c.agent];
    return a !== undefined && reviewStarts(a.reviews, r.review.state);
  });
  if (!taking.length) return skipped(`review (${r.review.state}) starts no agent's turn`);
  const refusal = await refusalOf(r.review.author, {
    octokit,
    where,
    access: config.access,
    appLogin: fx.appLogin,
  });
  if (refusal) {
    fx.log.info(
      { delivery: d.deliveryId, author: r.review.author.login, reason: refusal },
      "review refused",
    );
    return skipped(`refused: ${refusal}`);
  }
  const context = [
    ...reviewSummaryItem(r),
    ...(await reviewLineComments(octokit, { ...where, pullNumber: r.pullNumber, r })),
  ];
  const settings = snapshotSettings(config);
  const notes: string[] = [];
  for (const c of taking) {
    const res = await enqueueComment(fx.pool, {
      key: { repoId: r.repoId, repo: r.repo, issueNumber: c.issueNumber, agent: c.agent },
      installationId: d.installationId,
      isPullRequest: false,
      comment: reviewTurnRequest(r, context),
      forceFresh: false,
      deliveryId: d.deliveryId,
      settings,
      threadNumber: r.pullNumber,
    });
    notes.push(`${c.agent}: review ${res.kind} task ${res.taskId}`);
  }
  return done(notes.join("; "));
}

/**
 * Pure: the request a review makes without a mention. Tether's own words: the review itself
 * (its body and line comments) is in `context`, shown to the agent as data.
 */
export function reviewTurnRequest(r: ReviewTrigger, context: TriggerContextItem[]): TriggerComment {
  const state = r.review.state.toLowerCase();
  const asked =
    state === "changes_requested"
      ? "requested changes"
      : state === "approved"
        ? "approved it"
        : "commented";
  return {
    source: `review:${r.review.id}`,
    commentId: r.review.id,
    author: r.review.author.login,
    url: r.review.url,
    body: [
      describeReviewState(r.review.state, r.review.commitId),
      "",
      `@${r.review.author.login} reviewed your pull request #${r.pullNumber} and ${asked}. The review (its summary and ${context.filter((c) => c.kind === "review-comment").length} line comment(s)) is in the context above. Address it: change the code where the review is right; where you disagree, say why in your answer.`,
    ].join("\n"),
    createdAt: r.review.submittedAt ? new Date(r.review.submittedAt) : new Date(),
    trigger: "review",
    context,
  };
}

function reviewSummaryItem(r: ReviewTrigger): TriggerContextItem[] {
  if (!r.review.body.trim()) return [];
  return [
    {
      kind: "review",
      author: r.review.author.login,
      url: r.review.url,
      body: r.review.body,
      ...(r.review.submittedAt ? { createdAt: r.review.submittedAt } : {}),
      location: describeReviewState(r.review.state, r.review.commitId),
    },
  ];
}

/**
 * The line comments submitted with the review, oldest first, as context items. A failure
 * throws: the delivery is tried again rather than the agent left without what it must address.
 */
export async function reviewLineComments(
  octokit: GitHub,
  o: { owner: string; repo: string; pullNumber: number; r: ReviewTrigger },
): Promise<TriggerContextItem[]> {
  const items: TriggerContextItem[] = [];
  for await (const page of octokit.paginate.iterator(octokit.rest.pulls.listCommentsForReview, {
    owner: o.owner,
    repo: o.repo,
    pull_number: o.pullNumber,
    review_id: o.r.review.id,
    per_page: 100,
  })) {
    for (const c of page.data)
      items.push({
        kind: "review-comment",
        author: c.user?.login ?? "ghost",
        url: c.html_url,
        body: c.body ?? "",
        ...(c.created_at ? { createdAt: c.created_at } : {}),
        location: describeReviewPlace(reviewCommentPlace(c)),
      });
    if (items.length >= REVIEW_COMMENTS_CAP) break;
  }
  return items.slice(0, REVIEW_COMMENTS_CAP);
}

// ---------------------------------------------------------------------------------------------

async function installationOctokit(fx: IntakeEffects, installationId: number): Promise<GitHub> {
  const octokit = await fx.auth(installationId);
  await octokit.auth({ type: "installation" });
  return octokit;
}
