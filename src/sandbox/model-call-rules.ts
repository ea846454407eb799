/**
 * What a model call may ask of the provider (#38): the egress proxy reads the body and the
 * headers of every model call and refuses what a CLI's own turn never sends. The key the proxy
 * adds opens more than the model: the providers' server-side tools open URLs of the caller's
 * choosing (Anthropic's MCP connector, `web_fetch`, `web_search`; OpenAI's `mcp`, `web_search`;
 * Gemini's `url_context`, `google_search`), run code on the provider's machines, read the
 * account's stored files and responses, and are billed apart from the tokens the proxy meters.
 * A private repository's code could leave in such a URL, or in the MCP connector's requests.
 *
 * Pure: one function per provider, each a list of rules (a name and a check), so a rule is one
 * row to add or relax (an MCP server Tether serves itself, say). The tool rules allow what the
 * CLI runs itself (a tool with no `type`, or `custom`/`function`; Gemini's
 * `functionDeclarations`) and refuse every other tool type, a future server tool included,
 * unless its type starts with a prefix the operator allows (TETHER_PROXY_SERVER_TOOLS). The
 * beta headers are allowed one by one, as the pinned CLIs send them (docs/security.md lists
 * them with the CLI versions they were recorded from).
 */

/** One model call as the proxy read it: the parsed JSON body, the headers as received. */
export interface ModelCall {
  body: unknown;
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

export interface ModelCallContext {
  /** Tool type prefixes the operator allows (TETHER_PROXY_SERVER_TOOLS), e.g. `web_search`. */
  serverTools: readonly string[];
  /** OpenAI response ids this turn's own calls were answered with (`previous_response_id`). */
  ownResponseIds: ReadonlySet<string>;
}

/** One rule: a name for logs and tests, and why it refuses the call (null: it passes). */
export interface ModelCallRule {
  name: string;
  refuse: (call: ModelCall, ctx: ModelCallContext) => string | null;
}

export type ModelCallRules = readonly ModelCallRule[];

/** The first refusal of the rules, or null when the call may go. */
export function modelCallRefusal(
  rules: ModelCallRules,
  call: ModelCall,
  ctx: ModelCallContext,
): string | null {
  for (const rule of rules) {
    const why = rule.refuse(call, ctx);
    if (why !== null) return why;
  }
  return null;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const has = (o: Json, key: string) => Object.prototype.hasOwnProperty.call(o, key);

/** `camelCase` as `snake_case`: Gemini's JSON takes both spellings of a field. */
const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

const allowedByOperator = (type: string, ctx: ModelCallContext) =>
  ctx.serverTools.some((prefix) => prefix !== "" && snake(type).startsWith(snake(prefix)));

const SERVER_TOOL_HINT =
  "it runs on the provider's servers (it can open URLs, run code or read the account's files, billed apart from the tokens Tether meters); an operator allows a server tool type with TETHER_PROXY_SERVER_TOOLS";

/** The body's top-level fields that must be absent (or false / null). */
function absentFields(fields: Record<string, string>): ModelCallRule {
  return {
    name: "fields",
    refuse: (call) => {
      const body = obj(call.body);
      if (!body) return null;
      for (const [field, what] of Object.entries(fields)) {
        if (!has(body, field)) continue;
        const v = body[field];
        if (v === null || v === false) continue;
        return `Tether's sandbox refused this model call: \`${field}\` (${what}) is never sent by the agent's CLI`;
      }
      return null;
    },
  };
}

/** A comma-separated header whose every value must be on `allowed` (the header may be absent). */
function headerValues(header: string, allowed: readonly string[], who: string): ModelCallRule {
  const known = new Set(allowed);
  return {
    name: `header ${header}`,
    refuse: (call) => {
      const raw = call.headers[header];
      const values = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw])
        .flatMap((v) => v.split(","))
        .map((v) => v.trim())
        .filter(Boolean);
      const unknown = values.filter((v) => !known.has(v));
      if (unknown.length === 0) return null;
      return `Tether's sandbox refused this model call: \`${header}: ${unknown.join(",")}\` is not among the values ${who} send${allowed.length ? ` (${allowed.join(", ")})` : " (none)"}`;
    },
  };
}

/** The body must be a JSON object. */
const jsonObject: ModelCallRule = {
  name: "json object",
  refuse: (call) =>
    obj(call.body)
      ? null
      : "Tether's sandbox refused this model call: its body is not a JSON object",
};

/** Every tool of `tools` must be one the CLI runs itself, or of a type the operator allows. */
function toolTypes(
  typeOf: (tool: Json) => string[],
  clientTypes: ReadonlySet<string>,
  nested?: (tool: Json) => unknown[],
): ModelCallRule {
  const check = (tools: unknown[], ctx: ModelCallContext): string | null => {
    for (const t of tools) {
      const tool = obj(t);
      if (!tool) return "Tether's sandbox refused this model call: a tool is not a JSON object";
      for (const type of typeOf(tool)) {
        if (clientTypes.has(type) || allowedByOperator(type, ctx)) continue;
        return `Tether's sandbox refused this model call: the tool type \`${type}\` is not allowed: ${SERVER_TOOL_HINT}`;
      }
      const inner = nested?.(tool);
      if (inner?.length) {
        const why = check(inner, ctx);
        if (why) return why;
      }
    }
    return null;
  };
  return {
    name: "tool types",
    refuse: (call, ctx) => {
      const body = obj(call.body);
      return body ? check(list(body.tools), ctx) : null;
    },
  };
}

