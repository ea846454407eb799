/**
 * The resume decision: resume the key's prior session, or start fresh, and why.
 * A pure function of its input, so every guard in design.md has a row in a table test.
 */
import type { TaskKey } from "./task.js";
import type { CliKind } from "./settings.js";

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
 * which stays as it was) or `rewound` (a comment the session read was edited or deleted: the
 * session is resumed as it stood just before that comment entered it; see planRewind).
 */
export const RESUME_REASONS = ["resumed", "compacted", "forked", "rewound"] as const;
export type ResumeReason = (typeof RESUME_REASONS)[number];
/** Every reason code a turn's decision can carry: what the dashboard and metrics count. */
export const REASON_CODES = [...RESUME_REASONS, ...FRESH_REASONS] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

/** The session of the key's latest terminal task that has one, joined with the session's latest state. */
export interface PriorSession {
  sessionId: string;
  /** The CLI that made it; only that CLI can resume it. */
  cli: CliKind;
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

/**
 * One turn that ran in the prior session, oldest first: what a rewind needs to know of it
 * (sql/history.ts rewindFacts).
 */
export interface SessionTurn {
  taskId: number;
  /**
   * The session's message this turn's prompt hung from: resuming there
   * (`--resume-session-at`) gives the session as it stood just before this turn. Null: nothing
   * to go back to (a fresh turn, a fork's first turn, a turn from before rewinds were recorded).
   */
  entry: string | null;
  /** The comments it was asked in (`task_comments.source`), in order; none: another trigger. */
  sources: string[];
  /** The session was compacted before this turn. */
  compacted: boolean;
  /** A rewound turn: the first turn it rewound past (those from it on left the session's branch). */
  rewoundFrom: number | null;
}

/** One bump of the key's history epoch: what changed. */
export interface HistoryEdit {
  epoch: number;
  /** The comment's `task_comments.source`; null: the issue body, which every turn read. */
  source: string | null;
  deleted: boolean;
}

/** What a rewind is decided from: the prior session's turns and the edits since it was pinned. */
export interface RewindFacts {
  turns: SessionTurn[];
  edits: HistoryEdit[];
}

/** Where a rewound turn resumes its session, and what it sends again. */
export interface RewindPlan {
  /** The message uuid to resume at (`--resume-session-at`). */
  at: string;
  /** The first turn rewound past: it and the turns after it left the session's branch. */
  fromTaskId: number;
  /**
   * The comments those turns were asked in, oldest first, sent again as they read now (a
   * deleted one is left out).
   */
  resend: string[];
  /** The comments whose change caused the rewind. */
  changed: Array<{ source: string; deleted: boolean }>;
}

export interface ResumeInput {
  prior: PriorSession | null;
  /** `/fresh` on any comment of the task, or a rerun. */
  forceFresh: boolean;
  policy: ResumePolicy;
  runtimeId: string;
  /** The CLI this turn runs on (the agent's `cli`). */
  cli: CliKind;
  /** The key's working directory for this turn, and whether it exists now (before any clone). */
  workDir: string;
  workDirExists: boolean;
  /** The key's current history epoch. */
  historyEpoch: number;
  cliCanResume: boolean;
  /** The CLI can resume a session at an earlier message (Claude's `--resume-session-at`); absent: false. */
  cliCanRewind?: boolean;
  /**
   * `/model`: the context window of the model this turn asks for, when known. Smaller than the
   * session's, it is the window the budget is judged against: the session is compacted first, or
   * not resumed, and the decision says so (`smallerWindow`).
   */
  requestedWindow?: number | null;
  /** The prior session's turns and the edits since its epoch, when the epoch moved; absent: no rewind. */
  rewind?: RewindFacts;
  /** This runner's version of that CLI (`--version`); null when it did not say. */
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
      /** Reason `rewound`: resume at an earlier message, and send those comments again. */
      rewind?: RewindPlan;
      /** Compacted because the `/model` asked for has a smaller window than the session holds. */
      smallerWindow?: true;
    }
  | {
      kind: "fresh";
      reason: FreshReason;
      priorSessionId: string | null;
      /** `context_budget` because the `/model` asked for has a smaller window than the session holds. */
      smallerWindow?: true;
    };

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
  // The edit epoch is the guard: a session whose history holds a changed comment is resumed only
  // from before that comment entered it (a rewind), or not at all.
  let rewind: RewindPlan | null = null;
  if (prior.historyEpoch !== input.historyEpoch) {
    rewind =
      input.cliCanRewind === true && input.rewind
        ? planRewind(prior.historyEpoch, input.historyEpoch, input.rewind)
        : null;
    if (!rewind) return fresh("history_edited");
  }
  if (isExpired(prior, input)) return fresh("expired");
  const own = prior.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
  // `/model` on a model with a smaller window: what the session holds must fit that one.
  const asked = input.requestedWindow ?? null;
  const window = asked !== null && asked < own ? asked : own;
  const overBudget =
    prior.contextTokens !== null && prior.contextTokens >= window * input.policy.contextBudget;
  const smallerWindow =
    overBudget && prior.contextTokens! < own * input.policy.contextBudget
      ? ({ smallerWindow: true } as const)
      : {};
  // A rewind is not compacted (a summary would hold the old text): a session too full to resume
  // as it is starts fresh, as it did before rewinds.
  if (rewind && overBudget) return fresh("history_edited");
  if (rewind && !input.cliCanResume) return fresh("cli_cannot_resume");
  if (rewind) return { kind: "resume", sessionId: prior.sessionId, reason: "rewound", rewind };
  // Compacting is itself a resume of the session, so it needs a CLI that can resume.
  if (overBudget && !(input.policy.compact === true && input.cliCanResume))
    return { ...fresh("context_budget"), ...smallerWindow };
  if (!input.cliCanResume) return fresh("cli_cannot_resume");
  return {
    kind: "resume",
    sessionId: prior.sessionId,
    reason: overBudget ? "compacted" : "resumed",
    ...smallerWindow,
  };
}

