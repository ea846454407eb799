/**
 * Near an installation's GitHub rate limit, its turns wait; they do not fail (#34). On real
 * Postgres: the stored headroom and how responses merge into it, the claim's skip (an
 * installation below the reserve waits for its reset, another is not held up), the note each
 * deferred task's thread gets once, and a turn that hit a limit it could not wait out going back
 * to the queue. The reset is moved by back-dating it in SQL, never waited for.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { HeadroomSync } from "../../src/github/headroom-sync.js";
import type { RequestTally } from "../../src/github/request-count.js";
import { createLogger } from "../../src/log.js";
import type { Agent } from "../../src/runner/ports.js";
import { renderDeferred, tellDeferred } from "../../src/runner/loop/rate-limit-defer.js";
import { runTask } from "../../src/runner/turn/run-task.js";
import { findTaskMarker } from "../../src/runner/render/thread-comments.js";
import {
  attachNote,
  readHeadroom,
  requeueUntil,
  saveHeadroom,
  takeUntoldDeferred,
} from "../../src/sql/rate-limits.js";
import { claimTasks } from "../../src/sql/tasks/claim.js";
import { postgresTurnStore } from "../../src/sql/turn-store.js";
import { readQueueFigures } from "../../src/sql/stats/read.js";
import { createTestDatabase } from "../helpers/db.js";
import {
  agentDefaults,
  fakeThread,
  fakeWorkspace,
  registerTestRuntime,
} from "../helpers/runner-fakes.js";
import { readTask, seedTask } from "../helpers/seed.js";

const db = await createTestDatabase();
const pool = db.pool;
await registerTestRuntime(pool);
const log = createLogger("silent");

let n = 0;
const key = () => ({ repo: `octo/r${++n}`, issue_number: 1, agent: "tether" });
const inSeconds = (s: number) => Math.floor(Date.now() / 1000) + s;
const claim = (reserve: number, runner = `runner-${++n}`) =>
  claimTasks(pool, runner, "rt", 10, {}, undefined, {
    rateLimitReserve: reserve,
  });
const reset = async () => {
  await pool.query("DELETE FROM tasks");
  await pool.query("DELETE FROM installation_rate_limits");
};
/** The window of `installation` ends now: what the claim sees once GitHub's reset time passes. */
const passReset = (installation: number) =>
  pool.query(
    `UPDATE installation_rate_limits SET reset_at = now() - interval '1 second' WHERE installation_id = $1`,
    [installation],
  );

describe("the stored headroom", () => {
  it("keeps the lowest remaining within a window, takes a later window, ignores an earlier one", async () => {
    await reset();
    const window = inSeconds(600);
    await saveHeadroom(pool, [{ installationId: 7, remaining: 50, limit: 5000, resetAt: window }]);
    // A slower process writes what it heard earlier in the same window: the lower count stays.
    await saveHeadroom(pool, [{ installationId: 7, remaining: 80, limit: 5000, resetAt: window }]);
    expect((await readHeadroom(pool, 100))["7"]).toMatchObject({ remaining: 50, resetAt: window });
    // An answer from the window before changes nothing.
    await saveHeadroom(pool, [
      { installationId: 7, remaining: 4000, limit: 5000, resetAt: window - 3600 },
    ]);
    expect((await readHeadroom(pool, 100))["7"]?.remaining).toBe(50);
    // The next window replaces it.
    await saveHeadroom(pool, [
      { installationId: 7, remaining: 4990, limit: 5000, resetAt: window + 3600 },
    ]);
    expect((await readHeadroom(pool, 100))["7"]).toEqual({
      remaining: 4990,
      limit: 5000,
      resetAt: window + 3600,
      deferred: 0,
    });
  });

  it("a process writes what changed since its last write, and only installations", async () => {
    await reset();
    const tally: RequestTally = { counts: new Map(), headroom: new Map() };
    const writes: unknown[][] = [];
    const spy = {
      query: async (text: string, values?: unknown[]) => {
        writes.push(values ?? []);
        return pool.query(text, values);
      },
    };
    const sync = new HeadroomSync(spy as never, tally);
    tally.headroom.set("app", { remaining: 10, limit: 5000, resetAt: inSeconds(600) });
    tally.headroom.set("31", { remaining: 20, limit: 5000, resetAt: inSeconds(600) });
    await sync.flush();
    await sync.flush(); // nothing new: no statement
    expect(writes).toHaveLength(1);
    expect(writes[0]?.[0]).toEqual([31]);
    tally.headroom.set("31", { remaining: 19, limit: 5000, resetAt: inSeconds(600) });
    await sync.flush();
    expect(writes).toHaveLength(2);
    expect((await readHeadroom(pool, 100))["31"]?.remaining).toBe(19);
  });
});

