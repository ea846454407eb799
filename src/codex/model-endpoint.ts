/**
 * How the Codex CLI reaches the OpenAI Responses API, split as Claude's is
 * (src/providers/anthropic/endpoint.ts): Tether keeps `OPENAI_API_KEY` and `OPENAI_BASE_URL`; the
 * sandboxed CLI gets a provider pointing at the in-sandbox bridge and a placeholder key, which
 * the egress proxy swaps for the real one on each request.
 */
import type { DialectModelAccess } from "../agent-cli/cli-dialect.js";
import type { ModelRoute } from "../sandbox/egress.js";
import { BRIDGE_URL } from "../sandbox/init-script.js";
import { OPENAI_RULES } from "./model-call-rules.js";
import { estimateCostUsd } from "../providers/openai/pricing.js";

export const CODEX_MODEL_ENV = [
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "OPENAI_ORGANIZATION",
  "OPENAI_PROJECT",
  "CODEX_API_KEY",
] as const;

/** Those of them that hold a credential: secrets, scrubbed by value from logs and comments. */
export const CODEX_SECRET_ENV = ["OPENAI_API_KEY", "CODEX_API_KEY"] as const;

/** What a sandboxed Codex holds in place of the key. Worthless outside Tether's proxy. */
export const OPENAI_PLACEHOLDER = "sk-tether-sandbox-placeholder";

export const DEFAULT_OPENAI_URL = "https://api.openai.com/v1";

/**
 * What the sandboxed Codex may send through the proxy: `POST /responses` (the bridge puts the
 * upstream's `/v1` in front). Seen with the pinned Codex and `supports_websockets=false`: a turn
 * sends nothing else (no model listing). Files, other APIs and the admin routes stay out of reach.
 */
export const CODEX_ROUTES: ModelRoute[] = [{ method: "POST", path: "/responses" }];

/** A server-side search, when the operator allows one (TETHER_PROXY_SERVER_TOOLS): OpenAI: $10 per 1,000 web search calls. */
const OPENAI_WEB_SEARCH_USD = 0.01;

export function codexModelAccess(env: Record<string, string | undefined>): DialectModelAccess {
  let upstream: URL;
  try {
    upstream = new URL(env.OPENAI_BASE_URL || DEFAULT_OPENAI_URL);
  } catch {
    upstream = new URL(DEFAULT_OPENAI_URL);
  }
  const headers: Record<string, string> = {};
  const inside: Record<string, string> = {};
  const outside: Record<string, string> = {};
  if (env.OPENAI_API_KEY) {
    headers.authorization = `Bearer ${env.OPENAI_API_KEY}`;
    inside.OPENAI_API_KEY = OPENAI_PLACEHOLDER;
    outside.OPENAI_API_KEY = env.OPENAI_API_KEY;
  }
  if (env.OPENAI_ORGANIZATION) headers["openai-organization"] = env.OPENAI_ORGANIZATION;
  if (env.OPENAI_PROJECT) headers["openai-project"] = env.OPENAI_PROJECT;
  return {
    endpoint: {
      upstream,
      headers,
      strip: ["authorization", "openai-organization", "openai-project"],
      routes: CODEX_ROUTES,
      rules: OPENAI_RULES,
      meter: {
        api: "openai",
        costUsd: (u) => estimateCostUsd(u.model, u) + u.webSearches * OPENAI_WEB_SEARCH_USD,
      },
    },
    inside,
    outside,
    remove: CODEX_MODEL_ENV,
    // The bridge takes origin-form paths and puts the upstream's own path (/v1) in front.
    insideBaseUrl: BRIDGE_URL,
    outsideBaseUrl: upstream.href.replace(/\/+$/, ""),
  };
}
