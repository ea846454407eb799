import type { McpServer } from "../review/line-comment-tool.js";
import type { RunSettings } from "../agent-cli/runtime-adapter.js";
import type { CliMcpServer } from "../agent-cli/cli-dialect.js";

/**
 * The Claude CLI's argument list for one run. No shell is involved and the prompt goes in on
 * stdin, so nothing here is quoted and no argument carries user text except the extra system
 * prompt (bounded by RunSettings).
 */
export function buildClaudeArgs(
  settings: RunSettings,
  resumeSessionId?: string,
  mcp?: McpServer,
  servers: readonly CliMcpServer[] = [],
): string[] {
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
  // Tether's own tool server and the operator's the agent was given (the only ones:
  // --strict-mcp-config), their tools loaded up front rather than deferred behind ToolSearch
  // (docs/claude-cli-facts.md, "MCP tools").
  const mcpServers: Record<string, unknown> = {};
  if (mcp)
    mcpServers[mcp.name] = {
      type: "stdio",
      command: mcp.command,
      args: mcp.args,
      alwaysLoad: true,
    };
  for (const s of servers)
    mcpServers[s.name] =
      s.type === "http"
        ? { type: "http", url: s.url, headers: s.headers, alwaysLoad: true }
        : { type: "stdio", command: s.command, args: s.args, env: s.env, alwaysLoad: true };
  if (Object.keys(mcpServers).length) args.push("--mcp-config", JSON.stringify({ mcpServers }));
  if (settings.model !== undefined) args.push("--model", settings.model);
  if (resumeSessionId !== undefined) args.push("--resume", resumeSessionId);
  if (resumeSessionId !== undefined && settings.forkSession) args.push("--fork-session");
  // Hidden (not in --help) but present in 2.1.197 and 2.1.332 (docs/claude-cli-facts.md).
  if (resumeSessionId !== undefined && settings.resumeAt)
    args.push("--resume-session-at", settings.resumeAt);
  if (settings.maxTurns !== undefined) args.push("--max-turns", String(settings.maxTurns));
  if (settings.maxBudgetUsd !== undefined)
    args.push("--max-budget-usd", String(settings.maxBudgetUsd));
  if (settings.permissionMode !== undefined)
    args.push("--permission-mode", settings.permissionMode);
  if (settings.appendSystemPrompt) args.push("--append-system-prompt", settings.appendSystemPrompt);
  // Both tool options take several values; each tool is its own argument (a pattern such as
  // "Bash(git log:*)" may hold spaces). They come last, and there is no positional prompt
  // after them for the option to swallow.
  const allowed = [
    ...(settings.allowedTools ?? []),
    ...(mcp?.tools.map((t) => `mcp__${mcp.name}__${t}`) ?? []),
    // Every tool of a server the operator offers and the repository picked.
    ...servers.map((s) => `mcp__${s.name}`),
  ];
  if (allowed.length) args.push("--allowedTools", ...allowed);
  // Tools that act outside the turn are never offered, whatever the agent's settings say (a
  // deny rule wins over an allow rule in the CLI): an agent's turn ends with its answer.
  const disallowed = [...new Set([...(settings.disallowedTools ?? []), ...OUT_OF_TURN_TOOLS])];
  args.push("--disallowedTools", ...disallowed);
  return args;
}

/**
 * Tools of the Claude CLI that act after the turn or beyond this run, always passed in
 * `--disallowedTools` (docs/claude-cli-facts.md, "Tools that act outside the turn"). Seen in
 * the requests of 2.1.197 and 2.1.332: ScheduleWakeup (re-invokes the session later, `/loop`),
 * CronCreate/CronDelete/CronList (prompts enqueued at a future time), Workflow (subagents run
 * in the background, the result arrives after the tool returned), Monitor (a background script
 * whose lines arrive as later notifications), SendMessage/ListAgents (other local or cloud
 * Claude sessions). The rest are named in the 2.1.332 binary behind feature flags and refused
 * before a flag turns them on: RemoteTrigger, PushNotification, SubscribePR, TeamCreate,
 * TeamDelete. An unknown name in the list is ignored by the CLI.
 */
export const OUT_OF_TURN_TOOLS: readonly string[] = [
  "ScheduleWakeup",
  "CronCreate",
  "CronDelete",
  "CronList",
  "Workflow",
  "Monitor",
  "SendMessage",
  "ListAgents",
  "RemoteTrigger",
  "PushNotification",
  "SubscribePR",
  "TeamCreate",
  "TeamDelete",
];

/** A session id as the CLI prints them; anything else is refused before it reaches argv. */
export const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
