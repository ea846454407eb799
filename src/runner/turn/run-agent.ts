/**
 * The agent's run for one turn: compaction first when the decision says so, the run (pinning
 * its session the moment it is known), and one fresh retry in the same task when a resumed
 * session broke before it did anything. Then what the run tells of its session.
 */
import { findCli } from "../../cli-registry.js";
import type { Logger } from "../../log.js";
import type { PriorSession, ResumeDecision } from "../../core/resume-decision.js";
import { advanceSessionEpoch, markSession, touchSession, upsertSession } from "../../sql/sessions.js";
import type { Usage } from "../../core/task.js";
import type { Task } from "../../sql/tasks/claim.js";
import { pinSession, recordSessionEntry, recordSessionMove } from "../../sql/tasks/record.js";
import {
  failedRun,
  type AgentRunRequest,
  type AgentRunResult,
  type AgentSettings,
  type CliKind,
  type ProgressEvent,
  type StagedRun,
} from "../ports.js";
import type { ReadyWorkspace } from "./turn-workspace.js";
import type { RunTaskDeps } from "./turn.js";
import type { TaskKey } from "../../core/task.js";

export interface AgentTurn {
  deps: Pick<RunTaskDeps, "pool" | "runnerId" | "runtimeId" | "agent">;
  task: Task;
  key: TaskKey;
  log: Logger;
  signal: AbortSignal;
  cli: CliKind;
  epoch: number;
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
  onProgress: (ev: ProgressEvent) => void;
  /** The HOME staged for the turn's first run (Agent.stage), if any. */
  staged?: StagedRun | null;
  /** Takes and records the decision a retry runs under; false: the lease was lost. */
  redecide: (d: ResumeDecision, retriedFresh: boolean) => Promise<boolean>;
  /** A pull request turn: the agent gets the line-comment tool. */
  lineComments?: { requestChanges: boolean };
}

export interface AgentRan {
  result: AgentRunResult;
  /** The compaction run before the turn, when there was one: its cost is the turn's too. */
  compaction: AgentRunResult | null;
  /** Bytes of the prompt last written to the CLI. */
  promptBytes: number | null;
}

/** Runs the turn's agent under `decision`. Null: the lease was lost, and the task is another's. */
export async function runAgent(a: AgentTurn, decision: ResumeDecision): Promise<AgentRan | null> {
  const { deps, task, key, log, signal, cli, epoch, workDir, settings, systemPrompt } = a;
  const { prepared, control } = a.workspace;
  const request = (
    prompt: string,
    resumeSessionId: string | null,
    fork: boolean,
    on: Pick<AgentRunRequest, "onSession" | "onProgress" | "resumeAt">,
    runSettings: AgentSettings = settings,
  ): AgentRunRequest => ({
    key,
    cwd: workDir,
    ...(prepared.origin ? { origin: prepared.origin } : {}),
    ...(control?.masks.length ? { masks: control.masks } : {}),
    prompt,
    resumeSessionId,
    ...(fork ? { forkSession: true } : {}),
    ...(fork && decision.kind === "resume" && decision.forkFrom
      ? { transcriptKey: decision.forkFrom }
      : {}),
    ...(on.resumeAt ? { resumeAt: on.resumeAt } : {}),
    settings: runSettings,
    systemPrompt,
    signal,
    ...(a.staged ? { staged: a.staged } : {}),
    ...on,
  });

  let promptBytes: number | null = null;
  const attempt = async (d: ResumeDecision): Promise<AgentRunResult> => {
    const prompt = await a.prompt(d);
    promptBytes = Buffer.byteLength(prompt);
    return deps.agent.run({
      ...request(
        prompt,
        d.kind === "resume" ? d.sessionId : null,
        d.kind === "resume" && d.fork === true,
        {
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
          onProgress: a.onProgress,
          ...(d.kind === "resume" && d.rewind ? { resumeAt: d.rewind.at } : {}),
        },
      ),
      ...(a.lineComments ? { lineComments: a.lineComments } : {}),
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
    const c = await deps.agent.run(
      // Only a CLI with a compaction prompt is asked to compact (its canCompact).
      request(
        findCli(a.cli)?.compactPrompt ?? "",
        sessionId,
        false,
        {
          // The turn after it pins the session (the same id) and reports progress.
          onSession: () => {},
          onProgress: () => {},
        },
        a.compactSettings ?? settings,
      ),
    );
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
        if (!(await a.redecide(decision, false))) return null;
      }
    }
    if (result === null) {
      result = await attempt(decision);
      if (result.outcome === "resume_rejected" && decision.kind === "resume") {
        // A fork's source is another agent's session, and stays as it was whatever the fork did.
        if (!decision.fork)
          await markSession(
            deps.pool,
            decision.sessionId,
            "retired",
            "the CLI could not resume it",
          );
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
          if (!(await a.redecide(decision, true))) return null;
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
        // Each CLI says so in its own words (its registry entry's overflowed).
        const overflow = findCli(a.cli)?.overflowed(result.detail ?? "") ?? false;
        if (!decision.fork)
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
        if (!(await a.redecide(decision, true))) return null;
        result = await attempt(decision);
      }
    }
  } catch (err) {
    result = failedRun((err as Error).message);
  }
  return { result, compaction, promptBytes };
}

/**
 * What the run tells of its session: that it moved (restored here, resumed across runtimes, or
 * compacted before the turn), and how it stands now (its context, or poisoned).
 */
export async function recordRunSession(
  deps: Pick<RunTaskDeps, "pool" | "runnerId" | "runtimeId">,
  epoch: number,
  task: Task,
  log: Logger,
  ran: AgentRan,
  decision: ResumeDecision,
  prior: PriorSession | null,
): Promise<void> {
  const { result, compaction } = ran;
  // The session was compacted before this turn (even if the turn then had to run fresh).
  const compacted = compaction !== null && compactedSession(compaction, compaction.sessionId);
  if (decision.kind === "resume" || result.restored || compacted) {
    await recordSessionMove(deps.pool, task.id, deps.runnerId, {
      restore: result.restored ?? compaction?.restored ?? null,
      resumedAcross: decision.kind === "resume" && prior?.runtimeId !== deps.runtimeId,
      compacted,
    }).catch((err: Error) => log.warn({ err: err.message }, "could not record the restore"));
  }
  // Where this turn entered its session: a later rewind to before it resumes there.
  if (result.entry && result.sessionId && decision.kind === "resume" && !decision.fork)
    await recordSessionEntry(deps.pool, task.id, deps.runnerId, result.entry).catch((err: Error) =>
      log.warn({ err: err.message }, "could not record where the turn entered its session"),
    );
  if (decision.kind === "resume" && decision.rewind && result.sessionId === decision.sessionId) {
    // The rewind is proven by where the turn entered the session: at the message asked for. Then
    // the session's history is the key's as of this turn's epoch; otherwise it may still hold
    // the old text, and it is never resumed again.
    if (result.entry === decision.rewind.at)
      await advanceSessionEpoch(deps.pool, decision.sessionId, epoch);
    else {
      log.warn(
        { session: decision.sessionId, asked: decision.rewind.at, entered: result.entry ?? null },
        "the CLI did not rewind the session where asked; retiring it",
      );
      await markSession(deps.pool, decision.sessionId, "retired", "the CLI did not rewind it");
      return;
    }
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
