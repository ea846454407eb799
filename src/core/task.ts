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

/**
 * The issue as a webhook carried it (tasks.issue_snapshot): what a turn on it would otherwise ask
 * GitHub for. `updatedAt` orders two snapshots: the newer one is kept.
 */
export interface IssueSnapshot {
  title: string;
  body: string;
  author: string;
  url: string;
  updatedAt: string;
}

export interface TaskComment {
  commentId: number | null;
  author: string;
  url: string;
  body: string;
  createdAt: Date;
  /** What the request brought besides its words (a review's line comments): data, not asks. */
  context: TriggerContextItem[];
}

/** A task as the runner sees it. */
export interface Task {
  id: number;
  /** The repository's name as the latest webhook for the task gave it (GitHub's API takes it). */
  repo: string;
  repoId: number;
  installationId: number;
  issueNumber: number;
  /** Where the task's comments go: the key's own thread, or the key's pull request. */
  threadNumber: number;
  isPullRequest: boolean;
  agent: string;
  status: TaskStatus;
  triggerCommentId: number | null;
  triggerAuthor: string;
  triggerUrl: string;
  triggerBody: string;
  /** What started the task: its first request's kind. */
  trigger: TriggerKind;
  forceFresh: boolean;
  /** `/model <name>`: the model of this turn only; null: the agent's. */
  requestedModel: string | null;
  /** `/from <agent>`: the other agent's session this turn starts as a fork of; null: none. */
  forkSessionId: string | null;
  /** `/plan` or `/go`, as the comments that fed the task asked; null: neither. */
  planRequest: PlanRequest | null;
  cancelRequested: boolean;
  runtimeId: string | null;
  sessionId: string | null;
  trackingCommentId: number | null;
  answerCommentId: number | null;
  attempts: number;
  maxAttempts: number;
  createdAt: Date;
  startedAt: Date | null;
  /** The settings snapshot intake stored (src/config/repo-settings.ts), unread. */
  repoSettings: unknown;
  /** The issue as the queuing webhook carried it (tasks.issue_snapshot); null: ask GitHub. */
  issueSnapshot?: IssueSnapshot | null;
}
