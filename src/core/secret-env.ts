/**
 * The environment variables that hold a secret Tether handles: the one list both the log
 * scrubber (main.ts) and the runner's comment and error scrubbing (start-runner.ts) blank by
 * value, on top of the shapes in redact.ts. A name added here is scrubbed everywhere. The model
 * APIs' credentials are each agent CLI's own (its registry entry, src/cli-registry.ts
 * CLI_SECRETS), which every caller passes.
 */
export const SECRET_ENV_NAMES = [
  // The GitHub App's credentials.
  "PRIVATE_KEY",
  "WEBHOOK_SECRET",
  // Tether's own.
  "DATABASE_URL",
  "TETHER_DASHBOARD_TOKEN",
  "TETHER_METRICS_TOKEN",
  // Not Tether's, but never to be shown if the machine has them.
  "GITHUB_TOKEN",
  "GH_TOKEN",
  "PGPASSWORD",
] as const;

/** The agent CLIs' secrets: their credential variables, and values held some other way. */
export interface CliSecrets {
  names: readonly string[];
  values(env: Readonly<Record<string, string | undefined>>): string[];
}

/**
 * The secret values `source` (normally process.env) holds: each listed variable's value and each
 * CLI's, the password inside DATABASE_URL (as written and decoded: a driver's error may print
 * either), and what the CLIs hold some other way (a proxy's header values). Pure; empty values
 * are left out.
 */
export function secretsInEnv(
  source: Readonly<Record<string, string | undefined>>,
  clis: CliSecrets,
): string[] {
  const out = new Set<string>();
  for (const name of [...SECRET_ENV_NAMES, ...clis.names]) {
    const value = source[name];
    if (value) out.add(value);
  }
  const password = urlPassword(source.DATABASE_URL);
  for (const p of password) out.add(p);
  for (const v of clis.values(source)) if (v) out.add(v);
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