describe("the claim near the limit", () => {
  it("leaves an installation below the reserve until its reset, and takes another's task meanwhile", async () => {
    await reset();
    const low = await seedTask(pool, {
      ...key(),
      installation_id: 11,
      created_at: new Date(Date.now() - 5000),
    });
    const other = await seedTask(pool, { ...key(), installation_id: 12 });
    await saveHeadroom(pool, [
      { installationId: 11, remaining: 40, limit: 5000, resetAt: inSeconds(900) },
      { installationId: 12, remaining: 4000, limit: 5000, resetAt: inSeconds(900) },
    ]);
    // The older task is the low installation's: it is passed over, the other is not held up.
    expect((await claim(100)).map((t) => t.id)).toEqual([other.id]);
    expect(await claim(100)).toEqual([]);
    expect((await readTask(pool, low.id)).status).toBe("queued");
    // A reserve below the headroom, or none: it runs.
    await passReset(11);
    expect((await claim(100)).map((t) => t.id)).toEqual([low.id]);
  });

  it("at the reserve itself the installation is not deferred, and a reserve of 0 defers nothing", async () => {
    await reset();
    const a = await seedTask(pool, { ...key(), installation_id: 13 });
    await saveHeadroom(pool, [
      { installationId: 13, remaining: 100, limit: 5000, resetAt: inSeconds(900) },
    ]);
    expect((await claim(100)).map((t) => t.id)).toEqual([a.id]);
    const b = await seedTask(pool, { ...key(), installation_id: 13 });
    await saveHeadroom(pool, [
      { installationId: 13, remaining: 0, limit: 5000, resetAt: inSeconds(900) },
    ]);
    expect(await claim(100)).toEqual([]);
    expect((await claim(0)).map((t) => t.id)).toEqual([b.id]);
  });

  it("a task told to wait (deferred_until) waits until then whatever the headroom says", async () => {
    await reset();
    const t = await seedTask(pool, {
      ...key(),
      installation_id: 14,
      deferred_until: new Date(Date.now() + 600_000),
    });
    expect(await claim(0)).toEqual([]);
    await pool.query(`UPDATE tasks SET deferred_until = now() - interval '1 second'`);
    expect((await claim(0)).map((x) => x.id)).toEqual([t.id]);
  });
});

