/**
 * One turn, end to end: decide resume or fresh, tell the thread, prepare the workspace, build
 * the prompt, run the agent (pinning its session the moment it is known), classify, answer,
 * finish. Every write is scoped to this runner's lease.
 */
import { readSettingsSnapshot } from "../config/repo-settings.js";
import { readEpoch } from "../sql/history.js";
import { priorSession } from "../sql/sessions.js";
import type { Task } from "../sql/tasks/claim.js";
import { finishTask, type FinalAnswer, type Finish } from "../sql/tasks/finish.js";
import type { ResumeDecision } from "../core/resume-decision.js";
import { redact } from "../core/redact.js";
import { chooseCacheTtl } from "../core/cache-ttl.js";
import type { AgentSettings, ConfigResult, GitHubThread } from "./ports.js";
import { buildSystemPrompt } from "./prompts.js";
import { answerRetryPolicy } from "./answer-retry.js";
import { checkSpend } from "./spend-check.js";
import { renderFailure, renderRefusal, taskMarker } from "./thread-comments.js";
import { trackingComment } from "./tracking-comment.js";
import { readyWorkspace, startWorkspace, type ReadyWorkspace } from "./turn-workspace.js";
import { decide, decideFork, record } from "./turn-decision.js";
import { promptFor, requestsOf, threadReader, turnFacts } from "./turn-prompt.js";
import { recordRunSession, runAgent, withCompaction, type AgentRan } from "./run-agent.js";
import { planChanges, publishChanges } from "./publish-step.js";
import { answerBody, footerOf } from "./turn-answer.js";
import { postReview } from "./review-step.js";
import { conversationUrl } from "../core/conversation-path.js";
import { SHUTDOWN, type RunTaskDeps } from "./turn.js";

export { SHUTDOWN, type RunTaskDeps } from "./turn.js";

