/**
 * CI failures feed the conversation (README "Talking to Tether"). GitHub sends `check_run`,
 * `check_suite` and `workflow_run` when checks finish, several for one failure. When the checks
 * of a conversation's own pull request (branch `tether/<issue>-<agent>`, in this repository, not
 * a fork's: ci-ownership.ts) fail on its head commit, the key gets one automatic turn, resumed like any follow-up, whose request is Tether's
 * own words and whose context (the failing checks' output, annotations and log tails, read by
 * Tether) is data. Guards: one turn per head commit; at most `ci.maxAttempts` in a row without a
 * green run, then one comment says it stopped; a turn already queued or running absorbs the
 * failure; spend limits apply as to any turn (a refused turn ends the loop). Each attempt after
 * the first may run on a stronger model (`escalate`, ciAttemptModel).
 */
import { AGENT_CLIS } from "../cli-registry.js";
import { loadRepoConfig } from "../config/load-repo-config.js";
import { snapshotSettings } from "../config/repo-settings.js";
import { TRIGGERS, type TaskKey, type TriggerContextItem } from "../core/task.js";
import { ciContext, readChecks, type CheckRunSummary } from "../github/ci-report.js";
import { postComment } from "../github/comments.js";
import { conversationBranch } from "../publish/publisher.js";
import { ciPassed, claimCiFailure, conversationOfBranch, recordCiTurn } from "../sql/ci-loops.js";
import type { Delivery } from "../sql/deliveries.js";
import type { GitHub } from "../github/types.js";
import { enqueueComment, type TriggerComment } from "../sql/tasks/enqueue.js";
import { done, skipped, type Handled, type IntakeEffects } from "./intake-effects.js";
import { repoKey, type CiRun } from "./payloads.js";
import { ciRunRefusal } from "./ci-ownership.js";

/**
 * The processor's part (the webhook only screened the branch's name): see the module comment.
 */
export async function handleCiEvent(fx: IntakeEffects, d: Delivery, run: CiRun): Promise<Handled> {
  if (!run.headBranch) return skipped("no branch");
  const repo = repoKey(run.repository.full_name);
  const conversation = await conversationOfBranch(
    fx.pool,
    { id: run.repository.id, name: repo },
    run.headBranch,
  );
  if (!conversation) return skipped("CI on a branch that is no conversation's");
  const branch = conversationBranch(conversation.issueNumber, conversation.agent);
  if (conversation.pullNumber === null) return skipped("the conversation has no pull request");
  // A fork's run on the same commit and branch name is not the conversation's (issue 38).
  const refused = ciRunRefusal(run, { branch, pullNumber: conversation.pullNumber });
  if (refused) return skipped(refused);
  const key: TaskKey = {
    repoId: run.repository.id,
    repo,
    issueNumber: conversation.issueNumber,
    agent: conversation.agent,
  };
  const where = { owner: run.repository.owner.login, repo: run.repository.name };
  const log = fx.log.child({
    delivery: d.deliveryId,
    repo,
    issue: key.issueNumber,
    agent: key.agent,
  });

  const octokit = await fx.auth(d.installationId);
  await octokit.auth({ type: "installation" });
  const loaded = await loadRepoConfig(octokit, where, {
    clis: AGENT_CLIS,
    orgFileLikely: fx.repoHints?.orgFileLikely(repo) ?? false,
  });
  if (!loaded.ok) return skipped("invalid config: CI not taken");
  const agent = loaded.config.agents[key.agent];
  if (!agent) return skipped(`no agent ${key.agent} in the config`);
  if (agent.ci.mode === "off") return skipped(`ci is off for ${key.agent}`);

  // Everything read about the run goes through a token for this repository that can only read.
  const reader = await readOnlyClient(octokit, where.repo).catch((err: unknown) => {
    // An app registered before CI turns: its installation has not accepted the new permissions.
    const status = (err as { status?: number }).status;
    if (status === 422 || status === 403) return null;
    throw err;
  });
  if (!reader)
    return skipped(
      "CI not read: the installation has not granted checks: read and actions: read (docs/deploying.md: an app registered earlier)",
    );
  const pull = await reader.rest.pulls.get({ ...where, pull_number: conversation.pullNumber });
  if (pull.data.state !== "open") return skipped(`pull request #${pull.data.number} is closed`);
  if (pull.data.head.sha !== run.headSha)
    return skipped(`${run.headSha.slice(0, 7)} is not the pull request's head commit`);

  // Only the check suites that belong to the conversation's pull request are read: a fork's
  // suite on the same commit is not (ci-report.ts).
  const checks = await readChecks(reader, {
    ...where,
    sha: run.headSha,
    branch,
    pullNumber: conversation.pullNumber,
    repoId: run.repository.id,
  });
  if (!checks.failing.length) {
    if (checks.pending) return skipped("checks still running, none failed");
    if (checks.waiting)
      return skipped("checks wait for someone's approval (action_required), none failed");
    const passed = await ciPassed(fx.pool, key);
    log.info({ sha: run.headSha, passed }, "CI passed");
    return done(`CI passed on ${run.headSha.slice(0, 7)}: loop ${passed}`);
  }

  const claim = await claimCiFailure(fx.pool, {
    key,
    pullNumber: conversation.pullNumber,
    headSha: run.headSha,
    maxAttempts: agent.ci.maxAttempts,
    deliveryId: d.deliveryId,
  });
  log.info({ sha: run.headSha, claim: claim.kind }, "CI failed");
  switch (claim.kind) {
    case "seen":
      return skipped(`CI failure on ${run.headSha.slice(0, 7)} already taken (${claim.result})`);
    case "held":
      return skipped(`CI loop ${claim.state} earlier; waiting for someone to ask the agent`);
    case "absorbed":
      return done(`CI failure absorbed by task ${claim.taskId}`);
    case "limit":
      return done("CI loop ended: its last turn was refused by a spend limit");
    case "stop":
      await postComment(octokit, {
        ...where,
        issueNumber: conversation.pullNumber,
        body: stopComment(agent.mention, claim.attempts, run.headSha, checks.failing),
      });
      return done(`CI loop stopped after ${claim.attempts} attempts`);
    case "take":
      break;
  }

  const context = await ciContext(reader, { ...where, sha: run.headSha }, checks.failing);
  const model = ciAttemptModel(agent, claim.attempt);
  const res = await enqueueComment(fx.pool, {
    key,
    installationId: d.installationId,
    isPullRequest: false,
    comment: ciRequest({
      repo,
      pullNumber: conversation.pullNumber,
      pullUrl: pull.data.html_url,
      headSha: run.headSha,
      failing: checks.failing,
      attempt: claim.attempt,
      maxAttempts: agent.ci.maxAttempts,
      context,
    }),
    forceFresh: false,
    // The turn's own model, as a `/model` would be: resumed in the same session, this turn only.
    ...(model ? { requestedModel: model } : {}),
    deliveryId: d.deliveryId,
    settings: snapshotSettings(loaded.config),
    threadNumber: conversation.pullNumber,
    // A turn waiting or running for the key (whatever started it) takes this failure in.
    coveredBy: TRIGGERS,
  });
  await recordCiTurn(fx.pool, {
    key,
    headSha: run.headSha,
    taskId: res.taskId,
    absorbed: res.kind === "covered",
  });
  return done(
    `${key.agent}: CI ${res.kind} task ${res.taskId} (attempt ${claim.attempt}${model ? `, escalated to ${model}` : ""})`,
  );
}

