import { z } from "zod";
import type { NamedMcpServer } from "../config/mcp-servers.js";
import { CACHE_TTLS } from "../core/settings.js";
import type { TurnImage } from "../core/images.js";
import type { NetworkPolicy } from "../sandbox/egress.js";
import type { LineCommentTool } from "../review/line-comment-tool.js";
import type { Mask, Sandbox } from "../sandbox/sandbox.js";

/** A message uuid as the CLI writes them; anything else never reaches argv. */
export const ENTRY = /^[0-9A-Za-z][0-9A-Za-z-]{0,63}$/;

/*
 * The seam between Tether and an agent CLI that keeps resumable sessions. Every registered CLI
 * (src/cli-registry.ts) implements CliAdapter with the same settings, events and outcome (most
 * through the run engine, cli-adapter.ts, and a CliDialect), so the runner never learns which
 * one it drives.
 */

/** A name on a command line: never empty, never starting with "-" (it would read as a flag). */
const argWord = (what: string) =>
  z
    .string()
    .min(1, `${what} must not be empty`)
    .max(1000, `${what} must be at most 1000 characters`)
    .refine((s) => !s.startsWith("-"), `${what} must not start with "-"`)
    .refine((s) => !/[\0\r\n]/.test(s), `${what} must be one line`);

/** Permission modes the CLI accepts (`--permission-mode`). */
export const PermissionMode = z.enum([
  "default",
  "acceptEdits",
  "plan",
  "dontAsk",
  "auto",
  "bypassPermissions",
]);
export type PermissionMode = z.infer<typeof PermissionMode>;

/**
 * One run's options, as the CLI takes them: made by the runner (runner/wiring/cli-agent.ts) from the
 * agent's settings (core/settings.ts, the one shape from the config file on), with its minutes
 * turned into milliseconds there and nowhere else.
 */
export const RunSettings = z.object({
  /**
   * Model for `--model`. Pass it on every run of a session: without it the CLI's first resume
   * switches model variant and misses the whole prompt cache (claude-cli-facts.md).
   */
  model: argWord("model").optional(),
  /**
   * The prompt cache's lifetime the run asks for (Claude: through its environment, see
   * claude-cli.ts `cacheTtlEnv`). Omitted: the CLI's default, five minutes.
   */
  cacheTtl: z.enum(CACHE_TTLS).optional(),
  /** Most agentic turns in one run (`--max-turns`). */
  maxTurns: z.number().int().min(1).max(100_000).optional(),
  /** Tools the agent may use without asking, e.g. `Read`, `Bash(git log:*)`. */
  allowedTools: z.array(argWord("a tool name")).optional(),
  /** Tools the agent may never use. */
  disallowedTools: z.array(argWord("a tool name")).optional(),
  /** `--permission-mode`. As root the CLI refuses bypassPermissions (see docs/operations.md, "Claude CLI"). */
  permissionMode: PermissionMode.optional(),
  /**
   * Extra instructions appended to the CLI's system prompt. Kept well under Linux's 128 KiB
   * limit for one argument.
   */
  appendSystemPrompt: z
    .string()
    .max(100_000, "appendSystemPrompt must be at most 100000 characters")
    .optional(),
  /**
   * Most the run may spend, US dollars (`--max-budget-usd`). Seen with 2.1.197: the CLI checks
   * it after each model call and, once the run's cost has reached it, stops with a result of
   * subtype `error_max_budget_usd` (outcome `turn_limit`) without running a tool that call
   * asked for. Only this run's cost counts, not the session's earlier turns. It must be more
   * than 0: the CLI crashes on 0 or a negative amount.
   */
  maxBudgetUsd: z.number().positive().max(1_000_000).optional(),
  /**
   * With a resume: branch a new session off it (`--fork-session`) and leave it as it was. The
   * run then reports a new session id, which is no sign of a rejected resume.
   */
  forkSession: z.boolean().optional(),
  /**
   * With a resume: resume the session as it stood at this message (`--resume-session-at`), not
   * at its end: what came after it is left out of the conversation (a rewind).
   */
  resumeAt: z.string().regex(ENTRY, "resumeAt must be a message uuid").optional(),
  /** Wall-clock limit for the whole run, in milliseconds; then the run ends as timed_out. */
  timeoutMs: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3_600_000),
  /**
   * How long the CLI may stay silent (no stdout or stderr) after its first line, in
   * milliseconds; then the run ends as stalled (before the first line, the start-up limit
   * applies). The CLI prints nothing while a tool runs, so this must exceed the longest
   * command an agent is expected to run.
   */
  stallMs: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3_600_000),
});
export type RunSettings = z.infer<typeof RunSettings>;

