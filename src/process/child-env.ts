/**
 * The environment of every child Tether starts: one allow-list and one denylist. The agent
 * CLIs and their probes run with buildChildEnv: built up from nothing,
 * only what a CLI needs and the operator's settings for that CLI pass, and a denylist of Tether's
 * secrets wins over everything (the caller's extra variables included). The agent runs
 * arbitrary shell commands in this environment, so anything in it is as good as published.
 * Tether's own git (src/workspace/git.ts) takes fewer names, through passEnv: the way to the
 * network below, and git's own TLS settings.
 */

/** The way to the network, and the TLS roots to trust on it. */
export const NETWORK_NAMES = [
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
] as const;

/** Names passed through as they are. */
const ALLOWED_NAMES = new Set([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "TZ",
  "TERM",
  "TMPDIR",
  "NODE_EXTRA_CA_CERTS",
  ...NETWORK_NAMES,
  "DISABLE_TELEMETRY",
  "DISABLE_AUTOUPDATER",
  "DISABLE_ERROR_REPORTING",
  "DISABLE_NON_ESSENTIAL_MODEL_CALLS",
  // The CLI's own switch for "this machine is a sandbox": the only way it accepts
  // bypassPermissions when running as root. Only an operator sets it.
  "IS_SANDBOX",
]);

/** Prefixes passed through to every child: locale. A CLI adds its own (ChildEnvOptions.prefixes). */
const ALLOWED_PREFIXES = ["LC_"];

/** Never passed, whatever else says so. Matched without regard to case. */
const DENIED: RegExp[] = [
  /GITHUB/i, // GITHUB_TOKEN, GITHUB_APP_*, and any setting that carries a GitHub credential
  /^GH_/i,
  /PRIVATE_KEY/i,
  /WEBHOOK_SECRET/i,
  /DATABASE_URL/i,
  /^TETHER_/i,
  /^APP_ID$/i,
  /^PG/i, // libpq's PGPASSWORD, PGHOST, …
];

/** Set unless the operator set them: no self-update mid-run, no traffic beyond the API. */
const DEFAULTS: Record<string, string> = {
  DISABLE_AUTOUPDATER: "1",
};

/** PATH where the source has none, and inside a sandbox: the system's programs. */
export const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";

export function isDeniedName(name: string): boolean {
  return DENIED.some((re) => re.test(name));
}

export function isAllowedName(name: string, prefixes: readonly string[] = []): boolean {
  return (
    ALLOWED_NAMES.has(name) || [...ALLOWED_PREFIXES, ...prefixes].some((p) => name.startsWith(p))
  );
}

export interface ChildEnvOptions {
  /** HOME for the child (where the CLI keeps sessions); default: the source's HOME. */
  home?: string;
  /** Prefixes of the CLI's own settings passed besides the shared ones (its registry entry's). */
  prefixes?: readonly string[];
  /** Added after the allowlist; the denylist still applies. */
  extra?: Record<string, string | undefined>;
}

/** The child's environment, from `source` (normally process.env). Pure. */
export function buildChildEnv(
  source: Record<string, string | undefined>,
  opts: ChildEnvOptions = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || !isAllowedName(name, opts.prefixes) || isDeniedName(name)) continue;
    env[name] = value;
  }
  for (const [name, value] of Object.entries(DEFAULTS)) env[name] ??= value;
  for (const [name, value] of Object.entries(opts.extra ?? {})) {
    if (value === undefined || isDeniedName(name)) continue;
    env[name] = value;
  }
  if (opts.home !== undefined) env.HOME = opts.home;
  env.PATH ||= SYSTEM_PATH;
  return env;
}

/** Those of `names` that `source` has; a denied name never passes. Pure. */
export function passEnv(
  source: Record<string, string | undefined>,
  names: readonly string[],
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = source[name];
    if (value !== undefined && !isDeniedName(name)) env[name] = value;
  }
  return env;
}

/** Names that were in `source` or `extra` and were kept out (for a debug log; never values). */
export function withheldNames(
  source: Record<string, string | undefined>,
  opts: ChildEnvOptions = {},
): string[] {
  const kept = buildChildEnv(source, opts);
  return [...Object.keys(source), ...Object.keys(opts.extra ?? {})]
    .filter((name) => !(name in kept))
    .sort();
}
