/**
 * The resume decision: resume the key's prior session, or start fresh, and why.
 * A pure function of its input, so every guard in design.md has a row in a table test.
 */
import type { TaskKey } from "./task.js";

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
  "session_too_large",
  "context_overflow",
  "compaction_failed",
] as const;
export type FreshReason = (typeof FRESH_REASONS)[number];
/**
 * Why a turn resumes: `resumed` (the session as it is) or `compacted` (the session was over the
 * context budget, so it is compacted first, the CLI's `/compact`, and the summary resumed) or
 * `forked` (`/from <agent>`: a new session branched off another agent's session on the issue,
 * which stays as it was).
 */
export const RESUME_REASONS = ["resumed", "compacted", "forked"] as const;
export type ResumeReason = (typeof RESUME_REASONS)[number];
/** Every reason code a turn's decision can carry: what the dashboard and metrics count. */
export const REASON_CODES = [...RESUME_REASONS, ...FRESH_REASONS] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

/** The session of the key's latest terminal task that has one, joined with the session's latest state. */
export interface PriorSession {
  sessionId: string;
  /** The CLI that made it; only that CLI can resume it. */
  cli: "claude" | "codex" | "opencode";
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
  /** Share (0–1) of the model's context window above which a session is not resumed as it is. */
  contextBudget: number;
  /**
   * A session over the context budget is compacted and then resumed (reason `compacted`)
   * instead of dropped (`context_budget`). Only for a CLI that can compact without a terminal;
   * absent: false.
   */
  compact?: boolean;
}

export interface ResumeInput {
  prior: PriorSession | null;
  /** `/fresh` on any comment of the task, or a rerun. */
  forceFresh: boolean;
  policy: ResumePolicy;
  runtimeId: string;
  /** The CLI this turn runs on (the agent's `cli`). */
  cli: "claude" | "codex" | "opencode";
  /** The key's working directory for this turn, and whether it exists now (before any clone). */
  workDir: string;
  workDirExists: boolean;
  /** The key's current history epoch. */
  historyEpoch: number;
  cliCanResume: boolean;
  /** `claude --version` of this runner's CLI; null when it did not say. */
  cliVersion: string | null;
  /**
   * Where this runner can restore the session's transcript from. Absent: a CLI that keeps its
   * own store on this runtime (as `local`).
   */
  transcript?: TranscriptState;
  now: Date;
}

/**
 * Where a session's transcript is, as one runner sees it. `store`: the shared store (Postgres)
 * holds it, so any runner whose CLI reads it can resume, whatever host or paths it has. `local`:
 * only this runner's disk (a session from before the store). `over_bound`: it grew past the
 * size bound and was not kept. `none`: nowhere this runner can reach.
 */
export type TranscriptState =
  | { where: "store"; cliVersion: string | null }
  | { where: "local" }
  | { where: "over_bound" }
  | { where: "none" };

const VERSION = /^(\d+)\.(\d+)\.(\d+)/;

/**
 * Whether a CLI of version `reader` can resume a transcript `writer` saved: same major version
 * and not older (a newer CLI reads what an older one wrote; the reverse is not promised). An
 * unknown version on either side cannot be vouched for. The SQL function tether_cli_reads
 * (migration session-transcripts) says the same for the claim query.
 */
export function canReadTranscript(writer: string | null, reader: string | null): boolean {
  const w = writer?.match(VERSION)?.slice(1).map(Number);
  const r = reader?.match(VERSION)?.slice(1).map(Number);
  if (!w || !r || w[0] !== r[0]) return false;
  for (let i = 1; i < 3; i++) if (w[i]! !== r[i]!) return w[i]! < r[i]!;
  return true;
}

/**
 * `resume` with reason `compacted`: the runner first compacts the session (a resumed run whose
 * prompt is `/compact`), then resumes it; if the compaction fails the turn runs fresh
 * (`compaction_failed`).
 */
export type ResumeDecision =
  | {
      kind: "resume";
      sessionId: string;
      reason: ResumeReason;
      /** Branch a new session off `sessionId` (`--fork-session`) instead of resuming it. */
      fork?: boolean;
      /** A fork's source conversation: where its transcript is stored (another agent's key). */
      forkFrom?: TaskKey;
    }
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
  // A session belongs to the CLI that made it: another CLI never resumes it.
  if (prior.cli !== input.cli) return fresh("runtime_mismatch");
  const transcript = input.transcript ?? { where: "local" };
  // A portable session asks "can this CLI read it?", not "is this the same host?": the CLI
  // works in the sandbox's /workspace on every runner, and the workspace is re-prepared (cloned
  // from the repository's mirror) where it is missing.
  const portable = transcript.where === "store";
  if (portable) {
    if (!canReadTranscript(transcript.cliVersion, input.cliVersion))
      return fresh("runtime_mismatch");
  } else if (transcript.where !== "over_bound") {
    // A transcript that is nowhere was most likely pruned by collection, which keeps an active
    // session's until its time to live is past, and a broken one's for a debugging window only:
    // say which, rather than blame the runtime.
    if (transcript.where === "none") {
      if (prior.state !== "active") return fresh("poisoned");
      if (isExpired(prior, input)) return fresh("expired");
    }
    if (prior.runtimeId !== input.runtimeId || transcript.where === "none")
      return fresh("runtime_mismatch");
    if (prior.workDir !== input.workDir || !input.workDirExists) return fresh("workdir_changed");
  }
  if (prior.state !== "active") return fresh("poisoned");
  if (transcript.where === "over_bound") return fresh("session_too_large");
  if (prior.historyEpoch !== input.historyEpoch) return fresh("history_edited");
  if (isExpired(prior, input)) return fresh("expired");
  const window = prior.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
  const overBudget =
    prior.contextTokens !== null && prior.contextTokens >= window * input.policy.contextBudget;
  // Compacting is itself a resume of the session, so it needs a CLI that can resume.
  if (overBudget && !(input.policy.compact === true && input.cliCanResume))
    return fresh("context_budget");
  if (!input.cliCanResume) return fresh("cli_cannot_resume");
  return {
    kind: "resume",
    sessionId: prior.sessionId,
    reason: overBudget ? "compacted" : "resumed",
  };
}

function isExpired(prior: PriorSession, input: ResumeInput): boolean {
  return input.now.getTime() - prior.lastUsedAt.getTime() > input.policy.ttlMs;
}

/** Plain words for each reason, for the tracking comment, the footer and /status. */
export function describeReason(reason: ReasonCode): string {
  switch (reason) {
    case "resumed":
      return "resumed the session this issue already has";
    case "compacted":
      return "the session's context was nearly full, so it was compacted (summarised) and the summary resumed";
    case "forked":
      return "started as a fork of another agent's session on this issue (/from), which stays as it was";
    case "no_prior_session":
      return "first turn for this agent on this issue";
    case "forced_fresh":
      return "a fresh session was asked for (/fresh)";
    case "resume_disabled":
      return "resume is turned off in .github/tether.yml";
    case "runtime_mismatch":
      return "the session lives on another runner, was made by another CLI, or this runner's CLI cannot read it";
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
    case "session_too_large":
      return "the session's transcript grew past the size bound, so it was not kept";
    case "context_overflow":
      return "the session ran out of context, so the turn was run again in a fresh session";
    case "compaction_failed":
      return "the session's context was nearly full and compacting it failed, so the turn ran in a fresh session";
  }
}
