/**
 * The repository-wide sections of `.github/tether.yml`, each for every agent: `resume`, `publish`,
 * `changes`, `access` and `spend`.
 */
import { z } from "zod";
import { dollars, Login, wholeNumber } from "./config-fields.js";

/** GitHub's repository permissions, least first. */
export const REPO_PERMISSIONS = ["read", "triage", "write", "maintain", "admin"] as const;
export type RepoPermission = (typeof REPO_PERMISSIONS)[number];

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
