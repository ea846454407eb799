/**
 * Standing conversations (#41), end to end: the built app as a process, real Postgres, the real
 * Claude CLI in its sandbox against the fake Messages API, GitHub stood in for. A one-minute
 * schedule (TETHER_SCHEDULE_MIN_MINUTES=1) learnt from a push runs a fresh turn on its first
 * tick and a resumed one (`--resume`) on the next, each answered in its issue; with two
 * processes each tick is one turn; a schedule pushed away stops, while a `title:` schedule
 * pushed in opens its issue on its first run and keeps using it.
 *
 * No test waits for the wall clock: the scheduler reads its time from a file
 * (TETHER_SCHEDULE_CLOCK_FILE) that the test moves from tick to tick, and sweeps every 200 ms.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type AppProcess, type Stack } from "../helpers/e2e-stack.js";
import { lastUserText, replies, userTexts } from "../helpers/fake-anthropic.js";

const db = await createTestDatabase();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-e2e-clock-"));
const CLOCK = path.join(dir, "now");
const MIN = 60_000;
/** A minute boundary a little before now: every tick below is within minutes of the real clock. */
const BASE = Math.floor(Date.now() / MIN) * MIN;
const at = (ms: number) => new Date(BASE + ms);

/** Move the scheduler's clock (written whole, then renamed: a sweep never reads half a time). */
function setClock(t: Date): void {
  fs.writeFileSync(`${CLOCK}.tmp`, t.toISOString());
  fs.renameSync(`${CLOCK}.tmp`, CLOCK);
}

let stack: Stack;
let second: AppProcess | undefined;
let triage: number;

const config = (schedules: string) => `
agents:
  tether:
    model: claude-sonnet-4-5
schedules:
${schedules}`;
const TRIAGE = () =>
  `  - cron: "* * * * *"\n    issue: ${triage}\n    request: TRIAGE-REQUEST label the issues opened since your last run.\n`;
const REPORT = `  - cron: "* * * * *"\n    title: Nightly report\n    request: REPORT-REQUEST summarise the day.\n`;

beforeAll(async () => {
  setClock(at(-3 * MIN + 30_000));
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    env: {
      TETHER_SCHEDULE_MIN_MINUTES: "1",
      TETHER_SCHEDULE_CHECK_MS: "200",
      TETHER_SCHEDULE_CLOCK_FILE: CLOCK,
    },
  });
  triage = stack.gh.addIssue({ repo: REPO, title: "Weekly triage", body: "Reports go here." })
    .number as number;
}, 120_000);
afterAll(async () => {
  await stack?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 150_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline)
      throw new Error(`${what}: timed out\n${stack.app.output().slice(-6000)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

interface Schedule {
  id: number;
  issue_number: number | null;
  title: string | null;
  next_run_at: Date;
  last_run_at: Date | null;
}
const schedules = async (): Promise<Schedule[]> =>
  (
    await db.pool.query<Schedule>(
      `SELECT id::int AS id, issue_number, title, next_run_at, last_run_at FROM schedules ORDER BY id`,
    )
  ).rows;

/** The tasks the schedule's ticks made, each with the tick its request names. */
async function tickTasks(): Promise<Array<Record<string, unknown> & { source: string }>> {
  const { rows } = await db.pool.query(
    `SELECT t.*, c.source FROM tasks t JOIN task_comments c ON c.task_id = t.id
      WHERE c.source LIKE 'schedule:%' ORDER BY t.id`,
  );
  return rows as Array<Record<string, unknown> & { source: string }>;
}

/** The task of schedule `id`'s tick `tick`, once it is finished. */
const finishedTick = (id: number, tick: Date) =>
  until(`the turn of schedule ${id}'s tick ${tick.toISOString()}`, async () => {
    const t = (await tickTasks()).find((x) => x.source === `schedule:${id}:${tick.toISOString()}`);
    return t && ["succeeded", "failed", "cancelled"].includes(t.status as string) ? t : undefined;
  });

