/**
 * The many-runner drill (bench/many-runners.ts, #34) at CI size: four runner processes and two
 * web processes of the built app on one Postgres, 40 turns over 10 issues, one runner killed
 * (SIGKILL) with turns in hand and replaced by a new one under a new runtime id. Every turn is
 * answered exactly once, every comment lands in one task, and every follow-up resumes its key's
 * one session, wherever it runs. The full size (8 runners, 400 turns over 100 issues, two
 * killed) is `npx tsx bench/many-runners.ts`.
 */
import { describe, expect, it } from "vitest";
import { formatReport, runManyRunners } from "../../bench/many-runners.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();

describe("many runners (CI size)", () => {
  it(
    "answers every turn once and resumes every follow-up across runners, one killed",
    { timeout: 420_000 },
    async () => {
      const report = await runManyRunners({
        pool: db.pool,
        databaseUrl: db.url,
        runners: 4,
        webs: 2,
        turns: 40,
        issues: 10,
        kills: 1,
      });
      console.log(formatReport(report));
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      // The drill did what it says: the work spread over the runners, the replacement included,
      // and a killed runner's turn was taken over and still answered once.
      expect(Object.keys(report.tasksPerRuntime).length).toBeGreaterThanOrEqual(4);
      expect(report.retried).toBeGreaterThan(0);
      expect(report.resumed).toBe(30);
      expect(report.resumedAcross).toBeGreaterThan(0);
      expect(report.restoredFromStore).toBeGreaterThan(0);
    },
  );
});
