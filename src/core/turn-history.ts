/**
 * What a turn reads of the turns before it (src/runner/turn/), and what `/status` reads to say
 * what the next one would do (src/runner/render/describe-next-turn.ts): the key's prior session
 * and history epoch, what a rewind is decided from, the task's own comments, the conversation's
 * spend, its last turn, its published branch. Said as what the reader wants to know, not how it
 * is stored: src/sql/turn-store.ts reads it from Postgres, and a test can keep it in memory.
 */
import type { PriorSession, RewindFacts } from "./resume-decision.js";
import type { TaskComment, TaskKey, TaskStatus } from "./task.js";

/** A comment a rewound turn sends again, as it reads now. */
export interface ResentComment {
  source: string;
  author: string;
  url: string;
  body: string;
  createdAt: Date;
}

export interface ConversationSpend {
  /** Every recorded cost of the conversation's turns, and how many turns ran. */
  totalUsd: number;
  turns: number;
  /** What counts against the conversation limit: all of it, or since the latest `/fresh` turn. */
  countedUsd: number;
  countedTurns: number;
  /** The `/fresh` turn the count starts at, when `/fresh` resets it and one has run. */
  resetAtTask: number | null;
}

export interface TurnHistory {
  /** Every comment that fed the task, oldest first (several when comments coalesced while it waited). */
  taskComments(taskId: number): Promise<TaskComment[]>;
  /** The key's session a next turn would resume, with its latest state; null: it has none. */
  priorSession(key: TaskKey): Promise<PriorSession | null>;
  /** A session by its id, with the key it belongs to (`/from`: another agent's session). */
  sessionById(sessionId: string): Promise<(PriorSession & { key: TaskKey }) | null>;
  /** The key's history epoch now (0: nothing its sessions read has changed). */
  epoch(key: TaskKey): Promise<number>;
  /** What a rewind of `sessionId` is decided from: its finished turns, the edits in (from, to]. */
  rewindFacts(
    key: TaskKey,
    sessionId: string,
    fromEpoch: number,
    toEpoch: number,
  ): Promise<RewindFacts>;
  /** A model's context window as a CLI last reported it; null: never reported. */
  knownWindow(model: string): Promise<number | null>;
  /** The key's comments `sources` as they read now, in that order; a deleted one left out. */
  resentComments(key: TaskKey, sources: readonly string[]): Promise<ResentComment[]>;
  /** Who last edited each of `sources` without being let (source → editor); others absent. */
  ignoredEditors(repoId: number, sources: readonly string[]): Promise<Map<string, string>>;
  /**
   * The key's last turn that ran (before task `beforeTaskId`, when given): whether it was a plan
   * turn, and how it ended. Null: none has run.
   */
  lastTurn(
    key: TaskKey,
    beforeTaskId?: number,
  ): Promise<{ planTurn: boolean; status: TaskStatus } | null>;
  /**
   * What the conversation has spent, leaving out `exceptTaskId` (the turn about to run); with
   * `freshResets`, the counted part starts at its latest `/fresh` turn.
   */
  conversationSpend(
    key: TaskKey,
    opts: { exceptTaskId?: number | null; freshResets: boolean },
  ): Promise<ConversationSpend>;
  /** What a repository, or a whole installation, spent on turns asked for since `from`. */
  spentSince(scope: { repoId: number } | { installationId: number }, from: Date): Promise<number>;
  /** The stored transcript of the key's session: the CLI version that wrote it, and whether it is past the bound. */
  transcriptHead(
    key: TaskKey,
    sessionId: string,
  ): Promise<{ cliVersion: string | null; overBound: boolean } | null>;
  /** Where the key's published changes went; null: none were published. */
  conversation(key: TaskKey): Promise<{
    branch: string;
    commits: number;
    headSha: string | null;
    pullNumber: number | null;
  } | null>;
}
