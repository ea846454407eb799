/**
 * Issue 16's drill: runners are cattle. One web process takes the webhooks; three runner
 * processes on one Postgres, each with its own HOME, data directory and workspace root, take
 * whatever task comes. Midway one runner is "redeployed": stopped, its HOME, data directory and
 * workspaces deleted, started again under a new runtime id. The real Claude CLI talks to the
 * fake Messages API throughout.
 *
 * Done when: at least 99% of the eligible follow-ups resume (every follow-up here is eligible:
 * no /fresh, no edits, nothing poisoned), the redeployed runner's keys resume, and every task
 * gets exactly one answer.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type AppProcess, type Stack } from "../helpers/e2e-stack.js";
import { userTexts } from "../helpers/fake-anthropic.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
`;
const ISSUES = 4;

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    config: CONFIG,
    env: { TETHER_ROLE: "web" },
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

/** A runner-only process with dirs of its own under `name`. */
async function runner(name: string, runtimeId: string): Promise<AppProcess> {
  const root = path.join(stack.tmp, name);
  for (const d of ["home", "data", "ws"]) fs.mkdirSync(path.join(root, d), { recursive: true });
  return stack.spawnApp({
    TETHER_ROLE: "runner",
    HOME: path.join(root, "home"),
    TETHER_DATA_DIR: path.join(root, "data"),
    TETHER_WORKSPACE_DIR: path.join(root, "ws"),
    TETHER_RUNTIME_ID: runtimeId,
    TETHER_RUNNER_CONCURRENCY: "2",
  });
}

/** Comments on every issue at once; resolves with their finished tasks. */
async function round(issues: number[], word: string): Promise<Array<Record<string, unknown>>> {
  const ids = await Promise.all(
    issues.map((n) => stack.comment(n, `@tether ${word}-${n} carry on`)),
  );
  return Promise.all(ids.map((c) => stack.finishedTask(c, 150_000)));
}

describe(
  "portable sessions drill: three runners, one redeployed midway",
  { timeout: 600_000 },
  () => {
    it("resumes ≥99% of eligible follow-ups on whichever runner takes them, one answer per task", async () => {
      const issues = Array.from({ length: ISSUES }, (_, i) =>
        Number(
          stack.gh.addIssue({
            repo: REPO,
            title: `Drill ${i}`,
            body: `Drill body ${i}`,
            user: "alice",
          }).number,
        ),
      );
      const first = issues.slice(0, ISSUES / 2);
      const rest = issues.slice(ISSUES / 2);

      // The first half of the keys start on runner 1 alone, so which keys are "its" is known.
      const r1 = await runner("r1", "rt-drill-1");
      const firstTurns = await round(first, "ONE");
      for (const t of firstTurns)
        expect(t).toMatchObject({ status: "succeeded", runtime_id: "rt-drill-1" });
      const r2 = await runner("r2", "rt-drill-2");
      const r3 = await runner("r3", "rt-drill-3");
      const restTurns = await round(rest, "ONE");

      // Redeploy runner 1: stopped, everything on its disk gone, back under a new runtime id.
      await r1.stop();
      fs.rmSync(path.join(stack.tmp, "r1"), { recursive: true, force: true });
      const r1b = await runner("r1", "rt-drill-1b");

      const followUps = [...(await round(issues, "TWO")), ...(await round(issues, "THREE"))];
      const all = [...firstTurns, ...restTurns, ...followUps];

      // Every task: one answer, posted.
      for (const t of all) {
        expect(t.status).toBe("succeeded");
        const answers = stack.taskComments(t.issue_number as number, t.id as number);
        expect(answers).toHaveLength(1);
        expect(String(answers[0]!.body)).toMatch(/^reply#/);
      }
      // Every follow-up was eligible; ≥99% resumed (here: all of them, the same session per key).
      const resumed = followUps.filter((t) => t.resume_decision === "resume");
      expect(resumed.length / followUps.length).toBeGreaterThanOrEqual(0.99);
      for (const t of followUps) {
        const firstOfKey = all.find((f) => f.issue_number === t.issue_number)!;
        expect(t.session_id).toBe(firstOfKey.session_id);
      }
      // Runner 1's keys resumed after its disk was wiped, wherever they ran.
      for (const n of first) {
        const two = followUps.find((t) => t.issue_number === n)!;
        expect(two).toMatchObject({ resume_decision: "resume", resume_reason: "resumed" });
      }
      // The three runners all took tasks, and sessions moved between them.
      const runtimes = new Set(followUps.map((t) => t.runtime_id));
      expect(runtimes.size).toBeGreaterThanOrEqual(2);
      expect(followUps.some((t) => t.resumed_across === true)).toBe(true);
      expect(followUps.some((t) => t.session_restore === "store")).toBe(true);

      // And the API saw each key's earlier messages on its last turn.
      const reqs = stack.api.messageRequests();
      for (const n of issues) {
        const last = reqs.filter((r) => userTexts(r).some((u) => u.includes(`THREE-${n} `)));
        expect(last.length).toBeGreaterThan(0);
        const texts = userTexts(last[0]!);
        expect(texts.some((u) => u.includes(`ONE-${n} `))).toBe(true);
        expect(texts.some((u) => u.includes(`TWO-${n} `))).toBe(true);
      }
      console.log(
        `drill: ${followUps.length} follow-ups, ${resumed.length} resumed, ` +
          `${followUps.filter((t) => t.resumed_across).length} across runners, ` +
          `${followUps.filter((t) => t.session_restore === "store").length} restored from Postgres, ` +
          `runtimes ${[...runtimes].join(", ")}`,
      );
      await Promise.all([r2.stop(), r3.stop(), r1b.stop()]);
    });
  },
);
