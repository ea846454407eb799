import { beforeEach, describe, expect, it, vi } from "vitest";
import { IntakeProcessor } from "../../src/intake/processor.js";
import { createLogger } from "../../src/log.js";
import { claimDeliveries, readDelivery } from "../../src/sql/deliveries.js";
import { createTestDatabase } from "../helpers/db.js";
import { commentCreated, INSTALLATION_ID, REPO_KEY } from "../helpers/intake-payloads.js";
import { createTestApp, type TestApp } from "../helpers/probot.js";
import { github, rest, useNock } from "../helpers/intake-github.js";
import { readTasks, seedTask } from "../helpers/seed.js";

const db = await createTestDatabase();
useNock();

let app: TestApp;
let issue = 600;
let commentId = 60_000;
beforeEach(async () => {
  app = await createTestApp(db);
  issue++;
  commentId += 10;
});

const CONFIG = "/repos/Codertocat/Hello-World/contents/.github%2Ftether.yml";
const comment = (id = commentId, body = "@tether go") =>
  commentCreated({ commentId: id, issueNumber: issue, body });

describe("retries", () => {
  it("retries a delivery that hit a GitHub outage, and then queues its task", async () => {
    const gh = github().token(INSTALLATION_ID);
    gh.api.get(CONFIG).reply(502, "bad gateway");
    gh.noConfig().permission("Codertocat", "write").reactToComment(commentId);
    const id = `retry-${issue}`;
    await app.deliver("issue_comment", comment(), id);
    expect(await readDelivery(db.pool, id)).toMatchObject({ status: "done", attempts: 2 });
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toHaveLength(1);
  });

  it("marks a delivery that keeps failing as failed, with its error, after max_attempts, and goes on with the next", async () => {
    const gh = github().token(INSTALLATION_ID);
    for (let i = 0; i < 5; i++) gh.api.get(CONFIG).reply(503, "unavailable");
    const bad = `bad-${issue}`;
    await app.deliver("issue_comment", comment(), bad);
    expect(await readDelivery(db.pool, bad)).toMatchObject({
      status: "failed",
      attempts: 5,
      error: expect.stringMatching(/HTTP 503/),
      processedAt: expect.any(Date),
    });

    github()
      .noConfig()
      .permission("Codertocat", "write")
      .reactToComment(commentId + 1);
    await app.deliver("issue_comment", comment(commentId + 1), `good-${issue}`);
    expect(await readDelivery(db.pool, `good-${issue}`)).toMatchObject({ status: "done" });
  });

  it("fails at once on an answer that waiting cannot change (the installation is gone)", async () => {
    github()
      .api.post(`/app/installations/${INSTALLATION_ID}/access_tokens`)
      .reply(404, { message: "Not Found" });
    const id = `gone-${issue}`;
    await app.deliver("issue_comment", comment(), id);
    expect(await readDelivery(db.pool, id)).toMatchObject({
      status: "failed",
      attempts: 1,
      error: expect.stringMatching(/HTTP 404/),
    });
  });

  it("runs a failed delivery again when GitHub redelivers it", async () => {
    github()
      .api.post(`/app/installations/${INSTALLATION_ID}/access_tokens`)
      .reply(404, { message: "Not Found" });
    const id = `redeliver-${issue}`;
    await app.deliver("issue_comment", comment(), id);
    expect((await readDelivery(db.pool, id))?.status).toBe("failed");

    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    await app.deliver("issue_comment", comment(), id);
    expect(await readDelivery(db.pool, id)).toMatchObject({
      status: "done",
      attempts: 1,
      error: null,
    });
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toHaveLength(1);
  });

  it("skips a payload it cannot read, without stopping", async () => {
    await db.pool.query(
      `INSERT INTO webhook_deliveries (delivery_id, event, action, installation_id, dedupe_key, payload, status)
       VALUES ($1, 'issue_comment', 'created', 1, $2, '{"action":"created","comment":"nonsense"}', 'pending')`,
      [`junk-${issue}`, `junk-${issue}`],
    );
    await app.processor.processPending();
    expect(await readDelivery(db.pool, `junk-${issue}`)).toMatchObject({
      status: "skipped",
      outcome: expect.stringMatching(/^unexpected issue_comment\.created payload: /),
    });
  });
});

