/**
 * Standing conversations (#41; README "Talking to Tether", docs/operations.md "Schedules"): the
 * schedules of each repository's `.github/tether.yml`, learnt when the file is pushed to the
 * default branch, when the app is installed, and at least hourly (with an hourly listing of the
 * installations' repositories, for those no event named); each tick one follow-up turn in
 * its schedule's conversation, queued like any other request (so it runs under every guard a
 * comment's turn has).
 *
 * Every web process runs a Scheduler; one sweeps at a time (an advisory lock, src/sql/schedules.ts),
 * and each tick's request is keyed by (schedule, tick), so a tick makes one turn whatever the
 * number of processes. A tick whose schedule's previous turn still waits or runs is absorbed.
 * Nothing here stops the process: a repository or a tick that fails is logged and tried again
 * on a later sweep.
 */
import { AGENT_CLIS } from "../cli-registry.js";
import fs from "node:fs";
import { loadRepoConfig } from "../config/load-repo-config.js";
import { noteRepoName } from "../sql/repo-names.js";
import { defaultAgentOf, scheduleKey, type RepoConfig } from "../config/repo-config.js";
import { snapshotSettings } from "../config/repo-settings.js";
import { nextTick } from "../core/schedule-cron.js";
import type { Pool } from "../db/pool.js";
import { httpStatusOf } from "../github/errors.js";
import type { GitHub } from "../github/types.js";
import type { Logger } from "../log.js";
import {
  claimTick,
  dueSchedules,
  knowScheduleRepos,
  markSynced,
  replaceSchedules,
  reposToSync,
  setScheduleIssue,
  withSchedulerLock,
  type RepoRef,
  type ScheduleRow,
  type ScheduleSpec,
} from "../sql/schedules.js";
import { enqueueComment, type TriggerComment } from "../sql/tasks/enqueue.js";
import { PeriodicJob } from "./periodic-job.js";

/** How often each web process looks for due ticks (TETHER_SCHEDULE_CHECK_MS). */
export const SCHEDULE_CHECK_MS = 30_000;
/** A repository's schedules are read again at least this often. */
export const SCHEDULE_RESYNC_MS = 3600_000;
/** Bounds of one listing of the installations' repositories (discoverRepos). */
const MAX_INSTALLATIONS = 1000;
const MAX_INSTALLATION_REPOS = 5000;
/** Who asked, as a scheduled turn's request names it: no GitHub login, so it pings nobody. */
export const SCHEDULE_AUTHOR = "(schedule)";

export interface SchedulerOptions {
  pool: Pool;
  log: Logger;
  auth: (installationId: number) => Promise<GitHub>;
  /**
   * The app's own Octokit (its JWT), to list the installations and their repositories every
   * `resyncMs`: a repository installed before Tether read schedules, with no push since, is
   * learnt so. Without it, only pushes and installation events add repositories.
   */
  appAuth?: () => Promise<GitHub>;
  now?: () => Date;
  intervalMs?: number;
  firstDelayMs?: number;
  resyncMs?: number;
  /** Counts each tick by what it did (tether_schedule_ticks_total). */
  ticked?: (result: TickResult) => void;
}

export type TickResult = "queued" | "absorbed" | "skipped";

export interface SweepReport {
  synced: number;
  /** Repositories the installations' listing added (0 between listings). */
  discovered?: number;
  ticks: Array<{ schedule: number; result: TickResult; taskId?: number }>;
}

export class Scheduler {
  private readonly job: PeriodicJob<SweepReport | undefined>;
  private readonly now: () => Date;
  /** When this process last listed the installations' repositories (its clock, ms). */
  private listedAt = -Infinity;

  constructor(private readonly opts: SchedulerOptions) {
    this.now = opts.now ?? (() => new Date());
    this.job = new PeriodicJob(() => this.sweepOnce(), opts.intervalMs ?? SCHEDULE_CHECK_MS);
  }

  start(): void {
    this.job.start(this.opts.firstDelayMs ?? 5_000);
  }

  /** One sweep now (or join the one under way). Undefined: another process is sweeping. */
  sweep(): Promise<SweepReport | undefined> {
    return this.job.run();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }

  private async sweepOnce(): Promise<SweepReport | undefined> {
    try {
      const report = await withSchedulerLock(this.opts.pool, async () => {
        const discovered = await this.discoverRepos();
        const synced = await this.syncRepos();
        const ticks = await this.runDueTicks();
        return { synced, ticks, ...(discovered ? { discovered } : {}) };
      });
      if (report === undefined) this.opts.log.debug("another process is sweeping the schedules");
      return report;
    } catch (err) {
      this.opts.log.warn({ err }, "the schedule sweep failed; trying again later");
      return undefined;
    }
  }

