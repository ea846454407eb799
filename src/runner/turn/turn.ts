/**
 * The words of one turn that every step of it shares: what a runner gives `runTask`, what it
 * is told of a finished turn, and the abort reason that leaves a task to the next start.
 */
import type { Logger } from "../../log.js";
import type { Publisher } from "../../publish/publisher.js";
import type { PublishReport } from "../../publish/report.js";
import type { ReasonCode } from "../../core/resume-decision.js";
import type { Outcome, Usage } from "../../core/task.js";
import type { Task } from "../../core/task.js";
import type { TurnStore } from "../../core/turn-journal.js";
import type { AnswerRetryPolicy } from "./answer-retry.js";
import type { Agent, CliKind, GitHubThread, WorkspacePort } from "../ports.js";

/** The abort reason a runner uses when the process stops (as opposed to a user's /cancel). */
export const SHUTDOWN = "shutdown";

export interface RunTaskDeps {
  /**
   * Where the turn writes down what it did (its journal, under this runner's lease) and reads
   * what the turns before it left (src/core/turn-journal.ts TurnStore).
   */
  store: TurnStore;
  log: Logger;
  runnerId: string;
  runtimeId: string;
  agent: Agent;
  workspace: WorkspacePort;
  github: (task: Task) => Promise<GitHubThread>;
  now?: () => Date;
  /** Minimum time between progress edits of the tracking comment. */
  progressIntervalMs?: number;
  /** Secrets to scrub from anything posted (the API key, for one). */
  secrets?: () => Iterable<string | undefined>;
  /** Told about every finished turn (metrics). */
  onFinished?: (t: FinishedTurn) => void;
  /** Told about every task a spend limit kept from running. */
  onRefused?: (t: { task: Task; limits: string[] }) => void;
  /** How an answer GitHub refused is retried (its baseMs: the wait before the first retry). */
  answerRetry?: Partial<AnswerRetryPolicy>;
  /** Publishes the agent's changes after a turn (src/publish/). Absent: they stay in the workspace. */
  publish?: Publisher;
  /** TETHER_PUBLIC_URL: the answer's footer links to the conversation's dashboard page there. */
  publicUrl?: string;
  /**
   * Images from the thread (issue #39): GitHub's web origin (`https://github.com`, or
   * `GHE_PROTOCOL://GHE_HOST`), the only host attachments are fetched from, and the directory
   * under which each turn's images are kept until it ends. Absent: no image is fetched.
   */
  images?: { githubOrigin: string; root: string; fetch?: typeof fetch; timeoutMs?: number };
  /** The live view (TETHER_LIVE not off): the turn's events recorded, linked from its comment. */
  live?: LiveOptions;
}

export interface LiveOptions {
  /** `on`: a link signed for the turn; `token`: a plain link, behind the dashboard's token. */
  mode: "on" | "token";
  /** TETHER_LIVE_LINK_DAYS: how long a signed link stays valid after its turn started. */
  linkDays: number;
  /** TETHER_PROGRESS_EDIT_SECONDS, in ms: least time between milestone edits of the comment. */
  editIntervalMs: number;
  /** The key links are signed with (src/sql/turn-events.ts liveLinkKey, kept in Postgres). */
  key: () => Promise<Buffer>;
}

export interface FinishedTurn {
  task: Task;
  outcome: Outcome;
  reason: ReasonCode;
  cli: CliKind;
  resumed: boolean;
  isFollowUp: boolean;
  usage: Usage | null;
  durationMs: number;
  queueWaitMs: number;
  /** What became of the turn's changes; null when publishing did not run. */
  publish: PublishReport | null;
  /** Tool calls to each MCP server the agent was given; null: none was given. */
  mcpToolCalls?: Record<string, number> | null;
}
