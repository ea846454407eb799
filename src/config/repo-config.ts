import { CACHE_TTL_SETTINGS, CHANGES_MODES, PLAN_SETTINGS } from "../core/settings.js";
import { CLI_NAMES, cliOf, DEFAULT_CLI } from "../cli-registry.js";
import { checkCron, isTimeZone, shortestGapMinutes } from "../core/schedule-cron.js";
import { z } from "zod";

/** Where a repository configures Tether (Probot's `context.config` path, under `.github/`). */
export const CONFIG_FILE = ".github/tether.yml";

/**
 * The built-in agent, answering to DEFAULT_MENTION. It exists only while no configured agent
 * answers to that mention: a repository may give `@tether` to an agent of its own (an agent
 * called `claude`, say), and then that agent is the one `@tether` reaches. Listing `tether`
 * under `agents` configures the built-in agent itself.
 */
export const DEFAULT_AGENT = "tether";
/** What addresses the built-in agent. */
export const DEFAULT_MENTION = `@${DEFAULT_AGENT}`;

/**
 * Model for agents that do not name one: their CLI's (its registry entry's `defaultModel`).
 * Passed explicitly on every run: without `--model` a CLI picked a different model for the first
 * resumed turn than for the fresh one, which missed the prompt cache.
 */
export const DEFAULT_MODEL = cliOf(DEFAULT_CLI).defaultModel;

