/*
 * The Claude Code adapter: everything the runner needs to run the CLI and read what happened.
 * The contract (runtime-adapter.ts) is CLI-neutral; the rest is Claude's implementation.
 */
export type {
  CliAdapter,
  AgentRun,
  CliCapabilities,
  OutcomeKind,
  RunEvent,
  RunOutcome,
  RunSpec,
  RunUsage,
  TokenUsage,
} from "./runtime-adapter.js";
export { RunSettings, PermissionMode } from "./runtime-adapter.js";
export { createClaudeCli, type ClaudeCliOptions } from "./claude-cli.js";
export { lookupClaudePath, resolveClaudePath, type ClaudePathLookup } from "./claude-path.js";
export { probeCli, clearProbeCache } from "./probe-cli.js";
export { buildClaudeArgs } from "./claude-args.js";
export { classifyOutcome, earlyStop, type StopReason } from "./classify-outcome.js";
export { StreamParser, parseStreamLine, type StreamMessage } from "./stream-parser.js";
export { summarizeUsage } from "./usage.js";
