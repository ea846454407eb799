/**
 * The `schedules` section of `.github/tether.yml`: standing conversations, each an agent's turn on
 * a cron; their schema, the checks that need the file's agents, and what identifies one.
 */
import { checkCron, isTimeZone, shortestGapMinutes } from "../core/schedule-cron.js";
import { z } from "zod";
import type { ConfigClis } from "../core/cli-abilities.js";
import { defaultAgentOf, resolveAgents, type AgentInput } from "./agent-config.js";
import { NAME_RE, wholeNumber } from "./config-fields.js";

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

/** Each schedule names a known agent, one issue or title, and a cron no tighter than the minimum. */
export function checkSchedules(
  cfg: {
    agents: Record<string, AgentInput>;
    schedules: ScheduleConfig[];
  },
  ctx: z.core.$RefinementCtx,
  clis: ConfigClis,
): void {
  if (cfg.schedules.length > MAX_SCHEDULES)
    ctx.addIssue({
      code: "custom",
      path: ["schedules"],
      message: `at most ${MAX_SCHEDULES} schedules a repository (there are ${cfg.schedules.length})`,
    });
  const agents = resolveAgents(cfg.agents, clis);
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