const NAME_RE = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,38}$/;
const MENTION_RE = /^@[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;

/** An amount of US dollars: more than 0 (the CLI refuses `--max-budget-usd 0`), at most max. */
const dollars = (max: number) =>
  z
    .number("must be a number of US dollars, like 2.5")
    .gt(0, "must be more than 0")
    .max(max, `must be at most ${max}`);

/** A whole number in [min, max], with messages a config author can act on. */
const wholeNumber = (min: number, max: number) =>
  z
    .number("must be a number")
    .int("must be a whole number")
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

const ToolRule = z
  .string()
  .min(1, "must not be empty")
  .max(200, "must be at most 200 characters")
  .regex(/^[^\s-][^\n\r]*$/, "must be a tool name or rule like Bash(npm test:*)");

/** A host an agent may reach: `example.com`, or `*.example.com` for any name under it. */
const HostPattern = z
  .string()
  .max(253)
  .regex(
    /^(\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/,
    "must be a host name like registry.npmjs.org or *.pypi.org",
  )
  .transform((h) => h.toLowerCase());

const Login = z
  .string()
  .regex(
    /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}(?:\[bot\])?$/,
    "must be a GitHub login (bots may end in [bot])",
  );

export const PERMISSION_MODES = ["default", "acceptEdits", "bypassPermissions", "plan"] as const;
/** Whether a failed CI run on an agent's own pull request starts its turn. */
export const CI_MODES = ["fix", "off"] as const;

/** CI failures on the agent's own pull request (its conversation's, on the head commit). */
export const CiConfig = z.strictObject({
  /**
   * `fix`: when the checks on the head commit of the agent's own pull request fail, the agent
   * gets a turn (resumed like any follow-up) with the failing checks' output, annotations and
   * the tail of each failing Actions job's log, as data; its fix is pushed to the same branch.
   * `off`: CI results start nothing. Default: `fix`.
   */
  mode: z.enum(CI_MODES, "must be fix or off").default("fix"),
  /**
   * Most automatic CI turns in a row without a green run; the next failure gets one comment
   * saying Tether stopped, and nothing more until someone asks the agent again. Default: 3.
   */
  maxAttempts: wholeNumber(1, 20).default(3),
});
export type CiConfig = z.output<typeof CiConfig>;

/** Which reviews on an agent's pull request start its turn without a mention. */
export const REVIEW_TRIGGERS = ["changes_requested", "all", "mentions"] as const;
export const REPO_PERMISSIONS = ["read", "triage", "write", "maintain", "admin"] as const;
export type RepoPermission = (typeof REPO_PERMISSIONS)[number];

/** One named Claude configuration. Every field is optional in the file. */
/** A model id: what `model`, `models` and a comment's `/model <name>` may name. */
export const MODEL_ID = /^[A-Za-z0-9][\w.:[\]-]{0,99}$/;

export const AgentConfig = z.strictObject({
  /**
   * What addresses this agent in a comment: `@` and a GitHub-style name, matched without regard
   * to case. Default: `@<agent name>` (so the default agent answers to `@tether`).
   */
  mention: z.string().regex(MENTION_RE, "must be @ followed by a GitHub-style name").optional(),
  /**
   * Which agent CLI runs this agent: a name in the registry of CLIs (src/cli-registry.ts). A
   * session belongs to its CLI: changing it starts the next turn fresh. Default: the first.
   */
  cli: z.enum(CLI_NAMES, `must be ${CLI_NAMES.join(" or ")}`).default(DEFAULT_CLI),
  /** Model id passed on every turn. Default: the CLI's (its registry entry's `defaultModel`). */
  model: z.string().regex(MODEL_ID, `must be a model id like ${DEFAULT_MODEL}`).optional(),
  /**
   * The models a comment may ask for with `/model <name>` (one turn on another model), besides
   * `model`. Default: any model id the CLI accepts.
   */
  models: z
    .array(z.string().regex(MODEL_ID, `must be a model id like ${DEFAULT_MODEL}`))
    .max(50)
    .optional(),
  /**
   * The models the CI loop moves up to after each failed attempt: a CI turn's first attempt runs
   * on `model`, attempt n+1 on the nth of these (the last one once they run out), resuming the
   * same session. Each must be one of `models` when those are listed. Default: none (every
   * attempt on `model`).
   */
  escalate: z
    .array(z.string().regex(MODEL_ID, `must be a model id like ${DEFAULT_MODEL}`))
    .min(1, "list at least one model, or leave it out")
    .max(20, "must list at most 20 models")
    .optional(),
  /** Most agentic turns in one run (for a CLI whose entry has `turnLimit`). Default: 30. */
  maxTurns: wholeNumber(1, 500).default(30),
  /** A run is stopped after this many minutes. Default: 30. */
  timeoutMinutes: wholeNumber(1, 1440).default(30),
  /** A run that prints nothing for this many minutes is stopped as stalled. Default: 10. */
  stallMinutes: wholeNumber(1, 240).default(10),
  /** Tools (or rules like `Bash(npm test:*)`) allowed without asking (`--allowedTools`). Default: none beyond the CLI's. */
  allowedTools: z.array(ToolRule).max(100).default([]),
  /** Tools (or rules) never allowed (`--disallowedTools`). Default: none. */
  disallowedTools: z.array(ToolRule).max(100).default([]),
  /**
   * The CLI's `--permission-mode`. Default: `acceptEdits`: the agent edits files in its own
   * workspace (that is its job) while shell commands still need `allowedTools`.
   */
  permissionMode: z.enum(PERMISSION_MODES).default("acceptEdits"),
  /** Extra instructions appended to the system prompt (`--append-system-prompt`). Default: none. */
  appendSystemPrompt: z.string().max(20_000).optional(),
  /**
   * Where the agent may connect besides the model API, through Tether's egress proxy:
   * `model-only` (nothing else), `open` (any public host, ports 80 and 443), or a list of host
   * names (`registry.npmjs.org`, `*.pypi.org`). Private, loopback and link-local addresses are
   * never reachable. Default: `model-only`.
   */
  network: z
    .union([
      z.enum(["model-only", "open"]),
      z.array(HostPattern).min(1, "list at least one host, or use model-only").max(100),
    ])
    .default("model-only"),
  /**
   * Give the agent the repository's own instructions file (CLAUDE.md), as the default branch
   * has it (at most 32 KiB), after the system prompt. Off by default: the CLI never reads the
   * checkout's copy, which a pull request could change. Default: false.
   */
  projectInstructions: z.boolean().default(false),
  /**
   * What becomes of the files the agent changes (docs/changes.md "Changes"): `pull_request` (Tether
   * commits them, pushes them to the conversation's branch `tether/<issue>-<agent>` and opens a
   * pull request), `branch` (the same without the pull request), or `off` (they stay in the
   * workspace). An agent in `plan` mode never publishes. Default: `pull_request`.
   */
  changes: z.enum(CHANGES_MODES).default("pull_request"),
  /**
   * Most a single turn may spend, in US dollars: passed as the CLI's `--max-budget-usd`. The
   * CLI checks it after each model call, so a turn can go over by one call, and then stops the
   * run (outcome `turn_limit`). Default: none.
   */
  turnLimitUsd: dollars(10_000).optional(),
  /**
   * Most one conversation (this agent on one issue or pull request) may spend, in US dollars,
   * summed from the recorded cost of its turns. A turn that would start at or over it is not
   * run; the thread is told what was spent and how to go on. Default: none.
   */
  conversationLimitUsd: dollars(1_000_000).optional(),
  /**
   * On a pull request, the review the agent's line comments are posted in may request changes
   * when the agent asks (its `request_changes` tool); otherwise every review only comments.
   * The agent never approves. Default: false.
   */
  requestChanges: z.boolean().default(false),
  /**
   * Which reviews of the agent's own pull request (its conversation's) start a turn without
   * mentioning it, from someone allowed to trigger: `changes_requested`, `all` (any submitted
   * review), or `mentions` (only a review whose body mentions the agent, as anywhere else). The
   * review's body and line comments reach the agent as context. Default: `changes_requested`.
   */
  reviews: z
    .enum(REVIEW_TRIGGERS, "must be changes_requested, all or mentions")
    .default("changes_requested"),
  /**
   * A label that starts this agent's turn on an issue or pull request when someone allowed to
   * trigger adds it, with the issue (its title and description) as the request; `false`: no
   * label does. Removing the label cancels nothing. Default: the agent's name (`tether`).
   */
  label: z
    .union([
      z
        .string()
        .min(1, "must not be empty")
        .max(50, "must be at most 50 characters (GitHub's limit)")
        .regex(/^[^\n\r]+$/, "must be one line"),
      z.literal(false),
    ])
    .optional(),
  /**
   * A GitHub login: assigning an issue or pull request to it (by someone allowed to trigger)
   * starts this agent's turn, as the label does. Default: none.
   */
  assignee: Login.optional(),
  /**
   * How long the model API keeps each turn's prompt cached (Claude agents; docs/benchmarks.md "By the gap
   * between comments"): `5m` (cache writes at 1.25× the input price), `1h` (writes at 2×), or `auto`:
   * an hour when the conversation's previous turn came within the hour, else five minutes.
   * A resumed turn reads its session from the cache only within the lifetime the turn before it
   * asked for. Default: `auto`, the cheapest over the gaps measured (bench/savings-gaps.ts).
   */
  cacheTtl: z.enum(CACHE_TTL_SETTINGS, "must be 5m, 1h or auto").default("auto"),
  /**
   * `always`: the first turn of every conversation is a plan (as if asked with `/plan`): read-only,
   * answered with a plan, nothing published, until someone allowed to trigger says `/go`.
   * `off`: only `/plan` asks for one. Default: `off`.
   */
  plan: z.enum(PLAN_SETTINGS, "must be always or off").default("off"),
  /** What a failed CI run on the agent's own pull request does (README "Talking to Tether"). */
  ci: CiConfig.default(CiConfig.parse({})),
  /**
   * MCP servers the agent gets, by name: names from the operator's list (TETHER_MCP_SERVERS,
   * docs/operations.md "MCP servers"). A repository picks; it never defines a command, URL or
   * secret. Default: none.
   */
  mcpServers: z
    .array(z.string().min(1).max(48))
    .max(20, "must list at most 20 servers")
    .refine((l) => new Set(l).size === l.length, "lists a server twice")
    .default([]),
});
export type AgentConfig = Omit<z.output<typeof AgentConfig>, "label"> & {
  mention: string;
  model: string;
  /** The label that starts its turn (resolved: the agent's name unless set); null: none. */
  label: string | null;
};

/** The longest time to live a repository may give its sessions (90 days). */
export const MAX_RESUME_TTL_HOURS = 24 * 90;

/** When a follow-up may resume the key's session instead of starting fresh. */
export const ResumeConfig = z.strictObject({
  /** Resume sessions at all. `false` makes every turn fresh (reason `resume_disabled`). Default: true. */
  enabled: z.boolean().default(true),
  /** A session idle (no turn) for longer than this many hours is not resumed (reason `expired`). Default: 72. */
  ttlHours: z.number().positive().max(MAX_RESUME_TTL_HOURS).default(72),
  /** Share (0–1] of the model's context window a session may fill and still be resumed (reason `context_budget`). Default: 0.8. */
  contextBudget: z
    .number("must be a number")
    .gt(0, "must be more than 0")
    .max(1, "must be at most 1 (the whole window)")
    .default(0.8),
  /**
   * A session past `contextBudget` is compacted (the CLI summarises it, `/compact`) and the
   * summary resumed (reason `compacted`), instead of starting fresh (`context_budget`). Only for
   * a CLI that can compact on request without a terminal (its entry's `compactPrompt`). Default: true.
   */
  compact: z.boolean().default(true),
});
export type ResumeConfig = z.output<typeof ResumeConfig>;

/** How the agents' changes are published, for every agent whose `changes` is not `off`. */
export const PublishConfig = z.strictObject({
  /** Open pull requests as drafts. Default: true. */
  draft: z.boolean().default(true),
  /**
   * How a pull request refers to its issue: `closes` (`Closes #N`: merging it closes the issue)
   * or `refs` (`Refs #N`). Default: `closes`.
   */
  link: z.enum(["closes", "refs"]).default("closes"),
  /**
   * Deprecated: `changes.protectedPaths` says it now. `true` still publishes changes under
   * `.github/workflows/` whatever `changes.protectedPaths` protects (the app must also have the
   * `workflows` permission, which app.yml does not ask for). Default: false.
   */
  workflows: z.boolean().default(false),
  /** Most files one push may add, change or delete (1–1000). Default: 100. */
  maxFiles: wholeNumber(1, 1000).default(100),
  /** Most bytes of new file contents one push may carry (1 KiB – 50 MiB). Default: 1 MiB. */
  maxBytes: wholeNumber(1024, 50 * 1024 * 1024).default(1024 * 1024),
});
export type PublishConfig = z.output<typeof PublishConfig>;

/** A `changes.protectedPaths` pattern (src/publish/protected-paths.ts says how it matches). */
const PathGlob = z
  .string()
  .min(1, "must not be empty")
  .max(300, "at most 300 characters")
  .refine((s) => !s.startsWith("/") && !s.startsWith("!"), {
    message: "is a path from the repository's root: no leading / or !",
  })
  .refine((s) => !s.includes("\\"), { message: "uses / between directories, not \\" });

/** What the agents may change, for every agent. */
export const ChangesConfig = z.strictObject({
  /**
   * Paths the agent may not change (globs from the repository's root: `*` within a directory,
   * `**` across them, `dir/` for all under it). A change that adds, changes or deletes one is
   * refused (`protected-path`; `workflow` under `.github/workflows/`). CI runs what these hold
   * with the repository's secrets. Default: `[".github/**"]`; add `package.json`, `Makefile`,
   * `scripts/**` for what CI runs. Setting it replaces the default.
   */
  protectedPaths: z.array(PathGlob).max(100, "at most 100 patterns").default([".github/**"]),
  /**
   * Make each turn's commit through GitHub's Git Data API (blobs, a tree, a commit, the branch's
   * ref) instead of a git push, so that GitHub signs it and marks it "Verified", as branches
   * that require signed commits demand. A change that needs more requests than one publish may
   * make (`SIGNED_COMMIT_REQUEST_BUDGET`) is pushed with git instead, with a note, unless the
   * branch requires signatures: then it is refused. `false`: always a git push. Default: true.
   */
  signedCommits: z.boolean().default(true),
});
export type ChangesConfig = z.output<typeof ChangesConfig>;

/** Who may trigger agents. */
export const AccessConfig = z.strictObject({
  /** Least repository permission a comment author needs. Default: `write`. */
  minPermission: z.enum(REPO_PERMISSIONS).default("write"),
  /** Users who may trigger agents whatever their permission. Default: none. */
  allowUsers: z.array(Login).max(500).default([]),
  /** Bots (e.g. `renovate[bot]`) whose comments may trigger agents; other bots never do. Default: none. */
  allowBots: z.array(Login).max(100).default([]),
});
export type AccessConfig = z.output<typeof AccessConfig>;

/** Spend limits over many conversations, and what `/fresh` does to a conversation's count. */
export const SpendConfig = z.strictObject({
  /**
   * Most this repository may spend in a calendar month (UTC), in US dollars, summed over every
   * agent and issue from the recorded cost of their turns. Default: none.
   */
  repositoryMonthlyUsd: dollars(10_000_000).optional(),
  /**
   * Most the GitHub App installation this repository belongs to (an organisation or account)
   * may spend in a calendar month (UTC), summed over all its repositories. Set it in the
   * organisation's `.github` repository so every repository inherits it. Default: none.
   */
  installationMonthlyUsd: dollars(10_000_000).optional(),
  /**
   * Whether `/fresh` starts a conversation's spend count again. Off: the conversation limit
   * counts every turn the agent ever ran on the issue, so a limit cannot be stepped around by
   * starting over; only raising it lets the conversation go on. On: a `/fresh` turn starts a
   * new count. Default: false.
   */
  freshResetsConversation: z.boolean().default(false),
});
export type SpendConfig = z.output<typeof SpendConfig>;

/**
 * The MCP servers the operator offers (TETHER_MCP_SERVERS), by name: set once at start
 * (src/main.ts), so every reading of the file refuses a name the operator has not configured.
 */
let mcpServerNames: readonly string[] = [];
export function setMcpServerNames(names: readonly string[]): void {
  mcpServerNames = [...names];
}

/** Most schedules one repository may have. */
export const MAX_SCHEDULES = 20;

/**
 * The least interval between two ticks of one schedule, in minutes: TETHER_SCHEDULE_MIN_MINUTES,
 * set once at start (src/main.ts) so every reading of the file, a comment's and the scheduler's,
 * refuses the same schedules.
 */
let scheduleMinMinutes = 10;
export function setScheduleMinMinutes(minutes: number): void {
  scheduleMinMinutes = minutes;
}

/**
 * A standing conversation: an agent's turn on a schedule, each turn a follow-up in the same
 * conversation (README "Talking to Tether"; docs/operations.md "Schedules"). Read from the
 * default branch only.
 */
export const ScheduleConfig = z.strictObject({
  /**
   * When it runs: a five-field cron expression (minute hour day-of-month month day-of-week),
   * in UTC unless `timezone` names a zone. Its ticks must be at least TETHER_SCHEDULE_MIN_MINUTES
   * apart.
   */
  cron: z.string('must be a cron expression like "0 9 * * 1"').max(200),
  /** The IANA time zone the cron expression is read in, like `Europe/Paris`. Default: `UTC`. */
  timezone: z
    .string()
    .refine(isTimeZone, "must be an IANA time zone like Europe/Paris or UTC")
    .default("UTC"),
  /** The agent whose turn it is (a name under `agents`, or `tether`). Default: the default agent. */
  agent: z.string().regex(NAME_RE, "must be an agent's name").optional(),
  /** The issue whose conversation each turn continues; its answers are posted there. */
  issue: wholeNumber(1, 2_147_483_647).optional(),
  /**
   * Instead of `issue`: the first run opens an issue with this title and every later run keeps
   * using it.
   */
  title: z
    .string()
    .min(1, "must not be empty")
    .max(256, "must be at most 256 characters")
    .regex(/^[^\n\r]+$/, "must be one line")
    .optional(),
  /** What the agent is asked each time (Tether adds when the last scheduled turn ran). */
  request: z.string("must be the request's text").min(1, "must not be empty").max(20_000),
});
export type ScheduleConfig = z.output<typeof ScheduleConfig>;

/** YAML `key:` with nothing after it is null; read it as "all defaults", like an absent key. */
const orEmpty = <T extends z.ZodType>(schema: T) => z.preprocess((v) => v ?? {}, schema);

const RepoConfigInput = z.strictObject({
  /** Agents by name (lower case, GitHub-name characters). `tether` always exists. */
  agents: orEmpty(
    z.record(
      z.string().regex(NAME_RE, "agent names are lower case letters, digits and hyphens"),
      orEmpty(AgentConfig),
    ),
  ),
  /** Resume policy, for every agent. */
  resume: orEmpty(ResumeConfig),
  /** Who may trigger agents. */
  access: orEmpty(AccessConfig),
  /** How the agents' changes are published. */
  publish: orEmpty(PublishConfig),
  /** What the agents may change. */
  changes: orEmpty(ChangesConfig),
  /** Monthly spend limits, and the conversation count's reset rule. */
  spend: orEmpty(SpendConfig),
  /** Scheduled turns, each continuing one conversation (at most MAX_SCHEDULES). */
  schedules: z.preprocess((v) => v ?? [], z.array(ScheduleConfig)),
});

/** The validated `.github/tether.yml`, with defaults filled in and every agent's mention resolved. */
export const RepoConfig = RepoConfigInput.superRefine((cfg, ctx) => {
  if (Object.keys(cfg.agents).length > 20)
    ctx.addIssue({ code: "custom", path: ["agents"], message: "at most 20 agents" });
  // Only configured agents can collide: the built-in one steps aside for an agent that takes
  // its mention (resolveAgents), so giving `@tether` to an agent of one's own is not an error.
  const byMention = new Map<string, string[]>();
  for (const [name, agent] of Object.entries(cfg.agents)) {
    const mention = (agent.mention ?? `@${name}`).toLowerCase();
    byMention.set(mention, [...(byMention.get(mention) ?? []), name]);
  }
  for (const [mention, names] of byMention) {
    if (names.length < 2) continue;
    const quoted = names.map((n) => `"${n}"`);
    const list = `${quoted.slice(0, -1).join(", ")} and ${quoted.at(-1)}`;
    for (const name of names.slice(1))
      ctx.addIssue({
        code: "custom",
        path: ["agents", name, "mention"],
        message: `${mention} addresses ${names.length === 2 ? "both " : ""}agents ${list}; give each its own mention`,
      });
  }
  for (const [name, a] of Object.entries(cfg.agents)) {
    // An escalation the agent may not be asked for by `/model` is refused as a comment's would be.
    if (!a.escalate || !a.models) continue;
    const allowed = new Set([a.model ?? defaultModel(a.cli), ...a.models]);
    a.escalate.forEach((m, i) => {
      if (!allowed.has(m))
        ctx.addIssue({
          code: "custom",
          path: ["agents", name, "escalate", i],
          message: `${m} is not one of this agent's models (${[...allowed].join(", ")}); add it to models or remove it here`,
        });
    });
  }
  for (const [name, a] of Object.entries(cfg.agents)) {
    const cli = cliOf(a.cli);
    if (cli.toolRules) continue;
    // Tool rules mean nothing to a CLI without them; silently ignoring them would widen what the
    // agent may do without its author knowing.
    for (const key of ["allowedTools", "disallowedTools"] as const) {
      if (a[key].length > 0)
        ctx.addIssue({
          code: "custom",
          path: ["agents", name, key],
          message: `is a tool rule; a cli: ${cli.name} agent has none (remove it)`,
        });
    }
  }
  for (const [name, a] of Object.entries(cfg.agents)) {
    a.mcpServers.forEach((server, i) => {
      if (!mcpServerNames.includes(server))
        ctx.addIssue({
          code: "custom",
          path: ["agents", name, "mcpServers", i],
          message: mcpServerNames.length
            ? `no MCP server is called ${server} (this Tether offers ${mcpServerNames.join(", ")})`
            : `no MCP server is called ${server} (this Tether offers none; its operator sets them in TETHER_MCP_SERVERS)`,
        });
    });
    const mcp = cliOf(a.cli).mcpServers;
    if (a.mcpServers.length > 0 && mcp !== true)
      ctx.addIssue({
        code: "custom",
        path: ["agents", name, "mcpServers"],
        message: `a cli: ${a.cli} agent cannot be given MCP servers: ${mcp.why}`,
      });
  }
  checkSchedules(cfg, ctx);
}).transform((cfg) => ({ ...cfg, agents: resolveAgents(cfg.agents) }));

/** Each schedule names a known agent, one issue or title, and a cron no tighter than the minimum. */
function checkSchedules(
  cfg: z.output<typeof RepoConfigInput>,
  ctx: z.core.$RefinementCtx<z.output<typeof RepoConfigInput>>,
): void {
  if (cfg.schedules.length > MAX_SCHEDULES)
    ctx.addIssue({
      code: "custom",
      path: ["schedules"],
      message: `at most ${MAX_SCHEDULES} schedules a repository (there are ${cfg.schedules.length})`,
    });
  const agents = resolveAgents(cfg.agents);
  const defaultAgent = defaultAgentOf(agents);
  const seen = new Map<string, number>();
  cfg.schedules.forEach((s, i) => {
    const at = (field: string) => ["schedules", i, field];
    const agent = s.agent ?? defaultAgent;
    if (!(agent in agents))
      ctx.addIssue({
        code: "custom",
        path: at("agent"),
        message: `no agent is called ${agent} (agents: ${Object.keys(agents).join(", ")})`,
      });
    if ((s.issue === undefined) === (s.title === undefined))
      ctx.addIssue({
        code: "custom",
        path: at("issue"),
        message: "give either issue (a number) or title (an issue the first run opens), not both",
      });
    const cron = checkCron(s.cron, s.timezone);
    if (!cron.ok) ctx.addIssue({ code: "custom", path: at("cron"), message: cron.message });
    else if (isTimeZone(s.timezone)) {
      const gap = shortestGapMinutes(s.cron, s.timezone, new Date(Date.UTC(2026, 0, 1)));
      if (gap < scheduleMinMinutes)
        ctx.addIssue({
          code: "custom",
          path: at("cron"),
          message: `runs every ${gap} minute${gap === 1 ? "" : "s"}; schedules run at most every ${scheduleMinMinutes} minutes (TETHER_SCHEDULE_MIN_MINUTES)`,
        });
    }
    const key = scheduleKey({ agent, issue: s.issue, title: s.title });
    const first = seen.get(key);
    if (first !== undefined)
      ctx.addIssue({
        code: "custom",
        path: at(s.issue !== undefined ? "issue" : "title"),
        message: `schedules[${first}] already continues this conversation (${agent}); one schedule per agent and issue`,
      });
    else seen.set(key, i);
  });
}

/**
 * The agent a schedule without `agent:` runs: the one `@tether` addresses (the built-in agent,
 * or the configured agent that took its mention).
 */
export function defaultAgentOf(agents: Record<string, AgentConfig>): string {
  const byMention = Object.entries(agents).find(
    ([, a]) => a.mention.toLowerCase() === DEFAULT_MENTION.toLowerCase(),
  );
  return byMention?.[0] ?? DEFAULT_AGENT;
}

/**
 * What identifies a schedule across edits of the file: its conversation (agent, and issue or
 * title). Changing its cron or request keeps its issue and its last run.
 */
export function scheduleKey(s: {
  agent: string;
  issue?: number | undefined;
  title?: string | undefined;
}): string {
  return s.issue !== undefined ? `${s.agent}#${s.issue}` : `${s.agent}:${s.title ?? ""}`;
}
export type RepoConfig = z.output<typeof RepoConfig>;

/** The model of an agent that names none: its CLI's (the registry entry's `defaultModel`). */
function defaultModel(cli: string): string {
  return cliOf(cli).defaultModel;
}

/**
 * The agents a repository has: the configured ones, each with its mention resolved, and the
 * built-in agent when no configured agent answers to its mention (and it is not configured
 * itself under its own name).
 */
function resolveAgents(
  configured: Record<string, z.output<typeof AgentConfig>>,
): Record<string, AgentConfig> {
  const agents: Record<string, AgentConfig> = {};
  const withModel = (agent: z.output<typeof AgentConfig>) => agent.model ?? defaultModel(agent.cli);
  const labelOf = (name: string, agent: z.output<typeof AgentConfig>) =>
    agent.label === false ? null : (agent.label ?? name);
  for (const [name, agent] of Object.entries(configured))
    agents[name] = {
      ...agent,
      mention: agent.mention ?? `@${name}`,
      model: withModel(agent),
      label: labelOf(name, agent),
    };
  const taken = Object.values(agents).some(
    (a) => a.mention.toLowerCase() === DEFAULT_MENTION.toLowerCase(),
  );
  if (!taken && !(DEFAULT_AGENT in agents))
    return {
      [DEFAULT_AGENT]: {
        ...AgentConfig.parse({}),
        mention: DEFAULT_MENTION,
        model: DEFAULT_MODEL,
        label: DEFAULT_AGENT,
      },
      ...agents,
    };
  return agents;
}

/** The configuration of a repository without `.github/tether.yml`. */
export const DEFAULT_CONFIG: RepoConfig = RepoConfig.parse({});

export interface ConfigProblem {
  /** Dotted path to the field, e.g. `agents.reviewer.maxTurns`; `(file)` for the file as a whole. */
  path: string;
  message: string;
}

export type ParsedConfig =
  { ok: true; config: RepoConfig } | { ok: false; problems: ConfigProblem[] };

/** Validate the merged contents of the config file(s); `null`/`undefined` (no file) gives the defaults. */
export function parseRepoConfig(raw: unknown): ParsedConfig {
  if (raw === null || raw === undefined) return { ok: true, config: DEFAULT_CONFIG };
  if (typeof raw !== "object" || Array.isArray(raw))
    return {
      ok: false,
      problems: [
        {
          path: "(file)",
          message:
            "must be a mapping of settings (agents, resume, access, publish, spend, schedules)",
        },
      ],
    };
  const result = RepoConfig.safeParse(raw);
  if (result.success) return { ok: true, config: result.data };
  return { ok: false, problems: result.error.issues.flatMap(toProblems) };
}

function toProblems(issue: z.core.$ZodIssue): ConfigProblem[] {
  const base = issue.path.map(String);
  if (issue.code === "unrecognized_keys") {
    const known = knownKeys(base);
    return issue.keys.map((key) => {
      const guess = closest(key, known);
      return {
        path: formatPath([...base, key]),
        message: guess
          ? `unknown setting; did you mean "${guess}"?`
          : `unknown setting${known.length ? ` (known: ${known.join(", ")})` : ""}`,
      };
    });
  }
  if (issue.code === "invalid_key") {
    return [
      { path: formatPath(base), message: "agent names are lower case letters, digits and hyphens" },
    ];
  }
  return [{ path: formatPath(base), message: issue.message }];
}

function knownKeys(path: string[]): string[] {
  if (path.length === 0) return Object.keys(RepoConfigInput.shape);
  if (path[0] === "agents" && path.length === 2) return Object.keys(AgentConfig.shape);
  if (path[0] === "resume" && path.length === 1) return Object.keys(ResumeConfig.shape);
  if (path[0] === "access" && path.length === 1) return Object.keys(AccessConfig.shape);
  if (path[0] === "publish" && path.length === 1) return Object.keys(PublishConfig.shape);
  if (path[0] === "spend" && path.length === 1) return Object.keys(SpendConfig.shape);
  if (path[0] === "schedules" && path.length === 2) return Object.keys(ScheduleConfig.shape);
  return [];
}

/** The known key within edit distance 2 of a typo, if any. */
function closest(key: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const d = editDistance(key.toLowerCase(), k.toLowerCase(), bestD);
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) >= cap || a.length > 64 || b.length > 64) return cap;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(
        prev[j]! + 1,
        cur[j - 1]! + 1,
        prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    prev = cur;
  }
  return prev[b.length]!;
}

