/**
 * One turn, end to end: decide resume or fresh, tell the thread, prepare the workspace, build
 * the prompt, run the agent (pinning its session the moment it is known), classify, answer,
 * finish. Every write is scoped to this runner's lease.
 */
import { DEFAULT_CONFIG } from "../config/repo-config.js";
import { readSettingsSnapshot } from "../config/repo-settings.js";
import { conversationBranch, publishTarget } from "../publish/publisher.js";
import { renderChanges, type PublishReport } from "../publish/report.js";
import { readEpoch } from "../sql/history.js";
import type { Logger } from "../log.js";
import type { Mask } from "../sandbox/sandbox.js";
import type { ProjectInstructions } from "../workspace/project-instructions.js";
import { markSession, priorSession, touchSession, upsertSession } from "../sql/sessions.js";
import {
  finishTask,
  pinSession,
  recordDecision,
  recordPublish,
  recordSessionMove,
  taskComments,
  type FinalAnswer,
  type Finish,
  type PublishRecord,
  type Task,
  type Usage,
} from "../sql/task-runs.js";
import {
  failedRun,
  type AgentRunResult,
  type AgentSettings,
  type CliKind,
  type ConfigResult,
  type GitHubThread,
  type IssueComment,
  type PreparedWorkspace,
  type ReviewDiscussion,
} from "./ports.js";
import {
  buildColdPrompt,
  buildResumedPrompt,
  buildSystemPrompt,
  type PromptComment,
  type TurnFacts,
} from "./prompts.js";
import { answerRetryPolicy } from "./answer-retry.js";
import { checkSpend } from "./spend-check.js";
import { redact } from "../core/redact.js";
import { reviewContext } from "./review-context.js";
import {
  decideResume,
  type ResumeDecision,
  type TranscriptState,
} from "../core/resume-decision.js";
import {
  findTaskMarker,
  renderAnswer,
  renderFailure,
  renderRefusal,
  taskMarker,
  type FooterFacts,
} from "./thread-comments.js";

import { trackingComment } from "./tracking-comment.js";
import { SHUTDOWN, type RunTaskDeps } from "./turn.js";