/**
 * Blocks anywhere in `roots` (following `content`, `output` and `parts` arrays) that make the
 * provider fetch something: `why(block)` names it, or null.
 */
function contentBlocks(
  roots: (body: Json) => unknown[],
  why: (block: Json) => string | null,
): ModelCallRule {
  const walk = (items: unknown[], depth: number): string | null => {
    if (depth > 16) return "content nested deeper than 16 levels";
    for (const item of items) {
      const block = obj(item);
      if (!block) continue;
      const found = why(block);
      if (found) return found;
      for (const key of ["content", "output", "parts"]) {
        const inner = walk(list(block[key]), depth + 1);
        if (inner) return inner;
      }
    }
    return null;
  };
  return {
    name: "content",
    refuse: (call) => {
      const body = obj(call.body);
      const found = body ? walk(roots(body), 0) : null;
      return found ? `Tether's sandbox refused this model call: ${found}` : null;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages API (Claude Code, opencode's Anthropic provider)

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

// ---------------------------------------------------------------------------------------------
// OpenAI Responses API (Codex)

/**
 * Tools Codex 0.169.0 runs itself: `function`, `custom` (apply_patch), `namespace` (an MCP
 * server's functions, line-comment turns) and `tool_search` with `execution: "client"`.
 */
const OPENAI_CLIENT_TOOLS = new Set(["function", "custom", "namespace", "tool_search"]);

/** `x-codex-beta-features` values Codex 0.169.0 sends; `openai-beta` it does not send at all. */
export const CODEX_BETA_FEATURES = ["remote_compaction_v2"] as const;

export const OPENAI_RULES: ModelCallRules = [
  jsonObject,
  absentFields({
    background: "a response run in the background, stored on the provider's servers",
    conversation: "a conversation stored on the provider's servers",
  }),
  {
    name: "previous_response_id",
    refuse: (call, ctx) => {
      const id = obj(call.body)?.previous_response_id;
      if (id === undefined || id === null) return null;
      return typeof id === "string" && ctx.ownResponseIds.has(id)
        ? null
        : `Tether's sandbox refused this model call: \`previous_response_id\` ${JSON.stringify(id).slice(0, 80)} is not a response of this turn's own calls`;
    },
  },
  toolTypes(
    (tool) => {
      const type = typeof tool.type === "string" ? tool.type : "";
      // A hosted tool search runs on the provider's side: only the client's is the CLI's.
      if (type === "tool_search" && tool.execution !== "client") return ["tool_search (hosted)"];
      return [type];
    },
    OPENAI_CLIENT_TOOLS,
    (tool) => (tool.type === "namespace" ? list(tool.tools) : []),
  ),
  contentBlocks(
    (body) => list(body.input),
    (block) => {
      if (block.type === "item_reference")
        return "an `item_reference` input item (an item stored on the provider's servers)";
      const url = block.image_url ?? block.file_url;
      if (typeof url === "string" && !url.startsWith("data:"))
        return `an ${String(block.type)} part whose URL the provider would fetch`;
      if (
        obj(url) &&
        typeof obj(url)!.url === "string" &&
        !String(obj(url)!.url).startsWith("data:")
      )
        return `an ${String(block.type)} part whose URL the provider would fetch`;
      if (typeof block.file_id === "string")
        return "a part naming a file of the account's Files API";
      return null;
    },
  ),
  headerValues("openai-beta", [], "the pinned Codex"),
  headerValues("x-codex-beta-features", CODEX_BETA_FEATURES, "the pinned Codex"),
];

// ---------------------------------------------------------------------------------------------
// Gemini API (Gemini CLI)

/** A tool's fields the CLI sends (Gemini CLI 0.61.0): its own functions, in either spelling. */
const GEMINI_CLIENT_TOOLS = new Set(["function_declarations"]);

export const GEMINI_RULES: ModelCallRules = [
  jsonObject,
  absentFields({
    cachedContent: "a cached content stored on the provider's servers",
    cached_content: "a cached content stored on the provider's servers",
  }),
  // A Gemini tool is an object with one field per kind (`functionDeclarations`, `googleSearch`,
  // `urlContext`, `codeExecution`, …): each field is a type.
  toolTypes((tool) => Object.keys(tool).map(snake), GEMINI_CLIENT_TOOLS),
  contentBlocks(
    (body) => [
      ...list(body.contents),
      ...list(obj(body.systemInstruction ?? body.system_instruction)?.parts),
    ],
    (part) =>
      has(part, "fileData") || has(part, "file_data")
        ? "a `fileData` part (a file the provider would fetch, or one of the account's files)"
        : null,
  ),
];