/**
 * What running the binary (`--version`, `--help`) tells: which one and which version it is, and
 * the one ability learned this way rather than stated in the CLI's entry (CliAbilities,
 * core/cli-abilities.ts): whether it resumes a session.
 */
export interface CliProbe {
  /** The binary that was probed (after PATH lookup). */
  path: string;
  /** e.g. "2.1.197"; null when the binary did not say. */
  version: string | null;
  /** `--help` offers `--resume`. */
  canResume: boolean;
  /** Why the probe failed, when it did (then version is null and canResume false). */
  error?: string;
}

/** One run of the CLI: one turn of a session. */
export interface RunSpec {
  /** Working directory. A session can only be resumed from the directory it was made in. */
  cwd: string;
  /** The prompt, written to the child's stdin (no argument-length limit, no shell). */
  prompt: string;
  /** Resume this session; omit for a fresh one. */
  resumeSessionId?: string;
  /**
   * Images shown to the model with the prompt, all files of one directory outside `cwd` (the
   * sandbox shows it read-only at /run/tether/images). A CLI that cannot take images gets none
   * (its registry entry's `images` is false, and the turn says so).
   */
  images?: TurnImage[];
  settings: RunSettings;
  /** Aborting it cancels the run: the outcome is `cancelled` and no process of it remains. */
  signal?: AbortSignal;
  /** HOME for the child, where the CLI keeps its sessions; default: this process's HOME. */
  home?: string;
  /** More environment for the child. The secret denylist still applies to these. */
  extraEnv?: Record<string, string>;
  /**
   * Contain the run: the CLI starts inside this sandbox, with `cwd` as its /workspace and
   * `home` as its HOME, reaching the model API (and nothing else the policy does not allow)
   * through the sandbox's egress proxy, which holds the credentials. Omitted: a plain child
   * process (tests of the adapter itself).
   */
  sandbox?: RunSandbox;
  /**
   * Offer the agent Tether's line-comment tool (a pull request turn): an MCP server the CLI
   * starts, writing what the agent asks for into `dir` (the sandbox's outbox).
   */
  lineComments?: LineCommentTool;
  /**
   * The operator's MCP servers the agent was given (`agents.<name>.mcpServers`). In a sandbox,
   * none of their secrets enters it: a remote one is reached through the egress proxy, which
   * adds its headers; a stdio one with an `env` runs in a sandbox of its own (docs/security.md).
   */
  mcpServers?: NamedMcpServer[];
  /**
   * Called for each event as it happens, in order; the run waits for a returned promise before
   * reading on (so the session id can be pinned before anything else happens). A throw is
   * logged and does not stop the run.
   */
  onEvent?: (event: RunEvent) => void | Promise<void>;
}

export interface RunSandbox {
  sandbox: Sandbox;
  /** The repository's mirror, the workspace's read-only `origin`. */
  origin?: string;
  /** Agent-control files of a pull request's head, shown as the base branch has them. */
  masks?: Mask[];
  network: NetworkPolicy;
}

/** Token counts of one API call, as the CLI reports them. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
}

/** What happens during a run, in the order it happened. */
export type RunEvent =
  | {
      /** The CLI started the session. First event of every run that reached the model. */
      type: "init";
      sessionId: string;
      model: string | null;
      cwd: string | null;
      cliVersion: string | null;
      permissionMode: string | null;
      tools: string[];
      /** The MCP servers the CLI started, and how (`connected`, `failed`…), when it says. */
      mcpServers?: Array<{ name: string; status: string }>;
    }
  | {
      /** Text the model wrote. */
      type: "text";
      text: string;
      /** Set when a sub-agent (Task tool) wrote it. */
      parentToolUseId: string | null;
    }
  | {
      /** The model called a tool. */
      type: "tool_use";
      id: string;
      name: string;
      input: unknown;
      parentToolUseId: string | null;
    }
  | {
      /** A tool call came back. */
      type: "tool_result";
      toolUseId: string;
      isError: boolean;
      /** What the tool returned, as text, when the CLI shows it (the live view clips it). */
      output?: string;
    }
  | {
      /** The run's tokens and cost so far, after a model call (for the live view). */
      type: "usage";
      inputTokens: number;
      outputTokens: number;
      /** Estimated from the price list; null when the CLI's dialect does not estimate it. */
      costUsd: number | null;
    }
  | {
      /** The CLI is retrying a failed API call. */
      type: "api_retry";
      attempt: number;
      maxRetries: number | null;
      errorStatus: number | null;
      error: string | null;
      retryDelayMs: number | null;
    }
  | {
      /** The CLI compacted the conversation (it shrank the context to go on). */
      type: "compacted";
      /** `manual` (a `/compact` prompt) or `auto` (the CLI's own, when the context filled). */
      trigger: string | null;
      preTokens: number | null;
      postTokens: number | null;
    }
  | {
      /** The CLI's final report. Last event of every run that reached the API. */
      type: "result";
      subtype: string;
      isError: boolean;
      text: string | null;
      sessionId: string | null;
      terminalReason: string | null;
      apiErrorStatus: number | null;
      numTurns: number | null;
      costUsd: number | null;
      errors: string[];
    };

