/**
 * After a run of the turn's agent: the turn is done, or it runs again at once in a fresh session,
 * and why. A pure function of the decision the run had and what its CLI's dialect classified
 * (src/claude/classify-outcome.ts, src/codex/codex-outcome.ts), so every branch is a row of
 * test/unit/after-run.test.ts, as the resume decision's are. No CLI's error words here: that a
 * poisoned session overflowed the context window is the dialect's finding (`contextOverflow`).
 */
import type { FreshReason, ResumeDecision } from "./resume-decision.js";
import type { Outcome } from "./task.js";

/** What a run tells of itself, as its CLI's dialect classified it. */
export interface RunVerdict {
  outcome: Outcome;
  /** A tool ran: the run may have changed the workspace, so it is never silently redone. */
  toolRan: boolean;
  /** `poisoned` because the history no longer fits the model's context window. */
  contextOverflow?: boolean;
  detail: string | null;
}

/** A session never resumed again (its `sessions.state`), and why. */
export interface SessionMark {
  sessionId: string;
  state: "retired" | "poisoned";
  why: string;
}

type Fresh = Extract<ResumeDecision, { kind: "fresh" }>;

export type AfterRun =
  /** The run's result is the turn's. */
  | { kind: "done"; mark: SessionMark | null }
  /** Nothing of the turn happened: it runs again now, fresh, under `decision`. */
  | { kind: "retry_fresh"; decision: Fresh; mark: SessionMark | null };

/** The words a session the CLI would not resume is retired with. */
export const NOT_RESUMABLE = "the CLI could not resume it";

const fresh = (reason: FreshReason, priorSessionId: string): Fresh => ({
  kind: "fresh",
  reason,
  priorSessionId,
});

/**
 * The turn's run ended with `run` under `decision`; `stopped`: it was cancelled or shut down.
 * A resumed session the CLI would not resume is retired; one that broke (poisoned) before any
 * tool ran is marked poisoned here (after a tool ran, the turn's record marks it). Either way,
 * when nothing of the turn happened, it runs again fresh at once, so the person gets the one
 * answer they asked for instead of being told to comment again. A fork's source is another
 * agent's session and stays as it was whatever the fork did.
 */
export function afterRun(decision: ResumeDecision, run: RunVerdict, stopped: boolean): AfterRun {
  if (decision.kind !== "resume") return { kind: "done", mark: null };
  const { sessionId } = decision;
  const own = decision.fork !== true;
  const untouched = !run.toolRan && !stopped;
  if (run.outcome === "resume_rejected") {
    const mark = own ? { sessionId, state: "retired" as const, why: NOT_RESUMABLE } : null;
    return untouched
      ? { kind: "retry_fresh", decision: fresh("resume_rejected", sessionId), mark }
      : { kind: "done", mark };
  }
  if (run.outcome === "poisoned" && untouched) {
    const why = run.detail ?? "poisoned";
    return {
      kind: "retry_fresh",
      decision: fresh(run.contextOverflow ? "context_overflow" : "poisoned", sessionId),
      mark: own ? { sessionId, state: "poisoned", why } : null,
    };
  }
  return { kind: "done", mark: null };
}

export type AfterCompaction =
  /** Stopped while compacting: the turn ends here, as a stopped run does. */
  | { kind: "stopped" }
  /** The session was compacted: the turn resumes its summary. */
  | { kind: "resume" }
  /** It was not: the turn runs fresh instead. */
  | { kind: "fresh"; decision: Fresh; mark: SessionMark | null };

/**
 * A session over the context budget was compacted first (a resumed run whose prompt is
 * `/compact`). `compacted`: its stream proved it (compact_boundary, in that session); the CLI
 * says "success" even when it could not compact, so the outcome alone proves nothing.
 */
export function afterCompaction(
  sessionId: string,
  c: { outcome: Outcome; compacted: boolean },
  stopped: boolean,
): AfterCompaction {
  if (stopped) return { kind: "stopped" };
  if (c.compacted) return { kind: "resume" };
  return c.outcome === "resume_rejected"
    ? {
        kind: "fresh",
        decision: fresh("resume_rejected", sessionId),
        mark: { sessionId, state: "retired", why: NOT_RESUMABLE },
      }
    : { kind: "fresh", decision: fresh("compaction_failed", sessionId), mark: null };
}
