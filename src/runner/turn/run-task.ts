/**
 * One turn, end to end: decide resume or fresh, tell the thread, prepare the workspace, build
 * the prompt, run the agent (pinning its session the moment it is known), classify, answer,
 * finish. Every write is scoped to this runner's lease.
 */
import { DEFAULT_CLI, findCli } from "../../cli-registry.js";
import { readSettingsSnapshot } from "../../config/repo-settings.js";
import type { Task } from "../../core/task.js";
import type { ResumeDecision } from "../../core/resume-decision.js";
import { redact } from "../../core/redact.js";
import { chooseCacheTtl } from "../../core/cache-ttl.js";
import type { TaskKey } from "../../core/task.js";
import type { FinalAnswer, Finish, TurnJournal } from "../../core/turn-journal.js";
import type {
  AgentRunResult,
  AgentSettings,
  CliKind,
  ConfigResult,
  GitHubThread,
  RepoSettings,
  StagedRun,
} from "../ports.js";
import type { PromptComment } from "../render/prompts.js";
import type { CacheTtl } from "../../core/settings.js";
import { buildSystemPrompt } from "../render/prompts.js";
import { answerRetryPolicy } from "./answer-retry.js";
import { renderFailure } from "../render/thread-comments.js";
import { trackingComment, type TrackingComment } from "../render/tracking-comment.js";
import { readyWorkspace, startWorkspace, type ReadyWorkspace } from "./turn-workspace.js";
import { decideTurn } from "./turn-decision.js";
import { promptFor, requestsOf, threadReader, turnFacts } from "./turn-prompt.js";
import { turnImages } from "./turn-images.js";
import { recordRunSession, runAgent, withCompaction, type AgentRan } from "./run-agent.js";
import { planChanges, publishChanges, type ChangesPlan } from "./publish-step.js";
import { answerBody, footerOf } from "./turn-answer.js";
import { postReview, type ReviewOutcome } from "./review-step.js";
import { admit, type Refusal } from "./admit.js";
import { conversationUrl } from "../../core/conversation-path.js";
import { liveUrl, signLiveLink } from "../../core/live-link.js";
import { liveRecorder } from "../render/live-recorder.js";
import { requeueIfRateLimited } from "./rate-limit-requeue.js";
import { SHUTDOWN, type RunTaskDeps } from "./turn.js";
import { decidePlanTurn, type PlanTurn } from "../../core/plan-turn.js";

export { SHUTDOWN, type RunTaskDeps } from "./turn.js";