  /**
   * Every `resyncMs` (and on this process's first sweep): list the app's installations and
   * their repositories, and record any repository not known yet, to be read on this sweep.
   * Pushes and installation events record the others as they come; this catches the
   * repositories installed before Tether read schedules and not pushed to since. A listing that
   * fails is logged and tried at the next period.
   */
  private async discoverRepos(): Promise<number> {
    if (!this.opts.appAuth) return 0;
    const t = this.now().getTime();
    if (t - this.listedAt < (this.opts.resyncMs ?? SCHEDULE_RESYNC_MS)) return 0;
    this.listedAt = t;
    let added = 0;
    try {
      const octokit = await this.opts.appAuth();
      const installations = await octokit.paginate(octokit.rest.apps.listInstallations, {
        per_page: 100,
      });
      for (const i of installations.slice(0, MAX_INSTALLATIONS)) {
        if (this.job.stopped) break;
        try {
          added += await knowScheduleRepos(this.opts.pool, await this.installedRepos(i.id));
        } catch (err) {
          this.opts.log.warn(
            { err, installation: i.id },
            "could not list an installation's repositories for their schedules",
          );
        }
      }
    } catch (err) {
      this.opts.log.warn({ err }, "could not list the app's installations for their schedules");
    }
    if (added) this.opts.log.info({ repos: added }, "repositories found to read schedules from");
    return added;
  }

  /** The repositories installation `installationId` reaches, as GitHub lists them. */
  private async installedRepos(installationId: number): Promise<RepoRef[]> {
    const octokit = await this.octokit(installationId);
    const repos = await octokit.paginate(octokit.rest.apps.listReposAccessibleToInstallation, {
      per_page: 100,
    });
    return repos.slice(0, MAX_INSTALLATION_REPOS).map((r) => ({
      repoId: r.id,
      installationId,
      repo: r.full_name.toLowerCase(),
    }));
  }

  private async syncRepos(): Promise<number> {
    const repos = await reposToSync(this.opts.pool, {
      staleMs: this.opts.resyncMs ?? SCHEDULE_RESYNC_MS,
      limit: 50,
    });
    let n = 0;
    for (const r of repos) {
      if (this.job.stopped) break;
      try {
        await this.syncRepo(r);
        n++;
      } catch (err) {
        this.opts.log.warn({ err, repo: r.repo }, "could not read a repository's schedules");
      }
    }
    return n;
  }

  /** Read one repository's config and make its schedules what the file says. */
  async syncRepo(r: RepoRef): Promise<void> {
    const readSince = new Date();
    // The repository may hold its name since its last delivery: nothing kept for an earlier
    // holder of the name is read as its config (src/sql/repo-names.ts).
    await noteRepoName(this.opts.pool, r.repo, r.repoId);
    const config = await this.readConfig(r);
    if (!config) {
      // A broken file: the schedules it had keep running until it is fixed (the thread of a
      // comment that addresses an agent shows the problems, as for any config error).
      await markSynced(this.opts.pool, r, readSince);
      return;
    }
    const now = this.now();
    const defaultAgent = defaultAgentOf(config.agents);
    const specs: ScheduleSpec[] = config.schedules.map((s, position) => {
      const agent = s.agent ?? defaultAgent;
      return {
        key: scheduleKey({ agent, issue: s.issue, title: s.title }),
        position,
        cron: s.cron,
        timezone: s.timezone,
        agent,
        issueNumber: s.issue ?? null,
        title: s.title ?? null,
        request: s.request,
        nextRunAt: nextTick(s.cron, s.timezone, now),
      };
    });
    await replaceSchedules(this.opts.pool, r, specs, readSince);
    this.opts.log.info({ repo: r.repo, schedules: specs.length }, "schedules read");
  }

  /** The repository's valid config, or undefined (logged) when the file is broken. */
  private async readConfig(r: {
    repo: string;
    installationId: number;
  }): Promise<RepoConfig | undefined> {
    const octokit = await this.octokit(r.installationId);
    const loaded = await loadRepoConfig(octokit, ownerAndName(r.repo), { clis: AGENT_CLIS });
    if (loaded.ok) return loaded.config;
    this.opts.log.warn(
      { repo: r.repo, problems: loaded.problems },
      "invalid config: its schedules are left as they were",
    );
    return undefined;
  }

  private async runDueTicks(): Promise<SweepReport["ticks"]> {
    const out: SweepReport["ticks"] = [];
    for (const s of await dueSchedules(this.opts.pool, this.now())) {
      if (this.job.stopped) break;
      try {
        const t = await this.runTick(s);
        if (t) {
          out.push({ schedule: s.id, ...t });
          this.opts.ticked?.(t.result);
        }
      } catch (err) {
        this.opts.log.warn(
          { err, repo: s.repo, schedule: s.position, agent: s.agent },
          "a scheduled turn could not be queued; trying again on the next sweep",
        );
      }
    }
    return out;
  }

