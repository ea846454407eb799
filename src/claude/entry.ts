/** Claude Code in the registry of agent CLIs (src/cli-registry.ts): what differs from defineCli's defaults. */
import { defineCli } from "../agent-cli/agent-cli.js";
import { resolveClaudePath } from "./claude-path.js";
import { CLAUDE_ENV_PREFIXES, createClaudeCli } from "./claude-cli.js";
import { ANTHROPIC_SECRET_ENV } from "../providers/anthropic/endpoint.js";
import { claudeLayout } from "./session-files.js";

export const claudeCli = defineCli({
  name: "claude",
  label: "Claude CLI",
  api: { name: "Claude API", credentials: "`ANTHROPIC_API_KEY` (or other Claude credentials)" },
  defaultModel: "claude-sonnet-4-5",
  secretEnv: ANTHROPIC_SECRET_ENV,
  // A proxy's credentials, one `Name: value` a line: the values are secret, the names are not.
  secretValues(env) {
    const out: string[] = [];
    for (const line of (env.ANTHROPIC_CUSTOM_HEADERS ?? "").split(/\r?\n/)) {
      const value = line.slice(line.indexOf(":") + 1).trim();
      if (line.includes(":") && value) out.push(value);
    }
    return out;
  },
  // The operator's Anthropic and Claude Code settings pass to the CLI.
  childEnvPrefixes: CLAUDE_ENV_PREFIXES,
  // The CLI reads none of these (`--setting-sources ""`, `--strict-mcp-config`); masked anyway.
  controlFiles: [".claude", ".mcp.json", ".claude.json", "CLAUDE.md", "CLAUDE.local.md"],
  layout: claudeLayout,
  // Claude Code's slash command, seen with 2.1.197 (docs/claude-cli-facts.md).
  compactPrompt: "/compact",
  // `--resume-session-at` (docs/claude-cli-facts.md).
  rewinds: true,
  forks: true,
  toolRules: true,
  turnLimit: true,
  cacheTtl: true,
  // Images: a stream-json user message with image blocks on stdin (claude-cli.ts, claudeInput).
  // The default CLI: its binary and store make the runtime id, so it is probed at start.
  probeAtStart: true,
  binary: resolveClaudePath,
  adapter: createClaudeCli,
});
