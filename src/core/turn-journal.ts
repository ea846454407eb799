/**
 * The turn's journal: everything a running turn writes down as it goes (the resume decision, the
 * session the CLI named, how that session moved and stands, the tracking comment, what became of
 * the changes, how the turn ended, the run's events for its live view), said as what happened, not
 * how it is stored. The runner's turn (src/runner/turn/) writes through this port, and reads what
 * the turns before it left through its sibling (turn-history.ts), both from one TurnStore;
 * src/sql/turn-store.ts keeps them in Postgres, the journal under the claiming runner's lease,
 * and a test can keep them in memory.
 *
 * One journal is one task's, for one runner: a write after the lease was lost (the task finished
 * or taken over elsewhere) changes nothing, and those that say so return false.
 */
import type { CacheTtl, CliKind } from "./settings.js";
import type { Outcome, TaskKey, TaskStatus, Usage } from "./task.js";
import type { TurnHistory } from "./turn-history.js";

/** The resume decision as the task keeps it (`/status`, the dashboard and the next turn read it). */
export interface DecisionRecord {
  decision: "resume" | "fresh";
  reason: string;
  resumeSessionId: string | null;
  isFollowUp: boolean;
  historyEpoch: number;
  workDir: string;
  retriedFresh?: boolean;
  /** The CLI the turn runs on (the caller's: the query layer knows no CLI). */
  cli: CliKind;
  /** Reason `rewound`: the first turn of the session it rewinds past. */
  rewoundFrom?: number | null;
}

/** The session the CLI named, the moment it named it. */
export interface PinnedSession {
  sessionId: string;
  runtimeId: string;
  cli: CliKind;
  workDir: string;
  model: string | null;
  historyEpoch: number;
}

/**
 * How the turn's session got to this runner (restored from its cache or from the shared store,
 * and in how long), whether it resumed a session another runtime last ran, and whether it was
 * compacted first: what the dashboard counts as portability.
 */
export interface SessionMove {
  restore: { from: "cache" | "store"; ms: number } | null;
  resumedAcross: boolean;
  compacted?: boolean;
}

/** What became of the turn's changes (src/publish/report.ts), as the task row keeps it. */
export interface PublishRecord {
  result: "published" | "unchanged" | "refused" | "failed" | "patch" | "off";
  reason: string | null;
  detail: string | null;
  sha: string | null;
  commits: number | null;
  pullOpened: number | null;
}

/**
 * Where the task's final answer stands as it finishes: in the thread, or pending in the answer
 * outbox (GitHub refused it past the retries) for the answer poster to post after `retryInMs`.
 */
export type FinalAnswer =
  | { kind: "posted"; commentId: number }
  | {
      kind: "pending";
      /** The rendered, scrubbed body; null: render the failure from outcome and failureReason. */
      body: string | null;
      retryInMs: number;
    };

export interface Finish {
  status: Extract<TaskStatus, "succeeded" | "failed" | "cancelled">;
  outcome: Outcome;
  failureReason: string | null;
  sessionId: string | null;
  usage: Usage | null;
  answer: FinalAnswer;
  /** Bytes of the prompt written to the CLI, and of the answer it gave (what the turn added to the thread). */
  promptBytes?: number | null;
  answerBytes?: number | null;
  /** The prompt cache's lifetime the turn asked for; null when it set none (Codex). */
  cacheTtl?: CacheTtl | null;
  /** GitHub requests the turn's client made (src/github/request-count.ts); null: not counted. */
  githubRequests?: number | null;
  /** Of its conditional requests, those GitHub answered 304 (not counted against the limit). */
  githubRequestsNotModified?: number | null;
  /** The review the turn posted with the agent's line comments; null: none was asked for. */
  review?: { result: "posted" | "failed"; lineComments: number } | null;
  /** Tool calls to each MCP server the agent was given (#39); null: it was given none. */
  mcpToolCalls?: Record<string, number> | null;
}

export interface TurnJournal {
  /** The resume decision, before the CLI starts (a fresh retry records its own). */
  decided(d: DecisionRecord): Promise<boolean>;
  /** The turn runs read-only, as a plan (`/plan`). */
  plannedOnly(): Promise<boolean>;
  /**
   * The session the CLI named: pinned on the task (a fresh retry's over the first; nothing else
   * erases it) and recorded as the key's session.
   */
  sessionPinned(s: PinnedSession): Promise<void>;
  /** How the session got here (restored, resumed across runtimes, compacted). */
  sessionMoved(m: SessionMove): Promise<void>;
  /** The session's message this turn's prompt hung from: where a later rewind resumes. */
  sessionEntered(entry: string): Promise<boolean>;
  /** After a run: how full the session's context is now (null: unknown, kept), and that it was used. */
  sessionUsed(
    sessionId: string,
    contextTokens: number | null,
    contextWindow: number | null,
  ): Promise<void>;
  /** Never to be resumed again: poisoned (it broke) or retired (the CLI would not resume it). */
  sessionMarked(sessionId: string, state: "poisoned" | "retired", why: string): Promise<void>;
  /** A rewind took the session back before every changed comment: its history is `epoch`'s. */
  sessionRewound(sessionId: string, epoch: number): Promise<void>;
  /** The task's one comment in the thread. */
  trackingComment(commentId: number): Promise<void>;
  /** The agent used a tool (a resumed session that broke after one is not retried fresh). */
  toolRan(): Promise<void>;
  /** What became of the turn's changes. */
  published(p: PublishRecord): Promise<boolean>;
  /** Back to the queue until `until` (a rate limit it could not wait out), its attempt given back. */
  requeued(until: Date): Promise<boolean>;
  /** The end: the status the run earned, its usage, where its answer stands. */
  finished(f: Finish): Promise<boolean>;
  /** One event of the run, as the live view keeps it (scrubbed and clipped by the caller). */
  eventStreamed(kind: string, body: unknown): Promise<void>;
  /**
   * The live view's oldest events dropped until `bound` holds (its init stays): how many went,
   * and how many of those were tool calls.
   */
  eventsTrimmed(bound: {
    maxEvents: number;
    maxBytes: number;
  }): Promise<{ events: number; toolCalls: number }>;
  /** How many events, and tool calls, the live view has dropped in all (replaces the last note). */
  eventsDropped(dropped: { events: number; toolCalls: number }): Promise<void>;
}

/**
 * Where a runner's turns keep what they do and read what came before: each task's journal under
 * the runner's lease, and the history every turn (and `/status`) reads.
 */
export interface TurnStore extends TurnHistory {
  /** Task `task`'s journal, its writes scoped to `runnerId`'s lease. */
  journal(task: TaskKey & { id: number }, runnerId: string): TurnJournal;
}