function formatPath(parts: string[]): string {
  if (!parts.length) return "(file)";
  return parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i ? `.${p}` : p)).join("");
}

/** The reply posted in the thread when the file is invalid. */
export function formatConfigProblems(problems: ConfigProblem[], file = CONFIG_FILE): string {
  const shown = problems.slice(0, 20);
  const lines = shown.map((p) => `- \`${p.path}\`: ${escapeMarkdown(p.message)}`);
  if (problems.length > shown.length) lines.push(`- … and ${problems.length - shown.length} more`);
  return [
    `Invalid config in ${file}:`,
    "",
    ...lines,
    "",
    "No task was started. Fix the file on the default branch, then comment again.",
  ].join("\n");
}

/** Messages may quote user input; keep it from pinging people or breaking the list. */
function escapeMarkdown(text: string): string {
  return text.replace(/@/g, "@\u200b").replace(/\r?\n/g, " ").slice(0, 500);
}

/**
 * The mentions a config addresses agents by, read leniently from a file that failed validation:
 * only comments that address one of them get the "invalid config" reply, so a broken file does
 * not make Tether answer every `@someone` in the repository.
 */
export function mentionsOf(raw: unknown): Array<{ agent: string; mention: string }> {
  const out = new Map<string, string>();
  const agents = isRecord(raw) ? raw.agents : undefined;
  if (isRecord(agents)) {
    for (const [name, agent] of Object.entries(agents).slice(0, 50)) {
      const m = isRecord(agent) ? agent.mention : undefined;
      if (typeof m === "string" && MENTION_RE.test(m)) out.set(name, m);
      else if (NAME_RE.test(name)) out.set(name, `@${name}`);
    }
  }
  // The same rule as a valid file: the built-in agent only while nobody else answers to it.
  const taken = [...out.values()].some((m) => m.toLowerCase() === DEFAULT_MENTION.toLowerCase());
  if (!taken && !out.has(DEFAULT_AGENT))
    return [{ agent: DEFAULT_AGENT, mention: DEFAULT_MENTION }, ...toList(out)];
  return toList(out);
}

function toList(m: Map<string, string>): Array<{ agent: string; mention: string }> {
  return [...m].map(([agent, mention]) => ({ agent, mention }));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
