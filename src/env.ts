import { readFileSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";
import { z } from "zod";
import { readMcpServers, type McpServers } from "./config/mcp-servers.js";

/** A DNS name: dot-separated labels of letters, digits, hyphens (and underscores, which some use). */
const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** "", undefined → undefined, so an empty variable counts as unset. */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === "" ? undefined : v), schema.optional());

const intFrom = (min: number, max: number) =>
  z.coerce
    .number({ error: "must be a whole number" })
    .int("must be a whole number")
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

const boolFrom = z
  .enum(["true", "false", "1", "0", "yes", "no"], { error: "must be true or false" })
  .transform((v) => v === "true" || v === "1" || v === "yes");

/**
 * Every environment variable Tether reads, validated once at start.
 * Probot's own variables keep Probot's names; Tether's are prefixed TETHER_.
 * Only the process environment counts: `.env` is not read (start with `node --env-file=.env`).
 * README.md's environment table lists each of them (test/repo/docs-readme.test.ts checks).
 */
export const EnvSchema = z.object({
  /** GitHub App id. Without it (and a private key) Tether serves Probot's app-registration flow. */
  APP_ID: optional(intFrom(1, Number.MAX_SAFE_INTEGER)),
  /** The app's private key (PEM). Never passed to the Claude CLI. */
  PRIVATE_KEY: optional(z.string()),
  /** Path to the app's private key file, instead of PRIVATE_KEY. */
  PRIVATE_KEY_PATH: optional(z.string()),
  /** Secret GitHub signs webhook deliveries with. Unset, Probot checks against "development". */
  WEBHOOK_SECRET: optional(z.string()),
  /** Smee (or other) proxy URL that forwards webhooks to a development machine. */
  WEBHOOK_PROXY_URL: optional(z.url("must be a URL")),
  /** HTTP port for webhooks, the dashboard and health checks (a runner-only process: /healthz and /metrics). */
  PORT: intFrom(0, 65535).default(3000),
  /**
   * Interface to listen on. Unset: `localhost` (Probot's default) for a web process, 127.0.0.1
   * for a runner-only one; `0.0.0.0` for all interfaces (the Docker image sets it).
   */
  HOST: optional(z.string()),
  /** Log verbosity. */
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  /** GitHub Enterprise host (also used to point Tether at a local GitHub stand-in). */
  GHE_HOST: optional(z.string()),
  /** Protocol for GHE_HOST. */
  GHE_PROTOCOL: z.enum(["http", "https"]).default("https"),
  /** Postgres connection string; when unset an embedded PostgreSQL is started. */
  DATABASE_URL: optional(
    z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL"),
  ),
  /** Which parts run in this process: all (default), web, runner or migrate. */
  TETHER_ROLE: z.enum(["all", "web", "runner", "migrate"]).default("all"),
  /** Where Tether keeps its own files: the embedded database, workspaces by default. */
  TETHER_DATA_DIR: z.string().default(".data"),
  /** Port of the embedded PostgreSQL; 0 picks a free port. */
  TETHER_PG_PORT: intFrom(0, 65535).default(0),
  // Each agent CLI's binary is read from the variable its registry entry names (`pathEnv`,
  // src/cli-registry.ts), straight from the environment when the runner starts.
  /**
   * Where agents run: `bwrap` (default), a bubblewrap sandbox per run that sees its own
   * workspace and nothing of Tether's; `off` runs them as Tether's own user, able to read
   * whatever Tether can (its secrets, its database, other workspaces). Without a working
   * sandbox and without `off`, the runner runs no agent and says why.
   */
  TETHER_SANDBOX: z.enum(["bwrap", "off"]).default("bwrap"),
  /**
   * More host paths every sandbox sees, comma-separated, at the same path: read-only, or
   * read-write with a `:rw` suffix (shared by every sandbox, so only for tests and benchmarks).
   * For toolchains outside /usr, e.g. `/opt/jdk`.
   */
  TETHER_SANDBOX_BIND: optional(
    z
      .string()
      .transform((v) =>
        v
          .split(",")
          .map((p) => p.trim())
          .filter(Boolean),
      )
      .pipe(
        z.array(
          z
            .string()
            .regex(/^\/[^,:]*(:rw)?$/, "each entry must be an absolute path, optionally with :rw"),
        ),
      ),
  ),
  /**
   * Server-side tool types an agent's model calls may offer the provider, comma-separated
   * prefixes (`web_search` allows `web_search_20250305`); empty by default: the egress proxy
   * refuses every tool the provider runs itself (src/sandbox/model-call-rules.ts).
   */
  TETHER_PROXY_SERVER_TOOLS: optional(
    z
      .string()
      .transform((v) =>
        v
          .split(",")
          .map((p) => p.trim())
          .filter(Boolean),
      )
      .pipe(
        z.array(
          z
            .string()
            .regex(
              /^[A-Za-z][A-Za-z0-9_]{0,63}$/,
              "each entry must be a tool type prefix such as web_search",
            ),
        ),
      ),
  ),
  /** Root of the per-(repo, issue, agent) working directories. Default: <TETHER_DATA_DIR>/workspaces. */
  TETHER_WORKSPACE_DIR: optional(z.string()),
  /** Fixed runtime id; by default derived from host, the default CLI's store in $HOME and its binary. */
  TETHER_RUNTIME_ID: optional(
    z.string().regex(/^[\w.:@-]{1,128}$/, "must be 1-128 of [A-Za-z0-9_.:@-]"),
  ),
  /**
   * Bearer token for /dashboard and /api/stats, which always need one. Unset: a web process
   * makes a random one at first start and keeps it in <TETHER_DATA_DIR>/dashboard-token.
   */
  TETHER_DASHBOARD_TOKEN: optional(z.string().min(16, "must be at least 16 characters")),
  /**
   * Host names (comma-separated) under which operators reach the dashboard, besides localhost
   * and IP addresses: a request for /dashboard or /api/stats naming another Host is refused
   * (DNS rebinding). No scheme, port or path; matched without regard to case or port.
   */
  TETHER_PUBLIC_HOSTS: optional(
    z.string().transform((v, ctx) => {
      const hosts = v
        .split(",")
        .map((h) => h.trim().toLowerCase().replace(/\.$/, ""))
        .filter(Boolean);
      for (const h of hosts) {
        if (!HOST_NAME.test(h)) {
          ctx.addIssue({
            code: "custom",
            message: `${JSON.stringify(h)} is not a host name; list names such as tether.example.com, without scheme, port or path`,
          });
        }
      }
      return hosts;
    }),
  ),
  /**
   * The address operators open Tether's dashboard at (e.g. https://tether.example.com): with it,
   * every answer's footer links to the conversation's page there (operators only: it needs the
   * dashboard token). Unset: no link. http(s), no query or fragment.
   */
  TETHER_PUBLIC_URL: optional(
    z
      .url("must be a URL such as https://tether.example.com")
      .refine((v) => {
        // Runs after a failed URL check too: then it has nothing to add.
        if (!URL.canParse(v)) return true;
        const u = new URL(v);
        return /^https?:$/.test(u.protocol) && !u.search && !u.hash && !u.username && !u.password;
      }, "must be an http(s) URL without query, fragment or credentials, e.g. https://tether.example.com")
      .transform((v) => v.replace(/\/+$/, "")),
  ),
  /**
   * The live view of a running turn (/live/<task>, docs/operations.md "Live view"): `on` links
   * it from the tracking comment with a link signed for that turn; `token`: the link asks for
   * the dashboard's token instead; `off`: no live view (nothing recorded, the comment edited
   * every 3 s as before). Linked only when TETHER_PUBLIC_URL is set.
   */
  TETHER_LIVE: z.enum(["on", "off", "token"]).default("on"),
  /** Days a live link stays valid after its turn started. */
  TETHER_LIVE_LINK_DAYS: intFrom(1, 365).default(7),
  /**
   * With the live view linked: the least time, in seconds, between two progress edits of the
   * tracking comment after its first tool call (more edits: lower it).
   */
  TETHER_PROGRESS_EDIT_SECONDS: intFrom(3, 3600).default(60),
  /**
   * Largest webhook body read, in bytes; a larger one is refused with 413 before it is read.
   * The default fits the events Tether handles with room to spare (src/web/webhook-route.ts
   * shows the sums); at most GitHub's own 25 MB cap.
   */
  TETHER_WEBHOOK_MAX_BYTES: intFrom(65_536, 25 * 1024 * 1024).default(2 * 1024 * 1024),
  /**
   * How often, in minutes, a web process looks through GitHub's log of the app's webhook
   * deliveries for ones the endpoint failed to take (5xx, 408, 429, no answer) and asks GitHub to
   * redeliver them, which GitHub never does by itself. One replica at a time. 0: never.
   */
  TETHER_REDELIVER_MINUTES: intFrom(0, 24 * 60).default(5),
  /**
   * For tests: how old, in milliseconds, a failed delivery's newest attempt must be before it is
   * redelivered (GitHub, or another replica, may still be on it).
   */
  TETHER_REDELIVER_SETTLE_MS: intFrom(0, 3_600_000).default(120_000),
  /** For tests: how long after start, in milliseconds, the first redelivery sweep runs. */
  TETHER_REDELIVER_FIRST_DELAY_MS: intFrom(0, 3_600_000).default(30_000),
  /**
   * The least interval, in minutes, between two ticks of one schedule (`schedules:` in
   * `.github/tether.yml`): a schedule whose cron fires more often is a config error.
   */
  TETHER_SCHEDULE_MIN_MINUTES: intFrom(1, 10_080).default(10),
  /** For tests: how often, in milliseconds, each web process looks for due schedule ticks. */
  TETHER_SCHEDULE_CHECK_MS: intFrom(100, 3_600_000).default(30_000),
  /**
   * For tests: a file holding the time (ISO 8601) the scheduler takes for now, read at each
   * sweep, so an end-to-end test moves from tick to tick without waiting for the wall clock.
   */
  TETHER_SCHEDULE_CLOCK_FILE: optional(z.string().min(1)),
  /**
   * A JSON file of the MCP servers repositories may give their agents (`agents.<name>.mcpServers`
   * in .github/tether.yml), in Claude Code's `mcpServers` shape; checked at start
   * (src/config/mcp-servers.ts, docs/operations.md "MCP servers"). Unset: none.
   */
  TETHER_MCP_SERVERS: optional(z.string()),
  /** Bearer token for /metrics. Unset: /metrics is open (scrapers usually sit on a private network). */
  TETHER_METRICS_TOKEN: optional(z.string().min(16, "must be at least 16 characters")),
  /**
   * Largest session transcript kept in Postgres, in bytes. A session whose transcript grows
   * past it is not kept, and its next turn starts fresh (reason `session_too_large`).
   */
  TETHER_SESSION_MAX_BYTES: intFrom(1024 * 1024, 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  /**
   * Collection, in hours: a runner removes workspaces and cached transcripts no turn used for
   * this long (a later turn re-clones the workspace and restores the session from Postgres), and
   * prunes from Postgres the transcripts of sessions idle this long and past their repository's
   * `resume.ttlHours`. 0: never.
   */
  TETHER_COLLECT_IDLE_HOURS: intFrom(0, 24 * 365).default(7 * 24),
  /**
   * How long, in hours, collection keeps a poisoned or retired session's transcript in Postgres
   * after it broke, so an operator can read it (`tether transcript <session id>`).
   */
  TETHER_DEBUG_KEEP_HOURS: intFrom(0, 24 * 365).default(72),
  /** How many tasks one runner process runs at once. */
  TETHER_RUNNER_CONCURRENCY: intFrom(1, 256).default(2),
  /** How many webhook deliveries one web process hands to GitHub and the task queue at once. */
  TETHER_INTAKE_CONCURRENCY: intFrom(1, 64).default(4),
  /** How long shutdown may take in all, in milliseconds. */
  TETHER_SHUTDOWN_TIMEOUT_MS: intFrom(1000, 600_000).default(8000),
  /**
   * Space GitHub writes the way Probot does by default (1 s apart, comments 3 s apart per
   * installation), which keeps a busy installation clear of GitHub's secondary rate limits.
   * false turns the spacing off (for a local GitHub stand-in). Retries on 5xx and rate limits stay.
   */
  TETHER_GITHUB_THROTTLE: boolFrom.default(true),
  /**
   * GitHub API requests an installation keeps in reserve: when its rate-limit headroom
   * (x-ratelimit-remaining) falls below this, its turns wait, queued, until the window resets,
   * each thread told so once (src/runner/rate-limit-defer.ts says why 100). 0: never wait.
   */
  TETHER_RATE_LIMIT_RESERVE: intFrom(0, 1_000_000).default(100),
  /**
   * Wait before a final answer GitHub refused (past the request retries) is posted again, in
   * milliseconds; it doubles per failed try, up to 30 minutes, 20 tries in all. The task keeps
   * the status its run earned meanwhile; the answer waits in the tasks row (answer_pending).
   */
  TETHER_ANSWER_RETRY_MS: intFrom(100, 3_600_000).default(30_000),
  /**
   * File of KEY=value lines read at start (Probot's setup flow writes the app's credentials to
   * .env). Variables already in the environment win. Empty: read no file.
   */
  TETHER_ENV_FILE: z.string().default(".env"),
  /** Serve Probot's registration flow without creating a smee.io channel (for offline machines). */
  NO_SMEE_SETUP: optional(boolFrom),
});
export type Env = z.infer<typeof EnvSchema> & {
  /** Resolved absolute paths. */
  dataDir: string;
  workspaceDir: string;
  /** The operator's MCP servers (TETHER_MCP_SERVERS), by name; none when unset. */
  mcpServers: McpServers;
};

export class EnvError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid environment:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "EnvError";
  }
}

