/**
 * The environment variables that hold a secret Tether handles: the one list both the log
 * scrubber (main.ts) and the runner's comment and error scrubbing (start-runner.ts) blank by
 * value, on top of the shapes in redact.ts. A name added here is scrubbed everywhere.
 */
export const SECRET_ENV_NAMES = [
  // The GitHub App's credentials.
  "PRIVATE_KEY",
  "WEBHOOK_SECRET",
  // Tether's own.
  "DATABASE_URL",
  "TETHER_DASHBOARD_TOKEN",
  "TETHER_METRICS_TOKEN",
  // The model APIs' (src/claude/model-endpoint.ts, src/codex/model-endpoint.ts,
  // src/gemini/model-endpoint.ts).
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "CLAUDE_CODE_OAUTH_TOKEN",
  "OPENAI_API_KEY",
  "CODEX_API_KEY",
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  // Not Tether's, but never to be shown if the machine has them.
  "GITHUB_TOKEN",
  "GH_TOKEN",
  "PGPASSWORD",
] as const;

/**
 * The secret values `source` (normally process.env) holds: each listed variable's value, the
 * password inside DATABASE_URL (as written and decoded: a driver's error may print either), and
 * the values of ANTHROPIC_CUSTOM_HEADERS (one `Name: value` a line; a proxy's credentials).
 * Pure; empty values are left out.
 */
export function secretsInEnv(source: Readonly<Record<string, string | undefined>>): string[] {
  const out = new Set<string>();
  for (const name of SECRET_ENV_NAMES) {
    const value = source[name];
    if (value) out.add(value);
  }
  const password = urlPassword(source.DATABASE_URL);
  for (const p of password) out.add(p);
  for (const line of (source.ANTHROPIC_CUSTOM_HEADERS ?? "").split(/\r?\n/)) {
    const value = line.slice(line.indexOf(":") + 1).trim();
    if (line.includes(":") && value) out.add(value);
  }
  return [...out];
}

function urlPassword(url: string | undefined): string[] {
  if (!url) return [];
  let raw: string;
  try {
    raw = new URL(url).password;
  } catch {
    return [];
  }
  if (!raw) return [];
  let decoded = raw;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    // Not valid percent-encoding: the raw form is all there is.
  }
  return [...new Set([raw, decoded])];
}
