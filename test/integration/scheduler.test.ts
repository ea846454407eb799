/**
 * Standing conversations (#41): schedules read from `.github/tether.yml`, each tick one turn
 * (trigger `schedule`) keyed by (schedule, tick). Real Postgres, GitHub by nock (answered per
 * GitHub's OpenAPI description), the clock injected: no timer is raced.
 */
import { describe, expect, it } from "vitest";
import { Scheduler } from "../../src/intake/scheduler.js";
import { createLogger } from "../../src/log.js";
import { listSchedules, wantScheduleSync } from "../../src/sql/schedules.js";
import { createTestDatabase } from "../helpers/db.js";
import { installationJson, issueJson, repoJson, userJson } from "../helpers/fake-github-shapes.js";
import { github, rest, useNock } from "../helpers/intake-github.js";
import { INSTALLATION_ID, REPO_KEY } from "../helpers/intake-payloads.js";
import { createTestApp } from "../helpers/probot.js";
import { readTasks } from "../helpers/seed.js";

const db = await createTestDatabase();
useNock();

const ISSUE = 42;
const REPO_ID = 1296269;
const WITH = `schedules:\n  - cron: "0 * * * *"\n    issue: ${ISSUE}\n    request: Triage the issues opened since your last run.\n`;

function issue(): object {
  return issueJson(
    { apiUrl: "https://api.github.com", webUrl: "https://github.com" },
    "Codertocat/Hello-World",
    {
      id: 9001,
      number: ISSUE,
      title: "Weekly triage",
      body: null,
      user: rest.user("Codertocat"),
      state: "open",
      labels: [],
      comments: 0,
      createdAt: new Date("2026-11-20T12:00:00Z"),
      updatedAt: new Date("2026-11-20T12:00:00Z"),
      closedAt: null,
      authorAssociation: "OWNER",
      isPullRequest: false,
      reactions: [],
    },
  );
}

describe("the scheduler", () => {
  it("learns a schedule, runs a missed stretch once across two processes, absorbs a tick while its turn waits, and stops a removed schedule", async () => {
    const app = await createTestApp(db);
    let now = new Date("2026-12-01T08:30:00Z");
    const make = () =>
      new Scheduler({
        pool: db.pool,
        log: createLogger("silent"),
        auth: (id) => app.probot.auth(id),
        now: () => now,
      });
    const a = make();
    const b = make();
    const gh = github().token(INSTALLATION_ID);
    gh.api
      .get("/repos/codertocat/hello-world/contents/.github%2Ftether.yml")
      .times(3)
      .reply(200, WITH, { "content-type": "text/plain; charset=utf-8" });
    gh.api.get(`/repos/codertocat/hello-world/issues/${ISSUE}`).times(2).reply(200, issue());

    await wantScheduleSync(db.pool, {
      repoId: REPO_ID,
      installationId: INSTALLATION_ID,
      repo: REPO_KEY,
    });
    expect((await a.sweep())?.synced).toBe(1);
    const [s] = await listSchedules(db.pool);
    expect(s).toMatchObject({
      agent: "tether",
      issueNumber: ISSUE,
      cron: "0 * * * *",
      lastRunAt: null,
    });
    expect(s!.nextRunAt.toISOString()).toBe("2026-12-01T09:00:00.000Z");

    // Down for three hours: ticks at 09:00, 10:00 and 11:00 were missed. Two processes sweep.
    now = new Date("2026-12-01T11:20:00Z");
    const reports = await Promise.all([a.sweep(), b.sweep()]);
    const ticks = reports.flatMap((r) => r?.ticks ?? []);
    expect(ticks).toEqual([{ schedule: s!.id, result: "queued", taskId: expect.any(Number) }]);
    const tasks = await readTasks(db.pool, "issue_number = $1", [ISSUE]);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({ trigger: "schedule", status: "queued", agent: "tether" });
    const [req] = (
      await db.pool.query("SELECT source, body FROM task_comments WHERE task_id = $1", [
        tasks[0]!.id,
      ])
    ).rows;
    expect(req.source).toBe(`schedule:${s!.id}:2026-12-01T09:00:00.000Z`);
    expect(req.body).toContain("This is the schedule's first turn.");
    expect(req.body).toContain("Triage the issues opened since your last run.");
    const [after] = await listSchedules(db.pool);
    expect(after!.nextRunAt.toISOString()).toBe("2026-12-01T12:00:00.000Z");
    expect(after!.lastTaskId).toBe(tasks[0]!.id);

    // The same moment again: nothing is due.
    expect((await a.sweep())?.ticks).toEqual([]);

    // The next tick while the first turn still waits: absorbed, not stacked.
    now = new Date("2026-12-01T12:00:30Z");
    expect((await b.sweep())?.ticks).toEqual([
      { schedule: s!.id, result: "absorbed", taskId: tasks[0]!.id },
    ]);
    expect(await readTasks(db.pool, "issue_number = $1", [ISSUE])).toHaveLength(1);

    // The config pushed without the schedule: it stops.
    github()
      .api.get("/repos/codertocat/hello-world/contents/.github%2Ftether.yml")
      .reply(200, "agents: {}\n", { "content-type": "text/plain; charset=utf-8" });
    await wantScheduleSync(db.pool, {
      repoId: REPO_ID,
      installationId: INSTALLATION_ID,
      repo: REPO_KEY,
    });
    now = new Date("2026-12-01T14:10:00Z");
    const last = await a.sweep();
    expect(last).toEqual({ synced: 1, ticks: [] });
    expect(await listSchedules(db.pool)).toEqual([]);
  });
});