  /**
   * One tick: open the schedule's issue on its first run (`title:`), queue its request (keyed by
   * schedule and tick: a second process's attempt is a duplicate), then move the schedule to its
   * next tick after now. Undefined: another sweep took the tick first.
   */
  private async runTick(
    s: ScheduleRow,
  ): Promise<{ result: TickResult; taskId?: number } | undefined> {
    const now = this.now();
    const log = this.opts.log.child({ repo: s.repo, schedule: s.position, agent: s.agent });
    const next = nextTick(s.cron, s.timezone, now);
    const skip = async (why: string) => {
      log.warn({ tick: s.nextRunAt }, `scheduled turn skipped: ${why}`);
      return (await claimTick(this.opts.pool, {
        id: s.id,
        tick: s.nextRunAt,
        next,
        ranAt: null,
        taskId: null,
      }))
        ? { result: "skipped" as const }
        : undefined;
    };
    const config = await this.readConfig(s);
    if (!config) return skip("the config is invalid");
    if (!(s.agent in config.agents)) return skip(`no agent is called ${s.agent}`);
    const octokit = await this.octokit(s.installationId);
    const where = ownerAndName(s.repo);
    const issueNumber = s.issueNumber ?? (await this.openIssue(octokit, s, where));
    let issue: { html_url: string; pull_request?: unknown };
    try {
      ({ data: issue } = await octokit.rest.issues.get({ ...where, issue_number: issueNumber }));
    } catch (err) {
      const status = httpStatusOf(err);
      if (status === 404 || status === 410) return skip(`issue #${issueNumber} is gone`);
      throw err;
    }
    const tickIso = s.nextRunAt.toISOString();
    const r = await enqueueComment(this.opts.pool, {
      key: { repoId: s.repoId, repo: s.repo, issueNumber, agent: s.agent },
      installationId: s.installationId,
      isPullRequest: issue.pull_request !== undefined && issue.pull_request !== null,
      comment: scheduleRequest(s, { tick: s.nextRunAt, url: issue.html_url, now }),
      forceFresh: false,
      deliveryId: `schedule:${s.id}:${tickIso}`,
      settings: snapshotSettings(config),
      coveredBy: ["schedule"],
    });
    const queued = r.kind === "created" || r.kind === "coalesced";
    const took = await claimTick(this.opts.pool, {
      id: s.id,
      tick: s.nextRunAt,
      next,
      ranAt: queued ? now : null,
      taskId: queued ? r.taskId : null,
    });
    if (!took) return undefined;
    const result: TickResult = queued ? "queued" : r.kind === "covered" ? "absorbed" : "skipped";
    log.info({ tick: tickIso, task: r.taskId, result: r.kind, next }, "scheduled turn");
    return { result, taskId: r.taskId };
  }

  /** A `title:` schedule's first run: open its issue and keep its number. */
  private async openIssue(
    octokit: GitHub,
    s: ScheduleRow,
    where: { owner: string; repo: string },
  ): Promise<number> {
    const { data } = await octokit.rest.issues.create({
      ...where,
      title: s.title ?? "Scheduled turns",
      body: [
        `This issue is where the scheduled turns of agent \`${s.agent}\` report (\`${s.cron}\`, ${s.timezone}; \`.github/tether.yml\`).`,
        "Each run continues the same conversation. Reply here to answer it.",
      ].join("\n\n"),
    });
    return setScheduleIssue(this.opts.pool, s.id, data.number);
  }

  private async octokit(installationId: number): Promise<GitHub> {
    const octokit = await this.opts.auth(installationId);
    await octokit.auth({ type: "installation" });
    return octokit;
  }
}

/**
 * A clock that reads the time from a file (TETHER_SCHEDULE_CLOCK_FILE, for tests): an ISO 8601
 * instant, read at each call. Throws when the file is missing or holds no time; the sweep that
 * asked logs it and tries again later.
 */
export function fileClock(file: string): () => Date {
  return () => {
    const text = fs.readFileSync(file, "utf8").trim();
    const t = new Date(text);
    if (Number.isNaN(t.getTime()))
      throw new Error(
        `TETHER_SCHEDULE_CLOCK_FILE ${file} holds no ISO 8601 time: ${JSON.stringify(text.slice(0, 40))}`,
      );
    return t;
  };
}

function ownerAndName(repo: string): { owner: string; repo: string } {
  const [owner = "", name = ""] = repo.split("/");
  return { owner, repo: name };
}

/**
 * Pure: the request a tick makes. The schedule's text is the request, as the repository's
 * default branch has it; Tether adds when the schedule's last turn ran, so the agent can tell
 * what is new since. Its source is the (schedule, tick) key.
 */
export function scheduleRequest(
  s: Pick<ScheduleRow, "id" | "cron" | "timezone" | "lastRunAt" | "request">,
  o: { tick: Date; url: string; now: Date },
): TriggerComment {
  const last = s.lastRunAt
    ? `Your last scheduled turn in this conversation ran at ${s.lastRunAt.toISOString()}.`
    : "This is the schedule's first turn.";
  return {
    source: `schedule:${s.id}:${o.tick.toISOString()}`,
    commentId: null,
    author: SCHEDULE_AUTHOR,
    url: o.url,
    body: [
      `[A scheduled turn (\`${s.cron.replace(/`/g, "'")}\`, ${s.timezone}, from .github/tether.yml), due at ${o.tick.toISOString()}. ${last}]`,
      "",
      s.request,
    ].join("\n"),
    createdAt: o.now,
    trigger: "schedule",
  };
}
