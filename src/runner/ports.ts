/**
 * The edges the runner talks through. Each is an interface so the runner's logic can be tested
 * with the real thing (Postgres, the Claude CLI, a local GitHub stand-in) or a narrow fake.
 */
import type { TurnImage } from "../core/images.js";
import type { IssueComment, IssueInfo, ReviewDiscussion, RepoWriter } from "../core/github.js";
import type { AgentSettings, CliKind, ConfigResult } from "../core/settings.js";
import type { Mask } from "../sandbox/sandbox.js";
import type { ProjectInstructions } from "../workspace/project-instructions.js";
import type { TranscriptState } from "../core/resume-decision.js";
import type { Outcome, TaskKey, Usage } from "../core/task.js";
import type { PullFile, ReviewComment, ReviewRequest } from "../review/review-plan.js";
import type { RunEvent } from "../agent-cli/runtime-adapter.js";

export type {
  IssueComment,
  IssueInfo,
  PullRef,
  RepoWriter,
  ReviewCommentPlace,
  ReviewDiscussion,
  ReviewLineComment,
  ReviewSummary,
} from "../core/github.js";
export type {
  AgentSettings,
  CliKind,
  ConfigResult,
  RepoSettings,
  ResumeSettings,
  SpendSettings,
} from "../core/settings.js";

/** GitHub, for one installation and repository (REST only). */
export interface GitHubThread {
  getIssue(issueNumber: number): Promise<IssueInfo>;
  listComments(issueNumber: number): Promise<IssueComment[]>;
  /**
   * Review comments on the diff and non-empty review bodies of a pull request, oldest first.
   * Optional: a thread without it gives a fresh turn the conversation only.
   */
  listReviewDiscussion?(pullNumber: number): Promise<ReviewDiscussion>;
  createComment(issueNumber: number, body: string): Promise<number>;
  /** A pull request's changed files with their `patch` (GET /pulls/{n}/files, every page). */
  listPullFiles?(pullNumber: number): Promise<PullFile[]>;
  /**
   * Posts one review (POST /pulls/{n}/reviews). Throws GitHub's error as Octokit does (a
   * `status` of 422 when a comment's line is not in the diff).
   */
  createReview?(
    pullNumber: number,
    review: {
      commitId: string;
      event: "COMMENT" | "REQUEST_CHANGES";
      body: string;
      comments: ReviewComment[];
    },
  ): Promise<{ id: number; url: string }>;
  updateComment(commentId: number, body: string): Promise<void>;
  /**
   * A branch's commit on GitHub now; null when there is no branch of that name. One REST
   * request. Optional: without it, every turn's workspace fetches the mirror.
   */
  branchHead?(branch: string, signal?: AbortSignal): Promise<string | null>;
  /** The installation token, for git over HTTPS. Never logged, never given to the agent. */
  token(): Promise<string>;
  /** https://github.com/owner/repo.git or the GHE equivalent. */
  cloneUrl: string;
  loadConfig(): Promise<ConfigResult>;
  /** Publishing the agent's changes (src/publish/). Absent: the thread cannot publish. */
  writer?: RepoWriter;
  /**
   * GitHub requests this thread's client has made so far (a 304 not counted: GitHub does not
   * charge it). Absent: not counted.
   */
  requests?(): number;
  /**
   * When GitHub allows this thread's client requests again (epoch ms), if a rate limit asked
   * for a longer wait than the request policy takes; null: none did. Absent: not tracked.
   */
  limitedUntil?(): number | null;
  /** Of its conditional requests, those GitHub answered 304 Not Modified so far. */
  notModified?(): number;
}

export type ProgressEvent = { kind: "text"; text: string } | { kind: "tool"; name: string };

