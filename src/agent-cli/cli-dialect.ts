/**
 * What the run engine (cli-run.ts) asks of a CLI: a CliDialect says everything one CLI does
 * differently (arguments, environment, how the model API is reached, the stream's shape, how an
 * end is classified and what it cost), CliRunOptions how its runs are made. Each CLI's dialect
 * is in its own folder (src/<cli>/), and its registry entry (agent-cli.ts) makes its adapter.
 */
import type { McpServer } from "../review/line-comment-tool.js";
import type { TurnImage } from "../core/images.js";
import type { ModelEndpoint } from "../sandbox/egress.js";
import type { Logger } from "../log.js";
import type { Classification, ClassifyInput, StopReason } from "./outcome.js";
import type { RunSettings, RunEvent, RunSpec, RunUsage } from "./runtime-adapter.js";

/** How the CLI reaches the model API, split between Tether and the sandboxed CLI. */
export interface DialectModelAccess {
  endpoint: ModelEndpoint;
  /** Environment for the sandboxed CLI (placeholders). */
  inside: Record<string, string>;
  /** Environment for an unsandboxed CLI (the operator's real values). */
  outside: Record<string, string>;
  /** Names taken out of the child's environment before it enters a sandbox. */
  remove: readonly string[];
  /** The API base URL the CLI is told on its command line, when it takes it there. */
  insideBaseUrl?: string;
  outsideBaseUrl?: string;
}

/**
 * An operator's MCP server as the CLI is told of it (issue #39): inside a sandbox, a remote one
 * is the egress proxy's `/mcp/<name>` without headers, and a stdio one holding secrets is
 * `socat` to its socket; the rest as the operator's file has them.
 */
export type CliMcpServer =
  | { name: string; type: "stdio"; command: string; args: string[]; env: Record<string, string> }
  | { name: string; type: "http"; url: string; headers: Record<string, string> };

/** A stream parser: bytes in, messages out. */
export interface DialectParser<M> {
  push(chunk: Buffer): M[];
  end(): M[];
  readonly counts: { unreadable: number; unknown: number };
  readonly lastUnreadable?: string | undefined;
}

/** Everything one CLI does differently. M: one parsed output line; S: what a run has shown. */
export interface CliDialect<M extends { kind: string }, S> {
  /** In sentences: "Claude CLI", "Codex CLI". */
  label: string;
  /** In log messages: "claude", "codex". */
  short: string;
  /** What to do when the binary cannot start. */
  installHint: string;
  /** A session id the CLI could have made; anything else never reaches argv. */
  sessionId: RegExp;
  args(
    settings: RunSettings,
    resumeSessionId: string | undefined,
    where: {
      sandboxed: boolean;
      baseUrl: string | undefined;
      mcp?: McpServer | undefined;
      /** The operator's MCP servers the agent was given, as the CLI reaches them. */
      mcpServers?: readonly CliMcpServer[];
      /** The run's HOME as the CLI sees it (in the sandbox, or on the host); undefined: the process's. */
      home?: string | undefined;
      /** The run's images, at the paths the CLI sees them (in the sandbox, or on the host). */
      images?: readonly TurnImage[];
    },
  ): string[];
  /**
   * What the child's stdin gets, when not the prompt as it is: e.g. the prompt and its images as
   * one stream-json message (Claude). `images` are host paths (Tether reads them).
   */
  input?(prompt: string, images: readonly TurnImage[]): Promise<string>;
  /** The child's environment, allow-listed, without model credentials. */
  env(
    base: Record<string, string | undefined>,
    opts: {
      home: string | undefined;
      extra: Record<string, string> | undefined;
      settings: RunSettings;
      /** The operator's MCP servers the agent was given, as the CLI reaches them (opencode's config). */
      mcpServers?: readonly CliMcpServer[];
    },
  ): Record<string, string>;
  modelAccess(base: Record<string, string | undefined>): DialectModelAccess;
  parser(maxLineBytes: number): DialectParser<M>;
  newState(): S;
  /** Before the spawn (the session's files are in place): e.g. read what it has used so far. */
  beforeStart?(state: S, spec: RunSpec, resumeSessionId: string | undefined): Promise<void>;
  /** After the exit, before classifying: e.g. read the session's files for the context size. */
  afterExit?(state: S, spec: RunSpec): Promise<void>;
  observe(state: S, message: M): RunEvent[];
  earlyStop(
    message: M,
    state: S,
    resumeSessionId: string | undefined,
  ): { reason: StopReason; detail: string } | undefined;
  /** The CLI's last word for the turn (after it, only a bound on lingering applies). */
  isFinal(message: M): boolean;
  classify(input: ClassifyInput<S>): Classification;
  /**
   * A resumed run: the session's message its turn hung from (where `--resume-session-at` goes
   * back to). Absent: the CLI cannot say, or cannot rewind.
   */
  entryOf?(state: S): string | undefined;
  /** The session this run started or resumed, as the CLI reported it. */
  sessionOf(state: S): string | undefined;
  resultText(state: S): string | undefined;
  toolRan(state: S): boolean;
  usage(state: S, wallMs: number): RunUsage;
  /** Host paths the sandbox shows read-only for the binary `exe` to run; default just it. */
  binds?(exe: string): string[];
  /**
   * Top-level workspace paths the CLI reads whatever its flags say: hidden by the sandbox on
   * every run, and no run without a sandbox while the checkout has one (cli-hidden.ts).
   */
  hides?: readonly string[];
  /** Arguments as logged (long user text shortened). */
  redactArgs?(args: string[]): string[];
  /**
   * Whether the CLI's first connection can come before the sandbox's egress bridge listens
   * (socat starts in about 12 ms). A CLI that takes far longer than that to boot skips the
   * wait for it (init-script.ts); default: wait.
   */
  bootsAfterBridge?: boolean;
}

/**
 * How a CLI's runs are made, the same for every CLI: createClaudeCli and createCodexCli take
 * them all optional (each finds its binary when `path` is not given).
 */
export interface CliRunOptions {
  /** The binary. */
  path: string;
  log?: Logger;
  /** What the child's environment is built from (see src/process/child-env.ts); default process.env. */
  baseEnv?: Record<string, string | undefined>;
  /** After SIGTERM, how long before SIGKILL. Default 5000 ms. */
  killGraceMs?: number;
  /** How long the CLI may linger after its result line before it is stopped. Default 10 s. */
  afterResultGraceMs?: number;
  /**
   * How long the CLI may take to print its first line. The real one prints its init line
   * within a second or two; a binary that has printed nothing by then is wedged (stuck on a
   * lock, a prompt, a broken install) and is stopped, so the thread hears about it within
   * half a minute rather than after the stall limit (minutes). Default 20 s.
   */
  startTimeoutMs?: number;
  /** Longest stdout line kept; longer ones are skipped and counted. Default 32 MiB. */
  maxLineBytes?: number;
  /** How much of stderr the outcome keeps. Default 8 KiB. */
  stderrTailBytes?: number;
  /** How often the run's process tree is looked at. Default 1000 ms. */
  sampleIntervalMs?: number;
  /** Unread events kept for the `events` iterator. Default 10000. */
  maxBufferedEvents?: number;
}

/** The options with their defaults filled in. */
export type RunConfig = Required<CliRunOptions>;