/**
 * Where to rewind the session to so that it holds no changed comment: just before the earliest
 * turn (on the session's current branch) that read one. Null, and the turn runs fresh, when that
 * cannot be known or done: an epoch bump with no record (from before rewinds, or the issue
 * body, which the first turn read), a changed comment the session read in the thread (its cold
 * first turn) rather than as a turn's request, a turn with nothing to resume at (a fresh or
 * unrecorded one), a compaction after it (the history before a summary is what was too big),
 * or a turn after it that no comment started (it cannot be sent again).
 */
export function planRewind(
  fromEpoch: number,
  toEpoch: number,
  facts: RewindFacts,
): RewindPlan | null {
  const edits = facts.edits.filter((e) => e.epoch > fromEpoch && e.epoch <= toEpoch);
  if (new Set(edits.map((e) => e.epoch)).size !== toEpoch - fromEpoch) return null;
  // The session's branch: a rewound turn replaced the turns it rewound past, and was asked
  // their comments again.
  const branch: Array<{ turn: SessionTurn; sources: string[] }> = [];
  for (const turn of facts.turns) {
    let sources = turn.sources;
    if (turn.rewoundFrom !== null) {
      const at = branch.findIndex((b) => b.turn.taskId === turn.rewoundFrom);
      if (at < 0) return null;
      sources = [...branch.splice(at).flatMap((b) => b.sources), ...turn.sources];
    }
    branch.push({ turn, sources });
  }
  let from = branch.length;
  for (const e of edits) {
    if (e.source === null) return null;
    const at = branch.findIndex((b) => b.sources.includes(e.source!));
    if (at < 0) return null;
    from = Math.min(from, at);
  }
  const target = branch[from];
  if (!target?.turn.entry) return null;
  const after = branch.slice(from);
  if (after.some((b, i) => (i > 0 && b.turn.compacted) || b.turn.sources.length === 0)) return null;
  const deleted = new Set(edits.filter((e) => e.deleted).map((e) => e.source!));
  const changed = new Map<string, boolean>();
  for (const e of edits) changed.set(e.source!, e.deleted);
  return {
    at: target.turn.entry,
    fromTaskId: target.turn.taskId,
    resend: [...new Set(after.flatMap((b) => b.sources))].filter((s) => !deleted.has(s)),
    changed: [...changed].map(([source, d]) => ({ source, deleted: d })),
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
    case "rewound":
      return "a comment the session had read was edited or deleted, so the session was resumed as it stood just before that comment, and the comments since were sent again";
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
