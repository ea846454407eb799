/**
 * The agent's run for one turn: compaction first when the decision says so, the run (pinning
 * its session the moment it is known), and one fresh retry in the same task when a resumed
 * session broke before it did anything (the choice is src/core/after-run.ts's, pure). Then what
 * the run tells of its session.
 */
import { findCli } from "../../cli-registry.js";
import type { Logger } from "../../log.js";
import type { PriorSession, ResumeDecision } from "../../core/resume-decision.js";
import { afterCompaction, afterRun, type SessionMark } from "../../core/after-run.js";
import type { TaskKey, Usage } from "../../core/task.js";
import type { Task } from "../../core/task.js";
import type { TurnJournal } from "../../core/turn-journal.js";
import {
  failedRun,
  type AgentRunRequest,
  type AgentRunResult,
  type AgentSettings,
  type CliKind,
  type StagedRun,
} from "../ports.js";
import type { CollectedImages } from "./turn-images.js";
import type { TurnProgress } from "../render/tracking-comment.js";
import type { LiveRecorder } from "../render/live-recorder.js";
import type { ReadyWorkspace } from "./turn-workspace.js";
import { record } from "./turn-decision.js";
import type { RunTaskDeps } from "./turn.js";

export interface AgentTurn {
  deps: Pick<RunTaskDeps, "runtimeId" | "agent">;
  /** Where the turn writes down its decisions and its session. */
  journal: TurnJournal;
  task: Task;
  key: TaskKey;
  log: Logger;
  signal: AbortSignal;
  cli: CliKind;
  epoch: number;
  /** The key had a session before: recorded with every decision the turn runs under. */
  isFollowUp: boolean;
  workDir: string;
  workspace: ReadyWorkspace;
  settings: AgentSettings;
  /**
   * The settings a compaction runs with, when not `settings`: under `/model` the agent's own
   * model summarises the session (the model asked for may have too small a window to read it).
   */
  compactSettings?: AgentSettings;
  systemPrompt: string;
  prompt: (d: ResumeDecision) => Promise<string>;
  /** The images the run under `d` shows the model (fetched per attempt: a fresh retry has more). */
  images?: (d: ResumeDecision) => Promise<CollectedImages>;
  progress: TurnProgress;
  /** The HOME staged for the turn's first run (Agent.stage), if any. */
  staged?: StagedRun | null;
  /** A pull request turn: the agent gets the line-comment tool. */
  lineComments?: { requestChanges: boolean };
  /** The turn's live view: every event of its runs (the compaction's aside) recorded. */
  live?: LiveRecorder;
}

export interface AgentRan {
  result: AgentRunResult;
  /** The decision the result ran under: the turn's, or the fresh one a retry took. */
  decision: ResumeDecision;
  /** The compaction run before the turn, when there was one: its cost is the turn's too. */
  compaction: AgentRunResult | null;
  /** Bytes of the prompt last written to the CLI. */
  promptBytes: number | null;
  /** The images of the last attempt: shown, and left out with why. */
  images: CollectedImages | null;
}

/**
 * Runs the turn's agent under `decision` (recorded already); a decision a retry takes is recorded
 * here. Null: the lease was lost before a retry, and the task is another's.
 */
export async function runAgent(a: AgentTurn, decision: ResumeDecision): Promise<AgentRan | null> {
  const { log, signal } = a;
  let compaction: AgentRunResult | null = null;
  let promptBytes: number | null = null;
  let images: CollectedImages | null = null;
  /** Takes `d` as the turn's decision: recorded on the task, shown in its comment. */
  const take = async (d: ResumeDecision, retriedFresh: boolean): Promise<boolean> => {
    decision = d;
    a.progress.decided(d);
    const { isFollowUp, epoch, workDir, cli } = a;
    return record(a.journal, a.log, a.task, {
      decision: d,
      isFollowUp,
      epoch,
      workDir,
      retriedFresh,
      cli,
    });
  };
  const attempt = async (d: ResumeDecision): Promise<AgentRunResult> => {
    const prompt = await a.prompt(d);
    promptBytes = Buffer.byteLength(prompt);
    images = a.images ? await a.images(d) : null;
    const request = runRequest(a, d, prompt);
    return a.deps.agent.run(
      images?.images.length ? { ...request, images: images.images } : request,
    );
  };
  try {
    if (decision.kind === "resume" && decision.reason === "compacted") {
      const sessionId = decision.sessionId;
      const c = await compactFirst(a, decision);
      compaction = c;
      const next = afterCompaction(
        sessionId,
        { outcome: c.outcome, compacted: compactedSession(c, sessionId) },
        signal.aborted,
      );
      // Stopped while compacting: the turn ends here, as a stopped run does.
      if (next.kind === "stopped")
        return { result: { ...c, usage: null }, decision, compaction, promptBytes, images };
      if (next.kind === "fresh") {
        const detail = c.outcome === "success" ? c.text : c.detail;
        log.warn(
          { session: sessionId, outcome: c.outcome, detail },
          "could not compact the session; the turn runs fresh",
        );
        await mark(a, next.mark);
        if (!(await take(next.decision, false))) return null;
      }
    }
    let result = await attempt(decision);
    const after = afterRun(decision, result, signal.aborted);
    await mark(a, after.mark);
    if (after.kind === "retry_fresh") {
      log.warn(
        {
          session: after.decision.priorSessionId,
          detail: result.detail,
          reason: after.decision.reason,
        },
        "the resumed session broke before any tool ran; retrying fresh in the same task",
      );
      if (!(await take(after.decision, true))) return null;
      result = await attempt(decision);
    }
    return { result, decision, compaction, promptBytes, images };
  } catch (err) {
    return {
      result: failedRun((err as Error).message),
      decision,
      compaction,
      promptBytes,
      images,
    };
  }
}

