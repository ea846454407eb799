/**
 * One agent of `.github/tether.yml` (`agents.<name>`): its schema, the checks across agents, and
 * how the configured agents resolve (mentions, models, labels, the built-in agent).
 */
import { CACHE_TTL_SETTINGS, CHANGES_MODES, PLAN_SETTINGS } from "../core/settings.js";
import type { ConfigCli, ConfigClis } from "../core/cli-abilities.js";
import { z } from "zod";
import { dollars, Login, MENTION_RE, wholeNumber } from "./config-fields.js";

/**
 * The built-in agent, answering to DEFAULT_MENTION. It exists only while no configured agent
 * answers to that mention: a repository may give `@tether` to an agent of its own (an agent
 * called `claude`, say), and then that agent is the one `@tether` reaches. Listing `tether`
 * under `agents` configures the built-in agent itself.
 */
export const DEFAULT_AGENT = "tether";
/** What addresses the built-in agent. */
export const DEFAULT_MENTION = `@${DEFAULT_AGENT}`;

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

/** A model id: what `model`, `models` and a comment's `/model <name>` may name. */
export const MODEL_ID = /^[A-Za-z0-9][\w.:[\]-]{0,99}$/;

/** An agent's fields that are the same whichever CLIs are registered. */
const AgentFields = z.strictObject({
  /**
   * What addresses this agent in a comment: `@` and a GitHub-style name, matched without regard
   * to case. Default: `@<agent name>` (so the default agent answers to `@tether`).
   */
  mention: z.string().regex(MENTION_RE, "must be @ followed by a GitHub-style name").optional(),
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

/**
 * One named agent's configuration, for the CLIs the registry hands in (src/cli-registry.ts; this
 * folder sits below the CLIs and never imports it). Every field is optional in the file.
 */
export function agentConfigSchema(clis: ConfigClis) {
  const names = clis.map((c) => c.name) as [string, ...string[]];
  const modelLike = `must be a model id like ${clis[0].defaultModel}`;
  const { mention, ...rest } = AgentFields.shape;
  return z.strictObject({
    mention,
    /**
     * Which agent CLI runs this agent: a name in the registry of CLIs (src/cli-registry.ts). A
     * session belongs to its CLI: changing it starts the next turn fresh. Default: the first.
     */
    cli: z.enum(names, `must be ${names.join(" or ")}`).default(names[0]),
    /** Model id passed on every turn. Default: the CLI's (its registry entry's `defaultModel`). */
    model: z.string().regex(MODEL_ID, modelLike).optional(),
    /**
     * The models a comment may ask for with `/model <name>` (one turn on another model), besides
     * `model`. Default: any model id the CLI accepts.
     */
    models: z.array(z.string().regex(MODEL_ID, modelLike)).max(50).optional(),
    /**
     * The models the CI loop moves up to after each failed attempt: a CI turn's first attempt runs
     * on `model`, attempt n+1 on the nth of these (the last one once they run out), resuming the
     * same session. Each must be one of `models` when those are listed. Default: none (every
     * attempt on `model`).
     */
    escalate: z
      .array(z.string().regex(MODEL_ID, modelLike))
      .min(1, "list at least one model, or leave it out")
      .max(20, "must list at most 20 models")
      .optional(),
    ...rest,
  });
}
/** An agent as the file states it, its defaults filled in (before resolveAgents). */
export type AgentInput = z.output<ReturnType<typeof agentConfigSchema>>;
export type AgentConfig = Omit<AgentInput, "label"> & {
  mention: string;
  model: string;
  /** The label that starts its turn (resolved: the agent's name unless set); null: none. */
  label: string | null;
};

/**
 * The MCP servers the operator offers (TETHER_MCP_SERVERS), by name: set once at start
 * (src/main.ts), so every reading of the file refuses a name the operator has not configured.
 */
let mcpServerNames: readonly string[] = [];
export function setMcpServerNames(names: readonly string[]): void {
  mcpServerNames = [...names];
}

/** The checks across a file's agents: how many, their mentions, escalations, tool rules, MCP servers. */
export function checkAgents(
  agents: Record<string, AgentInput>,
  ctx: z.core.$RefinementCtx,
  clis: ConfigClis,
): void {
  if (Object.keys(agents).length > 20)
    ctx.addIssue({ code: "custom", path: ["agents"], message: "at most 20 agents" });
  // Only configured agents can collide: the built-in one steps aside for an agent that takes
  // its mention (resolveAgents), so giving `@tether` to an agent of one's own is not an error.
  const byMention = new Map<string, string[]>();
  for (const [name, agent] of Object.entries(agents)) {
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
  for (const [name, a] of Object.entries(agents)) {
    // An escalation the agent may not be asked for by `/model` is refused as a comment's would be.
    if (!a.escalate || !a.models) continue;
    const allowed = new Set([a.model ?? cliIn(clis, a.cli).defaultModel, ...a.models]);
    a.escalate.forEach((m, i) => {
      if (!allowed.has(m))
        ctx.addIssue({
          code: "custom",
          path: ["agents", name, "escalate", i],
          message: `${m} is not one of this agent's models (${[...allowed].join(", ")}); add it to models or remove it here`,
        });
    });
  }
  for (const [name, a] of Object.entries(agents)) {
    const cli = cliIn(clis, a.cli);
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
  for (const [name, a] of Object.entries(agents)) {
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
    const mcp = cliIn(clis, a.cli).mcpServers;
    if (a.mcpServers.length > 0 && mcp !== true)
      ctx.addIssue({
        code: "custom",
        path: ["agents", name, "mcpServers"],
        message: `a cli: ${a.cli} agent cannot be given MCP servers: ${mcp.why}`,
      });
  }
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

/** The CLI of that name (validated by the schema's enum before the checks run). */
function cliIn(clis: ConfigClis, name: string): ConfigCli {
  const cli = clis.find((c) => c.name === name);
  if (!cli) throw new Error(`no agent CLI "${name}" is registered`);
  return cli;
}

/**
 * The agents a repository has: the configured ones, each with its mention resolved, and the
 * built-in agent when no configured agent answers to its mention (and it is not configured
 * itself under its own name).
 */
export function resolveAgents(
  configured: Record<string, AgentInput>,
  clis: ConfigClis,
): Record<string, AgentConfig> {
  const agents: Record<string, AgentConfig> = {};
  // Model for agents that do not name one: their CLI's. Passed explicitly on every run: without
  // `--model` a CLI picked a different model for the first resumed turn than for the fresh one,
  // which missed the prompt cache.
  const withModel = (agent: AgentInput) => agent.model ?? cliIn(clis, agent.cli).defaultModel;
  const labelOf = (name: string, agent: AgentInput) =>
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
        ...agentConfigSchema(clis).parse({}),
        mention: DEFAULT_MENTION,
        model: clis[0].defaultModel,
        label: DEFAULT_AGENT,
      },
      ...agents,
    };
  return agents;
}