export async function runTask(deps: RunTaskDeps, task: Task, signal: AbortSignal): Promise<void> {
  const t = await openTurn(deps, task, signal);
  if (!t) return; // no GitHub access: the task ended saying so
  const { key, log, gh, comment, now, refuse, journal } = t;
  // The workspace update (git) is the slowest step before the spawn, and needs nothing the
  // decision does: start it now.
  const ws = await startWorkspace(deps.workspace, task, gh, t.token, signal);

  // Everything the decision needs, at once: the config (GitHub) and the key's history.
  const { store } = deps;
  const [config, requests, prior, epoch] = await Promise.all([
    configFor(task, gh),
    requestsOf(store, task),
    store.priorSession(key),
    store.epoch(key),
  ]);
  // Not run: the config does not read, the agent is gone, or a spend limit is reached.
  const admitted = await admit(deps, task, config, log, now);
  if ("refused" in admitted) {
    await ws.abandon();
    const { refused } = admitted;
    const ended = await refuse(comment.answer(refused.answer), refused);
    if (ended && refused.limits) deps.onRefused?.({ task, limits: refused.limits });
    return;
  }
  // A plan turn (`/plan`, a plan's follow-up, `plan: always`) runs the CLI read-only.
  const planned = await planTurnOf(deps, journal, task, key, admitted.settings);
  if (!planned) {
    await ws.abandon(); // the lease was lost
    return;
  }
  const settings = planned.plan ? planSettings(admitted.settings) : admitted.settings;

  // The resume decision, recorded on the task before anything runs; a retry takes a new one.
  // A task snapshot from before agents had a `cli` has none: it ran on the default CLI.
  const cli = settings.cli ?? DEFAULT_CLI;
  const policy = admitted.config.resume;
  const decision = await decideTurn(deps, {
    ...{ key, task, cli, policy, prior, epoch, ws, now, log },
    journal,
  });
  if (!decision) {
    await ws.abandon(); // the lease was lost
    return;
  }
  const isFollowUp = prior !== null;
  // The prompt cache's lifetime this turn writes with (what the conversation's next turn finds).
  const previousTurnAt = prior?.lastUsedAt ?? null;
  const cacheTtl = findCli(cli)?.cacheTtl
    ? chooseCacheTtl(settings.cacheTtl, { previousTurnAt, now: now() })
    : null;
  const staged = stage(deps, key, ws.workDir, decision, cli);
  // A fresh run needs the thread (on a pull request, its review discussion too): fetch it while
  // git works.
  const readThread = threadReader(gh, task, log);
  const threadP = decision.kind === "fresh" ? readThread() : null;
  threadP?.catch(() => {});
  // The live view: the run's events recorded as they stream, the comment linking them. Nothing
  // is recorded that nobody could open: a signed link needs the public URL to be given out.
  const watchable = deps.live && (deps.publicUrl || deps.live.mode === "token");
  const live = watchable ? liveRecorder({ journal, scrub: t.scrub, log }) : undefined;
  const liveUrl = await liveLink(deps, task.id, t.started, log);
  const intervalMs =
    liveUrl && deps.live ? deps.live.editIntervalMs : (deps.progressIntervalMs ?? 3000);
  const progress = comment.track({
    decision,
    startedAt: t.started,
    now,
    intervalMs,
    ...(liveUrl ? { liveUrl } : {}),
  });

  // The workspace, ready for the run; a turn that cannot have it ends here.
  let ready: ReadyWorkspace;
  let hold: { restore(signal?: AbortSignal): Promise<void> } | undefined;
  try {
    ready = await readyWorkspace(deps.workspace, task, ws, settings, log, signal);
    // What a plan turn's run writes is put back after it (workspace/plan-hold.ts).
    if (planned.plan) hold = await deps.workspace.holdForPlan?.({ ...key, signal });
  } catch (err) {
    await staged?.release();
    const r = workspaceRefusal(err as Error, signal, t.scrub, log);
    if (!r) return; // a shutdown: the task is left to the next start
    const footer = { ...footerOf(decision, null, null), ...t.footer };
    const answer = renderFailure({ outcome: r.outcome, detail: r.detail, taskId: task.id }, footer);
    await refuse(comment.answer(answer), r);
    return;
  }
  const { issue, prepared, control, project } = ready;
  // A pull request turn: the agent may comment on lines of the diff (posted as one review).
  const lineComments = issue.pullRequest
    ? { requestChanges: settings.requestChanges === true }
    : undefined;

  // The prompt (the turn's facts with where its changes go, and the thread when it runs fresh),
  // then the agent's run (a compaction first, a fresh retry after, when the turn needs them).
  let plan: ChangesPlan;
  let ran: AgentRan | null;
  // Images from the thread, fetched per run into a directory of the turn's, outside the checkout.
  const headSha = prepared.headSha;
  const readFile = deps.workspace.readFile?.bind(deps.workspace);
  const images = deps.images
    ? turnImages({
        config: deps.images,
        cli,
        taskId: task.id,
        requests,
        issueBody: issue.body,
        thread: () => threadP ?? readThread(),
        token: t.token,
        ...(readFile && headSha
          ? {
              readRepoFile: (file: string, maxBytes: number) =>
                readFile({
                  repoId: task.repoId,
                  repo: task.repo,
                  commit: headSha,
                  path: file,
                  maxBytes,
                  signal,
                }),
            }
          : {}),
        signal,
        log,
      })
    : null;
  try {
    plan = await planChanges(deps, gh, settings, key, issue, prepared, log);
    const planFact = planned.plan ? "plan" : planned.approved ? "approved" : undefined;
    const turn = turnFacts(
      task,
      requests,
      plan.target,
      plan.news,
      prepared,
      lineComments,
      planFact,
    );
    const prompt = promptFor({
      turn,
      issue,
      requests,
      thread: threadP,
      readThread,
      resent: async (plan) =>
        (await store.resentComments(key, plan.resend)).map((c) => ({
          author: c.author,
          url: c.url,
          body: c.body,
          createdAt: c.createdAt.toISOString(),
        })),
      ignoredEditors: (sources) => store.ignoredEditors(key.repoId, sources),
    });
    const systemPrompt = buildSystemPrompt(task.agent, settings.appendSystemPrompt, project);
    const runSettings = cacheTtl ? { ...settings, cacheTtl } : settings;
    const ownModel = admitted.config.agents[task.agent]?.model;
    ran = await runAgent(
      {
        ...t,
        cli,
        epoch,
        isFollowUp,
        workDir: ws.workDir,
        workspace: ready,
        settings: runSettings,
        // Under `/model`, the agent's own model compacts the session it made.
        ...(task.requestedModel && ownModel
          ? { compactSettings: { ...runSettings, model: ownModel } }
          : {}),
        systemPrompt,
        prompt,
        ...(images ? { images: images.collect } : {}),
        progress,
        staged,
        ...(lineComments ? { lineComments } : {}),
        ...(live ? { live } : {}),
      },
      decision,
    );
  } finally {
    await staged?.release(); // a HOME no run took
    await control?.dispose();
    // Before anything else, shutdown included: a turn taken over later must not find them.
    await hold?.restore().catch((err: Error) => {
      log.error({ err: t.scrub(err.message) }, "the plan turn's checkout could not be put back");
    });
    await images
      ?.dispose()
      .catch((err: Error) => log.warn({ err: err.message }, "could not remove the turn's images"));
  }
  await live?.flush();
  if (!ran) return; // the lease was lost before a retry
  await comment.settled();
  if (signal.aborted && signal.reason === SHUTDOWN) {
    // Not the user's cancel: the process is stopping. Leave the task running under our lease;
    // the next start on this runtime adopts it, or the sweeper hands it to another runner.
    log.warn({ session: ran.result.sessionId }, "stopped by shutdown; the task will be taken over");
    return;
  }
  await recordRunSession(deps, journal, log, ran, prior, epoch);
  await answerTurn(t, {
    ready,
    plan,
    ran,
    settings,
    requests,
    cli,
    cacheTtl,
    isFollowUp,
    admitted,
    planned,
  });
  log.info({ outcome: ran.result.outcome, session: ran.result.sessionId }, "task finished");
}