/** Parse the environment; throws EnvError naming each bad variable and what is wrong with it. */
export function loadEnv(source: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Env {
  const result = EnvSchema.safeParse(source);
  if (!result.success) {
    throw new EnvError(
      result.error.issues.map((issue) => {
        const name = issue.path.join(".") || "(environment)";
        const value = source[String(issue.path[0])];
        const shown =
          value === undefined ? "unset" : isSecretName(name) ? "(hidden)" : JSON.stringify(value);
        return `${name}: ${issue.message} (got ${shown})`;
      }),
    );
  }
  const env = result.data;
  const problems: string[] = [];
  if (env.APP_ID !== undefined && !env.PRIVATE_KEY && !env.PRIVATE_KEY_PATH) {
    problems.push("PRIVATE_KEY: APP_ID is set, so PRIVATE_KEY or PRIVATE_KEY_PATH must be set too");
  }
  if (env.APP_ID !== undefined && !env.WEBHOOK_SECRET) {
    problems.push(
      "WEBHOOK_SECRET: APP_ID is set, so WEBHOOK_SECRET must be set too (without it any delivery signed with Probot's default secret would be accepted)",
    );
  }
  if (env.GHE_HOST !== undefined && /[/\s]/.test(env.GHE_HOST)) {
    problems.push(
      `GHE_HOST: must be a host name with an optional port, no scheme or path (got ${JSON.stringify(env.GHE_HOST)})`,
    );
  }
  let mcpServers: McpServers = {};
  if (env.TETHER_MCP_SERVERS !== undefined) {
    const read = readMcpServers(path.resolve(cwd, env.TETHER_MCP_SERVERS));
    if (read.ok) mcpServers = read.servers;
    else problems.push(...read.problems.map((p) => `TETHER_MCP_SERVERS: ${p}`));
  }
  if (problems.length) throw new EnvError(problems);
  const dataDir = path.resolve(cwd, env.TETHER_DATA_DIR);
  return {
    ...env,
    dataDir,
    mcpServers,
    workspaceDir: path.resolve(cwd, env.TETHER_WORKSPACE_DIR ?? path.join(dataDir, "workspaces")),
  };
}

export function isSecretName(name: string): boolean {
  return /KEY|SECRET|TOKEN|PASSWORD|DATABASE_URL/i.test(name);
}

/**
 * KEY=value lines from TETHER_ENV_FILE (default .env, where Probot's setup flow writes the new
 * app's credentials) fill in what `target` does not already set. A missing file is no error.
 * Returns the names it set.
 */
export function applyEnvFile(target: NodeJS.ProcessEnv, cwd = process.cwd()): string[] {
  const file = target.TETHER_ENV_FILE ?? ".env";
  if (!file) return [];
  let text: string;
  try {
    text = readFileSync(path.resolve(cwd, file), "utf8");
  } catch {
    return [];
  }
  const set: string[] = [];
  for (const [key, value] of Object.entries(parseEnv(text))) {
    if (target[key] !== undefined) continue;
    target[key] = value;
    set.push(key);
  }
  return set;
}