/** The argument lists of the CLIs the app runs now (host pids: the sandbox has its own). */
function cliArgs(apps: AppProcess[]): string[][] {
  return apps
    .flatMap((a) => a.descendants())
    .map((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      } catch {
        return [];
      }
    })
    .filter((argv) => argv.includes("-p") || argv.includes("--print"));
}

/** tether_schedule_ticks_total{result="queued"} of one process. */
async function queuedTicks(app: AppProcess): Promise<number> {
  const text = await (await fetch(`${app.url}/metrics`)).text();
  const m = /^tether_schedule_ticks_total\{result="queued"\} (\d+)/m.exec(text);
  return m ? Number(m[1]) : 0;
}

describe("scheduled turns (real CLI, real Postgres, GitHub stand-in)", { timeout: 400_000 }, () => {
  it("a one-minute schedule learnt from a push: a fresh turn on its first tick, a resumed one (--resume) on the next, both answered in the issue", async () => {
    // Pushed after the app started: the push asks for the repository's schedules.
    await stack.gh.setConfig(REPO, config(TRIAGE()));
    const [s] = await until("the schedule learnt", async () => {
      const all = await schedules();
      return all.length ? all : undefined;
    });
    expect(s).toMatchObject({ issue_number: triage, last_run_at: null });
    expect(s!.next_run_at.toISOString()).toBe(at(-2 * MIN).toISOString());
    expect(await tickTasks()).toEqual([]);

    // First tick: a fresh turn, answered in the issue.
    stack.api.script(replies.text("FIRST-REPORT: labelled #3, #5 and #8."));
    const ran1 = at(-2 * MIN + 5_000);
    setClock(ran1);
    const first = await finishedTick(s!.id, at(-2 * MIN));
    expect(first).toMatchObject({
      status: "succeeded",
      trigger: "schedule",
      agent: "tether",
      issue_number: triage,
      resume_decision: "fresh",
      resume_reason: "no_prior_session",
    });
    const firstAsked = lastUserText(stack.api.messageRequests().at(-1)!);
    expect(firstAsked).toContain("TRIAGE-REQUEST");
    expect(firstAsked).toContain("This is the schedule's first turn.");
    const answer1 = stack.taskComments(triage, first.id as number);
    expect(answer1.map((c) => c.body).join("\n")).toContain("FIRST-REPORT");

    // Second tick: the same conversation, resumed. The model's answer waits until the test has
    // read the CLI's arguments, so the process is there to read.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    stack.api.script(replies.deferred(held, replies.text("SECOND-REPORT: #3 and #5 still open.")));
    const before = stack.api.messageRequests().length;
    setClock(at(-MIN + 5_000));
    await stack.api.waitFor(() => stack.api.messageRequests().length > before, 120_000);
    const argv = cliArgs([stack.app]);
    release();
    // The sandbox (bwrap, its init) and the CLI inside it all carry the CLI's arguments.
    expect(argv.length).toBeGreaterThan(0);
    expect(argv.every((a) => a[a.indexOf("--resume") + 1] === first.session_id)).toBe(true);
    const second1 = await finishedTick(s!.id, at(-MIN));
    expect(second1).toMatchObject({
      status: "succeeded",
      trigger: "schedule",
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: first.session_id,
    });
    const req = stack.api.messageRequests()[before]!;
    expect(userTexts(req).some((t) => t.includes("This is the schedule's first turn."))).toBe(true);
    const asked = lastUserText(req);
    expect(asked).toContain("TRIAGE-REQUEST");
    expect(asked).toContain(
      `Your last scheduled turn in this conversation ran at ${ran1.toISOString()}.`,
    );
    const answer2 = stack.taskComments(triage, second1.id as number);
    expect(answer2.map((c) => c.body).join("\n")).toContain("SECOND-REPORT");
    const [after] = await schedules();
    expect(after!.last_run_at?.toISOString()).toBe(at(-MIN + 5_000).toISOString());
  });

  it("two processes, each with a scheduler and a runner: one turn per tick", async () => {
    const root = path.join(stack.tmp, "second");
    for (const d of ["home", "data", "ws"]) fs.mkdirSync(path.join(root, d), { recursive: true });
    second = await stack.spawnApp({
      HOME: path.join(root, "home"),
      TETHER_DATA_DIR: path.join(root, "data"),
      TETHER_WORKSPACE_DIR: path.join(root, "ws"),
      TETHER_RUNTIME_ID: "rt-e2e-second",
    });
    const [s] = await schedules();
    const queuedBefore = (await queuedTicks(stack.app)) + (await queuedTicks(second));
    expect(queuedBefore).toBe(2);
    stack.api.script(replies.text("THIRD-REPORT: nothing new."));
    setClock(at(5_000));
    const third = await finishedTick(s!.id, at(0));
    expect(third).toMatchObject({ status: "succeeded", resume_decision: "resume" });
    // Both processes swept many times meanwhile (every 200 ms): still one turn for the tick.
    const mine = (await tickTasks()).filter((t) => t.source.startsWith(`schedule:${s!.id}:`));
    expect(mine.map((t) => t.source)).toEqual(
      [-2 * MIN, -MIN, 0].map((ms) => `schedule:${s!.id}:${at(ms).toISOString()}`),
    );
    expect((await queuedTicks(stack.app)) + (await queuedTicks(second))).toBe(3);
    expect(stack.taskComments(triage, third.id as number)).toHaveLength(1);
  });

  it("a schedule pushed away stops; a title: schedule pushed in opens its issue on its first run and keeps using it", async () => {
    const [old] = await schedules();
    await stack.gh.setConfig(REPO, config(REPORT));
    const [report] = await until("the config read again", async () => {
      const all = await schedules();
      return all.length === 1 && all[0]!.id !== old!.id ? all : undefined;
    });
    expect(report).toMatchObject({ title: "Nightly report", issue_number: null });
    expect(report!.next_run_at.toISOString()).toBe(at(MIN).toISOString());

    // Its first tick, when the triage schedule would have ticked too.
    stack.api.script(replies.text("REPORT-ONE: a quiet day."));
    setClock(at(MIN + 5_000));
    const one = await finishedTick(report!.id, at(MIN));
    const opened = one.issue_number as number;
    expect(opened).not.toBe(triage);
    const issue = stack.gh.issueJson(REPO, opened) as { title: string; user: { login: string } };
    expect(issue.title).toBe("Nightly report");
    expect(issue.user.login).toBe(stack.gh.botLogin());
    expect(one).toMatchObject({ status: "succeeded", resume_reason: "no_prior_session" });
    expect(
      stack
        .taskComments(opened, one.id as number)
        .map((c) => c.body)
        .join("\n"),
    ).toContain("REPORT-ONE");
    const [kept] = await schedules();
    expect(kept!.issue_number).toBe(opened);

    // The next tick continues the same issue's conversation; the stopped schedule made nothing.
    stack.api.script(replies.text("REPORT-TWO: still quiet."));
    setClock(at(2 * MIN + 5_000));
    const two = await finishedTick(report!.id, at(2 * MIN));
    expect(two).toMatchObject({
      status: "succeeded",
      issue_number: opened,
      resume_decision: "resume",
      session_id: one.session_id,
    });
    expect(
      stack
        .taskComments(opened, two.id as number)
        .map((c) => c.body)
        .join("\n"),
    ).toContain("REPORT-TWO");
    const tasks = await tickTasks();
    expect(tasks.filter((t) => t.source.startsWith(`schedule:${old!.id}:`))).toHaveLength(3);
    expect(tasks.filter((t) => t.issue_number === triage)).toHaveLength(3);
    expect(stack.gh.openapiViolations).toEqual([]);
  });
});