/**
 * The turn's GitHub thread, and its one comment there that everything posted from here on goes
 * into (not awaited before the run starts, so the answer may queue behind it). Null: there is no
 * GitHub access for the task's installation; the task ended, and the thread hears of it once
 * GitHub lets the answer poster in.
 */
async function openTurn(deps: RunTaskDeps, task: Task, signal: AbortSignal): Promise<Turn | null> {
  const now = deps.now ?? (() => new Date());
  const started = now();
  const { repoId, repo, issueNumber, agent } = task;
  const key: TaskKey = { repoId, repo, issueNumber, agent };
  const log = deps.log.child({ task: task.id, repo, issue: issueNumber, agent });
  const secrets = new Set<string | undefined>(deps.secrets?.() ?? []);
  const retryInMs = answerRetryPolicy(deps.answerRetry).baseMs;
  let gh: GitHubThread | undefined;
  const journal = deps.store.journal(task, deps.runnerId);
  const end = ender(journal, log, () => gh);
  const refuse = (last: FinalAnswer | Promise<FinalAnswer>, r: Omit<Refusal, "answer">) =>
    end(last, {
      status: r.status,
      outcome: r.outcome,
      failureReason: r.reason,
      sessionId: null,
      usage: null,
    });
  try {
    gh = await deps.github(task);
  } catch (err) {
    log.error({ err }, "no GitHub access for the task's installation");
    const reason = redact(`GitHub access failed: ${(err as Error).message}`, secrets);
    const pending = { kind: "pending" as const, body: null, retryInMs };
    await refuse(pending, { status: "failed", outcome: "failed", reason });
    return null;
  }
  const token = await gh.token().catch(() => undefined);
  secrets.add(token);
  const scrub = (s: string) => redact(s, secrets);
  const comment = trackingComment({ journal, gh, task, log, scrub, retryInMs });
  // Every footer links to the conversation's dashboard page, when there is a public URL.
  const footer = deps.publicUrl ? { chainUrl: conversationUrl(deps.publicUrl, key) } : {};
  const t = {
    deps,
    task,
    key,
    log,
    signal,
    now,
    started,
    gh,
    token,
    secrets,
    scrub,
    footer,
    journal,
  };
  return { ...t, comment, end, refuse };
}

