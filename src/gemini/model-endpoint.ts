/**
 * How Gemini CLI reaches the Gemini API, split as Claude's and Codex's are
 * (src/providers/anthropic/endpoint.ts, src/codex/model-endpoint.ts): Tether keeps `GEMINI_API_KEY` and
 * `GOOGLE_GEMINI_BASE_URL`; the sandboxed CLI gets the in-sandbox bridge as its base URL and a
 * placeholder key, which the egress proxy swaps for the real one (`x-goog-api-key`) on each
 * request.
 */
import type { DialectModelAccess } from "../agent-cli/cli-dialect.js";
import type { ModelRoute } from "../sandbox/egress.js";
import { BRIDGE_URL } from "../sandbox/init-script.js";
import { GEMINI_RULES } from "./model-call-rules.js";
import { estimateCostUsd } from "../providers/google/pricing.js";

/** Taken out of the child's environment: the key, the base URL and the other ways to log in. */
export const GEMINI_MODEL_ENV = [
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "GOOGLE_GEMINI_BASE_URL",
  "GOOGLE_VERTEX_BASE_URL",
  "GOOGLE_GENAI_USE_VERTEXAI",
  "GOOGLE_GENAI_USE_GCA",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "GOOGLE_CLOUD_PROJECT",
  "GEMINI_CLI_CUSTOM_HEADERS",
] as const;

/** The operator's Gemini credentials: kept by the egress proxy, scrubbed everywhere by value. */
export const GEMINI_SECRET_ENV = ["GEMINI_API_KEY", "GOOGLE_API_KEY"] as const;

/** What a sandboxed Gemini CLI holds in place of the key. Worthless outside Tether's proxy. */
export const GEMINI_PLACEHOLDER = "gemini-tether-sandbox-placeholder";

export const DEFAULT_GEMINI_URL = "https://generativelanguage.googleapis.com";

/** A model name in a path: letters, digits, dots and dashes (no `/`, `..` or escapes). */
const MODEL = "[A-Za-z0-9][A-Za-z0-9.-]{0,99}";

/**
 * What the sandboxed CLI may send through the proxy: the model call, streamed
 * (`:streamGenerateContent?alt=sse`, every turn's request) or not (`:generateContent`, the
 * CLI's own side questions: compression summaries, loop checks, the `auto` model's routing),
 * and `:countTokens`. Seen with 0.61.0 (docs/gemini-cli-facts.md); nothing else (files, cached
 * contents, tuned models, model listing) is forwarded.
 */
export const GEMINI_ROUTES: ModelRoute[] = [
  {
    method: "POST",
    path: "/v1beta/models/{model}:streamGenerateContent",
    pattern: new RegExp(`^/v1beta/models/${MODEL}:streamGenerateContent$`),
    queries: ["alt=sse"],
  },
  {
    method: "POST",
    path: "/v1beta/models/{model}:generateContent",
    pattern: new RegExp(`^/v1beta/models/${MODEL}:generateContent$`),
  },
  {
    method: "POST",
    path: "/v1beta/models/{model}:countTokens",
    pattern: new RegExp(`^/v1beta/models/${MODEL}:countTokens$`),
  },
];

/** A server-side search, when the operator allows one (TETHER_PROXY_SERVER_TOOLS): Gemini: $35 per 1,000 grounded prompts, the dearer of its two rates. */
const GEMINI_WEB_SEARCH_USD = 0.035;

export function geminiModelAccess(env: Record<string, string | undefined>): DialectModelAccess {
  let upstream: URL;
  try {
    upstream = new URL(env.GOOGLE_GEMINI_BASE_URL || DEFAULT_GEMINI_URL);
  } catch {
    upstream = new URL(DEFAULT_GEMINI_URL);
  }
  const base = upstream.href.replace(/\/+$/, "");
  const headers: Record<string, string> = {};
  const inside: Record<string, string> = { GOOGLE_GEMINI_BASE_URL: BRIDGE_URL };
  const outside: Record<string, string> = { GOOGLE_GEMINI_BASE_URL: base };
  if (env.GEMINI_API_KEY) {
    headers["x-goog-api-key"] = env.GEMINI_API_KEY;
    inside.GEMINI_API_KEY = GEMINI_PLACEHOLDER;
    outside.GEMINI_API_KEY = env.GEMINI_API_KEY;
  }
  return {
    endpoint: {
      upstream,
      headers,
      strip: ["x-goog-api-key", "authorization", "x-gemini-api-privileged-user-id"],
      routes: GEMINI_ROUTES,
      rules: GEMINI_RULES,
      meter: {
        api: "google",
        costUsd: (u) => estimateCostUsd(u.model, u) + u.webSearches * GEMINI_WEB_SEARCH_USD,
      },
    },
    inside,
    outside,
    remove: GEMINI_MODEL_ENV,
  };
}
