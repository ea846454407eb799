/**
 * The words for a task every layer uses, from intake and the queries (src/sql/tasks/) to the
 * runner and the workspace: its key, its status, how its turn ended and what the turn used.
 * Plain types, so this floor imports nothing.
 */

/**
 * (repository id, issue or PR number, agent). A conversation belongs to its repository by id:
 * a rename keeps it, and a new repository under an old name (a new id) starts with nothing
 * (docs/security.md "Conversations belong to a repository by its id"). The name rides along for
 * messages, pages and GitHub's API, which take the name the latest webhook gave.
 */
export interface TaskKey {
  /** GitHub's repository id: what every table, workspace and mirror is keyed by. */
  repoId: number;
  /** "owner/name" lower case, as the latest webhook named it: for display and GitHub calls only. */
  repo: string;
  issueNumber: number;
  agent: string;
}

/** `owner/name#<n>/<agent>`: how a key is named in messages. */
export function keyName(key: TaskKey): string {
  return `${key.repo}#${key.issueNumber}/${key.agent}`;
}

/** `/plan` (run the turn read-only, answer with a plan) or `/go` (carry out the plan). */
export type PlanRequest = "plan" | "go";

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

/**
 * What started a turn (the tasks.trigger check constraint): a comment that mentions the agent, a
 * review on its pull request, a label, an assignment, a failed CI run. Whatever the trigger, the
 * turn belongs to the same key and resumes the same session under the same guards.
 */
export const TRIGGERS = ["comment", "review", "label", "assignment", "ci", "schedule"] as const;
export type TriggerKind = (typeof TRIGGERS)[number];

/**
 * Something a trigger brought besides its request (a review's body, one of its line comments;
 * later a check's output): written by others, so the prompt shows it as data in the context
 * block, never as an instruction. Stored with the request (task_comments.context).
 */
export interface TriggerContextItem {
  /** The element it is shown as: `review` and `review-comment` so far; CI adds its own. */
  kind: string;
  author: string;
  url: string;
  body: string;
  createdAt?: string;
  /** One line saying what and where it is, e.g. "[Review comment on `a.ts`, line 3 …]". */
  location: string;
}