describe("repositories installed before schedules were read (#41.3)", () => {
  const B = { apiUrl: "https://api.github.com", webUrl: "https://github.com" };
  const owner = userJson(B, "Codertocat", 1);
  const repoJ = (name: string) =>
    repoJson(B, {
      id: REPO_ID,
      owner,
      name,
      private: false,
      defaultBranch: "main",
      createdAt: new Date("2026-01-01T00:00:00Z"),
      pushedAt: new Date("2026-11-01T00:00:00Z"),
      openIssues: 1,
    });
  const installationJ = () =>
    installationJson(B, {
      id: INSTALLATION_ID,
      appId: 1,
      appSlug: "tether",
      account: owner,
      permissions: { issues: "write", metadata: "read" },
      events: ["issue_comment"],
      repositorySelection: "all",
      createdAt: new Date("2026-01-01T00:00:00Z"),
    });
  /** The listing: the app's installations (its JWT), then the installation's repositories. */
  const listing = (newToken: boolean, name = "Hello-World") => {
    const gh = newToken ? github().token(INSTALLATION_ID) : github();
    gh.api.get("/app/installations").query({ per_page: "100" }).reply(200, [installationJ()]);
    gh.api
      .get("/installation/repositories")
      .query({ per_page: "100" })
      .reply(200, { total_count: 1, repositories: [repoJ(name)] });
    return gh;
  };

  it("the hourly listing finds a repository no push or installation event named, and reads its schedules; known ones are left to the hourly reading", async () => {
    await db.pool.query("DELETE FROM schedules; DELETE FROM schedule_repos");
    const app = await createTestApp(db);
    let now = new Date("2026-12-02T08:30:00Z");
    const scheduler = new Scheduler({
      pool: db.pool,
      log: createLogger("silent"),
      auth: (id) => app.probot.auth(id),
      appAuth: () => app.probot.auth(),
      now: () => now,
    });
    // Installed long ago, schedules in its config, nothing in schedule_repos.
    listing(true)
      .api.get("/repos/codertocat/hello-world/contents/.github%2Ftether.yml")
      .reply(200, WITH, { "content-type": "text/plain; charset=utf-8" });
    expect(await scheduler.sweep()).toEqual({ discovered: 1, synced: 1, ticks: [] });
    const [s] = await listSchedules(db.pool);
    expect(s).toMatchObject({ repoId: REPO_ID, repo: REPO_KEY, issueNumber: ISSUE });
    expect(s!.nextRunAt.toISOString()).toBe("2026-12-02T09:00:00.000Z");

    // Within the hour: no listing, no reading (nock fails on any request).
    now = new Date("2026-12-02T08:50:00Z");
    expect(await scheduler.sweep()).toEqual({ synced: 0, ticks: [] });

    // An hour on: listed again (nothing new; renamed meanwhile), and read again, under its new
    // name, because its reading is an hour old.
    await db.pool.query(`UPDATE schedule_repos SET synced_at = now() - interval '61 minutes'`);
    now = new Date("2026-12-02T09:31:00Z");
    // Probot keeps the installation's token for the hour it is good for.
    listing(false, "Hello-Renamed")
      .api.get("/repos/codertocat/hello-renamed/contents/.github%2Ftether.yml")
      .reply(200, "agents: {}\n", { "content-type": "text/plain; charset=utf-8" });
    expect(await scheduler.sweep()).toEqual({ synced: 1, ticks: [] });
    expect(await listSchedules(db.pool)).toEqual([]);
  });
});
