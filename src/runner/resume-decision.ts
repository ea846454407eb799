/**
 * The resume decision: resume the key's prior session, or start fresh, and why.
 * A pure function of its input, so every guard in design.md has a row in a table test.
 */

export const FRESH_REASONS = [
  "no_prior_session",
  "forced_fresh",
  "resume_disabled",
  "runtime_mismatch",
  "workdir_changed",
  "poisoned",
  "history_edited",
  "expired",
  "context_budget",
  "cli_cannot_resume",
  "resume_rejected",
] as const;
export type FreshReason = (typeof FRESH_REASONS)[number];
/** Every reason code a turn's decision can carry: what the dashboard and metrics count. */
export const REASON_CODES = ["resumed", ...FRESH_REASONS] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

/** The session of the key's latest terminal task that has one, joined with the session's latest state. */
export interface PriorSession {
  sessionId: string;
  /** The CLI that made it; only that CLI can resume it. */
  cli: "claude" | "codex";
  runtimeId: string | null;
  workDir: string | null;
  /** Latest state: once poisoned or retired, never resumed again. */
  state: "active" | "poisoned" | "retired";
  /** The key's history epoch when the session was pinned. */
  historyEpoch: number;
  /** When the session last ran a turn. */
  lastUsedAt: Date;
  /** How full the context was after its last turn, and the model's window, when known. */
  contextTokens: number | null;
  contextWindow: number | null;
}

export interface ResumePolicy {
  enabled: boolean;
  /** A session idle longer than this is not resumed. */
  ttlMs: number;
  /** Share (0–1) of the model's context window above which a session is not resumed. */
  contextBudget: number;
}

export interface ResumeInput {
  prior: PriorSession | null;
  /** `/fresh` on any comment of the task, or a rerun. */
  forceFresh: boolean;
  policy: ResumePolicy;
  runtimeId: string;
  /** The CLI this turn runs on (the agent's `cli`). */
  cli: "claude" | "codex";
  /** The key's working directory for this turn, and whether it exists now (before any clone). */
  workDir: string;
  workDirExists: boolean;
  /** The key's current history epoch. */
  historyEpoch: number;
  cliCanResume: boolean;
  /**
   * Whether this runner can restore the session's transcript (its session store holds it).
   * Absent counts as held (a CLI that keeps its own store).
   */
  sessionHeld?: boolean;
  now: Date;
}

export type ResumeDecision =
  | { kind: "resume"; sessionId: string; reason: "resumed" }
  | { kind: "fresh"; reason: FreshReason; priorSessionId: string | null };

/** Used when a session's window was never reported (older CLI output). */
export const DEFAULT_CONTEXT_WINDOW = 200_000;

export function decideResume(input: ResumeInput): ResumeDecision {
  const { prior } = input;
  const fresh = (reason: FreshReason): ResumeDecision => ({
    kind: "fresh",
    reason,
    priorSessionId: prior?.sessionId ?? null,
  });
  if (!prior) return fresh("no_prior_session");
  if (input.forceFresh) return fresh("forced_fresh");
  if (!input.policy.enabled) return fresh("resume_disabled");
  if (prior.runtimeId !== input.runtimeId || prior.cli !== input.cli || input.sessionHeld === false)
    return fresh("runtime_mismatch");
  if (prior.workDir !== input.workDir || !input.workDirExists) return fresh("workdir_changed");
  if (prior.state !== "active") return fresh("poisoned");
  if (prior.historyEpoch !== input.historyEpoch) return fresh("history_edited");
  if (input.now.getTime() - prior.lastUsedAt.getTime() > input.policy.ttlMs)
    return fresh("expired");
  const window = prior.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
  if (prior.contextTokens !== null && prior.contextTokens >= window * input.policy.contextBudget) {
    return fresh("context_budget");
  }
  if (!input.cliCanResume) return fresh("cli_cannot_resume");
  return { kind: "resume", sessionId: prior.sessionId, reason: "resumed" };
}

/** Plain words for each reason, for the tracking comment, the footer and /status. */
export function describeReason(reason: ReasonCode): string {
  switch (reason) {
    case "resumed":
      return "resumed the session this issue already has";
    case "no_prior_session":
      return "first turn for this agent on this issue";
    case "forced_fresh":
      return "a fresh session was asked for (/fresh)";
    case "resume_disabled":
      return "resume is turned off in .github/tether.yml";
    case "runtime_mismatch":
      return "the session lives on another runner, or was made by another CLI";
    case "workdir_changed":
      return "the session's working directory is gone or moved";
    case "poisoned":
      return "the last session broke (context overflow or rejected history) and is retired";
    case "history_edited":
      return "a comment in the session's history (or the issue body) was edited or deleted";
    case "expired":
      return "the session was idle longer than the configured time to live";
    case "context_budget":
      return "the session's context is nearly full";
    case "cli_cannot_resume":
      return "this agent CLI cannot resume sessions";
    case "resume_rejected":
      return "the CLI could not resume the session, so it started fresh";
  }
}
