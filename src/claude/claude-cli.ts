import { buildChildEnv } from "../process/child-env.js";
import { buildClaudeArgs, SESSION_ID } from "./claude-args.js";
import { resolveClaudePath } from "./claude-path.js";
import { CLAUDE_MODEL_ENV, claudeModelAccess } from "./model-endpoint.js";
import { classifyOutcome, earlyStop } from "./classify-outcome.js";
import { createDialectCli } from "./cli-adapter.js";
import type { CliDialect, CliRunOptions } from "./cli-dialect.js";
import { probeCli } from "./probe-cli.js";
import { newEvidence, observe, type RunEvidence } from "./run-evidence.js";
import type { CliAdapter, CliCapabilities } from "./runtime-adapter.js";
import { StreamParser, type StreamMessage } from "./stream-parser.js";
import { summarizeUsage } from "./usage.js";

/** The run options (cli-dialect.ts), every one optional: the binary defaults to resolveClaudePath. */
export type ClaudeCliOptions = Partial<CliRunOptions>;

/** What is Claude's own in a run: its arguments, environment, stream and verdicts. */
export const claudeDialect: CliDialect<StreamMessage, RunEvidence> = {
  label: "Claude CLI",
  short: "claude",
  installHint: "set TETHER_CLAUDE_PATH or install @anthropic-ai/claude-code",
  sessionId: SESSION_ID,
  args: (settings, resumeSessionId) => buildClaudeArgs(settings, resumeSessionId),
  env: (base, o) => ({
    ...buildChildEnv(base, { home: o.home, extra: o.extra }),
    // Seen with 2.1.197: without it the CLI silently asks the API for claude-opus-4-8 when told
    // `--model claude-opus-4-1` (or -4-0). The model a repository or a comment names is the
    // model asked for (test/e2e/session-controls.test.ts watches the request).
    CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP: "1",
  }),
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

/** The Claude Code CLI as a CliAdapter. */
export function createClaudeCli(opts: ClaudeCliOptions = {}): CliAdapter {
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