describe("telling the thread", () => {
  it("posts one note per task and window, which becomes the comment its turn edits", async () => {
    await reset();
    const t = await seedTask(pool, { ...key(), installation_id: 21 });
    const fresh = await seedTask(pool, { ...key(), installation_id: 22 });
    const windowEnd = inSeconds(1800);
    await saveHeadroom(pool, [
      { installationId: 21, remaining: 7, limit: 5000, resetAt: windowEnd },
      { installationId: 22, remaining: 4000, limit: 5000, resetAt: windowEnd },
    ]);
    const thread = fakeThread({ firstId: 500 });
    const tell = () => tellDeferred({ pool, log, github: async () => thread, reserve: 100 });
    expect(await tell()).toEqual([t.id]);
    expect(await tell()).toEqual([]); // told once
    expect(thread.creates).toBe(1);
    const note = thread.comments[0]!;
    const clock = new Date(windowEnd * 1000).toISOString().slice(11, 16);
    expect(note.body).toContain(`waiting for GitHub's rate limit to reset at ${clock} UTC`);
    expect(note.body).toContain("7 GitHub API requests left");
    expect(findTaskMarker(note.body)).toBe(t.id);
    const row = await readTask(pool, t.id);
    expect(row).toMatchObject({ status: "queued", tracking_comment_id: 500 });
    expect((row.deferred_until as Date).getTime()).toBe(windowEnd * 1000);
    expect((await readTask(pool, fresh.id)).deferred_until).toBeNull();
    // /metrics and /api/stats count it.
    expect((await readQueueFigures(pool, { now: new Date(), timeoutMs: 5000 })).deferred).toBe(1);
    expect((await readHeadroom(pool, 100))["21"]?.deferred).toBe(1);

    // The window resets: the claim hands the task on with the note as its tracking comment.
    await passReset(21);
    await pool.query(`UPDATE tasks SET deferred_until = now() - interval '1 second'`);
    const [claimed] = (await claim(100)).filter((x) => x.id === t.id);
    expect(claimed?.trackingCommentId).toBe(500);
  });

  it("a later window that is low again edits the same note instead of posting another", async () => {
    await reset();
    const t = await seedTask(pool, { ...key(), installation_id: 23 });
    await saveHeadroom(pool, [
      { installationId: 23, remaining: 3, limit: 5000, resetAt: inSeconds(600) },
    ]);
    const thread = fakeThread({ firstId: 600 });
    const tell = () => tellDeferred({ pool, log, github: async () => thread, reserve: 100 });
    expect(await tell()).toEqual([t.id]);
    await saveHeadroom(pool, [
      { installationId: 23, remaining: 2, limit: 5000, resetAt: inSeconds(3660) },
    ]);
    expect(await tell()).toEqual([t.id]);
    expect(thread.creates).toBe(1);
    expect(thread.comments[0]?.body).toContain(
      new Date(inSeconds(3660) * 1000).toISOString().slice(11, 16),
    );
  });

  it("a note GitHub refused is not tried again in that window, and the task still runs after it", async () => {
    await reset();
    const t = await seedTask(pool, { ...key(), installation_id: 24 });
    await saveHeadroom(pool, [
      { installationId: 24, remaining: 1, limit: 5000, resetAt: inSeconds(600) },
    ]);
    let tries = 0;
    const thread = fakeThread();
    thread.createComment = async () => {
      tries++;
      throw Object.assign(new Error("API rate limit exceeded"), { status: 403 });
    };
    const tell = () => tellDeferred({ pool, log, github: async () => thread, reserve: 100 });
    expect(await tell()).toEqual([]);
    expect(await tell()).toEqual([]);
    expect(tries).toBe(1);
    await passReset(24);
    await pool.query(`UPDATE tasks SET deferred_until = now() - interval '1 second'`);
    expect((await claim(100)).map((x) => x.id)).toEqual([t.id]);
  });

  it("a note that lost the race to a runner (the window reset meanwhile) is not left saying it waits", async () => {
    await reset();
    const t = await seedTask(pool, { ...key(), installation_id: 25 });
    await saveHeadroom(pool, [
      { installationId: 25, remaining: 1, limit: 5000, resetAt: inSeconds(600) },
    ]);
    const thread = fakeThread({ firstId: 700 });
    const create = thread.createComment;
    thread.createComment = async (issue, body) => {
      // While the note is on its way, the window resets and a runner takes the task.
      await pool.query(`UPDATE tasks SET status = 'running', locked_by = 'r' WHERE id = $1`, [
        t.id,
      ]);
      return create(issue, body);
    };
    expect(await tellDeferred({ pool, log, github: async () => thread, reserve: 100 })).toEqual([]);
    expect(thread.comments[0]?.body).toMatch(/rate limit reset at .* took this request up then/);
    expect(await attachNote(pool, t.id as number, 700)).toBe(false);
  });

  it("a reset seconds away is waited for without a note", async () => {
    await reset();
    const t = await seedTask(pool, { ...key(), installation_id: 26 });
    await saveHeadroom(pool, [
      { installationId: 26, remaining: 0, limit: 5000, resetAt: inSeconds(10) },
    ]);
    const thread = fakeThread();
    expect(await tellDeferred({ pool, log, github: async () => thread, reserve: 100 })).toEqual([]);
    expect(thread.creates).toBe(0);
    expect(await claim(100)).toEqual([]);
    await passReset(26);
    expect((await claim(100)).map((x) => x.id)).toEqual([t.id]);
  });

  it("renders the note", () => {
    const body = renderDeferred({
      taskId: 9,
      agent: "tether",
      until: new Date("2026-11-27T18:42:10Z"),
      remaining: 12,
      reserve: 100,
    });
    expect(body).toContain("reset at 18:42 UTC");
    expect(body).toContain("below the 100 Tether keeps in reserve");
    expect(findTaskMarker(body)).toBe(9);
  });
});

