/**
 * Drill: a comment GitHub could not deliver because the app was down (nothing listening: GitHub
 * records the attempt with no status) is redelivered by the app itself once it is back, without
 * anyone pressing "Redeliver". The built app as a process, real Postgres, the GitHub stand-in
 * keeping the app's delivery log, the scripted stand-in CLI. Afterwards the comment has exactly
 * one task, run and answered once, and the delivery that had arrived was not sent again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { REPO, SECRET, startStack, type Stack } from "../helpers/e2e-stack.js";
import { STANDIN_CLAUDE, compactLog, tasksOfComments, waitFor } from "./helpers/drill.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
`;

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    config: CONFIG,
    env: { TETHER_CLAUDE_PATH: STANDIN_CLAUDE },
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

describe("webhook deliveries the app missed", { timeout: 300_000 }, () => {
  it("are redelivered by the app once it is back: one task, one answer, nothing else sent again", async () => {
    const { gh } = stack;
    const issue = gh.addIssue({ repo: REPO, title: "Redelivery", user: "alice" }).number as number;

    // A comment while the app is up: delivered (200) and answered.
    const before = await stack.comment(issue, "@tether say hello");
    expect(await stack.finishedTask(before, 150_000)).toMatchObject({ status: "succeeded" });

    // The app goes away; a comment made meanwhile finds nothing listening at its address.
    const port = new URL(stack.app.url).port;
    await stack.app.stop();
    const missed = gh.addComment({
      repo: REPO,
      issueNumber: issue,
      body: "@tether say hello again",
      user: "alice",
    });
    const ev = gh.webhooks.issueComment({
      repo: REPO,
      issueNumber: issue,
      commentId: missed.id as number,
    });
    const lost = await gh.deliver(stack.app.url, ev.name, ev.payload, SECRET);
    expect(lost.status).toBe(0);

    // Back at the same address, sweeping soon after start and every minute; a failure needs
    // no settling here (in production it waits two minutes).
    await stack.startApp({
      PORT: port,
      TETHER_REDELIVER_MINUTES: "1",
      TETHER_REDELIVER_FIRST_DELAY_MS: "500",
      TETHER_REDELIVER_SETTLE_MS: "0",
    });

    const task = await stack.finishedTask(missed.id as number, 180_000);
    expect(task.status).toBe("succeeded");
    expect((await tasksOfComments(db.pool)).get(missed.id as number)).toEqual([task.id]);
    expect(stack.taskComments(issue, task.id as number)).toHaveLength(1);

    // GitHub's log: the lost delivery sent again once, under its own id, and taken; nothing
    // else redelivered.
    await waitFor(
      "the redelivery in GitHub's log",
      () => gh.deliveryLog.of(lost.deliveryId).some((a) => a.redelivery && a.statusCode === 200),
      60_000,
    );
    const redelivered = gh.deliveryLog.attempts.filter((a) => a.redelivery);
    expect(redelivered.map((a) => [a.guid, a.statusCode])).toEqual([[lost.deliveryId, 200]]);
    expect(
      gh.requests
        .filter((r) => r.route === "POST /app/hook/deliveries/{delivery_id}/attempts")
        .map((r) => [r.path, r.status]),
    ).toEqual([[`/api/v3/app/hook/deliveries/${lost.attempt.id}/attempts`, 202]]);
    await waitFor("the redelivered delivery done in the inbox", async () => {
      const { rows } = await db.pool.query(
        "SELECT status FROM webhook_deliveries WHERE delivery_id = $1",
        [lost.deliveryId],
      );
      return rows[0]?.status === "done";
    });

    const log = stack.app.output();
    expect(log, compactLog(log, { minLevel: "info" })).toContain(
      "asked GitHub to redeliver webhook deliveries that failed",
    );
    const metrics = await fetch(`${stack.app.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/^tether_webhook_redeliveries_total\{result="requested"\} 1$/m);
  });
});