/** The outcome kinds; the tasks table's `outcome` column takes the same words. */
export type OutcomeKind =
  /** The run finished and answered. */
  | "success"
  /** The session's history is unusable (too long, or the API rejects it): never resume it. */
  | "poisoned"
  /** The CLI would not resume the session (unknown there, or it started another one). */
  | "resume_rejected"
  /** The API refused the credentials; stopped at the first 401/403 instead of retrying. */
  | "auth_failed"
  /** Stopped at the wall-clock limit. */
  | "timed_out"
  /** Stopped after no output for the stall limit. */
  | "stalled"
  /** Stopped on request. */
  | "cancelled"
  /** The CLI stopped the run at its spend limit (`--max-budget-usd`); the session stays usable. */
  | "turn_limit"
  /** Anything else. */
  | "failed";

export interface RunUsage extends TokenUsage {
  costUsd: number;
  /** Agentic turns (API round trips) the CLI counted. */
  numTurns: number;
  durationMs: number;
  /** The model that did the work (the one that cost most when several did). */
  model: string | null;
  /**
   * How full the context was at the end: input + cache read + cache creation of the last
   * top-level model call. null when no call reported usage.
   */
  contextTokens: number | null;
  /** The model's context window, when the CLI reported it. */
  contextWindow: number | null;
}

export interface RunOutcome {
  kind: OutcomeKind;
  /** The session this run worked in, from THIS run's init line; undefined if it never started. */
  sessionId: string | undefined;
  /** A resumed run: the session's message its turn hung from (CliDialect.entryOf). */
  entry?: string;
  /** The answer (the result line's text); undefined when there is none. */
  resultText: string | undefined;
  usage: RunUsage;
  /**
   * Whether the model called any tool. A tool may have changed the workspace, so a run that
   * failed after one must not be silently retried.
   */
  toolRan: boolean;
  /** Why, in plain words (for failures: what happened and what to do). */
  detail: string;
  /** `poisoned` because the history no longer fits the model's context window. */
  contextOverflow?: boolean;
  /** The last few KiB of the child's stderr. */
  stderrTail: string;
  exitCode: number | null;
  signal: string | null;
  /** Output lines that were not valid JSON, failed their schema, or were too long. */
  unreadableLines: number;
  /** Well-formed lines of a type or subtype this adapter does not use. */
  unknownLines: number;
}

/** A started run. Iterate it (or `events`) for events; await `outcome` for the end. */
export interface AgentRun extends AsyncIterable<RunEvent> {
  /** Events in order. Buffered from the start, so iterating late misses nothing. */
  readonly events: AsyncIterable<RunEvent>;
  /** Settles once the child and everything it started are gone. Never rejects. */
  readonly outcome: Promise<RunOutcome>;
  /** The child's process id (also its process group id); undefined before or without a spawn. */
  readonly pid: number | undefined;
  /** Stop the run; the outcome becomes `cancelled` unless it already finished. */
  cancel(reason?: string): void;
}

/**
 * One agent CLI binary (Claude Code's, or Codex's through the same run engine): probe it, start
 * runs of it. The runner's Agent (runner/wiring/cli-agent.ts) is built over one.
 */
export interface CliAdapter {
  /** Which CLI this is, e.g. "claude-code". */
  readonly name: string;
  /** The binary it runs. */
  readonly path: string;
  /** Version and features of the binary (cached per binary). */
  probe(): Promise<CliProbe>;
  /** Start a run. Never throws; problems end up in the outcome. */
  start(spec: RunSpec): AgentRun;
  /** Runs still going. */
  activeRuns(): number;
  /** Cancel every run and wait until all of them are gone (for shutdown). */
  cancelAll(reason?: string): Promise<void>;
}