/**
 * The live page's address for the comment: signed for the task until TETHER_LIVE_LINK_DAYS after
 * the turn started (TETHER_LIVE=on), or plain, behind the dashboard's token (token). None
 * without TETHER_PUBLIC_URL, or when the key cannot be read (the turn goes on without a link).
 */
async function liveLink(
  deps: RunTaskDeps,
  taskId: number,
  started: Date,
  log: RunTaskDeps["log"],
): Promise<string | undefined> {
  const { live, publicUrl } = deps;
  if (!live || !publicUrl) return undefined;
  if (live.mode === "token") return liveUrl(publicUrl, taskId, null);
  try {
    const expiresAt = new Date(started.getTime() + live.linkDays * 86_400_000);
    return liveUrl(publicUrl, taskId, signLiveLink(await live.key(), taskId, expiresAt));
  } catch (err) {
    log.warn({ err }, "could not read the live link key; the comment goes without its link");
    return undefined;
  }
}

/** What every step of a turn shares. */
interface Turn {
  deps: RunTaskDeps;
  task: Task;
  key: TaskKey;
  /** Where the turn writes down what it did, under this runner's lease. */
  journal: TurnJournal;
  log: RunTaskDeps["log"];
  signal: AbortSignal;
  now: () => Date;
  started: Date;
  gh: GitHubThread;
  token: string | undefined;
  scrub: (s: string) => string;
  secrets: Set<string | undefined>;
  /** The answer footer's link to the conversation's dashboard page, when there is a public URL. */
  footer: { chainUrl?: string };
  comment: TrackingComment;
  /** Ends the turn: its last word in the thread, then the task's row (see ender). */
  end: ReturnType<typeof ender>;
  /** A turn that ends before or instead of its run: its last word, and why on its row. */
  refuse: (
    last: FinalAnswer | Promise<FinalAnswer>,
    r: Omit<Refusal, "answer">,
  ) => Promise<boolean>;
}

/**
 * After the run: publish its changes, post the agent's line comments as one review of the head
 * the turn ran on, answer (what the turn cost, the compaction before it included), then finish.
 */