describe("a turn that runs into a rate limit it cannot wait out", () => {
  it("goes back to the queue until the reset, its attempt given back, not failed", async () => {
    await reset();
    const k = key();
    const t = await seedTask(pool, { ...k, installation_id: 31, max_attempts: 1 });
    const [task] = await claim(100, "runner-turn");
    expect(task?.id).toBe(t.id);
    // A comment that came while it ran waits in the key's queued task, folded in on requeue.
    const later = await seedTask(pool, { ...k, installation_id: 31, force_fresh: true });
    const until = Date.now() + 40 * 60_000;
    const thread = fakeThread();
    thread.loadConfig = async () => {
      throw Object.assign(
        new Error("GitHub's rate limit (403) on GET …/tether.yml asks to wait 40 min"),
        { status: 403 },
      );
    };
    Object.assign(thread, { limitedUntil: () => until });
    const agent: Agent = {
      ...agentDefaults,
      canResume: async () => true,
      run: async () => {
        throw new Error("the agent must not run");
      },
    };
    await runTask(
      {
        store: postgresTurnStore(pool),
        log,
        runnerId: "runner-turn",
        runtimeId: "rt",
        agent,
        workspace: fakeWorkspace(fs.mkdtempSync(path.join(os.tmpdir(), "tether-defer-"))),
        github: async () => thread,
        progressIntervalMs: 0,
      },
      task!,
      new AbortController().signal,
    );
    const row = await readTask(pool, t.id);
    expect(row).toMatchObject({
      status: "queued",
      locked_by: null,
      attempts: 0,
      outcome: null,
      force_fresh: true,
    });
    expect((row.deferred_until as Date).getTime()).toBe(until);
    // The folded task's comment is the requeued task's now.
    const { rows } = await pool.query(`SELECT id FROM tasks WHERE id = $1`, [later.id]);
    expect(rows).toEqual([]);
    // Not before the reset; after it, it runs.
    expect(await claim(100)).toEqual([]);
    await pool.query(`UPDATE tasks SET deferred_until = now() - interval '1 second'`);
    expect((await claim(100)).map((x) => x.id)).toEqual([t.id]);
  });

  it("without a rate limit the same failure fails the turn", async () => {
    await reset();
    const t = await seedTask(pool, { ...key(), installation_id: 32 });
    const [task] = await claim(100, "runner-turn2");
    const thread = fakeThread();
    thread.loadConfig = async () => {
      throw Object.assign(new Error("Not Found"), { status: 404 });
    };
    Object.assign(thread, { limitedUntil: () => null });
    await runTask(
      {
        store: postgresTurnStore(pool),
        log,
        runnerId: "runner-turn2",
        runtimeId: "rt",
        agent: {
          ...agentDefaults,
          canResume: async () => true,
          run: async () => Promise.reject(new Error("no")),
        },
        workspace: fakeWorkspace(fs.mkdtempSync(path.join(os.tmpdir(), "tether-defer-"))),
        github: async () => thread,
        progressIntervalMs: 0,
      },
      task!,
      new AbortController().signal,
    );
    expect(await readTask(pool, t.id)).toMatchObject({ status: "failed", deferred_until: null });
  });

  it("is scoped to the runner's lease", async () => {
    await reset();
    const t = await seedTask(pool, { ...key(), status: "running", locked_by: "other" });
    expect(await requeueUntil(pool, t.id as number, "me", new Date())).toBe(false);
    expect((await readTask(pool, t.id)).status).toBe("running");
  });
});

describe("the queue is not held up for long", () => {
  it("only up to `limit` notes per round, oldest first", async () => {
    await reset();
    for (let i = 0; i < 3; i++)
      await seedTask(pool, {
        ...key(),
        installation_id: 41,
        created_at: new Date(Date.now() - 10_000 + i),
      });
    await saveHeadroom(pool, [
      { installationId: 41, remaining: 0, limit: 5000, resetAt: inSeconds(600) },
    ]);
    const first = await takeUntoldDeferred(pool, 100, 2);
    expect(first).toHaveLength(2);
    expect(await takeUntoldDeferred(pool, 100, 2)).toHaveLength(1);
  });
});