export { SHUTDOWN, type FinishedTurn, type RunTaskDeps } from "./turn.js";

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
  /**
   * Every turn that ends here ends through this: its last word in the thread, then the task's
   * row, under this runner's lease. False: the lease was lost (the task was finished or taken
   * over elsewhere). A turn left to another runner (a shutdown, a lost lease) just returns.
   */
  const end = async (
    last: FinalAnswer | Promise<FinalAnswer>,
    f: Omit<Finish, "answer">,
  ): Promise<boolean> => {
    const ok = await finishTask(deps.pool, task.id, deps.runnerId, { ...f, answer: await last });
    if (!ok)
      deps.log.warn({ task: task.id }, "lease lost: the task was finished or taken over elsewhere");
    return ok;
  };

  let gh: GitHubThread;
  try {
    gh = await deps.github(task);
  } catch (err) {
    log.error({ err }, "no GitHub access for the task's installation");
    // The thread still hears of it, once GitHub lets the deliverer in.
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
  // decision does: start it now. An issue needs nothing from GitHub first; a pull request needs
  // its head branch. Whether the directory existed is read first, for the decision.
  const workDir = deps.workspace.pathFor(task.repo, task.issueNumber, task.agent);
  const workDirExists = await deps.workspace.exists(workDir);
  const issueP = gh.getIssue(task.issueNumber);
  issueP.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
  const preparing = new AbortController();
  const stopPreparing = () => preparing.abort(signal.reason);
  signal.addEventListener("abort", stopPreparing, { once: true });
  const workspaceP = (task.isPullRequest ? issueP : Promise.resolve(null))
    .then((issue) =>
      deps.workspace.prepare({
        repo: task.repo,
        issueNumber: task.issueNumber,
        agent: task.agent,
        cloneUrl: gh.cloneUrl,
        token: token ?? "",
        pullRequest: issue?.pullRequest
          ? {
              number: task.issueNumber,
              headRef: issue.pullRequest.headRef,
              headSha: issue.pullRequest.headSha,
              baseRef: issue.pullRequest.baseRef,
            }
          : undefined,
        ...(task.isPullRequest ? {} : { follow: conversationBranch(task.issueNumber, task.agent) }),
        ...(gh.branchHead ? { serverHead: gh.branchHead.bind(gh) } : {}),
        signal: preparing.signal,
      }),
    )
    .finally(() => signal.removeEventListener("abort", stopPreparing));
  workspaceP.catch(() => {});
  /** The turn ends before the run: stop the workspace update and let it settle. */
  const abandonWorkspace = async () => {
    preparing.abort("not needed");
    await workspaceP.catch(() => {});
  };

  // Everything the decision needs, at once: the config (GitHub) and the key's history (Postgres).
  const [config, requests, prior, epoch] = await Promise.all([
    configFor(task, gh).catch((err: Error) => ({
      ok: false as const,
      message: `could not read .github/tether.yml: ${err.message}`,
    })),
    requestsOf(deps, task),
    priorSession(deps.pool, key),
    readEpoch(deps.pool, key),
  ]);
  if (!config.ok) {
    await abandonWorkspace();
    const posted = await comment.answer(`⚠️ ${config.message}\n${taskMarker(task.id)}`);
    await end(posted, {
      status: "failed",
      outcome: "failed",
      failureReason: config.message,
      sessionId: null,
      usage: null,
    });
    return;
  }
  const settings: AgentSettings | undefined = config.settings.agents[task.agent];
  if (!settings) {
    const msg = `Agent "${task.agent}" is no longer configured in .github/tether.yml, so this request was not run.`;
    await abandonWorkspace();
    const posted = await comment.answer(`⚠️ ${msg}\n${taskMarker(task.id)}`);
    await end(posted, {
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
    await abandonWorkspace();
    const limits = spend.reached.map(
      (l) => `${l.kind}: spent $${l.spentUsd.toFixed(4)} of $${String(l.limitUsd)}`,
    );
    log.info({ limits }, "a spend limit is reached; the turn is not run");
    const posted = await comment.answer(
      renderRefusal({
        taskId: task.id,
        agent: task.agent,
        mention: settings.mention ?? `@${task.agent}`,
        reached: spend.reached,
        freshResets: spendSettings.freshResetsConversation,
        now: now(),
      }),
    );
    if (
      await end(posted, {
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

  const policy = config.settings.resume;
  const cli = settings.cli ?? "claude";
  const cliCanResume = await deps.agent.canResume(cli);
  // Where the session's transcript is (Claude's transcript or Codex's rollout, in the portable
  // store), asked of its own CLI only: a Claude transcript means nothing to Codex. Whether this
  // runner can read it is a question for the same CLI's version.
  const cliVersion = deps.agent.cliVersion
    ? await deps.agent.cliVersion(cli).catch(() => null)
    : (deps.cliVersion ?? null);
  const transcript =
    prior && prior.cli === cli && deps.agent.transcriptState
      ? await deps.agent
          .transcriptState(key, prior.sessionId, cli)
          .catch((): TranscriptState => ({ where: "none" }))
      : undefined;
  let decision: ResumeDecision = decideResume({
    prior,
    forceFresh: task.forceFresh,
    policy: {
      enabled: policy.enabled,
      ttlMs: policy.ttlHours * 3600_000,
      contextBudget: policy.contextBudget,
      // Only a CLI that compacts on request (Claude's `/compact`; not Codex) compacts.
      compact: (policy.compact ?? true) && (deps.agent.canCompact?.(cli) ?? false),
    },
    runtimeId: deps.runtimeId,
    cli,
    workDir,
    workDirExists,
    historyEpoch: epoch,
    cliCanResume,
    cliVersion,
    ...(transcript === undefined ? {} : { transcript }),
    now: now(),
  });
  const isFollowUp = prior !== null;
  log.info(
    { decision: decision.kind, reason: decision.reason, prior: prior?.sessionId },
    "resume decision",
  );
  if (!(await record(deps, task, decision, isFollowUp, epoch, workDir, false, cli))) {
    await abandonWorkspace();
    return;
  }
  // A fresh run needs the thread (on a pull request, its review discussion too): fetch it while
  // git works.
  const readThread = (): Promise<ThreadRead> =>
    Promise.all([gh.listComments(task.issueNumber), reviewOf(gh, task, log)]).then(
      ([comments, review]) => ({ comments, review }),
    );
  let threadP: Promise<ThreadRead> | null = decision.kind === "fresh" ? readThread() : null;
  threadP?.catch(() => {});

  const onProgress = comment.track({
    decision: () => decision,
    startedAt: started,
    now,
    intervalMs: deps.progressIntervalMs ?? 3000,
  });

  let issue: Awaited<ReturnType<GitHubThread["getIssue"]>>;
  let prepared: PreparedWorkspace;
  /** A pull request's agent-control files, shown to the agent as its base has them. */
  let control: { masks: Mask[]; dispose(): Promise<void> } | null = null;
  /** The default branch's CLAUDE.md, for an agent with `projectInstructions`. */
  let project: ProjectInstructions | null = null;
  try {
    issue = await issueP;
    prepared = await workspaceP;
    const branch = prepared.defaultBranch;
    const projectP =
      settings.projectInstructions && branch && deps.workspace.projectInstructions
        ? deps.workspace.projectInstructions({ repo: task.repo, branch, signal }).catch((err) => {
            // The turn still runs, without them; the log says why.
            log.warn(
              { err: (err as Error).message },
              "could not read CLAUDE.md from the default branch; running without project instructions",
            );
            return null;
          })
        : null;
    if (issue.pullRequest && deps.workspace.agentControl)
      control = await deps.workspace.agentControl({
        repo: task.repo,
        dir: prepared.dir,
        pullRequest: task.issueNumber,
        baseRef: issue.pullRequest.baseRef,
        signal,
      });
    project = await projectP;
    if (project)
      log.info(
        { branch: project.branch, bytes: project.bytes, cut: project.cut },
        "project instructions: CLAUDE.md from the default branch",
      );
  } catch (err) {
    if (signal.aborted) {
      // Stopped mid-clone: a shutdown leaves the task to the next start, like a stopped run; a
      // /cancel ends it as cancelled. Neither is the workspace failing.
      if (signal.reason === SHUTDOWN) {
        log.warn("stopped by shutdown while preparing the workspace; the task will be taken over");
        return;
      }
      const posted = await comment.answer(
        renderFailure(
          { outcome: "cancelled", detail: null, taskId: task.id },
          footerOf(decision, null, null),
        ),
      );
      await end(posted, {
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
    const posted = await comment.answer(
      renderFailure({ outcome: "failed", detail, taskId: task.id }, footerOf(decision, null, null)),
    );
    await end(posted, {
      status: "failed",
      outcome: "failed",
      failureReason: detail,
      sessionId: null,
      usage: null,
    });
    return;
  }

  // Where the agent's changes go after the turn, and what moved on that branch since the last.
  const changesMode = settings.changes ?? "pull_request";
  const publisher =
    deps.publish && gh.writer && changesMode !== "off" && settings.permissionMode !== "plan"
      ? deps.publish
      : undefined;
  const target = publisher ? publishTarget(key, issue) : null;
  const news =
    publisher && target?.kind === "conversation"
      ? await publisher.news(key, prepared.upstream).catch((err: Error) => {
          log.warn({ err: err.message }, "could not read what moved on the conversation branch");
          return { pullNumber: null, commits: [] };
        })
      : { pullNumber: null, commits: [] };
  const turn: TurnFacts = {
    repo: task.repo,
    issueNumber: task.issueNumber,
    isPullRequest: task.isPullRequest,
    agent: task.agent,
    requests,
    ...(task.threadNumber !== task.issueNumber ? { threadNumber: task.threadNumber } : {}),
    ...(target
      ? {
          changes: {
            kind: target.kind,
            branch: target.branch,
            pull: target.kind === "conversation" ? news.pullNumber : target.pull,
            news: news.commits,
            newsTaken: !prepared.headSha || prepared.headSha === prepared.upstream?.sha,
          },
        }
      : {}),
  };
  const coldPrompt = async () => {
    const all = await (threadP ?? readThread());
    threadP = null; // a retry reads the thread again
    const asked = new Set(requests.map((r) => r.url));
    return buildColdPrompt(
      {
        title: issue!.title,
        body: issue!.body,
        author: issue!.author,
        url: issue!.url,
        comments: all.comments
          .filter((c) => !asked.has(c.url) && !isInProgress(c))
          .map(toPromptComment),
        ...(all.review === "unavailable"
          ? { review: { items: [], unread: false, unavailable: true } }
          : all.review
            ? { review: reviewContext(all.review, asked, isInProgress) }
            : {}),
        ...(issue!.pullRequest
          ? {
              pullRequest: {
                headRef: issue!.pullRequest.headRef,
                baseRef: issue!.pullRequest.baseRef,
              },
            }
          : {}),
      },
      turn,
    );
  };

  const systemPrompt = buildSystemPrompt(task.agent, settings.appendSystemPrompt, project);
  let promptBytes: number | null = null;
  const attempt = async (d: ResumeDecision): Promise<AgentRunResult> => {
    const prompt = d.kind === "resume" ? buildResumedPrompt(turn) : await coldPrompt();
    promptBytes = Buffer.byteLength(prompt);
    return deps.agent.run({
      key,
      cwd: workDir,
      ...(prepared.origin ? { origin: prepared.origin } : {}),
      ...(control?.masks.length ? { masks: control.masks } : {}),
      prompt,
      resumeSessionId: d.kind === "resume" ? d.sessionId : null,
      settings,
      systemPrompt,
      signal,
      onSession: async (sessionId, model) => {
        await pinSession(deps.pool, task.id, deps.runnerId, sessionId);
        await upsertSession(deps.pool, {
          ...key,
          sessionId,
          runtimeId: deps.runtimeId,
          cli,
          workDir,
          model,
          historyEpoch: epoch,
        });
        log.info({ sessionId }, "session pinned");
      },
      onProgress,
    });
  };

  /**
   * The session is over the context budget: compact it first, with a resumed run whose prompt
   * is `/compact` (the same sandbox, settings and transcript store as the turn), so the turn
   * resumes the CLI's summary instead of starting cold. When the CLI did not compact, the turn
   * runs fresh instead (`compaction_failed`; `resume_rejected` when it could not even resume).
   * Returns the compaction's result (its cost is the turn's too) and whether it compacted.
   */
  const compactFirst = async (sessionId: string): Promise<AgentRunResult> => {
    const c = await deps.agent.run({
      key,
      cwd: workDir,
      ...(prepared.origin ? { origin: prepared.origin } : {}),
      ...(control?.masks.length ? { masks: control.masks } : {}),
      prompt: COMPACT_PROMPT,
      resumeSessionId: sessionId,
      settings,
      systemPrompt,
      signal,
      // The turn after it pins the session (the same id) and reports progress.
      onSession: () => {},
      onProgress: () => {},
    });
    if (compactedSession(c, sessionId)) {
      log.info(
        {
          session: sessionId,
          preTokens: c.compacted?.preTokens ?? null,
          postTokens: c.compacted?.postTokens ?? null,
          costUsd: c.usage?.costUsd ?? null,
        },
        "session compacted; resuming its summary",
      );
      // Its context is the summary's now: were the turn to report none, the next one must not
      // compact it again.
      await touchSession(deps.pool, sessionId, c.compacted?.postTokens ?? null, null);
    }
    return c;
  };

  let result: AgentRunResult | null = null;
  /** The compaction run before the turn, when there was one: its cost is the turn's too. */
  let compaction: AgentRunResult | null = null;
  try {
    if (decision.kind === "resume" && decision.reason === "compacted") {
      const sessionId = decision.sessionId;
      compaction = await compactFirst(sessionId);
      if (signal.aborted) {
        // Stopped while compacting: the turn ends here, as a stopped run does.
        result = { ...compaction, usage: null };
      } else if (!compactedSession(compaction, sessionId)) {
        // The CLI says "success" even when it could not compact (too few messages, or the
        // summary request failed): only its compact_boundary line proves it did.
        const c = compaction;
        log.warn(
          {
            session: sessionId,
            outcome: c.outcome,
            detail: c.outcome === "success" ? c.text : c.detail,
          },
          "could not compact the session; the turn runs fresh",
        );
        if (c.outcome === "resume_rejected") {
          await markSession(deps.pool, sessionId, "retired", "the CLI could not resume it");
        }
        decision = {
          kind: "fresh",
          reason: c.outcome === "resume_rejected" ? "resume_rejected" : "compaction_failed",
          priorSessionId: sessionId,
        };
        if (!(await record(deps, task, decision, isFollowUp, epoch, workDir, false, cli))) return;
      }
    }
    if (result === null) {
      result = await attempt(decision);
      if (result.outcome === "resume_rejected" && decision.kind === "resume") {
        await markSession(deps.pool, decision.sessionId, "retired", "the CLI could not resume it");
        if (!result.toolRan && !signal.aborted) {
          log.warn(
            { session: decision.sessionId, detail: result.detail },
            "resume rejected; retrying fresh in the same task",
          );
          decision = {
            kind: "fresh",
            reason: "resume_rejected",
            priorSessionId: decision.sessionId,
          };
          if (!(await record(deps, task, decision, isFollowUp, epoch, workDir, true, cli))) return;
          result = await attempt(decision);
        }
      } else if (
        result.outcome === "poisoned" &&
        decision.kind === "resume" &&
        !result.toolRan &&
        !signal.aborted
      ) {
        // The resumed session broke before it did anything (its context overflowed, or the API
        // refused its history): nothing of this turn happened, so the same turn runs again at
        // once in a fresh session with the whole thread, and the person gets the one answer they
        // asked for instead of being told to comment again.
        // Claude says "prompt is too long"; Codex's verdict says the thread no longer fits.
        const overflow =
          /prompt_too_long|prompt is too long|no longer fits the model's context/i.test(
            result.detail ?? "",
          );
        await markSession(deps.pool, decision.sessionId, "poisoned", result.detail ?? "poisoned");
        log.warn(
          { session: decision.sessionId, detail: result.detail },
          "the resumed session broke before any tool ran; retrying fresh in the same task",
        );
        decision = {
          kind: "fresh",
          reason: overflow ? "context_overflow" : "poisoned",
          priorSessionId: decision.sessionId,
        };
        if (!(await record(deps, task, decision, isFollowUp, epoch, workDir, true, cli))) return;
        result = await attempt(decision);
      }
    }
  } catch (err) {
    result = failedRun((err as Error).message);
  } finally {
    await control?.dispose();
  }
  await comment.settled();
  if (signal.aborted && signal.reason === SHUTDOWN) {
    // Not the user's cancel: the process is stopping. Leave the task running under our lease;
    // the next start on this runtime adopts it, or the sweeper hands it to another runner.
    log.warn({ session: result.sessionId }, "stopped by shutdown; the task will be taken over");
    return;
  }

  // The session was compacted before this turn (even if the turn then had to run fresh).
  const compacted = compaction !== null && compactedSession(compaction, compaction.sessionId);
  if (decision.kind === "resume" || result.restored || compacted) {
    await recordSessionMove(deps.pool, task.id, deps.runnerId, {
      restore: result.restored ?? compaction?.restored ?? null,
      resumedAcross: decision.kind === "resume" && prior?.runtimeId !== deps.runtimeId,
      compacted,
    }).catch((err: Error) => log.warn({ err: err.message }, "could not record the restore"));
  }
  if (result.sessionId) {
    if (result.outcome === "poisoned")
      await markSession(deps.pool, result.sessionId, "poisoned", result.detail ?? "poisoned");
    else
      await touchSession(
        deps.pool,
        result.sessionId,
        result.usage?.contextTokens ?? null,
        result.contextWindow,
      );
  }

  // The agent's changes leave the workspace only after a turn that succeeded: a failed or
  // stopped one may have left them half done, and the next turn publishes them with its own.
  let published: PublishReport | null = null;
  if (
    publisher &&
    gh.writer &&
    result.outcome === "success" &&
    !signal.aborted &&
    prepared.upstream
  ) {
    published = await publisher.publish({
      key,
      taskId: task.id,
      cloneUrl: gh.cloneUrl,
      token: token ?? "",
      writer: gh.writer,
      issue: issue!,
      upstreamRef: prepared.upstream.ref,
      defaultBranch: prepared.defaultBranch ?? "",
      mode: changesMode === "branch" ? "branch" : "pull_request",
      config: config.settings.publish ?? DEFAULT_CONFIG.publish,
      requesters: requests.map((r) => ({ login: r.author, url: r.url })),
      summary: scrub(result.text ?? ""),
      secrets: secrets,
      signal,
    });
    log.info(
      {
        publish: published.result,
        ...("reason" in published ? { reason: published.reason } : {}),
        ...(published.result === "published"
          ? { sha: published.sha, branch: published.branch }
          : {}),
      },
      "changes published",
    );
    await recordPublish(deps.pool, task.id, deps.runnerId, toRecord(published, scrub));
  }

  // What the turn cost, the compaction before it included (the context is the turn's).
  const usage = withCompaction(result.usage, compaction?.usage ?? null);
  const footer: FooterFacts = {
    ...footerOf(decision, result.sessionId, usage),
    ...(result.outcome === "turn_limit" && settings.turnLimitUsd !== undefined
      ? { turnLimitUsd: settings.turnLimitUsd }
      : {}),
    ...(settings.conversationLimitUsd !== undefined || settings.turnLimitUsd !== undefined
      ? {
          conversation: {
            spentUsd: spentBefore + (usage?.costUsd ?? 0),
            ...(settings.conversationLimitUsd !== undefined
              ? { limitUsd: settings.conversationLimitUsd }
              : {}),
          },
        }
      : {}),
  };
  const body =
    result.outcome === "success"
      ? renderAnswer(task.id, result.text ?? "", footer, published ? renderChanges(published) : "")
      : renderFailure(
          {
            outcome: result.outcome,
            detail: result.detail,
            taskId: task.id,
            timeoutMinutes: settings.timeoutMinutes,
            stallMinutes: settings.stallMinutes,
            agent: task.agent,
            ...(settings.turnLimitUsd !== undefined ? { turnLimitUsd: settings.turnLimitUsd } : {}),
            ...(usage ? { costUsd: usage.costUsd } : {}),
            lastText: result.outcome === "turn_limit" ? result.text : null,
            cli,
          },
          footer,
        );
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

async function record(
  deps: RunTaskDeps,
  task: Task,
  d: ResumeDecision,
  isFollowUp: boolean,
  epoch: number,
  workDir: string,
  retriedFresh: boolean,
  cli: CliKind,
): Promise<boolean> {
  const ok = await recordDecision(deps.pool, task.id, deps.runnerId, {
    cli,
    decision: d.kind,
    reason: d.reason,
    resumeSessionId: d.kind === "resume" ? d.sessionId : d.priorSessionId,
    isFollowUp,
    historyEpoch: epoch,
    workDir,
    retriedFresh,
  });
  if (!ok)
    deps.log.warn(
      { task: task.id },
      "lease lost before the run started; leaving the task to its new owner",
    );
  return ok;
}

async function requestsOf(deps: RunTaskDeps, task: Task): Promise<PromptComment[]> {
  const rows = await taskComments(deps.pool, task.id);
  if (rows.length === 0)
    return [{ author: task.triggerAuthor, url: task.triggerUrl, body: task.triggerBody }];
  return rows.map((r) => ({
    author: r.author,
    url: r.url,
    body: r.body,
    createdAt: r.createdAt.toISOString(),
  }));
}

type ThreadRead = {
  comments: IssueComment[];
  review: ReviewDiscussion | "unavailable" | null;
};

/**
 * A pull request's review discussion, or null (an issue, or a thread that cannot list it). It
 * is context on top of the conversation, so GitHub failing to give it does not fail the turn:
 * the prompt says it could not be read.
 */
async function reviewOf(
  gh: GitHubThread,
  task: Task,
  log: Logger,
): Promise<ReviewDiscussion | "unavailable" | null> {
  if (!task.isPullRequest || !gh.listReviewDiscussion) return null;
  try {
    return await gh.listReviewDiscussion(task.issueNumber);
  } catch (err) {
    log.warn(
      { err: (err as Error).message },
      "could not read the pull request's review discussion",
    );
    return "unavailable";
  }
}

/** Tether's own "working on it" comments are noise in a prompt; its finished answers are context. */
function isInProgress(c: IssueComment): boolean {
  return findTaskMarker(c.body) !== null && c.body.startsWith("⏳");
}

function toPromptComment(c: IssueComment): PromptComment {
  return { author: c.author, url: c.url, body: c.body, createdAt: c.createdAt };
}

function toRecord(r: PublishReport, scrub: (s: string) => string): PublishRecord {
  switch (r.result) {
    case "published":
      return {
        result: "published",
        reason: null,
        detail: r.pull ? r.pull.url : r.branch,
        sha: r.sha,
        commits: r.commits,
        pullOpened: r.pull?.opened ? r.pull.number : null,
      };
    case "refused":
      return { ...none, result: "refused", reason: r.reason, detail: scrub(r.messages.join(" ")) };
    case "failed":
      return { ...none, result: "failed", reason: r.reason, detail: scrub(r.message) };
    case "patch":
      return { ...none, result: "patch" };
    case "unchanged":
      return { ...none, result: "unchanged" };
  }
}

const none = { reason: null, detail: null, sha: null, commits: null, pullOpened: null };
/** What a resumed run's prompt is to compact the session (Claude Code's slash command). */
export const COMPACT_PROMPT = "/compact";

/**
 * Whether a compaction run compacted the session: it finished, in the session it was asked to
 * resume, and its stream said `compact_boundary`. Exit 0 and a success result alone prove
 * nothing: the CLI reports both when it could not compact.
 */
function compactedSession(c: AgentRunResult, sessionId: string | null): boolean {
  return c.outcome === "success" && c.compacted !== undefined && c.sessionId === sessionId;
}

/** A turn's usage with the compaction run's before it added: tokens and cost sum, context is the turn's. */
export function withCompaction(turn: Usage | null, compaction: Usage | null): Usage | null {
  if (!compaction) return turn;
  if (!turn) return compaction.costUsd > 0 ? { ...compaction, contextTokens: null } : null;
  return {
    ...turn,
    inputTokens: turn.inputTokens + compaction.inputTokens,
    outputTokens: turn.outputTokens + compaction.outputTokens,
    cacheReadTokens: turn.cacheReadTokens + compaction.cacheReadTokens,
    cacheCreationTokens: turn.cacheCreationTokens + compaction.cacheCreationTokens,
    costUsd: turn.costUsd + compaction.costUsd,
    numTurns: turn.numTurns + compaction.numTurns,
    durationMs: turn.durationMs + compaction.durationMs,
  };
}

function footerOf(d: ResumeDecision, sessionId: string | null, usage: Usage | null): FooterFacts {
  return { resumed: d.kind === "resume", reason: d.reason, sessionId, usage };
}
