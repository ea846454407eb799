/**
 * What a call to the Anthropic Messages API may ask for through the egress proxy (#38): the
 * rules for Claude Code and opencode's Anthropic provider (src/sandbox/model-call-rules.ts says
 * why; docs/security.md lists them).
 */
import {
  absentFields,
  contentBlocks,
  headerValues,
  jsonObject,
  list,
  obj,
  toolTypes,
  type ModelCallRules,
} from "../../sandbox/model-call-rules.js";

/**
 * The `anthropic-beta` values the pinned CLIs send, recorded against the fake Messages API:
 * Claude Code 2.1.332 (every model, the 1M-context ones, a one-hour cache, an OAuth token) and
 * opencode 1.18.33. A beta not here (`mcp-client-*`, `files-api-*`, `code-execution-*`,
 * `web-fetch-*`, `skills-*`) is refused: a new CLI version that sends another needs it added.
 */
export const ANTHROPIC_BETAS = [
  // Claude Code 2.1.332
  "claude-code-20250219",
  "interleaved-thinking-2025-05-14",
  "context-management-2025-06-27",
  "thinking-token-count-2026-05-13",
  "thinking-display-updates-2026-08-18",
  "per-turn-control-2026-07-01",
  "mid-conversation-tool-changes-2026-07-01",
  "effort-2025-11-24",
  "context-1m-2025-08-07",
  "extended-cache-ttl-2025-04-11",
  "oauth-2025-04-20",
  // opencode 1.18.33
  "structured-outputs-2025-11-13",
  "fine-grained-tool-streaming-2025-05-14",
] as const;

/** Tools the CLI runs itself: no `type` (a plain tool), or `custom`. */
const ANTHROPIC_CLIENT_TOOLS = new Set(["", "custom"]);

export const ANTHROPIC_RULES: ModelCallRules = [
  jsonObject,
  absentFields({
    mcp_servers: "the MCP connector: the provider's servers call the MCP servers it names",
    container: "a code-execution container on the provider's servers",
  }),
  toolTypes((tool) => [typeof tool.type === "string" ? tool.type : ""], ANTHROPIC_CLIENT_TOOLS),
  contentBlocks(
    (body) => [...list(body.messages), ...list(body.system)],
    (block) => {
      const source = obj(block.source);
      if (source?.type === "url")
        return `a ${String(block.type)} block whose source is a URL (the provider would fetch it)`;
      if (source?.type === "file" || block.type === "container_upload")
        return "a block naming a file of the account's Files API";
      return null;
    },
  ),
  headerValues("anthropic-beta", ANTHROPIC_BETAS, "the pinned Claude Code and opencode"),
];
