import type { Logger } from "../log.js";
import { buildChildEnv } from "./child-env.js";
import { buildClaudeArgs, SESSION_ID } from "./claude-args.js";
import { resolveClaudePath } from "./claude-path.js";
import { CLAUDE_MODEL_ENV, claudeModelAccess } from "./model-endpoint.js";
import { classifyOutcome, earlyStop } from "./classify-outcome.js";
import { createDialectCli, type CliDialect } from "./cli-run.js";
import { probeCli } from "./probe-cli.js";
import { newEvidence, observe, type RunEvidence } from "./run-evidence.js";
import type { AgentCli, CliCapabilities } from "./runtime-adapter.js";
import { StreamParser, type StreamMessage } from "./stream-parser.js";
import { summarizeUsage } from "./usage.js";

export interface ClaudeCliOptions {
  /** The binary; default resolveClaudePath(process.env). */
  path?: string;
  log?: Logger;
  /** What the child's environment is built from (see child-env.ts); default process.env. */
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

/** What is Claude's own in a run: its arguments, environment, stream and verdicts. */
export const claudeDialect: CliDialect<StreamMessage, RunEvidence> = {
  label: "Claude CLI",
  short: "claude",
  installHint: "set TETHER_CLAUDE_PATH or install @anthropic-ai/claude-code",
  sessionId: SESSION_ID,
  args: (settings, resumeSessionId) => buildClaudeArgs(settings, resumeSessionId),
  env: (base, o) => buildChildEnv(base, { home: o.home, extra: o.extra }),
  modelAccess: (base) => ({ ...claudeModelAccess(base), remove: CLAUDE_MODEL_ENV }),
  parser: (maxLineBytes) => new StreamParser(maxLineBytes),
  newState: newEvidence,
  observe,
  earlyStop,
  isFinal: (message) => message.kind === "result",
  classify: ({ resumeSessionId, state, exit }) =>
    classifyOutcome({
      ...(resumeSessionId === undefined ? {} : { resumeSessionId }),
      evidence: state,
      exit,
    }),
  sessionOf: (evidence) => evidence.init?.sessionId,
  resultText: (evidence) => evidence.result?.result ?? evidence.lastText ?? undefined,
  toolRan: (evidence) => evidence.toolUses > 0,
  usage: summarizeUsage,
  // The CLI (a 245 MB native binary) takes about 430 ms here to print its --version, let alone
  // send a request: socat listens long before that, so the run does not wait for it.
  bootsAfterBridge: true,
  /** The extra system prompt may be long and is the repo's text: log its size, not its words. */
  redactArgs: (args) =>
    args.map((a, i) => (args[i - 1] === "--append-system-prompt" ? `(${a.length} characters)` : a)),
};

/** The Claude Code CLI as an AgentCli. */
export function createClaudeCli(opts: ClaudeCliOptions = {}): AgentCli {
  const path =
    opts.path ?? resolveClaudePath({ TETHER_CLAUDE_PATH: process.env.TETHER_CLAUDE_PATH });
  const baseEnv = opts.baseEnv ?? process.env;
  return createDialectCli(
    "claude-code",
    claudeDialect,
    { ...opts, path, baseEnv },
    (): Promise<CliCapabilities> => probeCli(path, { env: baseEnv }),
  );
}