export interface AgentRunRequest {
  /** The task key: whose session store the run uses. */
  key: TaskKey;
  /** The key's workspace (host path); the sandbox's /workspace. */
  cwd: string;
  /** The repository's mirror: the workspace's read-only `origin` inside the sandbox. */
  origin?: string;
  /** Workspace paths shown as the base branch has them (a pull request's agent-control files). */
  masks?: Mask[];
  prompt: string;
  /** Images from the thread shown to the model with the prompt (files outside the checkout). */
  images?: TurnImage[];
  resumeSessionId: string | null;
  /** Branch a new session off `resumeSessionId` (`/from`) and leave that one as it was. */
  forkSession?: boolean;
  /** Resume `resumeSessionId` as it stood at this message (a rewind), not at its end. */
  resumeAt?: string;
  /**
   * Whose stored transcript the resumed session is: a fork's source conversation (another
   * agent's key on the issue). Absent: `key`'s own.
   */
  transcriptKey?: TaskKey;
  settings: AgentSettings;
  systemPrompt: string;
  signal: AbortSignal;
  /**
   * The run's HOME, made ahead by Agent.stage. Used when it was staged for this run's key, cwd
   * and session and is still unused; otherwise the run makes its own.
   */
  staged?: StagedRun | null;
  /** Called the moment the CLI reports its session id (before the run ends). */
  onSession(sessionId: string, model: string | null): Promise<void> | void;
  onProgress(event: ProgressEvent): void;
  /** Every event of the run as the CLI's dialect gives it (the live view records them). */
  onRunEvent?: (event: RunEvent) => void;
  /**
   * A pull request turn: offer the agent the line-comment tool; what it asked for comes back as
   * the result's `review`. `requestChanges`: it may also ask for the review to request changes.
   */
  lineComments?: { requestChanges: boolean };
}

/**
 * A run's HOME being made before the run (Agent.stage): the per-turn HOME and, for a resume,
 * the session's transcript restored into it, while the turn still waits for its workspace.
 * One run takes it; whatever is not taken is removed by `release`.
 */
export interface StagedRun {
  readonly key: TaskKey;
  readonly cwd: string;
  readonly resumeSessionId: string | null;
  /** Removes the HOME unless a run took it. Safe to call more than once. */
  release(): Promise<void>;
}

export interface AgentRunResult {
  outcome: Outcome;
  sessionId: string | null;
  text: string | null;
  usage: Usage | null;
  contextWindow: number | null;
  toolRan: boolean;
  detail: string | null;
  /** `poisoned` because the history no longer fits the model's context window (the CLI said so). */
  contextOverflow?: boolean;
  /** How the resumed session's transcript was put in place (absent: nothing was restored). */
  restored?: { from: "cache" | "store"; ms: number };
  /**
   * The CLI compacted the session during the run (its stream said `compact_boundary`): by a
   * `/compact` prompt (`manual`) or by itself (`auto`). Absent: it did not.
   */
  compacted?: { trigger: string | null; preTokens: number | null; postTokens: number | null };
  /** What the agent asked the line-comment tool for (a run offered it; absent otherwise). */
  review?: ReviewRequest;
  /**
   * A resumed run: the session's message its prompt hung from (where a rewind to before this
   * turn resumes). Absent: a fresh run, or a CLI that cannot say.
   */
  entry?: string;
  /**
   * The operator's MCP servers the agent was given: those that did not start (the turn went on
   * without them), and the tool calls made to each. Absent: none was given.
   */
  mcp?: McpTurnFacts;
}

/** What became of a turn's MCP servers (issue #39). */
export interface McpTurnFacts {
  /** Servers that did not start, each with why in a few words. */
  failed: Array<{ name: string; why: string }>;
  /** Tool calls per server, by name (every given server, 0 when none). */
  toolCalls: Record<string, number>;
}

/** A turn that failed with nothing from the CLI (no session, text, usage or tool run). */
export function failedRun(detail: string): AgentRunResult {
  return {
    outcome: "failed",
    sessionId: null,
    text: null,
    usage: null,
    contextWindow: null,
    toolRan: false,
    detail,
  };
}

/**
 * The agent seam: what a turn runs, one request in and one result out, whichever CLI is behind
 * it. cli-agent.ts makes one over a CliAdapter (Claude Code's or Codex's); agent-clis.ts puts
 * several behind one by the agent's `cli`.
 */
