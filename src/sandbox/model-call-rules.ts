/**
 * What a model call may ask of the provider (#38): the egress proxy reads the body and the
 * headers of every model call and refuses what a CLI's own turn never sends. The key the proxy
 * adds opens more than the model: the providers' server-side tools open URLs of the caller's
 * choosing (Anthropic's MCP connector, `web_fetch`, `web_search`; OpenAI's `mcp`, `web_search`;
 * Gemini's `url_context`, `google_search`), run code on the provider's machines, read the
 * account's stored files and responses, and are billed apart from the tokens the proxy meters.
 * A private repository's code could leave in such a URL, or in the MCP connector's requests.
 *
 * Pure: one list of rules per provider (a name and a check each), kept with the CLI that speaks
 * that API (`providers/anthropic/model-call-rules.ts` for the Messages API, `codex/…` for Responses,
 * `gemini/…`), built from the pieces here, so a rule is one row to add or relax (an MCP server
 * Tether serves itself, say). The tool rules allow what the CLI runs itself (a tool with no
 * `type`, or `custom`/`function`; Gemini's `functionDeclarations`) and refuse every other tool
 * type, a future server tool included, unless its type starts with a prefix the operator allows
 * (TETHER_PROXY_SERVER_TOOLS). The beta headers are allowed one by one, as the pinned CLIs send
 * them (docs/security.md lists them with the CLI versions they were recorded from).
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

export type Json = Record<string, unknown>;
export const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
export const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const has = (o: Json, key: string) => Object.prototype.hasOwnProperty.call(o, key);

/** `camelCase` as `snake_case`: Gemini's JSON takes both spellings of a field. */
export const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

const allowedByOperator = (type: string, ctx: ModelCallContext) =>
  ctx.serverTools.some((prefix) => prefix !== "" && snake(type).startsWith(snake(prefix)));

const SERVER_TOOL_HINT =
  "it runs on the provider's servers (it can open URLs, run code or read the account's files, billed apart from the tokens Tether meters); an operator allows a server tool type with TETHER_PROXY_SERVER_TOOLS";

/** The body's top-level fields that must be absent (or false / null). */
export function absentFields(fields: Record<string, string>): ModelCallRule {
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
export function headerValues(
  header: string,
  allowed: readonly string[],
  who: string,
): ModelCallRule {
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
export const jsonObject: ModelCallRule = {
  name: "json object",
  refuse: (call) =>
    obj(call.body)
      ? null
      : "Tether's sandbox refused this model call: its body is not a JSON object",
};

/** Every tool of `tools` must be one the CLI runs itself, or of a type the operator allows. */
export function toolTypes(
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
export function contentBlocks(
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