async function answerTurn(
  t: Turn,
  a: {
    ready: ReadyWorkspace;
    plan: ChangesPlan;
    ran: AgentRan;
    settings: AgentSettings;
    requests: PromptComment[];
    cli: CliKind;
    cacheTtl: CacheTtl | null;
    isFollowUp: boolean;
    admitted: { config: RepoSettings; spentBefore: number };
    planned: PlanTurn;
  },
): Promise<void> {
  const { deps, task, key, log, signal, gh, scrub } = t;
  const { ready, ran, settings, cli, cacheTtl } = a;
  const { config, spentBefore } = a.admitted;
  const { issue, prepared } = ready;
  const { result, decision, compaction, promptBytes } = ran;
  const { token, secrets } = t;
  const { requests } = a;
  const published = await publishChanges(t.journal, a.plan, {
    task,
    key,
    gh,
    token,
    issue,
    prepared,
    config,
    requests,
    result,
    scrub,
    secrets,
    log,
    signal,
  });
  const review = await reviewOf(result, { gh, task, issue, settings, scrub, log });
  const usage = withCompaction(result.usage, compaction?.usage ?? null);
  const posted = await t.comment.answer(
    answerBody({
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
      plan: a.planned,
      ...(ran.images ? { images: ran.images } : {}),
      ...t.footer,
    }),
  );
  // git's housekeeping, kept off the hot path before the spawn (fetch runs with gc.auto off):
  // here, after the answer and while the task still holds its key, so it never meets the next
  // turn's fetch. One cheap process when there is nothing to do.
  if (!signal.aborted) await deps.workspace.maintain?.({ ...key, signal });
  const finished = await t.end(posted, {
    ...finishOf(result, scrub),
    usage,
    promptBytes,
    cacheTtl,
    review: reviewRecord(review),
    mcpToolCalls: result.mcp?.toolCalls ?? null,
  });
  if (finished) {
    const started = t.started;
    deps.onFinished?.({
      task,
      outcome: result.outcome,
      reason: decision.reason,
      cli,
      resumed: decision.kind === "resume",
      isFollowUp: a.isFollowUp,
      usage,
      durationMs: t.now().getTime() - started.getTime(),
      queueWaitMs: started.getTime() - task.createdAt.getTime(),
      publish: published,
      mcpToolCalls: result.mcp?.toolCalls ?? null,
    });
  }
}

/**
 * Every turn that ends here ends through this: its last word in the thread, then the task's
 * row, under this runner's lease. False: the lease was lost (the task was finished or taken
 * over elsewhere). A turn left to another runner (a shutdown, a lost lease) just returns.
 */
function ender(journal: TurnJournal, log: RunTaskDeps["log"], gh: () => GitHubThread | undefined) {
  return async (
    last: FinalAnswer | Promise<FinalAnswer>,
    f: Omit<Finish, "answer">,
  ): Promise<boolean> => {
    const answer = await last;
    // A rate limit GitHub asked a longer wait for is not the turn's failure: it waits (#34).
    if (await requeueIfRateLimited({ journal, log }, gh(), f)) return false;
    // Read after the answer is posted: the turn's count includes it.
    const ok = await journal.finished({
      ...f,
      answer,
      githubRequests: gh()?.requests?.() ?? null,
      githubRequestsNotModified: gh()?.notModified?.() ?? null,
    });
    if (!ok) log.warn("lease lost: the task was finished or taken over elsewhere");
    return ok;
  };
}

/**
 * The run's HOME (a resume's transcript restored into it), made while the workspace is still
 * being prepared; a run that does not fit it (a fresh retry) makes its own.
 */
function stage(
  deps: RunTaskDeps,
  key: TaskKey,
  cwd: string,
  d: ResumeDecision,
  cli: CliKind,
): StagedRun | null {
  const resume = d.kind === "resume" ? d : null;
  return (
    deps.agent.stage(
      {
        key,
        cwd,
        resumeSessionId: resume?.sessionId ?? null,
        ...(resume?.forkFrom ? { transcriptKey: resume.forkFrom } : {}),
      },
      cli,
    ) ?? null
  );
}

/**
 * A workspace that could not be made ready. Stopped mid-clone, it is not the workspace failing:
 * a shutdown (null) leaves the task to the next start, like a stopped run; a /cancel ends it as
 * cancelled.
 */