export interface Agent {
  /** Whether the CLI (the agent's, default claude) can resume sessions. */
  canResume(cli?: CliKind): Promise<boolean>;
  /**
   * The CLI's version (`claude --version`, `codex --version`), null when it did not say: what
   * the resume decision compares a stored session's writer with.
   */
  cliVersion(cli?: CliKind): Promise<string | null>;
  /**
   * Whether the CLI compacts a session on request without a terminal (a resumed run whose prompt
   * is `/compact`).
   */
  canCompact(cli?: CliKind): boolean;
  /** Whether the CLI resumes a session at an earlier message (a rewind). */
  canRewind(cli?: CliKind): boolean;
  /**
   * Where this runner can restore the session's transcript from: `local` for a CLI that keeps
   * its own store on this runtime (every session of this runtime counts as held).
   */
  transcriptState(key: TaskKey, sessionId: string, cli?: CliKind): Promise<TranscriptState>;
  /**
   * Starts making the HOME a run of `req` will need (the transcript restore above all) and
   * returns at once; pass the result as the run's `staged`. Null: nothing to stage.
   */
  stage(
    req: Pick<AgentRunRequest, "key" | "cwd" | "resumeSessionId" | "transcriptKey">,
    cli?: CliKind,
  ): StagedRun | null;
  run(req: AgentRunRequest): Promise<AgentRunResult>;
}

export interface PreparedWorkspace {
  dir: string;
  /** The repository's mirror: bound read-only into the agent's sandbox as `origin`. */
  origin?: string;
  defaultBranch?: string;
  /** The ref the checkout follows (in the checkout) and its commit after the update. */
  upstream?: { ref: string; sha: string };
  /** HEAD after the update ("" when unknown). */
  headSha?: string;
}

export interface WorkspacePort {
  /** The stable directory of a task key; sessions are tied to it. */
  pathFor(key: TaskKey): string;
  exists(dir: string): Promise<boolean>;
  /** Clone on the first turn, fetch on later ones, never destroying the agent's own work. */
  prepare(
    req: TaskKey & {
      cloneUrl: string;
      token: string;
      pullRequest?: { number: number; headRef: string; headSha?: string; baseRef?: string };
      /** An issue's conversation branch: followed once it exists on the server. */
      follow?: string;
      /** A branch's commit on GitHub (GitHubThread.branchHead): lets an unchanged mirror skip its fetch. */
      serverHead?: (branch: string, signal?: AbortSignal) => Promise<string | null>;
      signal?: AbortSignal;
    },
  ): Promise<PreparedWorkspace>;
  /**
   * A pull request turn: masks for the agent-control files (`.claude/`, `CLAUDE.md`, git hooks…)
   * its head changed from its base, shown as the base has them. Called after prepare(); call
   * dispose() after the run. Absent: no masks.
   */
  /**
   * A file of the repository at `commit`, read from its mirror (never the checkout): its bytes,
   * "too_big" past `maxBytes`, null when the tree has no regular file there (a link, a
   * directory, nothing). Absent: repository files are not read.
   */
  readFile?(req: {
    repoId: number;
    repo: string;
    commit: string;
    path: string;
    maxBytes: number;
    signal?: AbortSignal;
  }): Promise<Buffer | "too_big" | null>;
  agentControl?(req: {
    repoId: number;
    repo: string;
    dir: string;
    pullRequest: number;
    baseRef: string;
    signal?: AbortSignal;
  }): Promise<{ masks: Mask[]; dispose(): Promise<void> }>;
  /**
   * The repository's CLAUDE.md on `branch` (the default branch), for agents with
   * `projectInstructions`; null when it has none. Absent: never read.
   */
  projectInstructions?(req: {
    repoId: number;
    repo: string;
    branch: string;
    signal?: AbortSignal;
  }): Promise<ProjectInstructions | null>;
  /**
   * A plan turn (`/plan`): hold the key's checkout as it is, to be restored after the run so
   * nothing the run wrote is published later. Throws when git cannot. Absent: nothing is held.
   */
  holdForPlan?(
    req: TaskKey & { signal?: AbortSignal },
  ): Promise<{ restore(signal?: AbortSignal): Promise<void> }>;
  /** Housekeeping (git gc --auto) after a turn; never throws. */
  maintain?(req: TaskKey & { signal?: AbortSignal }): Promise<void>;
}
