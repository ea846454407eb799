import type { RunSettings } from "./runtime-adapter.js";

/**
 * The Claude CLI's argument list for one run. No shell is involved and the prompt goes in on
 * stdin, so nothing here is quoted and no argument carries user text except the extra system
 * prompt (bounded by RunSettings).
 */
export function buildClaudeArgs(settings: RunSettings, resumeSessionId?: string): string[] {
  // stream-json needs --verbose in print mode.
  const args = [
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    // Nothing a checkout (or a HOME) carries configures the agent: no project, local or user
    // settings (hooks, env, permissions), no CLAUDE.md, and no MCP server Tether did not pass.
    // Seen with 2.1.197: these two stop a repository's .claude/settings.json hooks and env,
    // its .mcp.json and its CLAUDE.md (docs/claude-cli-facts.md, "What a repository can make
    // the CLI do"; test/hardening/contain.test.ts tries each).
    "--setting-sources",
    "",
    "--strict-mcp-config",
  ];
  if (settings.model !== undefined) args.push("--model", settings.model);
  if (resumeSessionId !== undefined) args.push("--resume", resumeSessionId);
  if (resumeSessionId !== undefined && settings.forkSession) args.push("--fork-session");
  if (settings.maxTurns !== undefined) args.push("--max-turns", String(settings.maxTurns));
  if (settings.maxBudgetUsd !== undefined)
    args.push("--max-budget-usd", String(settings.maxBudgetUsd));
  if (settings.permissionMode !== undefined)
    args.push("--permission-mode", settings.permissionMode);
  if (settings.appendSystemPrompt) args.push("--append-system-prompt", settings.appendSystemPrompt);
  // Both tool options take several values; each tool is its own argument (a pattern such as
  // "Bash(git log:*)" may hold spaces). They come last, and there is no positional prompt
  // after them for the option to swallow.
  if (settings.allowedTools?.length) args.push("--allowedTools", ...settings.allowedTools);
  if (settings.disallowedTools?.length) args.push("--disallowedTools", ...settings.disallowedTools);
  return args;
}

/** A session id as the CLI prints them; anything else is refused before it reaches argv. */
export const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