function workspaceRefusal(
  err: Error,
  signal: AbortSignal,
  scrub: (s: string) => string,
  log: RunTaskDeps["log"],
): (Omit<Refusal, "answer"> & { detail: string | null }) | null {
  if (signal.aborted && signal.reason === SHUTDOWN) {
    log.warn("stopped by shutdown while preparing the workspace; the task will be taken over");
    return null;
  }
  if (signal.aborted)
    return {
      status: "cancelled",
      outcome: "cancelled",
      reason: "cancelled while the workspace was being prepared",
      detail: null,
    };
  const detail = scrub(err.message);
  log.warn({ err: detail }, "workspace preparation failed");
  return { status: "failed", outcome: "failed", reason: detail, detail };
}

/** What a run that ended with `result` records on its task. */
function finishOf(
  result: AgentRunResult,
  scrub: (s: string) => string,
): Pick<Finish, "status" | "outcome" | "failureReason" | "sessionId" | "answerBytes"> {
  const { outcome } = result;
  return {
    status: outcome === "success" ? "succeeded" : outcome === "cancelled" ? "cancelled" : "failed",
    outcome,
    failureReason: outcome === "success" ? null : scrub(result.detail ?? outcome),
    sessionId: result.sessionId,
    answerBytes: result.text === null ? null : Buffer.byteLength(result.text),
  };
}

/** The agent's line comments, as one review of the head a pull request turn ran on. */
async function reviewOf(
  result: AgentRunResult,
  r: {
    gh: GitHubThread;
    task: Task;
    issue: ReadyWorkspace["issue"];
    settings: AgentSettings;
    scrub: (s: string) => string;
    log: RunTaskDeps["log"];
  },
): Promise<ReviewOutcome | null> {
  const pull = r.issue.pullRequest;
  if (!result.review || !pull || result.outcome === "cancelled") return null;
  return postReview({
    gh: r.gh,
    pullNumber: r.task.issueNumber,
    commitId: pull.headSha,
    review: result.review,
    allowChanges: r.settings.requestChanges === true,
    scrub: r.scrub,
    log: r.log,
  });
}

function reviewRecord(review: ReviewOutcome | null): Finish["review"] {
  if (review === null) return null;
  return review.kind === "posted"
    ? { result: "posted", lineComments: review.onLines }
    : { result: "failed", lineComments: 0 };
}

/**
 * Whether the turn plans or acts, recorded on the task (the next turn and `/status` read it).
 * Null: the lease was lost.
 */
async function planTurnOf(
  deps: RunTaskDeps,
  journal: TurnJournal,
  task: Task,
  key: TaskKey,
  settings: AgentSettings,
): Promise<PlanTurn | null> {
  const last = await deps.store.lastTurn(key, task.id);
  const planned = decidePlanTurn({
    request: task.planRequest,
    lastTurnPlanned: last?.planTurn ?? false,
    hasPriorTurn: last !== null,
    setting: settings.plan,
  });
  if (planned.plan && !(await journal.plannedOnly())) return null;
  return planned;
}

/**
 * A plan turn's settings: the CLI's read-only mode (each dialect maps `plan` to its own: Claude's
 * permission mode, Codex's read-only sandbox, Gemini's policy without allow rules, opencode's
 * plan agent) and none of the agent's allowed tools, which could let a write through.
 */
function planSettings(s: AgentSettings): AgentSettings {
  const { allowedTools: _dropped, ...rest } = s;
  return { ...rest, permissionMode: "plan" };
}

/** The settings intake accepted the comment under, else (an older task) a fresh read. */
async function configFor(task: Task, gh: GitHubThread): Promise<ConfigResult> {
  try {
    const settings = readSettingsSnapshot(task.repoSettings);
    return settings ? { ok: true, settings } : await gh.loadConfig();
  } catch (err) {
    return { ok: false, message: `could not read .github/tether.yml: ${(err as Error).message}` };
  }
}
