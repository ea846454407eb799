/**
 * The whole `.github/tether.yml`: its sections put together with their defaults, the checks
 * across them, the problems a config author reads when it is invalid, and the mentions read
 * leniently from a file that failed.
 */
import { z } from "zod";
import type { ConfigClis } from "../core/cli-abilities.js";
import {
  agentConfigSchema,
  checkAgents,
  DEFAULT_AGENT,
  DEFAULT_MENTION,
  resolveAgents,
} from "./agent-config.js";
import { MENTION_RE, NAME_RE } from "./config-fields.js";
import {
  AccessConfig,
  ChangesConfig,
  PublishConfig,
  ResumeConfig,
  SpendConfig,
} from "./repo-sections.js";
import { checkSchedules, ScheduleConfig } from "./schedule-config.js";

// The file's parts live beside it (agent-config.ts, repo-sections.ts, schedule-config.ts);
// callers import the config from here.
export {
  agentConfigSchema,
  type AgentConfig,
  CiConfig,
  defaultAgentOf,
  MODEL_ID,
  setMcpServerNames,
} from "./agent-config.js";
export {
  AccessConfig,
  ChangesConfig,
  MAX_RESUME_TTL_HOURS,
  PublishConfig,
  ResumeConfig,
  type RepoPermission,
} from "./repo-sections.js";
export { scheduleKey, setScheduleMinMinutes } from "./schedule-config.js";

/** Where a repository configures Tether (Probot's `context.config` path, under `.github/`). */
export const CONFIG_FILE = ".github/tether.yml";

/** YAML `key:` with nothing after it is null; read it as "all defaults", like an absent key. */
const orEmpty = <T extends z.ZodType>(schema: T) => z.preprocess((v) => v ?? {}, schema);

/** The file's schema before the checks across sections, for the CLIs the registry hands in. */
function repoConfigInput(clis: ConfigClis) {
  return z.strictObject({
    /** Agents by name (lower case, GitHub-name characters). `tether` always exists. */
    agents: orEmpty(
      z.record(
        z.string().regex(NAME_RE, "agent names are lower case letters, digits and hyphens"),
        orEmpty(agentConfigSchema(clis)),
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
}

/**
 * The validated `.github/tether.yml`, with defaults filled in and every agent's mention resolved:
 * its schema for the registered CLIs (src/cli-registry.ts hands them; the config sits below the
 * CLIs and knows none), made once per list.
 */
function repoConfigSchema(clis: ConfigClis) {
  return repoConfigInput(clis)
    .superRefine((cfg, ctx) => {
      checkAgents(cfg.agents, ctx, clis);
      checkSchedules(cfg, ctx, clis);
    })
    .transform((cfg) => ({ ...cfg, agents: resolveAgents(cfg.agents, clis) }));
}
export type RepoConfig = z.output<ReturnType<typeof repoConfigSchema>>;
const schemas = new WeakMap<ConfigClis, ReturnType<typeof repoConfigSchema>>();
function schemaFor(clis: ConfigClis): ReturnType<typeof repoConfigSchema> {
  let schema = schemas.get(clis);
  if (!schema) schemas.set(clis, (schema = repoConfigSchema(clis)));
  return schema;
}

/**
 * The configuration of a repository without `.github/tether.yml`, but for its agents (the
 * built-in one runs on the default CLI: `defaultConfig` has it).
 */
export const DEFAULT_CONFIG: Omit<RepoConfig, "agents"> = {
  resume: ResumeConfig.parse({}),
  access: AccessConfig.parse({}),
  publish: PublishConfig.parse({}),
  changes: ChangesConfig.parse({}),
  spend: SpendConfig.parse({}),
  schedules: [],
};

/** The whole configuration of a repository without `.github/tether.yml`. */
export function defaultConfig(clis: ConfigClis): RepoConfig {
  return schemaFor(clis).parse({});
}

export interface ConfigProblem {
  /** Dotted path to the field, e.g. `agents.reviewer.maxTurns`; `(file)` for the file as a whole. */
  path: string;
  message: string;
}

export type ParsedConfig =
  { ok: true; config: RepoConfig } | { ok: false; problems: ConfigProblem[] };

/**
 * Validate the merged contents of the config file(s) for the registered CLIs;
 * `null`/`undefined` (no file) gives the defaults.
 */
export function parseRepoConfig(raw: unknown, clis: ConfigClis): ParsedConfig {
  if (raw === null || raw === undefined) return { ok: true, config: defaultConfig(clis) };
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
  const result = schemaFor(clis).safeParse(raw);
  if (result.success) return { ok: true, config: result.data };
  return { ok: false, problems: result.error.issues.flatMap((i) => toProblems(i, clis)) };
}

function toProblems(issue: z.core.$ZodIssue, clis: ConfigClis): ConfigProblem[] {
  const base = issue.path.map(String);
  if (issue.code === "unrecognized_keys") {
    const known = knownKeys(base, clis);
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

function knownKeys(path: string[], clis: ConfigClis): string[] {
  if (path.length === 0) return Object.keys(repoConfigInput(clis).shape);
  if (path[0] === "agents" && path.length === 2) return Object.keys(agentConfigSchema(clis).shape);
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
