import { describe, expect, it } from "vitest";
import { migrate } from "../../src/db/migrate.js";
import { createEmptyDatabase, createTestDatabase } from "../helpers/db.js";
import { seedTask } from "../helpers/seed.js";

describe("migrations", () => {
  it("apply from an empty database, and a second run applies nothing", async () => {
    const db = await createEmptyDatabase();
    const applied = await migrate(db.url);
    expect(applied.length).toBeGreaterThan(0);
    const { rows } = await db.pool.query(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    expect(rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining([
        "tasks",
        "runtimes",
        "sessions",
        "history_epochs",
        "task_comments",
        "webhook_deliveries",
        "conversation_branches",
      ]),
    );
    const cols = await db.pool.query(
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'tasks'",
    );
    expect(cols.rows.map((r) => r.column_name)).toEqual(
      expect.arrayContaining([
        "status",
        "session_id",
        "force_fresh",
        "runtime_id",
        "work_dir",
        "resume_reason",
        "heartbeat_at",
        "thread_number",
        "publish_result",
        "publish_reason",
        "published_sha",
        "commits_pushed",
        "pull_opened",
      ]),
    );
    expect(await migrate(db.url)).toEqual([]);
  });
});

describe("migrations from several processes at once", () => {
  // Eight runner pods of a Deployment start together and each migrates at start: none may fail
  // for finding another one's migration under way (#34, seen in the many-runner drill).
  it("all succeed, on an empty database and on a migrated one, and apply each migration once", async () => {
    const db = await createEmptyDatabase();
    const first = await Promise.all(Array.from({ length: 8 }, () => migrate(db.url)));
    const applied = first.flat();
    expect(applied.length).toBeGreaterThan(0);
    expect(new Set(applied).size).toBe(applied.length);
    const again = await Promise.all(Array.from({ length: 8 }, () => migrate(db.url)));
    expect(again.flat()).toEqual([]);
  });
});

describe("task constraints", async () => {
  const db = await createTestDatabase();

  it("allow one queued and one running task per key, but not a second of either", async () => {
    const key = { repo: "octo/one", issue_number: 7, agent: "tether" };
    await seedTask(db.pool, { ...key, status: "queued" });
    await seedTask(db.pool, { ...key, status: "running" });
    await expect(seedTask(db.pool, { ...key, status: "queued" })).rejects.toThrow(
      /tasks_one_queued_per_key/,
    );
    await expect(seedTask(db.pool, { ...key, status: "running" })).rejects.toThrow(
      /tasks_one_running_per_key/,
    );
    // Finished tasks never collide, and other keys are independent.
    await seedTask(db.pool, { ...key, status: "succeeded" });
    await seedTask(db.pool, { ...key, status: "succeeded" });
    await seedTask(db.pool, { ...key, agent: "reviewer", status: "queued" });
    await seedTask(db.pool, { ...key, issue_number: 8, status: "running" });
  });

  it("refuse unknown statuses and a running task with no owner", async () => {
    await expect(seedTask(db.pool, { status: "paused" })).rejects.toThrow(/check constraint/);
    await expect(
      seedTask(db.pool, { repo: "octo/two", status: "running", locked_by: null }),
    ).rejects.toThrow(/check constraint/);
  });
});
