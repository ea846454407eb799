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
import { issueJson } from "../helpers/fake-github-shapes.js";
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