/**
 * Pure: the model the CI loop's `attempt`th automatic turn asks for (`escalate`): null for the
 * agent's own model (the first attempt, or no `escalate`), else the (attempt-1)th escalation,
 * the last one once they run out.
 */
export function ciAttemptModel(
  agent: { escalate?: readonly string[] | undefined },
  attempt: number,
): string | null {
  const up = agent.escalate ?? [];
  if (attempt <= 1 || !up.length) return null;
  return up[Math.min(attempt - 2, up.length - 1)]!;
}

/** What reading a CI run needs (app.yml says why each): nothing that could change anything. */
export const CI_READ_PERMISSIONS = {
  checks: "read",
  actions: "read",
  pull_requests: "read",
  metadata: "read",
} as const;

/**
 * A client of the same kind as `octokit` whose token is minted for this one repository with
 * CI_READ_PERMISSIONS (the app's auth caches it per repository and permissions).
 */
async function readOnlyClient(octokit: GitHub, repoName: string): Promise<GitHub> {
  const { token } = (await octokit.auth({
    type: "installation",
    repositoryNames: [repoName],
    permissions: CI_READ_PERMISSIONS,
  })) as { token: string };
  const Client = octokit.constructor as new (options: Record<string, unknown>) => GitHub;
  return new Client({ auth: { token }, baseUrl: octokit.request.endpoint.DEFAULTS.baseUrl });
}

/**
 * Pure: the request a CI failure makes, in Tether's own words. What the checks said is in
 * `context`, shown to the agent as data; check names stay out of the request for that reason.
 */
export function ciRequest(c: {
  repo: string;
  pullNumber: number;
  pullUrl: string;
  headSha: string;
  failing: readonly CheckRunSummary[];
  attempt: number;
  maxAttempts: number;
  context: TriggerContextItem[];
}): TriggerComment {
  const n = c.failing.length;
  return {
    source: `ci:${c.repo}#${c.pullNumber}:${c.headSha}`,
    commentId: null,
    author: c.failing[0]?.app ?? "ci",
    url: `${c.pullUrl}/checks?sha=${c.headSha}`,
    body: [
      `[CI failed on your pull request #${c.pullNumber}: ${n} check${n === 1 ? "" : "s"} failed on its head commit ${c.headSha.slice(0, 7)}. Automatic attempt ${c.attempt} of at most ${c.maxAttempts}.]`,
      "",
      "The failing checks' output, annotations and log tails are in the context above. Find the cause and fix it in the code, so that the checks pass. If the failure is not caused by this pull request (a flaky test, an outage, a missing secret), change nothing and say so in your answer.",
    ].join("\n"),
    createdAt: new Date(),
    trigger: "ci",
    context: c.context,
  };
}

/** Pure: the one comment that says the loop stopped. */
export function stopComment(
  mention: string,
  attempts: number,
  headSha: string,
  failing: readonly CheckRunSummary[],
): string {
  const names = failing
    .slice(0, 10)
    .map((r) => `\`${r.name.replace(/[`\r\n]/g, "'")}\``)
    .join(", ");
  return [
    `CI still fails on ${headSha.slice(0, 7)}${names ? ` (${names})` : ""} after ${attempts} automatic attempt${attempts === 1 ? "" : "s"} by ${mention}, so Tether stopped fixing it on its own (\`ci.maxAttempts\`).`,
    "",
    `Mention ${mention} to continue, or fix it yourself; a green run starts the count again.`,
  ].join("\n");
}
