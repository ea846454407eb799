/**
 * A turn stopped while its workspace is being prepared (a clone or fetch under way): a user's
 * /cancel ends it as cancelled, with the usual 🛑 reply; a shutdown leaves it running under its
 * lease, for the next start to take over. Found by the soak, where /cancel comments landing
 * during a clone ended tasks as failed ("preparing the workspace … was cancelled").
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { runTask, SHUTDOWN, type RunTaskDeps } from "../../src/runner/turn/run-task.js";
import { registerRuntime } from "../../src/sql/runtimes.js";
import { claimTasks } from "../../src/sql/tasks/claim.js";
import { postgresTurnStore } from "../../src/sql/turn-store.js";
import { createTestDatabase } from "../helpers/db.js";
import { readTask, seedTask } from "../helpers/seed.js";
import { GatedAgent, fakeThread, fakeWorkspace } from "../helpers/runner-fakes.js";

const db = await createTestDatabase();
await registerRuntime(db.pool, {
  id: "rt-c",
  hostname: "h",
  homeDir: "/h",
  cliPath: "/c",
  cliVersion: null,
  canResume: true,
  concurrency: 1,
});
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-cancel-prep-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Runs a turn whose workspace preparation lasts until it is aborted with `reason`. */
async function stoppedWhilePreparing(issue: number, reason: string) {
  const seeded = await seedTask(db.pool, { issue_number: issue });
  const [task] = await claimTasks(db.pool, "runner-c", "rt-c", 1);
  expect(task?.id).toBe(seeded.id);
  const thread = fakeThread();
  const agent = new GatedAgent();
  const abort = new AbortController();
  const deps: RunTaskDeps = {
    store: postgresTurnStore(db.pool),
    log: createLogger("silent"),
    runnerId: "runner-c",
    runtimeId: "rt-c",
    agent,
    github: async () => thread,
    workspace: fakeWorkspace(root, {
      // Like the real one: a git command killed by the signal becomes a "cancelled" error.
      prepare: (req) =>
        new Promise((_, reject) => {
          setTimeout(() => abort.abort(reason), 50);
          req.signal?.addEventListener("abort", () =>
            reject(new Error(`preparing the workspace for ${req.repo} was cancelled`)),
          );
        }),
    }),
    progressIntervalMs: 0,
  };
  await runTask(deps, task!, abort.signal);
  return { row: await readTask(db.pool, seeded.id), thread, agent };
}

describe("a turn stopped while its workspace is prepared", () => {
  it("by /cancel: cancelled, one 🛑 reply, no run", async () => {
    const { row, thread, agent } = await stoppedWhilePreparing(301, "cancel");
    expect(row).toMatchObject({ status: "cancelled", outcome: "cancelled", locked_by: null });
    expect(thread.comments).toHaveLength(1);
    expect(thread.comments[0]!.body).toMatch(/^🛑 Cancelled with `\/cancel`\./);
    expect(agent.started).toEqual([]);
  });

  it("by a shutdown: left running under its lease for the next start, nothing posted as failed", async () => {
    const { row, thread } = await stoppedWhilePreparing(302, SHUTDOWN);
    expect(row).toMatchObject({ status: "running", locked_by: "runner-c" });
    expect(thread.comments.map((c) => c.body).filter((b) => !b.startsWith("⏳"))).toEqual([]);
  });
});
