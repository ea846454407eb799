/**
 * What the intake handlers are given (the effects at their edge) and what they return: the
 * shapes handle-delivery.ts, event-triggers.ts and ci-events.ts share, in a module of their own
 * so that the funnel and the handlers it calls import each other in one direction only.
 */
import type { Pool } from "../db/pool.js";
import type { GitHub } from "../github/types.js";
import type { Logger } from "../log.js";
import type { RepoHints } from "./repo-hints.js";
import type { DescribeStatus } from "./status.js";

export interface IntakeEffects {
  pool: Pool;
  log: Logger;
  /** An installation-authenticated Octokit: Probot's `app.auth(installationId)`. */
  auth: (installationId: number) => Promise<GitHub>;
  describeStatus: DescribeStatus;
  now: () => Date;
  /** Tether's own GitHub App id: its comments never trigger. */
  appId?: number;
  /**
   * Tether's own bot login (`<slug>[bot]`): its reviews and line comments never trigger, even
   * with the bot in `access.allowBots`. Asked of GitHub once, and only when such a bot asks.
   */
  appLogin?: () => Promise<string>;
  /**
   * Run `work` after the delivery is recorded, without holding its slot. For the 👀 only:
   * write spacing lets one write a second through per installation, and a burst of comments
   * should become queued tasks without waiting for their reactions.
   */
  defer: (what: string, work: () => Promise<void>) => void;
  /** What each repository's config said when last read: lets the permission lookup start early. */
  repoHints?: RepoHints;
}

export interface Handled {
  status: "done" | "skipped";
  /** What happened, for operators reading the inbox. */
  outcome: string;
}

export const skipped = (outcome: string): Handled => ({ status: "skipped", outcome });
export const done = (outcome: string): Handled => ({ status: "done", outcome });
