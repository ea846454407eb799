/**
 * What a turn needs of the repository's config (the agents' settings and the resume policy),
 * and its snapshot on the task. Intake has just read and validated `.github/tether.yml` to
 * accept the comment; it stores these settings on the task, so the runner starts the turn with
 * the config the comment was accepted under instead of reading it from GitHub again (two API
 * requests fewer per turn, and none on the way to the spawn). A task without a snapshot, or with
 * one this version cannot read, is run with a fresh read as before.
 */
import { z } from "zod";
import type { AgentSettings, RepoSettings, SpendSettings } from "../core/settings.js";
import { CACHE_TTL_SETTINGS, CHANGES_MODES, PLAN_SETTINGS } from "../core/settings.js";
import { PublishConfig, type RepoConfig } from "./repo-config.js";

export function toRepoSettings(config: RepoConfig): RepoSettings {
  const agents: RepoSettings["agents"] = {};
  for (const [name, a] of Object.entries(config.agents)) {
    agents[name] = {
      name,
      mention: a.mention,
      cli: a.cli,
      model: a.model,
      ...(a.models ? { models: a.models } : {}),
      maxTurns: a.maxTurns,
      timeoutMinutes: a.timeoutMinutes,
      stallMinutes: a.stallMinutes,
      allowedTools: a.allowedTools,
      disallowedTools: a.disallowedTools,
      permissionMode: a.permissionMode,
      ...(a.appendSystemPrompt ? { appendSystemPrompt: a.appendSystemPrompt } : {}),
      network: a.network,
      projectInstructions: a.projectInstructions,
      changes: a.changes,
      ...(a.turnLimitUsd !== undefined ? { turnLimitUsd: a.turnLimitUsd } : {}),
      ...(a.conversationLimitUsd !== undefined
        ? { conversationLimitUsd: a.conversationLimitUsd }
        : {}),
      requestChanges: a.requestChanges,
      cacheTtl: a.cacheTtl,
      plan: a.plan,
      mcpServers: a.mcpServers,
    };
  }
  return {
    agents,
    resume: config.resume,
    publish: {
      ...config.publish,
      protectedPaths: config.changes.protectedPaths,
      signedCommits: config.changes.signedCommits,
    },
    spend: spendSettings(config.spend),
  };
}

function spendSettings(s: RepoConfig["spend"]): SpendSettings {
  return {
    freshResetsConversation: s.freshResetsConversation,
    ...(s.repositoryMonthlyUsd !== undefined
      ? { repositoryMonthlyUsd: s.repositoryMonthlyUsd }
      : {}),
    ...(s.installationMonthlyUsd !== undefined
      ? { installationMonthlyUsd: s.installationMonthlyUsd }
      : {}),
  };
}

/**
 * The stored form; `v` changes whenever RepoSettings does, so an old snapshot is never misread.
 * v2 added the spend limits: a v1 snapshot (taken before them) is not used, so its task reads
 * the config afresh and gets the limits the repository has now.
 */
const SettingsSnapshot = z.object({
  v: z.literal(2),
  agents: z.record(
    z.string(),
    z.object({
      name: z.string(),
      mention: z.string().optional(),
      // Any name is kept as it was: a CLI this runner lacks fails its turn with words saying so.
      // A snapshot taken before a second CLI has none and is not used: its task reads the config
      // afresh (this folder sits below the CLIs and knows none, not even the default).
      cli: z.string(),
      model: z.string().optional(),
      models: z.array(z.string()).optional(),
      maxTurns: z.number().int().positive().optional(),
      timeoutMinutes: z.number().positive(),
      stallMinutes: z.number().positive(),
      allowedTools: z.array(z.string()).optional(),
      disallowedTools: z.array(z.string()).optional(),
      permissionMode: z.string().optional(),
      appendSystemPrompt: z.string().optional(),
      // Absent in snapshots taken before the sandbox: the safe defaults apply.
      network: z.union([z.enum(["model-only", "open"]), z.array(z.string())]).optional(),
      projectInstructions: z.boolean().optional(),
      // Absent in snapshots taken before publishing existed: the config's default applies.
      changes: z.enum(CHANGES_MODES).optional(),
      turnLimitUsd: z.number().positive().optional(),
      conversationLimitUsd: z.number().positive().optional(),
      // Absent in snapshots taken before line comments: reviews only comment.
      requestChanges: z.boolean().optional(),
      // Absent in snapshots taken before the setting: `auto`, its default.
      cacheTtl: z.enum(CACHE_TTL_SETTINGS).optional(),
      // Absent in snapshots taken before `/plan`: `off`.
      plan: z.enum(PLAN_SETTINGS).optional(),
      // Absent in snapshots taken before MCP servers: none.
      mcpServers: z.array(z.string()).optional(),
    }),
  ),
  resume: z.object({
    enabled: z.boolean(),
    ttlHours: z.number().nonnegative(),
    contextBudget: z.number().nonnegative(),
    // Absent in snapshots taken before compaction: the default (compact) applies.
    compact: z.boolean().optional(),
  }),
  // protectedPaths: absent in snapshots taken before it; the default applies.
  // signedCommits: absent in snapshots taken before it; its default (true) applies.
  publish: PublishConfig.extend({
    protectedPaths: z.array(z.string()).optional(),
    signedCommits: z.boolean().default(true),
  }).optional(),
  spend: z.object({
    freshResetsConversation: z.boolean(),
    repositoryMonthlyUsd: z.number().positive().optional(),
    installationMonthlyUsd: z.number().positive().optional(),
  }),
});

/**
 * The config's agent, core's settings and the snapshot hold the same fields: a field added to one
 * and not the others would be dropped on the way to the CLI without a word, so it fails the
 * typecheck instead.
 */
type SameKeys<A, B> = [Exclude<keyof A, keyof B> | Exclude<keyof B, keyof A>] extends [never]
  ? true
  : { differ: Exclude<keyof A, keyof B> | Exclude<keyof B, keyof A> };
/**
 * Who may start a turn without a mention, and the model a CI turn asks for (intake puts it on the
 * task as the turn's model): intake reads these; the runner never needs them.
 */
type IntakeOnly = "reviews" | "label" | "assignee" | "ci" | "escalate";
type StoredAgent = z.output<typeof SettingsSnapshot>["agents"][string];
type StoredRepo = Omit<z.output<typeof SettingsSnapshot>, "v">;
/** @public Read by the typecheck only. */
export const snapshotHoldsEverySetting: [
  SameKeys<StoredAgent, AgentSettings>,
  SameKeys<StoredRepo, RepoSettings>,
  SameKeys<z.output<typeof SettingsSnapshot>["resume"], RepoSettings["resume"]>,
  SameKeys<z.output<typeof SettingsSnapshot>["spend"], SpendSettings>,
  SameKeys<Omit<RepoConfig["agents"][string], IntakeOnly> & { name: string }, AgentSettings>,
] = [true, true, true, true, true];

export function snapshotSettings(config: RepoConfig): z.input<typeof SettingsSnapshot> {
  return { v: 2, ...toRepoSettings(config) };
}

/** The settings stored on a task, or null when there are none this version can use. */
export function readSettingsSnapshot(stored: unknown): RepoSettings | null {
  const parsed = SettingsSnapshot.safeParse(stored);
  if (!parsed.success) return null;
  const { agents, resume, publish, spend } = parsed.data;
  return { agents, resume, spend, ...(publish ? { publish } : {}) };
}