export async function runTask(deps: RunTaskDeps, task: Task, signal: AbortSignal): Promise<void> {
  const now = deps.now ?? (() => new Date());
  const log = deps.log.child({
    task: task.id,
    repo: task.repo,
    issue: task.issueNumber,
    agent: task.agent,
  });
  const started = now();
  const secrets = new Set<string | undefined>(deps.secrets?.() ?? []);
  const key = { repo: task.repo, issueNumber: task.issueNumber, agent: task.agent };
  const retryInMs = answerRetryPolicy(deps.answerRetry).baseMs;
  // Every footer links to the conversation's dashboard page, when there is a public URL.
  const chainUrl = deps.publicUrl ? conversationUrl(deps.publicUrl, key) : undefined;
  const footer = (d: ResumeDecision) => ({
    ...footerOf(d, null, null),
    ...(chainUrl ? { chainUrl } : {}),
  });
  /**
   * Every turn that ends here ends through this: its last word in the thread, then the task's
   * row, under this runner's lease. False: the lease was lost (the task was finished or taken
   * over elsewhere). A turn left to another runner (a shutdown, a lost lease) just returns.
   */
  const end = async (
    last: FinalAnswer | Promise<FinalAnswer>,
    f: Omit<Finish, "answer">,
  ): Promise<boolean> => {
    const answer = await last;
    // Read after the answer is posted: the turn's count includes it.
    const githubRequests = gh?.requests?.() ?? null;
    const ok = await finishTask(deps.pool, task.id, deps.runnerId, {
      ...f,
      answer,
      githubRequests,
      githubRequestsNotModified: gh?.notModified?.() ?? null,
    });
    if (!ok)
      deps.log.warn({ task: task.id }, "lease lost: the task was finished or taken over elsewhere");
    return ok;
  };

  let gh: GitHubThread | undefined;
  try {
    gh = await deps.github(task);
  } catch (err) {
    log.error({ err }, "no GitHub access for the task's installation");
    // The thread still hears of it, once GitHub lets the answer poster in.
    await end(
      { kind: "pending", body: null, retryInMs },
      {
        status: "failed",
        outcome: "failed",
        failureReason: redact(`GitHub access failed: ${(err as Error).message}`, secrets),
        sessionId: null,
        usage: null,
      },
    );
    return;
  }
  const token = await gh.token().catch(() => undefined);
  secrets.add(token);
  const scrub = (s: string) => redact(s, secrets);
  // Everything posted from here on goes into one comment per task (the tracking comment is not
  // awaited before the run starts, so the answer may queue behind it).
  const comment = trackingComment({
    pool: deps.pool,
    runnerId: deps.runnerId,
    gh,
    task,
    log,
    scrub,
    retryInMs,
  });
  // The workspace update (git) is the slowest step before the spawn, and needs nothing the
  // decision does: start it now.
  const ws = await startWorkspace(deps.workspace, task, gh, token, signal);
  const workDir = ws.workDir;

  // Everything the decision needs, at once: the config (GitHub) and the key's history (Postgres).
  const [config, requests, prior, epoch] = await Promise.all([
    configFor(task, gh).catch((err: Error) => ({
      ok: false as const,
      message: `could not read .github/tether.yml: ${err.message}`,
    })),
    requestsOf(deps.pool, task),
    priorSession(deps.pool, key),
    readEpoch(deps.pool, key),
  ]);
  if (!config.ok) {
    await ws.abandon();
    await end(comment.answer(`⚠️ ${config.message}\n${taskMarker(task.id)}`), {
      status: "failed",
      outcome: "failed",
      failureReason: config.message,
      sessionId: null,
      usage: null,
    });
    return;
  }
  const configured: AgentSettings | undefined = config.settings.agents[task.agent];
  // `/model <name>` (checked by intake against the agent's `models`): this turn only.
  const settings =
    configured && task.requestedModel ? { ...configured, model: task.requestedModel } : configured;
  if (!settings) {
    const msg = `Agent "${task.agent}" is no longer configured in .github/tether.yml, so this request was not run.`;
    await ws.abandon();
    await end(comment.answer(`⚠️ ${msg}\n${taskMarker(task.id)}`), {
      status: "failed",
      outcome: "failed",
      failureReason: msg,
      sessionId: null,
      usage: null,
    });
    return;
  }

  // Spend limits: a conversation, repository or installation that has reached its limit gets
  // the reason in the thread instead of a run. Not a turn: no resume decision is recorded.
  const spendSettings = config.settings.spend;
  const spend = await checkSpend(deps.pool, task, settings, spendSettings, now());
  if (spend.reached.length) {
    await ws.abandon();
    const limits = spend.reached.map(
      (l) => `${l.kind}: spent $${l.spentUsd.toFixed(4)} of $${String(l.limitUsd)}`,
    );
    log.info({ limits }, "a spend limit is reached; the turn is not run");
    const refusal = renderRefusal({
      taskId: task.id,
      agent: task.agent,
      mention: settings.mention ?? `@${task.agent}`,
      reached: spend.reached,
      freshResets: spendSettings.freshResetsConversation,
      now: now(),
    });
    if (
      await end(comment.answer(refusal), {
        status: "cancelled",
        outcome: "limit_refused",
        failureReason: `not run: ${limits.join("; ")}`,
        sessionId: null,
        usage: null,
      })
    )
      deps.onRefused?.({ task, limits: spend.reached.map((l) => l.kind) });
    return;
  }
  // What the footer counts this turn against: the count starts again at a `/fresh` turn when
  // the config says so.
  const spentBefore =
    spendSettings.freshResetsConversation && task.forceFresh ? 0 : spend.conversation.countedUsd;

  // The resume decision, recorded on the task before anything runs; a retry takes a new one.
  const cli = settings.cli ?? "claude";
  // `/from <agent>`: a fork of that agent's session, else the key's own decision.
  const fork = await decideFork(deps, { task, cli, policy: config.settings.resume, now });
  let decision: ResumeDecision =
    fork ??
    (await decide(deps, {
      key,
      task,
      cli,
      policy: config.settings.resume,
      prior,
      epoch,
      workDir,
      workDirExists: ws.workDirExists,
      now,
    }));
  const isFollowUp = prior !== null;
  // The prompt cache's lifetime this turn writes with (what the conversation's next turn finds).
  const cacheTtl =
    cli === "claude"
      ? chooseCacheTtl(settings.cacheTtl, { previousTurnAt: prior?.lastUsedAt ?? null, now: now() })
      : null;
  log.info(
    { decision: decision.kind, reason: decision.reason, prior: prior?.sessionId },
    "resume decision",
  );
  /** Takes `d` as the turn's decision and records it; false: the lease was lost. */
  const take = (d: ResumeDecision, retriedFresh: boolean): Promise<boolean> => {
    decision = d;
    return record(deps, task, d, isFollowUp, epoch, workDir, retriedFresh, cli);
  };
  if (!(await take(decision, false))) {
    await ws.abandon();
    return;
  }
  // The run's HOME (a resume's transcript restored into it) is made while the workspace is
  // still being prepared; a run that does not fit it (a fresh retry) makes its own.
  const staged =
    deps.agent.stage?.(
      {
        key,
        cwd: workDir,
        resumeSessionId: decision.kind === "resume" ? decision.sessionId : null,
        ...(decision.kind === "resume" && decision.forkFrom
          ? { transcriptKey: decision.forkFrom }
          : {}),
      },
      cli,
    ) ?? null;
  // A fresh run needs the thread (on a pull request, its review discussion too): fetch it while
  // git works.
  const readThread = threadReader(gh, task, log);
  const threadP = decision.kind === "fresh" ? readThread() : null;
  threadP?.catch(() => {});

  // Progress in the thread, throttled, in the tracking comment.
  const onProgress = comment.track({
    decision: () => decision,
    startedAt: started,
    now,
    intervalMs: deps.progressIntervalMs ?? 3000,
  });

  // The workspace, ready for the run; a turn that cannot have it ends here.
  let ready: ReadyWorkspace;
  try {
    ready = await readyWorkspace(deps.workspace, task, ws, settings, log, signal);
  } catch (err) {
    await staged?.release();
    if (signal.aborted) {
      // Stopped mid-clone: a shutdown leaves the task to the next start, like a stopped run; a
      // /cancel ends it as cancelled. Neither is the workspace failing.
      if (signal.reason === SHUTDOWN) {
        log.warn("stopped by shutdown while preparing the workspace; the task will be taken over");
        return;
      }
      const cancelled = renderFailure(
        { outcome: "cancelled", detail: null, taskId: task.id },
        footer(decision),
      );
      await end(comment.answer(cancelled), {
        status: "cancelled",
        outcome: "cancelled",
        failureReason: "cancelled while the workspace was being prepared",
        sessionId: null,
        usage: null,
      });
      return;
    }
    const detail = scrub((err as Error).message);
    log.warn({ err: detail }, "workspace preparation failed");
    const failed = renderFailure({ outcome: "failed", detail, taskId: task.id }, footer(decision));
    await end(comment.answer(failed), {
      status: "failed",
      outcome: "failed",
      failureReason: detail,
      sessionId: null,
      usage: null,
    });
    return;
  }
  const { issue, prepared, control, project } = ready;
  // A pull request turn: the agent may comment on lines of the diff (posted as one review).
  const lineComments = issue.pullRequest
    ? { requestChanges: settings.requestChanges === true }
    : undefined;

  // The prompt: the turn's facts (with where its changes go), and the thread when it runs fresh.
  let plan: Awaited<ReturnType<typeof planChanges>>;
  // The agent's run (a compaction first, a fresh retry after, when the turn needs them).
  let ran: AgentRan | null;
  try {
    plan = await planChanges(deps, gh, settings, key, issue, prepared, log);
    const turn = turnFacts(task, requests, plan.target, plan.news, prepared, lineComments);
    const prompt = promptFor({ turn, issue, requests, thread: threadP, readThread });
    const systemPrompt = buildSystemPrompt(task.agent, settings.appendSystemPrompt, project);
    ran = await runAgent(
      {
        deps,
        task,
        key,
        log,
        signal,
        cli,
        epoch,
        workDir,
        workspace: ready,
        settings: cacheTtl ? { ...settings, cacheTtl } : settings,
        systemPrompt,
        prompt,
        onProgress,
        staged,
        redecide: take,
        ...(lineComments ? { lineComments } : {}),
      },
      decision,
    );
  } finally {
    await staged?.release(); // a HOME no run took
    await control?.dispose();
  }
  if (!ran) return; // the lease was lost before a retry
  const { result, compaction, promptBytes } = ran;
  await comment.settled();
  if (signal.aborted && signal.reason === SHUTDOWN) {
    // Not the user's cancel: the process is stopping. Leave the task running under our lease;
    // the next start on this runtime adopts it, or the sweeper hands it to another runner.
    log.warn({ session: result.sessionId }, "stopped by shutdown; the task will be taken over");
    return;
  }
  await recordRunSession(deps, task, log, ran, decision, prior);

  // Publish, then answer, then finish.
  const published = await publishChanges(deps, plan, {
    task,
    key,
    gh,
    token,
    issue,
    prepared,
    config: config.settings,
    requests,
    result,
    scrub,
    secrets,
    log,
    signal,
  });

  // The agent's line comments, as one review of the head the turn ran on.
  const review =
    result.review && issue.pullRequest && result.outcome !== "cancelled"
      ? await postReview({
          gh,
          pullNumber: task.issueNumber,
          commitId: issue.pullRequest.headSha,
          review: result.review,
          allowChanges: settings.requestChanges === true,
          scrub,
          log,
        })
      : null;

  // What the turn cost, the compaction before it included (the context is the turn's).
  const usage = withCompaction(result.usage, compaction?.usage ?? null);
  const body = answerBody({
    task,
    settings,
    cli,
    decision,
    result,
    usage,
    spentBefore,
    published,
    review,
    cacheTtl,
    ...(chainUrl ? { chainUrl } : {}),
  });
  const posted = await comment.answer(body);
  // git's housekeeping, kept off the hot path before the spawn (fetch runs with gc.auto off):
  // here, after the answer and while the task still holds its key, so it never meets the next
  // turn's fetch. One cheap process when there is nothing to do.
  if (!signal.aborted)
    await deps.workspace.maintain?.({
      repo: task.repo,
      issueNumber: task.issueNumber,
      agent: task.agent,
      signal,
    });
  const status: Finish["status"] =
    result.outcome === "success"
      ? "succeeded"
      : result.outcome === "cancelled"
        ? "cancelled"
        : "failed";
  const finished = await end(posted, {
    status,
    outcome: result.outcome,
    failureReason: result.outcome === "success" ? null : scrub(result.detail ?? result.outcome),
    sessionId: result.sessionId,
    usage,
    promptBytes,
    answerBytes: result.text === null ? null : Buffer.byteLength(result.text),
    cacheTtl,
    review:
      review === null
        ? null
        : review.kind === "posted"
          ? { result: "posted", lineComments: review.onLines }
          : { result: "failed", lineComments: 0 },
  });
  if (finished) {
    deps.onFinished?.({
      task,
      outcome: result.outcome,
      reason: decision.reason,
      cli,
      resumed: decision.kind === "resume",
      isFollowUp,
      usage,
      durationMs: now().getTime() - started.getTime(),
      queueWaitMs: started.getTime() - task.createdAt.getTime(),
      publish: published,
    });
  }
  log.info({ outcome: result.outcome, session: result.sessionId }, "task finished");
}

/** The settings intake accepted the comment under, else (an older task) a fresh read. */
async function configFor(task: Task, gh: GitHubThread): Promise<ConfigResult> {
  const settings = readSettingsSnapshot(task.repoSettings);
  return settings ? { ok: true, settings } : gh.loadConfig();
}
