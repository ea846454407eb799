/**
 * How opencode reaches the Anthropic Messages API: as Claude does (src/providers/anthropic/endpoint.ts,
 * the same upstream, credentials and metering), but its Anthropic provider (the AI SDK's) takes
 * a base URL that ends in `/v1` from ANTHROPIC_BASE_URL, and sends only an `x-api-key`.
 */
import type { DialectModelAccess } from "../agent-cli/cli-dialect.js";
import { ANTHROPIC_MODEL_ENV, anthropicModelAccess } from "../providers/anthropic/endpoint.js";
import { BRIDGE_URL } from "../sandbox/init-script.js";

/** The base URL with the API's version path the provider wants. */
function withV1(url: string): string {
  const u = url.replace(/\/+$/, "");
  return u.endsWith("/v1") ? u : `${u}/v1`;
}

export function opencodeModelAccess(env: Record<string, string | undefined>): DialectModelAccess {
  const claude = anthropicModelAccess(env);
  const inside: Record<string, string> = { ANTHROPIC_BASE_URL: withV1(BRIDGE_URL) };
  if (claude.inside.ANTHROPIC_API_KEY) inside.ANTHROPIC_API_KEY = claude.inside.ANTHROPIC_API_KEY;
  const outside: Record<string, string> = {};
  if (env.ANTHROPIC_API_KEY) outside.ANTHROPIC_API_KEY = env.ANTHROPIC_API_KEY;
  if (env.ANTHROPIC_BASE_URL) outside.ANTHROPIC_BASE_URL = withV1(env.ANTHROPIC_BASE_URL);
  return {
    endpoint: claude.endpoint,
    inside,
    outside,
    remove: ANTHROPIC_MODEL_ENV,
  };
}
