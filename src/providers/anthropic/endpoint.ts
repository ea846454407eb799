/**
 * How a CLI reaches Anthropic's Messages API: Claude Code, and opencode's Anthropic provider
 * (src/opencode/model-endpoint.ts, which takes this endpoint whole). Split in two: what stays
 * with Tether (where the API really is, the credentials) and what the sandboxed CLI is given (the
 * bridge's address and placeholders). The egress proxy puts the real credentials on each request
 * (src/sandbox/egress.ts), so an agent that reads its own environment, or sends the "key"
 * somewhere, holds nothing of value.
 */
import type { ModelEndpoint, ModelRoute } from "../../sandbox/egress.js";
import { BRIDGE_URL } from "../../sandbox/init-script.js";
import { ANTHROPIC_RULES } from "./model-call-rules.js";
import { anthropicCostUsd } from "./pricing.js";

/** Variables that carry a credential or say where the API is: never inside a sandbox. */
export const ANTHROPIC_MODEL_ENV = [
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "CLAUDE_CODE_OAUTH_TOKEN",
  "ANTHROPIC_BASE_URL",
  "ANTHROPIC_CUSTOM_HEADERS",
] as const;

/** Those of them that hold a credential: secrets, scrubbed by value from logs and comments. */
export const ANTHROPIC_SECRET_ENV = [
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "CLAUDE_CODE_OAUTH_TOKEN",
] as const;

/** What a sandboxed CLI holds in place of a credential. Worthless outside Tether's proxy. */
export const ANTHROPIC_PLACEHOLDER = "sk-ant-tether-sandbox-placeholder";

export const DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com";

/**
 * What the sandboxed CLI may send through the proxy: the Messages API call, as the pinned CLI
 * sends it (`POST /v1/messages?beta=true`; seen with 2.1.197, which sent nothing else through
 * the proxy in a turn, tools included: no token counting, no model listing, no `HEAD /` with
 * non-essential traffic off). The Files, Batches and Admin APIs stay out of reach.
 */
export const ANTHROPIC_ROUTES: ModelRoute[] = [
  { method: "POST", path: "/v1/messages", queries: ["", "beta=true"] },
];

export interface AnthropicModelAccess {
  endpoint: ModelEndpoint;
  /** For the sandboxed CLI. */
  inside: Record<string, string>;
  /** For an unsandboxed CLI (TETHER_SANDBOX=off): the real values, as the operator set them. */
  outside: Record<string, string>;
}

/** A server-side search, when the operator allows one (TETHER_PROXY_SERVER_TOOLS): Anthropic: $10 per 1,000 searches. */
const ANTHROPIC_WEB_SEARCH_USD = 0.01;

export function anthropicModelAccess(
  env: Record<string, string | undefined>,
): AnthropicModelAccess {
  const headers: Record<string, string> = {};
  const inside: Record<string, string> = { ANTHROPIC_BASE_URL: BRIDGE_URL };
  const outside: Record<string, string> = {};
  for (const name of ANTHROPIC_MODEL_ENV) {
    const v = env[name];
    if (v) outside[name] = v;
  }
  if (env.ANTHROPIC_API_KEY) {
    headers["x-api-key"] = env.ANTHROPIC_API_KEY;
    inside.ANTHROPIC_API_KEY = ANTHROPIC_PLACEHOLDER;
  }
  // Both are sent as a bearer token; the CLI adds its own beta header for an OAuth token.
  const bearer = env.ANTHROPIC_AUTH_TOKEN || env.CLAUDE_CODE_OAUTH_TOKEN;
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (env.ANTHROPIC_AUTH_TOKEN) inside.ANTHROPIC_AUTH_TOKEN = ANTHROPIC_PLACEHOLDER;
  if (env.CLAUDE_CODE_OAUTH_TOKEN) inside.CLAUDE_CODE_OAUTH_TOKEN = ANTHROPIC_PLACEHOLDER;
  for (const line of (env.ANTHROPIC_CUSTOM_HEADERS ?? "").split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let upstream: URL;
  try {
    upstream = new URL(env.ANTHROPIC_BASE_URL || DEFAULT_ANTHROPIC_URL);
  } catch {
    upstream = new URL(DEFAULT_ANTHROPIC_URL);
  }
  return {
    endpoint: {
      upstream,
      headers,
      strip: ["x-api-key", "authorization"],
      routes: ANTHROPIC_ROUTES,
      rules: ANTHROPIC_RULES,
      meter: {
        api: "anthropic",
        costUsd: (u) => anthropicCostUsd(u) + u.webSearches * ANTHROPIC_WEB_SEARCH_USD,
      },
    },
    inside,
    outside,
  };
}