/** The run request of the turn under `d`: its session pinned the moment the CLI names it. */
function runRequest(a: AgentTurn, d: ResumeDecision, prompt: string): AgentRunRequest {
  const { deps, journal, cli, workDir, log } = a;
  return {
    ...baseRequest(a, d, prompt),
    onSession: async (sessionId, model) => {
      await journal.sessionPinned({
        sessionId,
        runtimeId: deps.runtimeId,
        cli,
        workDir,
        model,
        historyEpoch: a.epoch,
      });
      log.info({ sessionId }, "session pinned");
    },
    onProgress: (ev) => a.progress.onEvent(ev),
    ...(a.live ? { onRunEvent: a.live.record } : {}),
    ...(a.lineComments ? { lineComments: a.lineComments } : {}),
  };
}

/** What every run of the turn shares: where, with what, and which session it resumes or forks. */
function baseRequest(
  a: AgentTurn,
  d: ResumeDecision,
  prompt: string,
): Omit<AgentRunRequest, "onSession" | "onProgress" | "onRunEvent"> {
  const { prepared, control } = a.workspace;
  const fork = d.kind === "resume" && d.fork === true;
  return {
    key: a.key,
    cwd: a.workDir,
    ...(prepared.origin ? { origin: prepared.origin } : {}),
    ...(control?.masks.length ? { masks: control.masks } : {}),
    prompt,
    resumeSessionId: d.kind === "resume" ? d.sessionId : null,
    ...(fork ? { forkSession: true } : {}),
    ...(fork && d.kind === "resume" && d.forkFrom ? { transcriptKey: d.forkFrom } : {}),
    ...(d.kind === "resume" && d.rewind ? { resumeAt: d.rewind.at } : {}),
    settings: a.settings,
    systemPrompt: a.systemPrompt,
    signal: a.signal,
    ...(a.staged ? { staged: a.staged } : {}),
  };
}

/**
 * The session is over the context budget: compact it first, with a resumed run whose prompt is
 * `/compact` (the same sandbox, settings and transcript store as the turn), so the turn resumes
 * the CLI's summary instead of starting cold. Returns the compaction's result (its cost is the
 * turn's too); afterCompaction says what the turn does next.
 */
async function compactFirst(
  a: AgentTurn,
  d: Extract<ResumeDecision, { kind: "resume" }>,
): Promise<AgentRunResult> {
  const sessionId = d.sessionId;
  const c = await a.deps.agent.run({
    // Only a CLI with a compaction prompt is asked to compact (its canCompact).
    ...baseRequest(a, { ...d, fork: false }, findCli(a.cli)?.compactPrompt ?? ""),
    settings: a.compactSettings ?? a.settings,
    // The turn after it pins the session (the same id) and reports progress.
    onSession: () => {},
    onProgress: () => {},
  });
  if (compactedSession(c, sessionId)) {
    a.log.info(
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
    await a.journal.sessionUsed(sessionId, c.compacted?.postTokens ?? null, null);
  }
  return c;
}

/** Marks a session never to be resumed again, as afterRun or afterCompaction said. */
async function mark(a: AgentTurn, m: SessionMark | null): Promise<void> {
  if (m) await a.journal.sessionMarked(m.sessionId, m.state, m.why);
}

/**
 * What the run tells of its session: that it moved (restored here, resumed across runtimes, or
 * compacted before the turn), and how it stands now (its context, or poisoned).
 */
export async function recordRunSession(
  deps: Pick<RunTaskDeps, "runtimeId">,
  journal: TurnJournal,
  log: Logger,
  ran: AgentRan,
  prior: PriorSession | null,
  epoch: number,
): Promise<void> {
  const { result, compaction, decision } = ran;
  // The session was compacted before this turn (even if the turn then had to run fresh).
  const compacted = compaction !== null && compactedSession(compaction, compaction.sessionId);
  if (decision.kind === "resume" || result.restored || compacted) {
    await journal
      .sessionMoved({
        restore: result.restored ?? compaction?.restored ?? null,
        resumedAcross: decision.kind === "resume" && prior?.runtimeId !== deps.runtimeId,
        compacted,
      })
      .catch((err: Error) => log.warn({ err: err.message }, "could not record the restore"));
  }
  // Where this turn entered its session: a later rewind to before it resumes there.
  if (result.entry && result.sessionId && decision.kind === "resume" && !decision.fork)
    await journal
      .sessionEntered(result.entry)
      .catch((err: Error) =>
        log.warn({ err: err.message }, "could not record where the turn entered its session"),
      );
  if (decision.kind === "resume" && decision.rewind && result.sessionId === decision.sessionId) {
    // The rewind is proven by where the turn entered the session: at the message asked for. Then
    // the session's history is the key's as of this turn's epoch; otherwise it may still hold
    // the old text, and it is never resumed again.
    if (result.entry === decision.rewind.at)
      await journal.sessionRewound(decision.sessionId, epoch);
    else {
      log.warn(
        { session: decision.sessionId, asked: decision.rewind.at, entered: result.entry ?? null },
        "the CLI did not rewind the session where asked; retiring it",
      );
      await journal.sessionMarked(decision.sessionId, "retired", "the CLI did not rewind it");
      return;
    }
  }
  if (result.sessionId) {
    if (result.outcome === "poisoned")
      await journal.sessionMarked(result.sessionId, "poisoned", result.detail ?? "poisoned");
    else
      await journal.sessionUsed(
        result.sessionId,
        result.usage?.contextTokens ?? null,
        result.contextWindow,
      );
  }
}

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