describe("leases", () => {
  it("takes over a delivery whose processor died holding it, once its lease has run out", async () => {
    await app.receive("issue_comment", comment(), `dead-${issue}`);
    const [claimed] = await claimDeliveries(db.pool, {
      worker: "dead-processor",
      limit: 1,
      leaseMs: 60_000,
    });
    expect(claimed?.deliveryId).toBe(`dead-${issue}`);
    await app.processor.processPending();
    expect((await readDelivery(db.pool, `dead-${issue}`))?.status).toBe("pending");

    await db.pool.query(
      "UPDATE webhook_deliveries SET run_after = now() - interval '1 second' WHERE delivery_id = $1",
      [`dead-${issue}`],
    );
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    await app.processor.processPending();
    expect(await readDelivery(db.pool, `dead-${issue}`)).toMatchObject({
      status: "done",
      attempts: 2,
    });
  });

  it("on stop, hands back what it could not finish, so it is taken again at once", async () => {
    const gh = github().token(INSTALLATION_ID);
    gh.api.get(CONFIG).delay(400).reply(404);
    gh.api.get("/repos/Codertocat/.github/contents/.github%2Ftether.yml").reply(404);
    gh.permission("Codertocat", "write").reactToComment(commentId);
    await app.receive("issue_comment", comment(), `stop-${issue}`);
    app.processor.wake();
    // Stop once the processor holds the delivery (claimed; its config read is held 400 ms).
    await vi.waitFor(
      async () =>
        expect(await readDelivery(db.pool, `stop-${issue}`)).toMatchObject({ attempts: 1 }),
      { timeout: 10_000, interval: 10 },
    );
    await app.processor.stop(50);
    const released = await readDelivery(db.pool, `stop-${issue}`);
    expect(released).toMatchObject({ status: "pending", attempts: 0 });
    expect(
      (
        await db.pool.query("SELECT locked_by FROM webhook_deliveries WHERE delivery_id = $1", [
          `stop-${issue}`,
        ])
      ).rows[0].locked_by,
    ).toBeNull();

    // The stopped processor finishes its work but may not record it: the row is no longer its own.
    await app.processor.idle();
    expect((await readDelivery(db.pool, `stop-${issue}`))?.status).toBe("pending");
    // Another processor takes it and finds the task already queued.
    const next = await createTestApp(db);
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    await next.processor.processPending();
    expect(await readDelivery(db.pool, `stop-${issue}`)).toMatchObject({
      status: "done",
      outcome: expect.stringMatching(/duplicate/),
    });
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toHaveLength(1);
  });
});

describe("concurrency", () => {
  it("two processors racing on many comments for one key queue exactly one task holding all of them", async () => {
    await seedTask(db.pool, { repo: REPO_KEY, issue_number: issue, status: "running" });
    const n = 12;
    const gh = github();
    gh.api
      .post(`/app/installations/${INSTALLATION_ID}/access_tokens`)
      .times(2)
      .reply(201, { token: "t", expires_at: "2099-01-01T00:00:00Z", permissions: {} });
    gh.api.get(CONFIG).times(n).reply(404);
    gh.api.get("/repos/Codertocat/.github/contents/.github%2Ftether.yml").times(n).reply(404);
    gh.api
      .get("/repos/Codertocat/Hello-World/collaborators/Codertocat/permission")
      .times(n)
      .reply(200, {
        permission: "write",
        role_name: "write",
        user: { ...rest.user("Codertocat"), role_name: "write" },
      });
    gh.api
      .post(/\/repos\/Codertocat\/Hello-World\/issues\/comments\/\d+\/reactions/)
      .times(n)
      .reply(201, rest.reaction());
    for (let i = 0; i < n; i++)
      await app.receive("issue_comment", comment(commentId * 100 + i, `@tether part ${i}`));
    const other = await createTestApp(db);
    await Promise.all([app.processor.processPending(), other.processor.processPending()]);

    const tasks = await readTasks(db.pool, "issue_number = $1 AND status = 'queued'", [issue]);
    expect(tasks).toHaveLength(1);
    const { rows } = await db.pool.query(
      "SELECT count(*)::int AS n FROM task_comments WHERE task_id = $1",
      [tasks[0]!.id],
    );
    expect(rows[0].n).toBe(n);
  });
});

describe("waking", () => {
  it("a started processor handles a delivery on NOTIFY, without being asked", async () => {
    const log = createLogger("silent");
    const processor = new IntakeProcessor({
      pool: db.pool,
      log,
      auth: (id) => app.probot.auth(id),
      pollMs: 60_000,
      backoffMs: () => 0,
    });
    await processor.start();
    try {
      github()
        .token(INSTALLATION_ID)
        .noConfig()
        .permission("Codertocat", "write")
        .reactToComment(commentId);
      await app.receive("issue_comment", comment(), `wake-${issue}`);
      const deadline = Date.now() + 5000;
      while (
        (await readDelivery(db.pool, `wake-${issue}`))?.status !== "done" &&
        Date.now() < deadline
      )
        await new Promise((r) => setTimeout(r, 20));
      expect((await readDelivery(db.pool, `wake-${issue}`))?.status).toBe("done");
    } finally {
      await processor.stop();
      await processor.idle();
    }
  });
});
