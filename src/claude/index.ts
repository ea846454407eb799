/*
 * The Claude Code adapter: what the runner needs to run the CLI and read what happened. The
 * contract (runtime-adapter.ts) is CLI-neutral; the rest is Claude's implementation.
 */
export type { CliAdapter, AgentRun, RunSpec } from "../agent-cli/runtime-adapter.js";
export { createClaudeCli } from "./claude-cli.js";
