/**
 * The words for a task every layer uses, from intake and the queries (src/sql/tasks/) to the
 * runner and the workspace: its key, its status, how its turn ended and what the turn used.
 * Plain types, so this floor imports nothing.
 */

/** (repository `owner/name` lower case, issue or PR number, agent). */
export interface TaskKey {
  /** "owner/name"; GitHub treats it case-insensitively, so the workspace path lower-cases it. */
  repo: string;
  issueNumber: number;
  agent: string;
}

/** `owner/name#<n>/<agent>`: how a key is named in messages. */
export function keyName(key: TaskKey): string {
  return `${key.repo}#${key.issueNumber}/${key.agent}`;
}

export type TaskStatus = "queued" | "running" | "succeeded" | "failed" | "cancelled";

/** How a turn ended (the tasks.outcome check constraint; the adapter's outcome kinds). */
export const OUTCOMES = [
  "success",
  "failed",
  "poisoned",
  "resume_rejected",
  "auth_failed",
  "timed_out",
  "stalled",
  "cancelled",
  "turn_limit",
  "limit_refused",
] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** What a turn used, as its task row keeps it (and its footer and the outbox read it back). */
export interface Usage {
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
  contextTokens: number | null;
  costUsd: number;
  numTurns: number;
  durationMs: number;
}
