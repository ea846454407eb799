/**
 * The settings shapes every layer uses, from the repo config (src/config/) to the runner and the
 * CLIs: plain types, so this floor imports nothing. The config's zod schemas produce them.
 */

/** What becomes of the files an agent changes (docs/changes.md "Changes"). */
export const CHANGES_MODES = ["pull_request", "branch", "off"] as const;
export type ChangesMode = (typeof CHANGES_MODES)[number];

/** How changes are published (the config's `publish:`, defaults applied). */
export interface PublishSettings {
  draft: boolean;
  link: "closes" | "refs";
  /** Deprecated (`changes.protectedPaths`): still publishes `.github/workflows/` when true. */
  workflows: boolean;
  maxFiles: number;
  maxBytes: number;
  /**
   * Paths the agent may not change (the config's `changes.protectedPaths`). Absent (an old
   * snapshot): the default, `.github/**`.
   */
  protectedPaths?: string[];
  /** Make the turn's commit through GitHub's Git Data API, which signs it (`changes.signedCommits`). */
  signedCommits: boolean;
}

/** The prompt cache's lifetimes a turn can ask for (docs/benchmarks.md, "By the gap between comments"). */
export const CACHE_TTLS = ["5m", "1h"] as const;
export type CacheTtl = (typeof CACHE_TTLS)[number];
/** An agent's setting: a lifetime, or `auto` (core/cache-ttl.ts chooses per turn). */
export const CACHE_TTL_SETTINGS = [...CACHE_TTLS, "auto"] as const;
export type CacheTtlSetting = (typeof CACHE_TTL_SETTINGS)[number];

/**
 * Which agent CLI runs an agent: a name in the registry of CLIs (src/cli-registry.ts), which the
 * config schema checks. A session belongs to the CLI that made it.
 */
export type CliKind = string;

/** One agent's settings, as the repo config resolves them. */
export interface AgentSettings {
  name: string;
  /** What addresses the agent in a comment, e.g. `@tether`. */
  mention?: string;
  /** Read by zod from the config, so always known: a name in the registry (src/cli-registry.ts). */
  cli: CliKind;
  model?: string;
  /** Models a comment may ask for with `/model` besides `model`; absent: any. */
  models?: string[];
  maxTurns?: number;
  timeoutMinutes: number;
  stallMinutes: number;
  allowedTools?: string[];
  disallowedTools?: string[];
  permissionMode?: string;
  appendSystemPrompt?: string;
  /** Egress besides the model API: none, any public host, or these hosts. Default model-only. */
  network?: "model-only" | "open" | string[];
  /** Append the default branch's CLAUDE.md to the system prompt. */
  projectInstructions?: boolean;
  /** What becomes of the agent's changes. Absent: the config's default (`pull_request`). */
  changes?: ChangesMode;
  /** Most one turn may spend, US dollars (`--max-budget-usd`). */
  turnLimitUsd?: number;
  /** Most this agent's conversation on one issue may spend, US dollars. */
  conversationLimitUsd?: number;
  /** A pull request review by this agent may request changes (never approve). Absent: false. */
  requestChanges?: boolean;
  /** The prompt cache's lifetime for its turns. Absent (an old snapshot): `auto`. */
  cacheTtl?: CacheTtlSetting;
  /** `always`: a conversation's first turn is a plan (`/plan`). Absent (an old snapshot): `off`. */
  plan?: PlanSetting;
  /** The operator's MCP servers the agent gets, by name. Absent (an old snapshot): none. */
  mcpServers?: string[];
}

/** `agents.<name>.plan`: whether a conversation's first turn is a plan. */
export const PLAN_SETTINGS = ["always", "off"] as const;
export type PlanSetting = (typeof PLAN_SETTINGS)[number];

export interface ResumeSettings {
  enabled: boolean;
  ttlHours: number;
  contextBudget: number;
  /** Compact a session past the budget, then resume it, instead of starting fresh. Absent: true. */
  compact?: boolean;
}

export interface SpendSettings {
  /** A `/fresh` turn starts the conversation's spend count again. */
  freshResetsConversation: boolean;
  /** Most the repository may spend in a calendar month (UTC), US dollars. */
  repositoryMonthlyUsd?: number;
  /** Most the installation may spend in a calendar month (UTC), US dollars. */
  installationMonthlyUsd?: number;
}

export interface RepoSettings {
  agents: Record<string, AgentSettings>;
  resume: ResumeSettings;
  /** How changes are published. Absent (an old snapshot): the config's defaults. */
  publish?: PublishSettings;
  spend: SpendSettings;
}

export type ConfigResult = { ok: true; settings: RepoSettings } | { ok: false; message: string };
